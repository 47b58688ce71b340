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
 *   resolution delivered twice grades once (CallBook);
 * - memory is bounded (issue 31): the book keeps running totals, and only the calls not graded yet plus those graded
 *   inside `hotWindowMs` of the newest resolution; a payer's older calls are read back from the sealed Parquet
 *   (ColdCalls.ts, `cold`), so a history page or the scoreboard's recent calls answer the same body either way.
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
import { CALL_BOOK_SCHEMA, CallBook, markAt, markOk } from './CallBook.ts'
import { HistoryGrades } from './HistoryGrades.ts'
import { byResolution, type CallEvents, type CallGraded, type CallHistoryFold, type CallLocked } from './CallEvents.ts'
import type { Duel, LockCallInput } from './Duel.ts'
import { callView, grade, lockedEvent, type OutcomeFacts } from './grading.ts'
import { ColdCalls, type CallPosition, type CallsTableReader } from './ColdCalls.ts'
import { handleOf } from './handles.ts'
import {
  BOARD_MIN_GRADED, CROWD_MIN_GRADED, RECENT_CALLS,
  type AggregateBoard, type BoardWindow, type CallView, type CrowdBenchmark, type LockedCall, type OptInView, type PersonalScoreboard, type PublicBoard,
} from './schemas.ts'
import { DAY_MS } from '../../common/time.ts'

const log = childLogger('duel')
const WINDOW_MS: Record<Exclude<BoardWindow, 'all'>, number> = { '30d': 30 * DAY_MS, '7d': 7 * DAY_MS }
/** How far back the book keeps per-payer grade marks: the longest windowed board. */
const MARKS_WINDOW_MS = Math.max(...Object.values(WINDOW_MS))

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
  /**
   * How long a graded call stays in memory after its grade, in the clocks' event time (SVC_HOT_WINDOW_DAYS; absent:
   * every call stays). It must cover the Parquet sink's lag: an evicted call is read back from the sealed files only.
   */
  hotWindowMs?: number
  /** The catalog's views (record/RecordDb.ts) a call that left memory is read from; absent: only hot calls are listed. */
  cold?: CallsTableReader | null
  /** Whether calls past the window may leave memory now (app: the sink is sealing, or a start is folding). Absent: always. */
  evictable?: () => boolean
}

const iso = (ms: number) => new Date(ms).toISOString()
/** Means as published, rounded to 1e-9. */
const mean = (sum: number, n: number): number | null => (n === 0 ? null : Math.round((sum / n) * 1e9) / 1e9)
/** A mean of Brier sums kept in integers of 1e-12 (CallBook). */
const meanE12 = (sum: bigint, n: number): number | null => mean(Number(sum) / 1e12, n)
const newerFirst = (a: CallView, b: CallView): number =>
  a.locked_at < b.locked_at ? 1 : a.locked_at > b.locked_at ? -1 : a.call_id < b.call_id ? 1 : a.call_id > b.call_id ? -1 : 0

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
  readonly book: CallBook
  readonly events: CallEvents
  /** Reads of calls that left memory (null without a `cold` reader). */
  readonly cold: ColdCalls | null
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
    this.book = new CallBook({ hotWindowMs: options.hotWindowMs ?? Infinity, marksWindowMs: MARKS_WINDOW_MS, ...(options.evictable ? { evictable: options.evictable } : {}) })
    this.cold = options.cold ? new ColdCalls(options.cold) : null
    this.locked = new Channel<CallLocked>('call.locked', () => [...this.book.hotCalls()].map(lockedEvent), (e) => e.call_id)
    this.graded = new Channel<CallGraded>('call.graded', () => [...this.book.hotGrades()], (e) => e.call_id)
    this.events = { locked: this.locked, graded: this.graded, history: (fold) => this.history(fold), hotSince: () => this.book.hotSince(), newestGrade: () => this.book.newestGrade() }
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

  /**
   * Every call and grade (CallEvents.history): the hot ones from memory when none left it; else every call of the
   * journal (first record per id, as the book admits them) graded on the outcome bus's replay of every resolution.
   * The locks are handed over as the journal is read, in its order; the grades are held compactly (HistoryGrades) until
   * every call is read, then handed over in resolution order. A year's rebuild read the whole journal and held a
   * million records with their two events each at once (issue 31: most of its 3.1 GiB peak).
   */
  async history(fold: CallHistoryFold): Promise<void> {
    const since = fold.since
    const size = this.book.size
    if (size.hot === size.calls) {
      const graded = [...this.book.hotGrades()]
      const old = new Set(since === null ? [] : graded.filter((g) => Date.parse(g.graded_at) < since).map((g) => g.call_id))
      for (const row of this.book.hotCalls()) if (!old.has(row.call_id)) fold.locked(lockedEvent(row))
      for (const g of graded.sort(byResolution)) if (!old.has(g.call_id)) fold.graded(g)
      return
    }
    const grades = await this.historyLocks(fold)
    grades.handOver((g) => fold.graded(g))
  }

  /**
   * history()'s read of the journal: each lock handed over, the grades returned. A method of its own so that the set
   * of a million call ids read is garbage before the grades are folded, not held by history()'s scope through them.
   */
  private async historyLocks(fold: CallHistoryFold): Promise<HistoryGrades> {
    const since = fold.since
    const outcomes = new Map<string, OutcomeFacts>()
    // The bus replays every resolution synchronously within subscribe().
    this.options.ledger.resolutions
      .subscribe('duel.history', (e) => {
        if (!outcomes.has(e.outcome.decision_id)) outcomes.set(e.outcome.decision_id, { decision_id: e.outcome.decision_id, outcome: e.outcome.outcome, realized_choice: e.outcome.realized_choice, resolved_at: e.outcome.resolved_at })
      })
      .unsubscribe()
    const seen = new Set<string>()
    const grades = new HistoryGrades()
    await this.calls.scanInOrder((row) => {
      if (seen.has(row.call_id)) return
      seen.add(row.call_id)
      const o = outcomes.get(row.decision_id)
      if (o && since !== null && Date.parse(o.resolved_at) < since) return
      fold.locked(lockedEvent(row))
      if (o) grades.add(row, o)
    })
    return grades
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
    return callView(row, this.book.gradeOf(row.call_id))
  }

  /**
   * The payer's calls newest first ((locked_at, call_id) descending), strictly after `before`, at most `limit`, and
   * how many it has in all. The hot ones come from memory; when some left it, the sealed Parquet gives the rest (a
   * call in both is shown from memory: it may be graded there before its outcome is sealed).
   */
  async callsPage(payerAddress: string, before: CallPosition | null, limit: number): Promise<{ total: number; items: CallView[] }> {
    const payer = payerAddress.toLowerCase()
    const t = this.book.payer(payer)
    if (!t) return { total: 0, items: [] }
    const after = (v: CallView) => before === null || v.locked_at < before[0] || (v.locked_at === before[0] && v.call_id < before[1])
    const hot = t.hot.map((c) => this.view(c)).filter(after)
    let items = hot
    if (t.count > t.hot.length && this.cold) {
      const inMemory = new Set(hot.map((v) => v.call_id))
      const sealed = (await this.cold.page(payer, before, limit)).filter((v) => !inMemory.has(v.call_id))
      items = [...hot, ...sealed]
    }
    return { total: t.count, items: items.sort(newerFirst).slice(0, limit) }
  }

  /** A call by id, from memory or, once it left it, from the sealed Parquet; null when unknown. */
  async callById(callId: string): Promise<CallView | null> {
    const row = this.book.call(callId)
    if (row) return this.view(row)
    return this.cold ? this.cold.byId(callId) : null
  }

  async scoreboard(payerAddress: string): Promise<PersonalScoreboard> {
    const payer = payerAddress.toLowerCase()
    const t = this.book.payer(payer)
    const calls = t?.count ?? 0
    const graded = t?.graded ?? 0
    const voided = t?.void ?? 0
    const recent = (await this.callsPage(payer, null, RECENT_CALLS)).items
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
      player_brier: meanE12(t?.player_brier_e12 ?? 0n, graded),
      house_brier: meanE12(t?.house_brier_e12 ?? 0n, graded),
      recent,
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
        // The book's marks: every graded call inside the longest board window, whether or not it left memory.
        for (const m of t.marks) {
          if (markAt(m) < since) continue
          graded++
          correct += markOk(m)
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
    let player = 0n
    let house = 0n
    for (const q of this.book.questionTotals().values()) {
      if (q.n < CROWD_MIN_GRADED) continue
      n += q.n
      player += q.player_brier_e12
      house += q.house_brier_e12
    }
    return n === 0 ? null : { brier: meanE12(player, n)!, n, house_brier: meanE12(house, n)! }
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
