/**
 * The paid market surfaces of the MarketData part: the liquidation surface, the funding snapshot, funding per asset
 * and the funding-opportunities scan, over the MarketState stream processor and the decision engine.
 *
 * Spec (Paid intelligence routes): "GET /v1/liquidation/{asset} | perp.liquidations | liquidation surface or
 * unavailability"; "GET /v1/funding | perp.funding | funding snapshot"; "GET /v1/funding/{asset} | signals.evaluate |
 * S06 and S07 decisions, basis, execution risk, assumptions"; "GET /v1/funding/opportunities | signals.evaluate | S06
 * scan with assumptions". "When a provider is not wired or down, paid wallet and market routes answer 503
 * PROVIDER_DOWN." Assumptions block: "economics_modeled is always the string 'none'; raw context, never a profit
 * claim; tool output is scanned for banned profit language".
 *
 * - Decisions go through the DecisionService (EngineServices.decide): evaluated now, appended to the ledger only
 *   through the call's unit of work (ctx.unit, passed here as `unit`), i.e. once the payment settled; a re-served identical decision
 *   writes nothing. An answer whose every decision was re-served is marked `reserved` (not charged as new rows).
 * - A market the stream never carried (no data at all) is 503 PROVIDER_DOWN, never an empty answer; stale inputs are
 *   served with their freshness stated (meta.state 'degraded').
 * - Every output passes the profit-language scanner before it is returned; a violation is logged and answered
 *   INTERNAL, so the handler fails and nothing is charged or recorded.
 * - Provenance is the ticks' own: synthetic tapes say 'simulated' (venue 'simulated'); the recorded venue tapes carry
 *   no liquidation feed (../shared/tapes/README.md, What is missing), so their surface is unavailable.
 */
import type { Logger } from 'pino'
import { childLogger } from '../../common/logger.ts'
import { CANONICAL_ASSETS, isoMs } from '../../ingest/Tick.ts'
import { fundingPerHour, NEUTRAL_FUNDING_PER_HOUR } from '../../pipeline/features/funding.ts'
import { stalenessBudgetMs } from '../../pipeline/features/stalenessBudgets.ts'
import { LIQ_HOURS_REQUIRED, type AssetMarket, type MarketInput, type MarketState, type Observed } from '../../pipeline/MarketState.ts'
import type { Freshness } from '../../pipeline/features/FeatureSnapshot.ts'
import type { PaidCall } from '../../pipeline/journal/PaidCall.ts'
import type { UnitOfWork } from '../../pipeline/journal/UnitOfWork.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import type { CanonicalAsset } from '../../common/schema.ts'
import type { DecisionService } from '../../engine/DecisionService.ts'
import type { DecisionRead, DecisionRecord } from '../../engine/schemas.ts'
import type { MarketRead } from './MarketData.ts'
import type { PaidMarketData } from './MarketServices.ts'
import { assertNoProfitLanguage } from './profitLanguage.ts'
import { venueOfSource } from './ReplayUniverseSource.ts'
import { HOUR_MS } from '../../common/time.ts'
import { REFUSAL_KINDS } from '../../models/QuestionModel.ts'


/**
 * The liquidation surface window: 24 h, the same window the readiness rule counts (spec Limits: "24 hourly
 * observations per market"), so a surface is served only over a window the tape covers hour by hour.
 */
export const LIQUIDATION_WINDOW = '24h'
export const LIQUIDATION_WINDOW_MS = 24 * HOUR_MS
/** Staleness budget of the liquidation tape: one hourly observation plus 15 minutes (the funding rule's slack). */
export const LIQUIDATION_STALENESS_BUDGET_MS = HOUR_MS + 15 * 60_000
/** Settlement interval assumed for a schedule when no settlement was seen (the venue's hourly funding). */
const DEFAULT_FUNDING_INTERVAL_HOURS = 1

const REFUSALS = new Set<string>(REFUSAL_KINDS)

/** Inputs of the funding-per-asset context (funding, basis, execution risk). */
const FUNDING_CONTEXT_INPUTS: readonly MarketInput[] = ['funding', 'mark', 'index', 'book']
/** Inputs of one row of the opportunities scan (funding and basis). */
const SCAN_INPUTS: readonly MarketInput[] = ['funding', 'mark', 'index']

export const FUNDING_ASSUMPTIONS = {
  economics_modeled: 'none',
  content: 'raw_context',
  funding_unit: 'fraction per hour as the venue reports it; a venue settling every 8 hours has its rate divided by 8',
  basis_definition: 'basis_bps = (perp mark - index) / index x 10,000',
  neutral_funding_per_hour: NEUTRAL_FUNDING_PER_HOUR,
  not_modeled: ['fees', 'slippage and market impact', 'margin and leverage', 'borrow costs', 'liquidation', 'funding changes after this snapshot', 'execution'],
  note: 'Venue figures and recorded decisions as observed. Nothing here states what a position would return.',
} as const

export interface PaidMarketServicesOptions {
  state: MarketState
  /** The decision engine (EngineServices); null: the decision surfaces answer 503 SERVICE_UNWIRED. */
  decisions: DecisionService | null
  logger?: Logger
}

interface FundingRow {
  asset: string
  venue: string | null
  rate: number | null
  unit: 'fraction_per_hour'
  rate_kind: 'predicted' | 'settled' | null
  interval_hours: number | null
  next_funding_at: string | null
  next_funding_basis: 'predicted' | 'venue_schedule' | null
  last_settlement: { rate_per_hour: number; settled_at: string; premium: number | null } | null
  provenance: Provenance | null
}

interface Provenance {
  source: string
  provider: string
  timestamp: string
  received_at: string
  age_ms: number
  quality: 'real' | 'degraded' | 'simulated'
}

export class PaidMarketServices implements PaidMarketData {
  readonly #state: MarketState
  #decisions: DecisionService | null
  readonly #log: Logger

  constructor(options: PaidMarketServicesOptions) {
    this.#state = options.state
    this.#decisions = options.decisions
    this.#log = options.logger ?? childLogger('paid-market')
  }

  /** Wires the decision engine once it exists (`svc start` opens the market state before the engine). */
  attachDecisions(engine: DecisionService): void {
    this.#decisions = engine
  }

  /**
   * Spec (Liquidation surface): available when the market's liquidation tape has 24/24 hourly observations; the
   * surface sums the liquidation records in (now − 24 h, now] by the side that was liquidated.
   */
  async liquidationSurface(asset: CanonicalAsset, _payment: PaidCall): Promise<MarketRead> {
    this.#market(asset) // 503 when the stream never carried the asset
    const hours = Math.min(this.#state.liqHours(asset) ?? 0, LIQ_HOURS_REQUIRED)
    const w = this.#state.liquidations(asset, LIQUIDATION_WINDOW_MS)!
    const freshness: Freshness[] = []
    if (w.newest) {
      const age = Math.max(0, w.to - w.newest.time)
      freshness.push({
        input: 'liquidations',
        ok: age <= LIQUIDATION_STALENESS_BUDGET_MS && w.newest.provenance.quality !== 'degraded',
        staleness_budget_ms: LIQUIDATION_STALENESS_BUDGET_MS,
        age_ms: age,
        last_success_at: isoMs(w.newest.time),
      })
    }
    if (hours < LIQ_HOURS_REQUIRED) {
      const data = {
        asset,
        available: false as const,
        reason: `liquidation_tape_hours_below_${LIQ_HOURS_REQUIRED} (${hours}/${LIQ_HOURS_REQUIRED})`,
        hours_observed: hours,
        hours_required: LIQ_HOURS_REQUIRED,
      }
      return this.#clean('liquidation', { data, state: 'unavailable', freshness, data_sources: w.sources })
    }
    const newest = w.newest!
    const data = {
      asset,
      venue: venueOfSource(newest.provenance.source),
      window: LIQUIDATION_WINDOW,
      available: true as const,
      surface: { window: LIQUIDATION_WINDOW, total_usd: w.total_usd, longs_usd: w.longs_usd, shorts_usd: w.shorts_usd, count: w.count },
      hours_observed: hours,
      hours_required: LIQ_HOURS_REQUIRED,
      window_start: isoMs(w.from),
      window_end: isoMs(w.to),
      provenance: this.#provenance({ time: newest.time, provenance: newest.provenance, value: null }, w.to),
    }
    return this.#clean('liquidation', { data, state: stateOf(freshness), freshness, data_sources: w.sources })
  }

  /** Spec (Funding snapshot): "{ funding: [{ asset, venue, rate, next_funding_at, provenance }] } for each canonical asset". */
  async fundingSnapshot(_payment: PaidCall): Promise<MarketRead> {
    const carried = CANONICAL_ASSETS.filter((a) => this.#state.asset(a) !== null)
    if (carried.length === 0) throw noMarketData(CANONICAL_ASSETS.join(', '))
    const rows = CANONICAL_ASSETS.map((a) => this.#fundingRow(a))
    const freshness = CANONICAL_ASSETS.flatMap((a) => this.#fundingFreshness(a))
    return this.#clean('funding', { data: { funding: rows }, state: stateOf(freshness), freshness, data_sources: sourcesOf(rows) })
  }

  /** Spec (Funding per asset): the funding row, the S06 and S07 decisions, basis, execution risk and assumptions. */
  async fundingAsset(asset: CanonicalAsset, payment: PaidCall, unit: UnitOfWork): Promise<MarketRead> {
    const m = this.#market(asset)
    const engine = this.#engine()
    const funding = this.#fundingRow(asset)
    const s06 = await engine.decide({ asset, chain: 'base', question_id: 'S06_funding_anomaly', subject: null }, payment, unit)
    const s07 = await engine.decide({ asset, chain: 'base', question_id: 'S07_funding_persistence', subject: null }, payment, unit)
    const freshness = this.#state.freshness(asset, FUNDING_CONTEXT_INPUTS).map(({ quality: _q, ...f }) => f)
    const data = {
      asset,
      venue: funding.venue ?? venueOfMarket(m),
      funding,
      decisions: { S06_funding_anomaly: s06.record, S07_funding_persistence: s07.record },
      basis: basisOf(m),
      execution_risk: executionRiskOf(m),
      assumptions: FUNDING_ASSUMPTIONS,
    }
    return this.#clean('funding', {
      data,
      state: stateOf(freshness),
      freshness,
      data_sources: [...new Set([...sourcesOfMarket(m), ...s06.data_sources, ...s07.data_sources])].sort(),
      ...decisionFacts([s06, s07]),
    })
  }

  /** Spec (Funding opportunities): an S06 scan over the canonical assets the stream carries. */
  async fundingOpportunities(payment: PaidCall, unit: UnitOfWork): Promise<MarketRead> {
    const carried = CANONICAL_ASSETS.filter((a) => this.#state.asset(a) !== null)
    if (carried.length === 0) throw noMarketData(CANONICAL_ASSETS.join(', '))
    const engine = this.#engine()
    const reads: DecisionRead[] = []
    const opportunities: Array<{ asset: string; funding_bps: number | null; basis_bps: number | null; decision: DecisionRecord }> = []
    for (const asset of carried) {
      const m = this.#state.asset(asset)!
      const read = await engine.decide({ asset, chain: 'base', question_id: 'S06_funding_anomaly', subject: null }, payment, unit)
      reads.push(read)
      const rate = this.#fundingRow(asset).rate
      opportunities.push({ asset, funding_bps: rate === null ? null : rate * 1e4, basis_bps: basisOf(m).basis_bps, decision: read.record })
    }
    const freshness = CANONICAL_ASSETS.flatMap((a) =>
      this.#state.asset(a) === null
        ? this.#fundingFreshness(a)
        : this.#state.freshness(a, SCAN_INPUTS).map(({ quality: _q, input, ...f }) => ({ input: `${a}:${input}`, ...f })),
    )
    const sources = [...new Set(carried.flatMap((a) => sourcesOfMarket(this.#state.asset(a)!)).concat(reads.flatMap((r) => r.data_sources)))].sort()
    return this.#clean('funding', {
      data: { opportunities, assumptions: { ...FUNDING_ASSUMPTIONS, funding_unit: `${FUNDING_ASSUMPTIONS.funding_unit}; funding_bps is basis points per hour` } },
      state: stateOf(freshness),
      freshness,
      data_sources: sources,
      ...decisionFacts(reads),
    })
  }

  // ------------------------------------------------------------ parts

  /** The market of a canonical asset, or 503 PROVIDER_DOWN when the stream never carried it. */
  #market(asset: CanonicalAsset): AssetMarket {
    const m = this.#state.asset(asset)
    if (!m) throw noMarketData(asset)
    return m
  }

  #engine(): DecisionService {
    if (this.#decisions) return this.#decisions
    throw new ServiceError('PROVIDER_DOWN', {
      message: 'The decision engine is not wired on this deployment.',
      detail: { reason: 'SERVICE_UNWIRED', missing: 'engine' },
    })
  }

  /**
   * The rate accruing now (the venue's predicted funding, while its next_funding_at is ahead and it is not older
   * than the last settlement), else the last settled rate with the next settlement on the venue's schedule
   * (settlement instants are multiples of the interval since the epoch: hourly, or 00:00/08:00/16:00 UTC).
   */
  #fundingRow(asset: string): FundingRow {
    const m = this.#state.asset(asset)
    const now = this.#state.now()
    const settled = m?.funding ?? null
    const predicted = m?.predicted_funding ?? null
    const last_settlement = settled
      ? { rate_per_hour: fundingPerHour(settled.value.rate, settled.value.interval_hours), settled_at: isoMs(settled.time), premium: settled.value.premium }
      : null
    const live = predicted !== null && now !== null && Date.parse(predicted.value.next_funding_at) > now && (settled === null || predicted.time >= settled.time)
    if (live) {
      return {
        asset,
        venue: venueOfSource(predicted.provenance.source),
        rate: fundingPerHour(predicted.value.rate, predicted.value.interval_hours),
        unit: 'fraction_per_hour',
        rate_kind: 'predicted',
        interval_hours: predicted.value.interval_hours,
        next_funding_at: isoMs(Date.parse(predicted.value.next_funding_at)),
        next_funding_basis: 'predicted',
        last_settlement,
        provenance: this.#provenance(predicted, now),
      }
    }
    if (settled) {
      const intervalMs = settled.value.interval_hours * HOUR_MS
      const ref = now ?? settled.time
      return {
        asset,
        venue: venueOfSource(settled.provenance.source),
        rate: last_settlement!.rate_per_hour,
        unit: 'fraction_per_hour',
        rate_kind: 'settled',
        interval_hours: settled.value.interval_hours,
        next_funding_at: isoMs((Math.floor(ref / intervalMs) + 1) * intervalMs),
        next_funding_basis: 'venue_schedule',
        last_settlement,
        provenance: this.#provenance(settled, ref),
      }
    }
    return {
      asset, venue: m ? venueOfMarket(m) : null, rate: null, unit: 'fraction_per_hour', rate_kind: null, interval_hours: null,
      next_funding_at: null, next_funding_basis: null, last_settlement: null, provenance: null,
    }
  }

  /** Freshness of an asset's funding input ('BTC:funding'); an asset with no funding record at all is stated not ok. */
  #fundingFreshness(asset: string): Freshness[] {
    const f = this.#state.freshness(asset, ['funding'])
    if (f.length > 0) return f.map(({ quality: _q, input, ...rest }) => ({ input: `${asset}:${input}`, ...rest }))
    return [{ input: `${asset}:funding`, ok: false, staleness_budget_ms: stalenessBudgetMs('funding', DEFAULT_FUNDING_INTERVAL_HOURS * HOUR_MS), age_ms: null, last_success_at: null }]
  }

  #provenance(o: Observed<unknown>, now: number | null): Provenance {
    return {
      source: o.provenance.source,
      provider: o.provenance.provider,
      timestamp: isoMs(o.time),
      received_at: o.provenance.received_at,
      age_ms: Math.max(0, (now ?? o.time) - o.time),
      quality: o.provenance.quality,
    }
  }

  /** The profit-language scan over the whole answer (data and the labels meta repeats); a violation never leaves. */
  #clean(surface: string, read: MarketRead): MarketRead {
    assertNoProfitLanguage({ data: read.data, data_sources: read.data_sources, freshness: read.freshness }, surface, this.#log)
    return read
  }
}

function noMarketData(what: string): ServiceError {
  return new ServiceError('PROVIDER_DOWN', {
    message: `No market data for ${what} has reached the service.`,
    detail: { reason: 'NO_MARKET_DATA', asset: what, provider: 'tick-feed' },
  })
}

function stateOf(freshness: Freshness[]): string {
  return freshness.some((f) => !f.ok) ? 'degraded' : 'ok'
}

/** Not charged when every decision re-served a recorded one; a refusal answer when every decision is a refusal. */
function decisionFacts(reads: DecisionRead[]): { reserved: boolean; refusal: boolean } {
  return {
    reserved: reads.length > 0 && reads.every((r) => r.reserved === true),
    refusal: reads.length > 0 && reads.every((r) => REFUSALS.has(r.record.decision)),
  }
}

/** basis_bps = (mark − index) / index × 10,000; null without both. */
function basisOf(m: AssetMarket): { basis_bps: number | null; perp_mark: number | null; index: number | null } {
  const mark = m.mark?.value ?? null
  const index = m.index?.value ?? null
  return { basis_bps: mark !== null && index !== null && index > 0 ? ((mark - index) / index) * 1e4 : null, perp_mark: mark, index }
}

/**
 * top_of_book_depth_usd = best bid × its size + best ask × its size (the notional resting at the top level on both
 * sides); spread_bps = (ask − bid) / midpoint × 10,000. Null without a book.
 */
function executionRiskOf(m: AssetMarket): { top_of_book_depth_usd: number | null; spread_bps: number | null } {
  const b = m.book?.value
  if (!b || !(b.bid > 0) || !(b.ask >= b.bid)) return { top_of_book_depth_usd: null, spread_bps: null }
  const mid = (b.bid + b.ask) / 2
  return { top_of_book_depth_usd: b.bid * b.bid_size + b.ask * b.ask_size, spread_bps: ((b.ask - b.bid) / mid) * 1e4 }
}

function observedOf(m: AssetMarket): Array<Observed<unknown>> {
  const all: Array<Observed<unknown> | null> = [m.funding, m.predicted_funding, m.mark, m.index, m.book, m.mid, m.bar]
  return all.filter((o): o is Observed<unknown> => o !== null)
}

function sourcesOfMarket(m: AssetMarket): string[] {
  return [...new Set(observedOf(m).map((o) => o.provenance.source))].sort()
}

function venueOfMarket(m: AssetMarket): string {
  const o = observedOf(m)[0]
  return o ? venueOfSource(o.provenance.source) : 'unknown'
}

function sourcesOf(rows: FundingRow[]): string[] {
  return [...new Set(rows.flatMap((r) => (r.provenance ? [r.provenance.source] : [])))].sort()
}
