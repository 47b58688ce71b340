/**
 * In-memory service parts for serving tests: real records kept in Maps, answering the ServiceContext interfaces the
 * way the spec describes (newest-first feed, soonest-first clocks, pending before horizon_end, prefix lookups).
 * Test-only; the server never ships these.
 */
import { Registry } from 'prom-client'
import { ServiceMetrics } from '../../../serving/metrics/ServiceMetrics.ts'
import { QUESTIONS } from '../../../models/questions/index.ts'
import type { CurveWindow, IntelligenceRead, RecordReads } from '../../../record/MeasuredRecord.ts'
import { UNMEASURED_LADDER } from '../../../product/billing/pricing.ts'
import type { CalibrationReport, Curve, QuestionPrior } from '../../../record/schemas.ts'
import type { DecisionRead, DecisionRecord, FeedPage, LineageBundle, OpenClock, PendingResolution, ResolutionRecord, SignalCatalog, ReplayResult } from '../../../engine/schemas.ts'
import type { LedgerReads } from '../../../engine/LedgerReads.ts'
import { decodePosition, pageOf } from '../../../common/pageCursor.ts'
import type { LiqHours, MarketCapList, MarketSnapshot, Universe } from '../../../product/market/schemas.ts'
import type { MarketData } from '../../../product/market/MarketData.ts'
import type { ProviderHealthRow, ProviderRegistry } from '../../../product/platform/schemas.ts'
import type { ServicePart } from '../../../serving/Services.ts'
import type { DecisionService } from '../../../engine/DecisionService.ts'
import type { WalletData } from '../../../product/wallet/WalletData.ts'
import type { RiskEngine } from '../../../product/risk/RiskEngine.ts'
import type { Duel } from '../../../product/duel/Duel.ts'
import { Channel } from '../../../engine/LedgerBus.ts'
import type { CallGraded, CallLocked } from '../../../product/duel/CallEvents.ts'
import { wilsonInterval } from '../../../models/verification/wilson.ts'
import { ServiceError } from '../../../common/ServiceError.ts'
import type { ServiceParts } from '../../../serving/Server.ts'
import type { ReleaseReads } from '../../../record/releases/ReleaseStore.ts'
import { jcsSha256 } from '../../../common/hash.ts'

export const T0 = Date.parse('2026-01-05T12:00:00.000Z')
const iso = (ms: number) => new Date(ms).toISOString()

export const RESOLVED_ID = '6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b'
export const PENDING_ID = '0a1b2c3d-4e5f-4a6b-8c7d-8e9f0a1b2c3d'
export const PAYER = '0x209693Bc6afc0C5328bA36FaF03C514EF312287C'

function record(id: string, createdMs: number, over: Partial<DecisionRecord> = {}): DecisionRecord {
  return {
    decision_id: id,
    question_id: 'S01_market_regime',
    asset: 'BTC',
    subject: null,
    event: 'BTC perp market regime over the next 60 minutes',
    horizon: '60m',
    horizon_end: iso(createdMs + 3_600_000),
    created_at: iso(createdMs),
    conditions: { staleness: 'venue data within staleness budget' },
    probability: 0.55,
    confidence: 0.4,
    decision: 'trend_up',
    action: 'inform',
    input_hash: 'sha256:' + 'a'.repeat(64),
    state_hash: 'sha256:' + 'b'.repeat(64),
    policy_version: '1.0.0',
    jev_version: '0.3.0',
    choice: { choice_id: 'trend_up', distribution: { trend_up: 0.55, range: 0.3, trend_down: 0.15 } },
    ...over,
  }
}

export class MemoryLedger implements LedgerReads, RecordReads {
  readonly decisions = new Map<string, DecisionRecord>()
  readonly resolutions = new Map<string, ResolutionRecord>()
  constructor(readonly now: () => number) {}

  add(rec: DecisionRecord, resolution?: Omit<ResolutionRecord, 'status' | 'decision_id'>): void {
    this.decisions.set(rec.decision_id, rec)
    if (resolution) this.resolutions.set(rec.decision_id, { status: 'resolved', decision_id: rec.decision_id, ...resolution })
  }

  private read(rec: DecisionRecord): DecisionRead {
    const age = this.now() - Date.parse(rec.created_at)
    return {
      record: rec,
      freshness: [{ input: 'hyperliquid:perp', ok: true, staleness_budget_ms: 60_000, age_ms: Math.max(0, age), last_success_at: rec.created_at }],
      data_sources: ['hyperliquid:perp'],
    }
  }

  async getDecision(id: string) {
    const r = this.decisions.get(id)
    return r ? this.read(r) : null
  }

  async latestDecision(q: { question_id: string; asset: string }) {
    const rows = [...this.decisions.values()]
      .filter((d) => d.question_id === q.question_id && d.asset === q.asset)
      .sort((a, b) => b.created_at.localeCompare(a.created_at) || b.decision_id.localeCompare(a.decision_id))
    return rows[0] ? this.read(rows[0]) : null
  }

  async resolution(id: string): Promise<ResolutionRecord | PendingResolution | null> {
    const d = this.decisions.get(id)
    if (!d) return null
    return this.resolutions.get(id) ?? { status: 'pending', decision_id: id, horizon_end: d.horizon_end }
  }

  async lineage(idOrPrefix: string): Promise<LineageBundle | null> {
    const hits = [...this.decisions.keys()].filter((k) => k.startsWith(idOrPrefix))
    if (hits.length > 1) throw new ServiceError('VALIDATION', { detail: { reason: 'AMBIGUOUS_PREFIX', field: '/params/decision_id' } })
    const d = hits[0] ? this.decisions.get(hits[0]) : undefined
    if (!d) return null
    return {
      decision: d,
      resolution: (await this.resolution(d.decision_id))!,
      payment: { rail: 'none', payment_id: null },
      tape: { sources: [{ input: 'hyperliquid:perp', source: 'hyperliquid:perp', from: d.created_at, to: d.created_at }] },
      hashes: { input_hash: d.input_hash, state_hash: d.state_hash },
      verify: { input_ok: 'unknown', state_ok: 'unknown' },
    }
  }

  async calibration(q: { question_id: string | null; subject: string | null }): Promise<CalibrationReport> {
    const pairs = [...this.resolutions.values()].filter((r) => r.outcome !== 'unresolvable')
    return {
      question_id: q.question_id,
      subject: q.subject,
      buckets: Array.from({ length: 10 }, (_, i) => ({ lo: i / 10, hi: (i + 1) / 10, n: 0, mean_predicted: null, realized_frequency: null, published: false })),
      buckets_grade: q.question_id === null ? 'pooled' : 'event',
      published: false,
      n: pairs.length,
      n_floor: 30,
      note: `below the calibration floor of 30 realized outcomes (n=${pairs.length})`,
      scores: null,
      classes: null,
    }
  }

  async openClocks(): Promise<OpenClock[]> {
    return [...this.decisions.values()]
      .filter((d) => !this.resolutions.has(d.decision_id) && Date.parse(d.horizon_end) > this.now())
      .sort((a, b) => a.horizon_end.localeCompare(b.horizon_end))
      .map((d) => ({
        question_id: d.question_id, asset: d.asset ?? '', question_label: 'Market regime', decision_id: d.decision_id,
        predicted: d.choice?.choice_id ?? d.probability, horizon_end: d.horizon_end,
      }))
  }

  /** No batch job runs over this ledger: before the first snapshot (spec: "or null before the first snapshot"). */
  async intelligence(): Promise<IntelligenceRead> {
    return { snapshot: null, chain_verified: true, ladder: { ...UNMEASURED_LADDER, gate_values: {} } }
  }

  async curve(q: { window: CurveWindow; from: string | null; index_version: string }): Promise<Curve & { chain_verified: boolean }> {
    return { index_version: q.index_version, window: q.window, from: q.from, points: [], fit: null, note: 'no snapshot yet', chain_verified: true }
  }

  /** Base rates over the chips this ledger holds (the same counting rule as the engine: unresolvable excluded). */
  async priors(): Promise<QuestionPrior[]> {
    const chips = (await this.feed({ limit: Number.MAX_SAFE_INTEGER })).chips.filter((c) => c.status !== 'unresolvable')
    const ids = [...new Set(chips.map((c) => c.question_id))]
    return ids.map((question_id) => {
      const rows = chips.filter((c) => c.question_id === question_id)
      const successes = rows.filter((c) => (c.output === 'choice' ? c.match === true : c.observed === true)).length
      const ci = wilsonInterval(successes, rows.length)
      return {
        question_id,
        label: question_id,
        answer: rows[0]!.output,
        prior: {
          rate: successes / rows.length,
          interval: ci ? [ci.lower, ci.upper] : null,
          method: 'wilson-95',
          n: rows.length,
          successes,
          verdict: rows.length >= 30 ? 'published' : 'insufficient_sample',
          window: { start: rows[0]!.resolved_at, end: rows[rows.length - 1]!.resolved_at },
        },
        label_histogram: null,
        reason: null,
      }
    })
  }

  /** The engine's order and cursor (engine/LedgerView.ts): (resolved_at, decision_id) descending. */
  async feed(q: { limit: number; cursor?: string | null }): Promise<FeedPage> {
    const before = q.cursor ? decodePosition('feed', q.cursor, ['string', 'string'] as const) : null
    const key = (c: { resolved_at: string; decision_id: string }) => `${c.resolved_at}|${c.decision_id}`
    const chips = [...this.resolutions.values()]
      .sort((a, b) => key(b).localeCompare(key(a)))
      .filter((r) => before === null || key(r) < `${before[0]}|${before[1]}`)
      .map((r) => {
        const d = this.decisions.get(r.decision_id)!
        const realized = r.outcome === 'unresolvable' ? null : r.outcome === 'obtains' ? d.choice?.choice_id ?? null : 'range'
        return {
          decision_id: d.decision_id, question_id: d.question_id, asset: d.asset, output: 'choice' as const,
          predicted: r.outcome === 'unresolvable' ? null : d.choice?.choice_id ?? null, realized,
          match: realized === null ? null : realized === d.choice?.choice_id, observed: null,
          status: r.outcome, resolved_at: r.resolved_at, horizon_end: d.horizon_end,
        }
      })
    const page = pageOf('feed', chips, q.limit, (c) => [c.resolved_at, c.decision_id])
    return { chips: page.items, next_cursor: page.next_cursor }
  }
}

export class MemoryMarket implements MarketData {
  constructor(private readonly now: () => number, private readonly listed: string[]) {}

  async snapshot(symbol: string) {
    if (!this.listed.includes(symbol)) return null
    const snapshot: MarketSnapshot = {
      asset: symbol,
      quote: { price: 100, bid: 99.5, ask: 100.5, mark: 100, index: 100.1, volume_24h: 1e6 },
      derived: { mid: 100, spread_bps: 100 },
      provenance: { source: 'hyperliquid:perp', provider: 'hyperliquid', timestamp: iso(this.now() - 500), received_at: iso(this.now() - 400), age_ms: 500, quality: 'real' },
    }
    return { snapshot, freshness: [{ input: 'hyperliquid:perp', ok: true, staleness_budget_ms: 60_000, age_ms: 500, last_success_at: iso(this.now() - 500) }] }
  }

  async universe(q: { limit: number; q: string | null }): Promise<Universe> {
    const all = this.listed.filter((s) => !q.q || s.includes(q.q))
    const assets = all.slice(0, q.limit).map((symbol, i) => ({
      symbol, mid: 100 - i, mark: 100 - i, change_24h: 0.01, volume_24h: 1e6 - i, oi_usd: 5e5, funding: 1.25e-5, max_leverage: 50, delisted: false as const,
    }))
    return { venue: 'hyperliquid', as_of: iso(this.now()), quality: 'real', assets, count: assets.length, total_live: this.listed.length, truncated: all.length > assets.length }
  }

  async marketcap(): Promise<MarketCapList> {
    return { as_of: iso(this.now()), source: 'recorded', coins: [{ rank: 1, symbol: 'BTC', name: 'Bitcoin', market_cap_usd: 1e12, askable: this.listed.includes('BTC') }] }
  }

  async liqHours(asset: string): Promise<LiqHours | null> {
    if (!this.listed.includes(asset)) return null
    return { asset, hours_observed: 7, hours_required: 24, figure: '7/24', ready: false }
  }

  private unreachable(): never {
    throw new Error('paid market surfaces are not reached while the payment gate challenges')
  }
  liquidationSurface = async () => this.unreachable()
  fundingSnapshot = async () => this.unreachable()
  fundingAsset = async () => this.unreachable()
  fundingOpportunities = async () => this.unreachable()
}

/** Engine reads answered from the ledger; paid operations are not reached through the challenge gate. */
export class MemoryEngine implements DecisionService {
  constructor(private readonly ledger: MemoryLedger) {}
  async checkAsk(questionId: string): Promise<void> {
    if (!QUESTIONS.some((q) => q.id === questionId)) throw new ServiceError('VALIDATION', { detail: { reason: 'REQUEST_VALIDATION_FAILED', field: '/body/question_id' } })
  }
  async checkNext(previousDecisionId: string): Promise<boolean> {
    const d = this.ledger.decisions.get(previousDecisionId)
    if (d && !this.ledger.resolutions.has(previousDecisionId) && Date.parse(d.horizon_end) > this.ledger.now()) {
      throw new ServiceError('CLOCK_OPEN', { detail: { reason: 'clock_open', horizon_end: d.horizon_end } })
    }
    return d !== undefined
  }
  async replay(id: string, opts: { ruleset_version: string | null }): Promise<ReplayResult | null> {
    const d = this.ledger.decisions.get(id)
    if (!d) return null
    const bare = (v: string) => v.replace(/^(policy-|v)/, '')
    if (opts.ruleset_version && bare(opts.ruleset_version) !== bare(d.policy_version)) {
      throw new ServiceError('VALIDATION', { detail: { reason: 'REQUEST_VALIDATION_FAILED', field: '/body/ruleset_version' } })
    }
    return { decision_id: id, original_verdict: d.decision, replayed_verdict: d.decision, matched_rules: ['regime.default'], policy_version: d.policy_version, deterministic: true }
  }
  async signals(): Promise<SignalCatalog> {
    return {
      questions: [
        { question_id: 'S01_market_regime', label: 'Market regime', available: true, reason: null, sale_gate: [] },
        { question_id: 'S02_liquidation_risk', label: 'Liquidation risk', available: false, reason: 'needs 24 hourly observations (7/24)', sale_gate: [] },
      ],
      sample_hours_by_asset: { BTC: 7, ETH: 7, SOL: 7 },
      release: { version: '2.0.0', checksum: 'c'.repeat(64), checksum_verified: true, jev_version: 'jev-2.0.0', families: { S01_market_regime: 'served' } },
    }
  }
  private unreachable(): never {
    throw new Error('paid decisions are not reached while the payment gate challenges')
  }
  decide = async () => this.unreachable()
  nextDecision = async () => this.unreachable()
  marketRegime = async () => this.unreachable()
  marketRisk = async () => this.unreachable()
}

export class StaticProviders implements ProviderRegistry {
  constructor(readonly providers: ProviderHealthRow[]) {}
  list(): ProviderHealthRow[] {
    return this.providers
  }
}

/** One sealed candidate release (not yet evaluated), as record/releases/ReleaseStore.ts serves it. */
export const RELEASE_VERSION = '1.0.0'
const RELEASE_BODY = {
  version: RELEASE_VERSION,
  parent: null,
  method: { name: 'v2', jev_version: 'jev-2.0.0' },
  families: {},
  dataset: { window_start: '2025-12-01T00:00:00.000Z', window_end: '2026-01-01T00:00:00.000Z', n_realized: 0, dataset_hash: '0'.repeat(64) },
  code: { jev_version: 'jev-2.0.0', policy_version: 'policy-3.0.0', policy_checksum: '0'.repeat(64), fit_code: '0'.repeat(64) },
}
const releaseItem = () => ({
  version: RELEASE_VERSION,
  parent: null,
  status: 'candidate' as const,
  created_at: '2026-01-01T00:00:00.000Z',
  activated_at: null,
  dataset: RELEASE_BODY.dataset,
  evaluation: null,
  gates: [],
  gate_verdicts: null,
  measured_at: null,
})
const memoryReleases: ReleaseReads = {
  list: async (filter = {}) => (filter.status && filter.status !== 'candidate' ? [] : [releaseItem()]),
  detail: async (version) => (version === RELEASE_VERSION ? { ...releaseItem(), checksum: jcsSha256(RELEASE_BODY), body: RELEASE_BODY as never, families: null } : null),
  activeRelease: async () => null,
  ladderFacts: async () => ({ active_release_major: null, release_skill_ci_above_zero: 0 }),
}

const unreachable = async (): Promise<never> => {
  throw new Error('paid operation reached without payment')
}

/** Every part wired, with a ledger holding one resolved and one pending decision. */
export function memoryServices(nowMs = T0): { parts: ServiceParts; ledger: MemoryLedger } {
  const now = () => nowMs
  const ledger = new MemoryLedger(now)
  ledger.add(record(RESOLVED_ID, nowMs - 7_200_000), { outcome: 'obtains', resolved_at: iso(nowMs - 3_600_000), statistic: 0.012 })
  ledger.add(record(PENDING_ID, nowMs - 600_000))
  const wallets: WalletData = { profile: unreachable, state: unreachable, positions: unreachable, events: unreachable }
  const risk: RiskEngine = { assess: unreachable }
  // The duel's own behaviour is tested over a real DuelService (test/product/duel/); here its routes need valid shapes.
  const duel: Duel = {
    events: {
      locked: new Channel<CallLocked>('call.locked', () => [], (e) => e.call_id),
      graded: new Channel<CallGraded>('call.graded', () => [], (e) => e.call_id),
    },
    checkCall: () => ({}),
    lockCall: unreachable,
    callsPage: async () => ({ total: 0, items: [] }),
    scoreboard: async (payer) => ({
      payer: payer.toLowerCase(), opt_in: false, calls: 0, graded: 0, open: 0, void: 0, correct: 0, house_correct: 0,
      player_accuracy: null, house_accuracy: null, player_brier: null, house_brier: null, recent: [],
    }),
    aggregateBoard: (payer) => ({ min_graded: 10, entries: [], you: { payer: payer.toLowerCase(), opt_in: false, calls_graded: 0, rank: null } }),
    publicBoard: (window) => ({ window, since: null, min_graded: 10, entries: [] }),
    optIn: async (payer, opt_in) => ({ payer: payer.toLowerCase(), opt_in, recorded_at: iso(nowMs) }),
    crowdBenchmark: () => null,
  }
  const parts: ServiceParts = {
    clock: { now },
    ledger,
    record: ledger,
    releases: memoryReleases,
    engine: new MemoryEngine(ledger),
    market: new MemoryMarket(now, ['BTC', 'ETH', 'SOL', 'HYPE']),
    wallets,
    risk,
    // billing is real (test/helpers/serving/billing.ts withBilling): it needs an event log.
    duel,
    // delivery is real (test/helpers/serving/delivery.ts withDelivery): it needs an event log and receivers.
    metrics: new ServiceMetrics(new Registry()),
    providers: new StaticProviders([
      { slug: 'hyperliquid', kind: 'venue', status: 'ok', last_success_at: iso(nowMs - 1000), latency_ms: 42, error_class: null, critical: true },
    ]),
  }
  return { parts, ledger }
}

export const ALL_PARTS: ServicePart[] = ['providers', 'ledger', 'engine', 'record', 'releases', 'market', 'wallets', 'risk', 'billing', 'duel', 'ladder', 'metrics']
