/**
 * The ledger reads and the decision engine of serving (LedgerReads, DecisionService),
 * backed by the in-process engine (engine/). Reads answer from the engine's in-memory ledger index (fed by the
 * decisions/outcomes topics): no DuckDB query and no model call per request. Engine errors map onto the one error
 * registry (common/errors.ts).
 *
 * Spec, Decision record: the public record is the ledger row without its journal and state parts; `conditions` is the
 * machine conditions object (names sorted), as in SQL; choice and payment_id appear only when present.
 */
import { deepFreeze } from '../common/deepFreeze.ts'
import type { LedgerDecision } from '../pipeline/records/decisionRecord.ts'
import { publicConditions, type DecisionEngine as Engine, type PaymentRef } from './DecisionEngine.ts'
import { ENGINE_ERRORS, EngineError } from './EngineError.ts'
import type { LedgerView } from './LedgerView.ts'
import type { LiveFeatures } from './LiveFeatures.ts'
import type { Replayer } from './Replayer.ts'
import { QUESTIONS } from '../models/questions/index.ts'
import { gateSummary, type SaleGate } from '../models/saleGate.ts'
import type { FeatureSnapshot } from '../pipeline/features/FeatureSnapshot.ts'
import type { RiskCandidate } from '../models/account/accountSnapshot.ts'
import { ServiceError } from '../common/ServiceError.ts'
import type { ErrorCode, ReasonCode } from '../common/errors.ts'
import type { PaidCall } from '../pipeline/journal/PaidCall.ts'
import type { UnitOfWork } from '../pipeline/journal/UnitOfWork.ts'
import type { CanonicalAsset } from '../common/schema.ts'
import type { DecisionService } from './DecisionService.ts'
import type { DecisionRead, DecisionRecord, FeedPage, LineageBundle, OpenClock, PendingResolution, ReplayResult, ResolutionRecord, SignalCatalog, SignalEntry } from './schemas.ts'
import type { LedgerReads } from './LedgerReads.ts'
import { REFUSAL_KINDS } from '../models/QuestionModel.ts'

/** The wire error of an engine refusal: its registry code, and its reason (or the code's stand-in reason). */
function toServiceError(err: EngineError): ServiceError {
  const entry: { wire: ErrorCode; reason?: ReasonCode } = ENGINE_ERRORS[err.code]
  const reason = err.detail.reason ?? entry.reason
  return new ServiceError(entry.wire, { message: err.message, detail: { ...err.detail, ...(reason === undefined ? {} : { reason }) } })
}

function mapped<T>(fn: () => T): T {
  try {
    return fn()
  } catch (err) {
    throw err instanceof EngineError ? toServiceError(err) : err
  }
}

async function mappedAsync<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    throw err instanceof EngineError ? toServiceError(err) : err
  }
}

/** The public decision record of a ledger row. */
export function publicRecord(d: LedgerDecision): DecisionRecord {
  const r: DecisionRecord = {
    decision_id: d.decision_id,
    question_id: d.question_id,
    asset: d.asset,
    subject: d.subject,
    event: d.event,
    horizon: d.horizon,
    horizon_end: d.horizon_end,
    created_at: d.created_at,
    conditions: publicConditions(d.conditions),
    probability: d.probability,
    confidence: d.confidence,
    decision: d.decision,
    action: d.action,
    input_hash: d.input_hash,
    state_hash: d.state_hash,
    policy_version: d.policy_version,
    jev_version: d.jev_version,
  }
  if (d.choice) r.choice = { choice_id: d.choice.choice_id, distribution: d.choice.distribution }
  if (d.payment_id !== null) r.payment_id = d.payment_id
  return r
}

/**
 * Reads of one ledger row, computed once per row object: ledger rows are never mutated (append-only, first record
 * wins), so the read is frozen and reused, and serving serializes a frozen value once (serving/envelope.ts jsonOf).
 */
const reads = new WeakMap<LedgerDecision, DecisionRead>()

/**
 * The record plus meta.freshness and meta.data_sources, from its journaled snapshot (frozen; see `reads`). A caller
 * that holds the snapshot the record was made from (a decision just composed) passes it: no need to parse the journal.
 */
export function decisionRead(d: LedgerDecision, snapshot?: FeatureSnapshot): DecisionRead {
  const known = reads.get(d)
  if (known) return known
  let freshness: DecisionRead['freshness'] = []
  let sources: string[] = []
  let s: FeatureSnapshot | undefined = snapshot
  if (s === undefined && d.journal !== null) {
    try {
      s = JSON.parse(d.journal) as FeatureSnapshot
    } catch {
      // A journal that does not parse shows no freshness; lineage reports it as verify false.
    }
  }
  if (s !== undefined) {
    freshness = s.freshness.map((f) => ({ input: f.input, ok: f.ok, staleness_budget_ms: f.staleness_budget_ms, age_ms: f.age_ms, last_success_at: f.last_success_at }))
    sources = [...s.sources]
  }
  const read = deepFreeze({ record: publicRecord(d), freshness, data_sources: sources })
  reads.set(d, read)
  return read
}

/** Spec: "refusal kinds stale_input, insufficient_confidence, suppress" (probability 0, confidence 0). */
const REFUSALS = new Set<string>(REFUSAL_KINDS)

/**
 * A decision as an answer: the record as data, and the meta it implies (spec, Response envelope: meta.probabilities
 * "mirrors the full distribution where the answer is a distribution", meta.confidence { value, basis: 'jev' },
 * meta.horizon, meta.freshness of its inputs). `refusal` marks a refusal kind (it never consumes a free-allowance
 * question); `charge: false` a re-served recorded decision ("a repeat is not charged as a new decision row").
 */
export interface DecisionAnswer {
  data: DecisionRecord
  meta: {
    state: string
    probabilities: Record<string, number> | null
    confidence: { value: number; basis: 'jev' }
    horizon: string
    freshness: DecisionRead['freshness']
    data_sources: string[]
  }
  refusal: boolean
  charge?: false
}

/**
 * Built once per frozen read and frozen itself (reads are frozen and reused per ledger row), so the envelope
 * serializes a decision's data and meta once, not per response (serving/envelope.ts caches frozen values).
 */
const answers = new WeakMap<DecisionRead, DecisionAnswer>()

export function decisionAnswer(read: DecisionRead): DecisionAnswer {
  const known = answers.get(read)
  if (known) return known
  const r = read.record
  const answer: DecisionAnswer = {
    refusal: REFUSALS.has(r.decision),
    ...(read.reserved ? { charge: false as const } : {}),
    data: r,
    meta: {
      state: r.decision,
      probabilities: r.choice?.distribution ?? null,
      confidence: Object.freeze({ value: r.confidence, basis: 'jev' as const }),
      horizon: r.horizon,
      freshness: read.freshness,
      data_sources: read.data_sources,
    },
  }
  if (Object.isFrozen(read)) {
    Object.freeze(answer.meta)
    answers.set(read, Object.freeze(answer))
  }
  return answer
}

function paymentRef(p: PaidCall): PaymentRef {
  return { payment_id: p.payment_id, rail: p.rail }
}

export class EngineServices implements LedgerReads, DecisionService {
  /** Feed and open clocks are functions of the append-only ledger (and, for clocks, the engine's now): kept per state. */
  private feedCache: { limit: number; outcomes: number; page: FeedPage } | null = null
  private clocksCache: { now: number | null; decisions: number; outcomes: number; clocks: OpenClock[] } | null = null

  private readonly engine: Engine
  private readonly reads: LedgerView
  private readonly replayer: Replayer
  private readonly live: LiveFeatures

  /** Over a running engine's parts (EngineRunner has them all). */
  constructor(parts: { engine: Engine; reads: LedgerView; replayer: Replayer; live: LiveFeatures }) {
    this.engine = parts.engine
    this.reads = parts.reads
    this.replayer = parts.replayer
    this.live = parts.live
  }

  // ------------------------------------------------------------ LedgerReads

  getDecision(decisionId: string): DecisionRead | null {
    const d = this.reads.getDecision(decisionId.toLowerCase())
    return d ? decisionRead(d) : null
  }

  async latestDecision(q: { question_id: string; asset: string }): Promise<DecisionRead | null> {
    const d = mapped(() => this.reads.latest(q.question_id, q.asset))
    return d ? decisionRead(d) : null
  }

  async lineage(idOrPrefix: string): Promise<LineageBundle | null> {
    const l = mapped(() => this.reads.lineage(idOrPrefix))
    if (!l) return null
    return {
      decision: publicRecord(l.decision),
      resolution: l.resolution,
      payment: l.payment,
      tape: l.tape,
      hashes: l.hashes,
      verify: l.verify,
    }
  }

  async resolution(decisionId: string): Promise<ResolutionRecord | PendingResolution | null> {
    return this.reads.resolution(decisionId.toLowerCase())
  }

  openClocks(): OpenClock[] {
    const now = this.live.now()
    const { decisions, outcomes } = this.reads.index.size
    const c = this.clocksCache
    if (c && c.now === now && c.decisions === decisions && c.outcomes === outcomes) return c.clocks
    const clocks = deepFreeze(this.reads.openClocks())
    this.clocksCache = { now, decisions, outcomes, clocks }
    return clocks
  }

  feed(q: { limit: number; cursor?: string | null }): FeedPage {
    const cursor = q.cursor ?? null
    // Only the first page is cached: it is the one every poller asks for; a later page is read once by one walker.
    if (cursor !== null) return deepFreeze(this.reads.feedPage(q.limit, cursor))
    const outcomes = this.reads.index.size.outcomes
    const c = this.feedCache
    if (c && c.limit === q.limit && c.outcomes === outcomes) return c.page
    const page = deepFreeze(this.reads.feedPage(q.limit, null))
    this.feedCache = { limit: q.limit, outcomes, page }
    return page
  }

  // ------------------------------------------------------------ DecisionService

  async replay(decisionId: string, opts: { ruleset_version: string | null }): Promise<ReplayResult | null> {
    return mapped(() => this.replayer.replay(decisionId.toLowerCase(), opts))
  }

  /**
   * A paid decision: evaluated now, written to the ledger only through the paid call's unit of work, i.e. appended
   * with the call's debit and answer receipt as one atomic unit once the payment is captured (a failed settlement
   * records nothing). A re-served repeat writes nothing and is marked `reserved` so the route does not charge it.
   */
  async decide(
    input: { asset: CanonicalAsset; chain: 'base'; question_id: string; subject: string | null; candidate?: Record<string, unknown> | null },
    payment: PaidCall,
    unit: UnitOfWork,
  ): Promise<DecisionRead> {
    // The candidate's shape was validated by the route schema (RISK_CANDIDATE).
    const candidate = (input.candidate ?? null) as RiskCandidate | null
    const prepared = await mappedAsync(() =>
      this.engine.prepare({ question_id: input.question_id, asset: input.asset, subject: input.subject, candidate, payment: paymentRef(payment) }),
    )
    // Written only through the paid call's unit of work: with the payment's own records, once it is captured.
    const reserved = prepared.reserved || !(await this.engine.ledger.appendIn(unit, prepared.record)).isNew
    return { ...decisionRead(prepared.record, prepared.reserved ? undefined : prepared.snapshot), reserved }
  }

  async nextDecision(previousDecisionId: string, payment: PaidCall, unit: UnitOfWork): Promise<DecisionRead | null> {
    const prev = await mappedAsync(async () => this.engine.nextDecisionInput(previousDecisionId.toLowerCase()))
    return prev ? this.decide({ ...prev, asset: prev.asset as CanonicalAsset, chain: 'base' }, payment, unit) : null
  }

  async checkAsk(questionId: string): Promise<void> {
    mapped(() => this.engine.question(questionId))
  }

  async checkNext(previousDecisionId: string): Promise<boolean> {
    return (await mappedAsync(async () => this.engine.nextDecisionInput(previousDecisionId.toLowerCase()))) !== null
  }

  /** GET /v1/market/{asset}/regime: the S01 decision. */
  marketRegime(asset: CanonicalAsset, payment: PaidCall, unit: UnitOfWork): Promise<DecisionRead> {
    return this.decide({ asset, chain: 'base', question_id: 'S01_market_regime', subject: null }, payment, unit)
  }

  /** GET /v1/market/{asset}/risk: S02 (spec: "resolves to decision suppress; not sold on this deployment, readable so the refusal can be inspected"). */
  marketRisk(asset: CanonicalAsset, payment: PaidCall, unit: UnitOfWork): Promise<DecisionRead> {
    return this.decide({ asset, chain: 'base', question_id: 'S02_liquidation_risk', subject: null }, payment, unit)
  }

  /**
   * The live available set: sold market questions the active release serves and its sale gate sold
   * (models/saleGate.ts), and the account-scoped questions when a wallet provider is wired (they estimate per subject
   * at decision time); a blocked one names why (no_active_release, a refused release family, not_sold:…), with the
   * gate's measured figures and the release in force.
   */
  async signals(): Promise<SignalCatalog> {
    const now = this.live.now()
    const assets = this.live.assetList()
    const questions = QUESTIONS.map((q) => {
      let reason: string | null = null
      const gates: SignalEntry['sale_gate'] = []
      if (q.scope === 'account') reason = this.engine.walletProvider ? null : 'wallet_provider_unwired'
      else if (!q.sold) reason = 'not_sold_on_deployment'
      else {
        // One parameter set per family, from the active release (fitted on every asset of its dataset, pooled).
        const params = this.engine.fittedFor(q.id)?.params as { status?: string; sale_gate?: SaleGate | null } | undefined
        const g = params?.status === 'ok' ? (params.sale_gate ?? null) : null
        if (g) gates.push({ asset: 'pooled', status: g.status, reason: g.reason, measured: gateSummary(g), holdout_start: g.holdout_start, n_scored: g.n_scored, bss: g.bss, bss_ci: g.bss_ci, one_feature_bss: g.one_feature_bss })
        if (!params) reason = this.engine.release.refusal(q.id) ?? 'model_not_fitted'
        else if (params.status !== 'ok') reason = 'sample_below_floor'
        else if (g && g.status !== 'sold') reason = `not_sold:${g.reason}`
      }
      return { question_id: q.id, label: q.label, available: reason === null, reason, sale_gate: gates }
    })
    const sample_hours_by_asset: Record<string, number> = {}
    if (now !== null) for (const a of assets) sample_hours_by_asset[a] = this.live.state.snapshot(a, now).features.history_hours ?? 0
    return { questions, sample_hours_by_asset, release: this.engine.release.status() }
  }
}
