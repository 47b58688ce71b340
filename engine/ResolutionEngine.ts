/**
 * The resolution engine, a stream processor in event time: it keeps a TickHistory of the ticks it is fed, knows every
 * open clock (claims registered from the decisions it is told about: the ledger index at start, then each new
 * decision), and once an asset's event time passes a clock's horizon_end plus the late-data grace it re-derives the
 * event with the question's resolve() over the window built from the same ticks, and stages the outcome.
 *
 * Spec, What the service does 3: "When the horizon ends, a resolution engine re-derives the event from the same input
 * grammar and writes an outcome: obtains, not, or unresolvable. Unresolvable is a legal outcome and is never coerced
 * into not." Missing data after the grace: the question's resolve() answers unresolvable (incomplete window).
 *
 * - Grace: RESOLUTION_GRACE_MS (5 min, the same as the dataset builder's, so live outcomes equal the labels models
 *   were fitted on). Event time is per asset (one asset's ticks share a partition, so their order is the log's).
 * - resolved_at: the event time of the first tick of that asset past horizon_end + grace (deterministic on replay).
 * - Refusals are not resolved: they carry no claim, so they never enter calibration (docs/decisions.md).
 * - Idempotent: a clock that already has an outcome (in the ledger index or staged) is never resolved again.
 * - Bounded history, a function of the ticks alone: every 5 000 ticks the history drops what is older than a day before
 *   (the slowest asset's event time − the longest market horizon − the grace). A clock still open started after that
 *   (else its asset's event time would have passed its end + grace and resolved it), so no open window loses a row; and
 *   since the open clocks (which come from the ledger) do not enter the rule, a state restored from a snapshot and one
 *   rebuilt from the log hold the same rows (engine/EngineTickState.ts).
 * - The tick-derived part (history, per-asset event time, the prune phase) goes through the engine's state snapshot
 *   (dump()/prepareLoad()); the open clocks are rebuilt from the ledger at every start.
 */
import type { QuestionModel, Resolution } from '../models/QuestionModel.ts'
import { RESOLUTION_GRACE_MS } from '../models/Dataset.ts'
import { TickHistory } from '../pipeline/features/TickHistory.ts'
import { isoMs, tickTime, type Tick } from '../ingest/Tick.ts'
import type { LedgerDecision } from '../pipeline/records/decisionRecord.ts'
import type { LedgerOutcome } from '../pipeline/records/outcomeRecord.ts'
import { QUESTIONS } from '../models/questions/index.ts'
import type { DecisionLedger } from './DecisionLedger.ts'
import { isClaim } from './LedgerIndex.ts'
import { DAY_MS } from '../common/time.ts'


/** The one number a resolution record shows as `statistic` (the full measurement stays in statistic_detail). */
export const PRIMARY_STATISTIC: Readonly<Record<string, string>> = {
  S01_market_regime: 'log_return',
  S03_trend_continuation: 'close',
  S04_drawdown_risk: 'min_low',
  S05_volatility_expansion: 'realized_vol_per_hour',
  S06_funding_anomaly: 'max_abs_deviation_per_hour',
  S07_funding_persistence: 'rate_per_hour',
  S10_wallet_flow: 'net_flow_usd',
  S11_risk: 'liquidations',
}

interface PendingClock {
  decision: LedgerDecision
  start: number
  end: number
}

export interface ResolutionEngineOptions {
  ledger: DecisionLedger
  questions?: readonly QuestionModel[]
  graceMs?: number
}


/** The outcome row for a decision's resolution, as both resolvers (ticks and wallet provider) write it. */
export function outcomeRecord(d: LedgerDecision, r: Resolution, resolvedAt: number): LedgerOutcome {
    const key = PRIMARY_STATISTIC[d.question_id]
    const primary = r.statistic && key !== undefined ? r.statistic[key] : null
    return {
      v: 1,
      decision_id: d.decision_id,
      question_id: d.question_id,
      asset: d.asset,
      subject: d.subject,
      outcome: r.outcome,
      resolved_at: isoMs(resolvedAt),
      horizon_end: d.horizon_end,
      statistic: typeof primary === 'number' && Number.isFinite(primary) ? primary : null,
      statistic_detail: r.statistic === null ? null : Object.fromEntries(Object.entries(r.statistic).map(([k, v]) => [k, typeof v === 'number' && !Number.isFinite(v) ? null : v])),
      realized_choice: r.realized_choice,
      reason: r.reason,
    }
}

export class ResolutionEngine {
  readonly history = new TickHistory()
  readonly graceMs: number
  private readonly ledger: DecisionLedger
  private readonly questions: Map<string, QuestionModel>
  private readonly pending = new Map<string, PendingClock[]>()
  private readonly registered = new Set<string>()
  private readonly watermarks = new Map<string, number>()
  private observedSincePrune = 0
  /** The longest horizon of a tick-resolved question: how far back of the event time an open window can start. */
  private readonly longestHorizonMs: number
  resolvedCount = 0

  constructor(options: ResolutionEngineOptions) {
    this.ledger = options.ledger
    this.questions = new Map((options.questions ?? QUESTIONS).map((q) => [q.id, q]))
    this.graceMs = options.graceMs ?? RESOLUTION_GRACE_MS
    this.longestHorizonMs = Math.max(0, ...[...this.questions.values()].filter((q) => q.scope !== 'account').map((q) => q.horizonMs))
  }

  /**
   * Tracks a decision's clock (claims only; resolved or already tracked clocks are ignored). Account-scoped clocks
   * are not tick-resolvable: AccountResolver owns them.
   */
  register(d: LedgerDecision): void {
    if (this.questions.get(d.question_id)?.scope === 'account') return
    if (!isClaim(d) || this.registered.has(d.decision_id) || this.ledger.hasOutcome(d.decision_id)) return
    this.registered.add(d.decision_id)
    const clock = { decision: d, start: Date.parse(d.created_at), end: Date.parse(d.horizon_end) }
    const list = this.pending.get(d.asset)
    if (!list) this.pending.set(d.asset, [clock])
    else {
      // Keep each asset's list sorted by end, so advance() stops at the first clock not yet due.
      let i = list.length
      while (i > 0 && list[i - 1]!.end > clock.end) i--
      list.splice(i, 0, clock)
    }
  }

  openCount(): number {
    let n = 0
    for (const l of this.pending.values()) n += l.length
    return n
  }

  /** Feeds one tick into the history (call after advance() for the same tick). */
  observe(tick: Tick): void {
    this.history.ingest(tick)
    const t = tickTime(tick)
    if (t > (this.watermarks.get(tick.asset) ?? -Infinity)) this.watermarks.set(tick.asset, t)
    if (++this.observedSincePrune >= 5_000) {
      this.observedSincePrune = 0
      this.prune()
    }
  }

  /**
   * Resolves the clocks of `asset` that are due at event time `time` (time > horizon_end + grace) and stages their
   * outcomes; returns how many were staged. Call before feeding the tick at `time`.
   */
  advance(asset: string, time: number): number {
    const list = this.pending.get(asset)
    if (!list || list.length === 0) return 0
    let n = 0
    while (list.length > 0 && time > list[0]!.end + this.graceMs) {
      const clock = list.shift()!
      this.registered.delete(clock.decision.decision_id)
      if (this.ledger.hasOutcome(clock.decision.decision_id)) continue
      this.ledger.stageOutcome(this.resolve(clock, time))
      n++
    }
    this.resolvedCount += n
    return n
  }

  private resolve(clock: PendingClock, time: number): LedgerOutcome {
    const d = clock.decision
    const question = this.questions.get(d.question_id)
    let r: Resolution
    if (!question) r = { outcome: 'unresolvable', statistic: null, realized_choice: null, reason: 'question_unknown' }
    else {
      const window = this.history.window(d.asset, clock.start, clock.end)
      try {
        r = question.resolve(d.conditions, window)
      } catch {
        r = { outcome: 'unresolvable', statistic: null, realized_choice: null, reason: 'conditions_incomplete' }
      }
    }
    return outcomeRecord(d, r, time)
  }

  /**
   * Drops history no open clock can need: a day before the earliest start an open window can have (the slowest asset's
   * event time − the longest horizon − the grace; see the file comment).
   */
  prune(): void {
    let before = Infinity
    for (const w of this.watermarks.values()) before = Math.min(before, w)
    if (Number.isFinite(before)) this.history.prune(before - this.longestHorizonMs - this.graceMs - DAY_MS)
  }

  /** The tick-derived state: history, per-asset event time and the prune phase (plain values; see the file comment). */
  dumpTicks(): { history: ReturnType<TickHistory['dump']>; watermarks: Array<[string, number]>; observedSincePrune: number } {
    return { history: this.history.dump(), watermarks: [...this.watermarks].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)), observedSincePrune: this.observedSincePrune }
  }

  /** Validates a dumpTicks() value and returns the step that replaces the tick-derived state; throws having changed nothing. */
  prepareLoadTicks(raw: unknown): () => void {
    const d = raw as Partial<ReturnType<ResolutionEngine['dumpTicks']>> | null
    if (typeof d !== 'object' || d === null || !Array.isArray(d.history) || !Array.isArray(d.watermarks) || typeof d.observedSincePrune !== 'number') throw new Error('resolution state: fields')
    if (!d.watermarks.every((w) => Array.isArray(w) && typeof w[0] === 'string' && typeof w[1] === 'number')) throw new Error('resolution state: watermarks')
    const history = this.history.prepareLoad(d.history)
    const watermarks = d.watermarks
    const observed = d.observedSincePrune
    return () => {
      history()
      this.watermarks.clear()
      for (const [a, w] of watermarks) this.watermarks.set(a, w)
      this.observedSincePrune = observed
    }
  }
}
