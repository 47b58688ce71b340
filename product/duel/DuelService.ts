/**
 * The duel (spec, What the service does 6; Call and duel boards; States, Player call): a player locks one call per
 * clock before its horizon; when the clock resolves, one evaluator grades the call beside the house's frozen
 * probability; boards are read from the projection.
 *
 *   const duel = await DuelService.open({ log, ledger, now })   // ledger: the DuelLedger port (app/ServiceApp.ts)
 *   Server.start({ ..., services: { duel } })                  // the Arena subscribes to duel.events
 *   await duel.close()
 *
 * Where things live:
 * - calls and opt-ins are journals (pipeline/records/callRecord.ts) on the event log, followed into the CallBook; with
 *   `checkpoints` (issue 31) a start loads the book's newest valid snapshot and reads only the tail, a snapshot is
 *   written every `everyMs` and at close and the followers commit its positions (none while a lock or an opt-in of
 *   this process is unsettled: pipeline/state/CheckpointedFollowers.ts); without, the book is rebuilt at every start.
 *   A lock is staged in the paid call's unit of work, so it lands atomically with the payment's own
 *   records and never without them, and every refusal (CLOCK_CLOSED, CALL_ALREADY_LOCKED, unknown decision) is
 *   thrown before the payment is captured: nothing is charged;
 * - grades are derived, not written: the outcome bus replays every resolution on subscribe and after a restart, and a
 *   grade is a pure function of the call and the outcome (grading.ts), so a restart rebuilds the same grades and a
 *   resolution delivered twice grades once (CallBook).
 */
import { randomUUID } from 'node:crypto'
import { ServiceError } from '../../common/ServiceError.ts'
import { childLogger } from '../../common/logger.ts'
import { Channel, type ResolutionEvent, type Subscription } from '../../engine/LedgerBus.ts'
import { isClaim } from '../../engine/LedgerIndex.ts'
import type { EventLog } from '../../pipeline/log/EventLog.ts'
import { Journal } from '../../pipeline/journal/Journal.ts'
import type { PaidCall } from '../../pipeline/journal/PaidCall.ts'
import type { UnitOfWork } from '../../pipeline/journal/UnitOfWork.ts'
import { CALL_OPT_INS, CALLS, CALL_RECORD_VERSION, callId, type CallRow, type OptInRow } from '../../pipeline/records/callRecord.ts'
import type { LedgerDecision } from '../../pipeline/records/decisionRecord.ts'
import { DEFAULT_PARTITIONS, topicNames, type TopicNames } from '../../pipeline/topics.ts'
import { CheckpointedFollowers, followOwnWrites } from '../../pipeline/state/CheckpointedFollowers.ts'
import type { RestoredState } from '../../pipeline/state/restoreState.ts'
import type { CheckpointSettings } from '../../pipeline/state/StateStore.ts'
import { CALL_BOOK_SCHEMA, CallBook } from './CallBook.ts'
import type { CallEvents, CallGraded, CallLocked } from './CallEvents.ts'
import type { Duel, LockCallInput } from './Duel.ts'
import { lockedEvent, type OutcomeFacts } from './grading.ts'
import { handleOf } from './handles.ts'
import {
  BOARD_MIN_GRADED, CROWD_MIN_GRADED, RECENT_CALLS,
  type AggregateBoard, type BoardWindow, type CallView, type CrowdBenchmark, type LockedCall, type OptInView, type PersonalScoreboard, type PublicBoard,
} from './schemas.ts'
import { DAY_MS } from '../../common/time.ts'

const log = childLogger('duel')
const WINDOW_MS: Record<Exclude<BoardWindow, 'all'>, number> = { '30d': 30 * DAY_MS, '7d': 7 * DAY_MS }

/** What the duel needs of the decision ledger: a narrow port the composition root fills from the engine. */
export interface DuelLedger {
  /** A ledger decision by (lower-case) id; null when unknown. */
  decision(decisionId: string): LedgerDecision | null
  /** The event time a question's clocks are measured in (ms); null before any data reached the engine. */
  clockNow(questionId: string): number | null
  /** The outcome bus (engine/LedgerBus.ts): every resolution, replayed on subscribe, at least once. */
  readonly resolutions: Pick<Channel<ResolutionEvent>, 'subscribe'>
}

export interface DuelOptions {
  log: EventLog
  ledger: DuelLedger
  /** The present the boards' windows end at, in the clocks' event time (ms). */
  now: () => number
  /** Wall clock for opt-in records (default Date.now). */
  wallNow?: () => number
  names?: Pick<TopicNames, 'calls' | 'callOptIns'>
  partitions?: number
  /** Consumer group prefix of the followers (default 'svc.duel'); also the snapshot's store name. */
  groupId?: string
  /** Snapshot the book and start from the newest valid snapshot (absent: rebuild from the log at every open). */
  checkpoints?: CheckpointSettings | null
}

const iso = (ms: number) => new Date(ms).toISOString()
/** Means as published: sums accumulate in arrival order, so the last bits could differ between two rebuilds. */
const mean = (sum: number, n: number): number | null => (n === 0 ? null : Math.round((sum / n) * 1e9) / 1e9)

/** One opted-in payer's row on the call boards. */
interface Standing {
  payer: string
  handle: string
  calls_graded: number
  calls_correct: number
  accuracy: number
}

/** Best accuracy first, then more graded calls, then the handle (a stable order for equal records). */
function byStanding<E extends { accuracy: number; calls_graded: number; handle: string }>(a: E, b: E): number {
  return b.accuracy - a.accuracy || b.calls_graded - a.calls_graded || (a.handle < b.handle ? -1 : a.handle > b.handle ? 1 : 0)
}

export class DuelService implements Duel {
  readonly book = new CallBook()
  readonly events: CallEvents
  private readonly locked: Channel<CallLocked>
  private readonly graded: Channel<CallGraded>
  /** Calls staged in a paid call's unit of work and not durable yet: a concurrent twin is refused, not charged twice. */
  private readonly pending = new Set<string>()
  private followers: CheckpointedFollowers | null = null
  private subscription: Subscription | null = null
  private readonly boards = new Map<string, { version: number; at: number; board: unknown }>()

  private constructor(
    private readonly options: DuelOptions,
    readonly calls: Journal<typeof CALLS.schema>,
    readonly optIns: Journal<typeof CALL_OPT_INS.schema>,
  ) {
    this.locked = new Channel<CallLocked>('call.locked', () => [...this.book.allCalls()].map(lockedEvent), (e) => e.call_id)
    this.graded = new Channel<CallGraded>('call.graded', () => [...this.book.allGrades()], (e) => e.call_id)
    this.events = { locked: this.locked, graded: this.graded }
  }

  /** Rebuilds the book from the journals, then grades from the outcome bus (which replays every resolution). */
  static async open(options: DuelOptions): Promise<DuelService> {
    const names = { ...topicNames(), ...(options.names ?? {}) }
    const partitions = options.partitions ?? DEFAULT_PARTITIONS
    const calls = await Journal.open({ log: options.log, def: CALLS, topic: names.calls, partitions })
    const optIns = await Journal.open({ log: options.log, def: CALL_OPT_INS, topic: names.callOptIns, partitions })
    const duel = new DuelService(options, calls, optIns)
    const group = options.groupId ?? 'svc.duel'
    try {
      duel.followers = await CheckpointedFollowers.open({
        log: options.log,
        store: { name: group, schema: CALL_BOOK_SCHEMA, rows: () => duel.book.rows(), load: (rows) => duel.book.load(rows) },
        checkpoints: options.checkpoints,
        logger: log,
        journals: [
          followOwnWrites(calls, { group: `${group}.calls`, what: 'call', logger: log }, (row) => duel.applyCall(row)),
          followOwnWrites(optIns, { group: `${group}.opt_ins`, what: 'opt-in', logger: log }, (row) => duel.book.setConsent(row)),
        ],
      })
    } catch (err) {
      await duel.close()
      throw err
    }
    // Synchronous handler: replayed resolutions grade within subscribe(), so the book is whole before serving.
    duel.subscription = options.ledger.resolutions.subscribe('duel', (e) => duel.resolve(e))
    log.info(duel.book.size, duel.restored?.restored ? 'duel book restored from its snapshot and the log tail' : 'duel book rebuilt from the log')
    return duel
  }

  /** How the book started: restored from its snapshot, or rebuilt and why (null without checkpoints). */
  get restored(): RestoredState | null {
    return this.followers?.restored ?? null
  }

  private applyCall(row: CallRow): void {
    const { added, graded } = this.book.addCall(row)
    if (!added) return
    this.locked.publish(lockedEvent(row))
    if (graded) this.graded.publish(graded)
  }

  private resolve(e: ResolutionEvent): void {
    const facts: OutcomeFacts = { decision_id: e.outcome.decision_id, outcome: e.outcome.outcome, realized_choice: e.outcome.realized_choice, resolved_at: e.outcome.resolved_at }
    for (const g of this.book.resolve(facts)) this.graded.publish(g)
  }

  // ------------------------------------------------------------ locking

  /**
   * The refusals of a lock, in the spec's order: unknown decision (null), a refusal decision (no claim, no clock), a
   * clock past horizon_end or already resolved (CLOCK_CLOSED), an earlier call by this payer (CALL_ALREADY_LOCKED).
   * Run before the payment challenge (the route's precheck, with payer null) and again under the reservation. The
   * precheck leaves out the one refusal about a payer (CALL_ALREADY_LOCKED): before the proof it would tell anyone
   * whether another payer has called this clock (issue 29); under the reservation a proven payer gets it, uncharged.
   */
  checkCall(input: { payer: string; decision_id: string }): { decision: LedgerDecision; now: number | null; call_id: string } | null
  checkCall(input: { payer: null; decision_id: string }): { decision: LedgerDecision; now: number | null; call_id: null } | null
  checkCall(input: { payer: string | null; decision_id: string }): { decision: LedgerDecision; now: number | null; call_id: string | null } | null {
    const decision = this.options.ledger.decision(input.decision_id.toLowerCase())
    if (!decision) return null
    if (!isClaim(decision)) {
      throw new ServiceError('VALIDATION', {
        message: 'This decision is a refusal: the house made no claim, so there is no clock to call.',
        detail: { reason: 'NOT_A_CLAIM', field: '/body/decision_id', value: input.decision_id },
      })
    }
    const now = this.options.ledger.clockNow(decision.question_id)
    const resolved = this.book.resolved(decision.decision_id)
    if (resolved || (now !== null && now >= Date.parse(decision.horizon_end))) {
      throw new ServiceError('CLOCK_CLOSED', {
        detail: { decision_id: decision.decision_id, horizon_end: decision.horizon_end, resolved: resolved !== null, ...(now !== null ? { clock_time: iso(now) } : {}) },
      })
    }
    if (input.payer === null) return { decision, now, call_id: null }
    const id = callId(input.payer, decision.decision_id)
    const have = this.book.call(id)
    if (have || this.pending.has(id)) {
      throw new ServiceError('CALL_ALREADY_LOCKED', { detail: { call_id: id, decision_id: decision.decision_id, ...(have ? { locked_at: have.locked_at, call: have.call } : {}) } })
    }
    return { decision, now, call_id: id }
  }

  async lockCall(input: LockCallInput, payment: PaidCall, unit: UnitOfWork): Promise<LockedCall | null> {
    const payer = input.payer.toLowerCase()
    const checked = this.checkCall({ payer, decision_id: input.decision_id })
    if (!checked) return null
    const { decision: d, now, call_id } = checked
    const row: CallRow = {
      v: CALL_RECORD_VERSION,
      call_id,
      payer,
      decision_id: d.decision_id,
      question_id: d.question_id,
      asset: d.asset,
      subject: d.subject,
      call: input.call,
      call_probability: input.call_probability,
      house_probability: d.probability,
      choice_id: d.choice?.choice_id ?? null,
      locked_at: iso(now ?? this.options.now()),
      horizon_end: d.horizon_end,
      payment_id: payment.payment_id,
      payment_rail: payment.rail,
    }
    // Reserved synchronously (no await since the check), so a concurrent twin sees it and is refused before paying.
    this.pending.add(call_id)
    unit.add(this.calls, [row], {
      applied: () => {
        this.pending.delete(call_id)
        this.applyCall(row)
      },
      aborted: () => this.pending.delete(call_id),
    })
    return { payer, ...this.view(row) }
  }

  // ------------------------------------------------------------ reads

  private view(row: CallRow): CallView {
    const g = this.book.gradeOf(row.call_id)
    return {
      call_id: row.call_id,
      decision_id: row.decision_id,
      question_id: row.question_id,
      asset: row.asset,
      call: row.call,
      call_probability: row.call_probability,
      house_probability: row.house_probability,
      choice_id: row.choice_id,
      locked_at: row.locked_at,
      horizon_end: row.horizon_end,
      status: g ? g.status : 'locked',
      outcome: g ? g.outcome : null,
      correct: g ? g.correct : null,
      house_correct: g ? (g.house_correct ?? null) : null,
      player_brier: g ? g.player_brier : null,
      house_brier: g ? g.house_brier : null,
      graded_at: g ? g.graded_at : null,
    }
  }

  callsOf(payerAddress: string): CallView[] {
    return (this.book.payer(payerAddress.toLowerCase())?.calls ?? []).map((c) => this.view(c))
  }

  scoreboard(payerAddress: string): PersonalScoreboard {
    const payer = payerAddress.toLowerCase()
    const t = this.book.payer(payer)
    const calls = t?.calls.length ?? 0
    const graded = t?.graded ?? 0
    const voided = t?.void ?? 0
    const recent: CallView[] = []
    for (let i = calls - 1; i >= 0 && recent.length < RECENT_CALLS; i--) recent.push(this.view(t!.calls[i]!))
    return {
      payer,
      opt_in: this.book.optedIn(payer),
      calls,
      graded,
      open: calls - graded - voided,
      void: voided,
      correct: t?.correct ?? 0,
      house_correct: t?.house_correct ?? 0,
      player_accuracy: mean(t?.correct ?? 0, graded),
      house_accuracy: mean(t?.house_correct ?? 0, graded),
      player_brier: mean(t?.sum_player_brier ?? 0, graded),
      house_brier: mean(t?.sum_house_brier ?? 0, graded),
      recent: recent.sort((a, b) => (a.locked_at < b.locked_at ? 1 : a.locked_at > b.locked_at ? -1 : 0)),
    }
  }

  /** Opted-in payers' graded/correct counts, all time or graded since `since`. */
  private standings(since: number | null): Standing[] {
    const out: Standing[] = []
    for (const payer of this.book.optedInPayers()) {
      const t = this.book.payer(payer)
      if (!t) continue
      let graded = t.graded
      let correct = t.correct
      if (since !== null) {
        graded = 0
        correct = 0
        for (const c of t.calls) {
          const g = this.book.gradeOf(c.call_id)
          if (!g || g.status !== 'graded' || Date.parse(g.graded_at) < since) continue
          graded++
          if (g.correct) correct++
        }
      }
      if (graded < BOARD_MIN_GRADED) continue
      out.push({ payer, handle: handleOf(payer), calls_graded: graded, calls_correct: correct, accuracy: mean(correct, graded)! })
    }
    return out.sort(byStanding)
  }

  private cachedStandings(window: BoardWindow): { since: number | null; rows: Standing[] } {
    // A windowed board moves with time as well as with the book: kept at most a minute of the clocks' time.
    const now = window === 'all' ? 0 : this.options.now()
    const at = Math.floor(now / 60_000)
    const hit = this.boards.get(window)
    if (hit && hit.version === this.book.version && hit.at === at) return hit.board as { since: number | null; rows: Standing[] }
    const since = window === 'all' ? null : now - WINDOW_MS[window]
    const board = { since, rows: this.standings(since) }
    this.boards.set(window, { version: this.book.version, at, board })
    return board
  }

  aggregateBoard(payerAddress: string): AggregateBoard {
    const payer = payerAddress.toLowerCase()
    const rows = this.cachedStandings('all').rows
    const rank = rows.findIndex((r) => r.payer === payer)
    return {
      min_graded: BOARD_MIN_GRADED,
      entries: rows.map((r, i) => ({ rank: i + 1, payer: r.payer, handle: r.handle, calls_graded: r.calls_graded, calls_correct: r.calls_correct, accuracy: r.accuracy })),
      you: { payer, opt_in: this.book.optedIn(payer), calls_graded: this.book.payer(payer)?.graded ?? 0, rank: rank < 0 ? null : rank + 1 },
    }
  }

  publicBoard(window: BoardWindow): PublicBoard {
    const { since, rows } = this.cachedStandings(window)
    return {
      window,
      since: since === null ? null : iso(since),
      min_graded: BOARD_MIN_GRADED,
      entries: rows.map((r, i) => ({ rank: i + 1, handle: r.handle, accuracy: r.accuracy, calls_graded: r.calls_graded, calls_correct: r.calls_correct })),
    }
  }

  async optIn(payerAddress: string, optIn: boolean): Promise<OptInView> {
    const payer = payerAddress.toLowerCase()
    const row: OptInRow = { id: `oi_${randomUUID()}`, payer, opt_in: optIn, recorded_at: iso((this.options.wallNow ?? Date.now)()) }
    await this.optIns.append([row])
    this.book.setConsent(row)
    return { payer, opt_in: optIn, recorded_at: row.recorded_at }
  }

  /**
   * Spec (Intelligence snapshot): "The crowd benchmark is the mean over graded player calls per question with at least
   * 10 calls, scored on the same resolved pairs; below its floor the line is absent." Void calls have no pair.
   */
  crowdBenchmark(): CrowdBenchmark | null {
    let n = 0
    let player = 0
    let house = 0
    for (const q of this.book.questionTotals().values()) {
      if (q.n < CROWD_MIN_GRADED) continue
      n += q.n
      player += q.sum_player_brier
      house += q.sum_house_brier
    }
    return n === 0 ? null : { brier: mean(player, n)!, n, house_brier: mean(house, n)! }
  }

  async close(): Promise<void> {
    this.subscription?.unsubscribe()
    this.subscription = null
    await this.followers?.stop().catch((err: unknown) => log.warn({ err }, 'stopping the duel followers failed'))
    this.followers = null
    await this.calls.close()
    await this.optIns.close()
  }
}
