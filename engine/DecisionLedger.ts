/**
 * The append-only decision ledger: two journals on the event log — decisions (key = question|asset|subject) and
 * outcomes (key = decision_id) — their in-memory follower index, and the bus that tells the rest of the service what
 * entered them. This class is the only write path of the ledger, and it only ever appends.
 *
 * Spec, What the service does 2: "Decisions are kept on an append-only ledger. A recorded row is never altered."
 * Endpoints, POST /v1/decisions: "identical inputs under the same policy version re-serve the recorded decision, and a
 * repeat is not charged as a new decision row".
 *
 * - Dedupe: the LedgerIndex, built on open by following both journals, then fed by this process's appends and by
 *   whatever other writers append. With `checkpoints` (issue 31) open loads the index's newest valid snapshot and
 *   follows only the tail after its positions (a missing, corrupt, old-schema or ahead-of-log snapshot: from the
 *   beginning, one log line); a snapshot is written every `everyMs` and at close, then the followers commit its
 *   positions. Own writes enter the index at acknowledgement, so no snapshot is taken while one is unsettled
 *   (pipeline/state/CheckpointedFollowers.ts). Without `checkpoints`: rebuilt from the beginning, nothing committed.
 * - The bus after a restore: the snapshot holds every decision and outcome, so a subscriber's replay is the same set
 *   as after a rebuild (the engine's clock registration sees every open clock); restored rows enter the index
 *   without a publish, as rebuilt rows do before anyone subscribed.
 * - Refusal to alter: staging a record whose decision_id (or an outcome whose decision_id) is already recorded with
 *   other content throws LEDGER_CONFLICT; identical content is a re-serve (no new row).
 * - Durability: stage*() keeps records in order; flush() appends decisions, then outcomes (an outcome never precedes
 *   its decision on the log), and only once an append resolved (fsynced / acks=all) are they visible to reads and
 *   published on the bus as resolutions. A paid decision goes instead in the paid call's unit of work (appendIn), one
 *   atomic append with its debit and answer receipt.
 */
import { childLogger } from '../common/logger.ts'
import { canonicalJson } from '../common/jcs.ts'
import type { EventLog } from '../pipeline/log/EventLog.ts'
import { Journal } from '../pipeline/journal/Journal.ts'
import type { UnitOfWork } from '../pipeline/journal/UnitOfWork.ts'
import { DECISIONS, type LedgerDecision } from '../pipeline/records/decisionRecord.ts'
import { OUTCOMES_JOURNAL, type LedgerOutcome } from '../pipeline/records/outcomeRecord.ts'
import { DEFAULT_PARTITIONS, topicNames, type TopicNames } from '../pipeline/topics.ts'
import { CheckpointedFollowers, followOwnWrites } from '../pipeline/state/CheckpointedFollowers.ts'
import type { RestoredState } from '../pipeline/state/restoreState.ts'
import type { CheckpointSettings, StateStore } from '../pipeline/state/StateStore.ts'
import { EngineError } from './EngineError.ts'
import { LedgerBus, type ResolutionEvent } from './LedgerBus.ts'
import { LEDGER_STATE_SCHEMA, LedgerIndex } from './LedgerIndex.ts'

const log = childLogger('decision-ledger')

/**
 * Whether two records of one decision id differ only in who paid for them: identical inputs under one policy version
 * (the id) asked by two payers at once. The spec re-serves the recorded decision to the later ask, uncharged.
 */
function sameButPayment(a: LedgerDecision, b: LedgerDecision): boolean {
  const unpaid = (d: LedgerDecision) => canonicalJson({ ...d, payment_id: null, payment_rail: 'none' })
  return unpaid(a) === unpaid(b)
}

export interface DecisionLedgerOptions {
  log: EventLog
  names?: TopicNames
  /** Partitions when this call creates the topics (default DEFAULT_PARTITIONS, as the pipeline). */
  partitions?: number
  /** Consumer group prefix of the index followers (default 'svc.ledger-index'); also the snapshot's store name. */
  groupId?: string
  /** Snapshot the index and start from the newest valid snapshot (absent: rebuild from the log at every open). */
  checkpoints?: CheckpointSettings | null
  /** How long open() lets a follower read nothing before it reaches the end offsets it saw (default 120 s). */
  catchUpTimeoutMs?: number
  /**
   * Whether this instance appends what flush() has staged (the decisions and outcomes its engine derives); absent:
   * always. Several instances (issue 32): every replica's engine derives the same records from the same ticks, and
   * only the holder of the venue-feed lease appends them; a replica keeps its own staged until the holder's record of
   * the same id is read back, so reads never miss it and nothing is appended twice. Paid decisions (appendIn) are
   * appended by whichever instance answers the call.
   */
  appendsDerived?: (() => boolean) | null
}

export class DecisionLedger {
  readonly index = new LedgerIndex()
  readonly names: TopicNames
  /** What entered the ledger: decisions (the resolvers start clocks) and resolutions (the outcome bus). */
  readonly bus: LedgerBus
  private stagedDecisions = new Map<string, LedgerDecision>()
  private stagedOutcomes = new Map<string, LedgerOutcome>()
  private chain: Promise<void> = Promise.resolve()
  /** Decisions in a paid call's unit of work not yet durable, by id: an identical ask waits for the first. */
  private readonly inFlight = new Map<string, Promise<void>>()
  private followers: CheckpointedFollowers | null = null
  /**
   * Paid decisions this process indexed at acknowledgement whose own copy the follower has not read back yet: until it
   * has, another instance's record of the same inputs read meanwhile sits before ours in the journal, so it is first.
   */
  private readonly unconfirmed = new Map<string, LedgerDecision>()
  /** Own paid decisions read back before their acknowledgement ran (the follower can be first): indexed then, not at it. */
  private readonly readBackEarly = new Set<string>()
  /** Later paid records of decisions already in the ledger, seen since this process started (bus.repeats). */
  private readonly repeatsSeen: LedgerDecision[] = []
  private closed = false
  /** Whether the last flush appended (appendsDerived): a change to true first reads back the previous holder's. */
  private appending = true

  private constructor(
    readonly decisions: Journal<typeof DECISIONS.schema>,
    readonly outcomes: Journal<typeof OUTCOMES_JOURNAL.schema>,
    names: TopicNames,
    private readonly appendsDerived: (() => boolean) | null = null,
  ) {
    this.names = names
    this.bus = new LedgerBus({
      decisions: () => this.index.allDecisions(),
      resolutions: () => this.resolutionsSoFar(),
      repeats: () => this.repeatsSeen,
    })
  }

  static async open(options: DecisionLedgerOptions): Promise<DecisionLedger> {
    const names = options.names ?? topicNames()
    const partitions = options.partitions ?? DEFAULT_PARTITIONS
    const decisions = await Journal.open({ log: options.log, def: DECISIONS, topic: names.decisions, partitions })
    const outcomes = await Journal.open({ log: options.log, def: OUTCOMES_JOURNAL, topic: names.outcomes, partitions })
    const ledger = new DecisionLedger(decisions, outcomes, names, options.appendsDerived ?? null)
    const groupId = options.groupId ?? 'svc.ledger-index'
    const catchUpTimeoutMs = options.catchUpTimeoutMs ?? 120_000
    try {
      ledger.followers = await CheckpointedFollowers.open({
        log: options.log,
        store: ledger.stateStore(groupId),
        checkpoints: options.checkpoints,
        logger: log,
        journals: [
          followOwnWrites(
            decisions,
            { group: `${groupId}.decisions`, what: 'decision', logger: log, catchUpTimeoutMs, onOwnWrite: (value) => ledger.readBack(value) },
            (d) => ledger.followed(d),
          ),
          followOwnWrites(outcomes, { group: `${groupId}.outcomes`, what: 'outcome', logger: log, catchUpTimeoutMs }, (o) => ledger.followedOutcome(o)),
        ],
      })
    } catch (err) {
      await ledger.close()
      throw err instanceof EngineError ? err : new EngineError('ENGINE_CLOSED', `the ledger index did not catch up with the decisions/outcomes topics: ${(err as Error).message}`)
    }
    const from = ledger.followers.restored?.restored ? 'its snapshot and the log tail' : 'the log'
    log.info({ ...ledger.index.size, conflicts: ledger.index.conflicts }, `ledger index built from ${from}`)
    return ledger
  }

  /** The index as a checkpointed state store (pipeline/state/StateStore.ts), one per consumer group. */
  private stateStore(groupId: string): StateStore {
    return { name: groupId, schema: LEDGER_STATE_SCHEMA, rows: () => this.index.rows(), load: (rows) => this.index.load(rows) }
  }

  /** How the index started: restored from its snapshot, or rebuilt and why (null without checkpoints). */
  get restored(): RestoredState | null {
    return this.followers?.restored ?? null
  }

  /** The positions the index reflects now, or null while an own write is unsettled (tests, the checkpointer). */
  capturePositions(): ReturnType<CheckpointedFollowers['capture']> {
    return this.followers?.capture() ?? null
  }

  /** Writes a snapshot now (when checkpointed and consistent); tests. */
  checkpoint(): Promise<unknown> {
    return this.followers?.checkpoint() ?? Promise.resolve(null)
  }

  /**
   * A decision another writer put on the decisions topic. The ledger's record of an id is the journal's first, on every
   * instance: when our own paid record of the same inputs is indexed but not read back yet, theirs precedes it in the
   * journal (one id, one partition, read in order), so theirs replaces ours and ours is the repeat; otherwise theirs is.
   */
  private followed(d: LedgerDecision): void {
    const result = this.index.addDecision(d)
    if (result === 'added') this.bus.decisions.publish(d)
    if (result !== 'conflict') return
    const kept = this.index.decision(d.decision_id)!
    const mine = this.unconfirmed.get(d.decision_id)
    if (mine === kept && sameButPayment(mine, d)) {
      this.index.replaceDecision(d)
      this.unconfirmed.delete(d.decision_id)
      this.repeated(mine)
    } else if (sameButPayment(kept, d)) this.repeated(d)
    else log.warn({ decision_id: d.decision_id }, 'decision conflicts with a recorded one; the first is kept')
  }

  /** Our own decision read back from the topic: it is in the journal's order now, past any record that preceded it. */
  private readBack(value: Buffer): void {
    if (this.unconfirmed.size === 0 && this.inFlight.size === 0) return
    const d = DECISIONS.decode(value)
    if (this.unconfirmed.delete(d.decision_id) || !this.inFlight.has(d.decision_id)) return
    // Durable, and in its place in the journal, before our acknowledgement ran: indexed here, in journal order.
    this.readBackEarly.add(d.decision_id)
    this.indexOwn(d, false)
  }

  /** Our own paid decision into the index; `unconfirmed`: not read back yet (a record read meanwhile would precede it). */
  private indexOwn(d: LedgerDecision, unconfirmed: boolean): void {
    const added = this.index.addDecision(d)
    if (added === 'added') {
      this.bus.decisions.publish(d)
      if (unconfirmed) this.unconfirmed.set(d.decision_id, d)
    } else if (added === 'conflict') {
      // Another instance's record of these inputs was read first: it is before ours in the journal.
      if (sameButPayment(this.index.decision(d.decision_id)!, d)) this.repeated(d)
      else log.warn({ decision_id: d.decision_id }, 'decision conflicts with a recorded one; the first is kept')
    }
  }

  /** A later paid record of a decision in the ledger: its payment is a repeat's (bus.repeats). */
  private repeated(d: LedgerDecision): void {
    log.info({ decision_id: d.decision_id, payment_id: d.payment_id, payment_rail: d.payment_rail }, 'a repeat of a recorded decision, written by another instance at once; the journal\'s first is kept')
    this.repeatsSeen.push(d)
    this.bus.repeats.publish(d)
  }

  private followedOutcome(o: LedgerOutcome): void {
    const result = this.index.addOutcome(o)
    if (result === 'added') this.publishResolution(o)
    else if (result === 'conflict') log.warn({ decision_id: o.decision_id }, 'outcome conflicts with a recorded one; the first is kept')
  }

  private publishResolution(o: LedgerOutcome): void {
    const d = this.index.decision(o.decision_id)
    // An outcome can arrive from another writer before its decision; its resolution is published once both are here.
    if (d) this.bus.resolutions.publish({ decision: d, outcome: o })
  }

  private *resolutionsSoFar(): Iterable<ResolutionEvent> {
    for (const o of this.index.outcomesInOrder()) {
      const d = this.index.decision(o.decision_id)
      if (d) yield { decision: d, outcome: o }
    }
  }

  /** A recorded (or staged) decision. */
  findDecision(id: string): LedgerDecision | null {
    return this.index.decision(id) ?? this.stagedDecisions.get(id) ?? null
  }

  hasOutcome(decisionId: string): boolean {
    return this.index.outcome(decisionId) !== null || this.stagedOutcomes.has(decisionId)
  }

  /** A recorded or staged decision with this id and other content: refused, the ledger keeps the first. */
  private checkNew(d: LedgerDecision, paid = false): LedgerDecision | null {
    const have = this.findDecision(d.decision_id)
    if (!have) return null
    if (canonicalJson(have) !== canonicalJson(d) && !(paid && sameButPayment(have, d))) {
      throw new EngineError('LEDGER_CONFLICT', `decision ${d.decision_id} is already recorded with other content; the ledger keeps the first`, { reason: 'decision_id_recorded' })
    }
    return have
  }

  /**
   * Stages a decision for the next flush. An id already recorded or staged re-serves that record (isNew false) when
   * the content is identical, and throws LEDGER_CONFLICT when it differs: a recorded row is never replaced.
   */
  stageDecision(d: LedgerDecision): { record: LedgerDecision; isNew: boolean } {
    this.assertOpen()
    const have = this.checkNew(d)
    if (have) return { record: have, isNew: false }
    DECISIONS.check(d) // validates before it can reach the log
    this.stagedDecisions.set(d.decision_id, d)
    this.bus.decisions.publish(d)
    return { record: d, isNew: true }
  }

  stageOutcome(o: LedgerOutcome): { record: LedgerOutcome; isNew: boolean } {
    this.assertOpen()
    const have = this.index.outcome(o.decision_id) ?? this.stagedOutcomes.get(o.decision_id)
    if (have) {
      if (canonicalJson(have) !== canonicalJson(o)) {
        throw new EngineError('LEDGER_CONFLICT', `decision ${o.decision_id} already has an outcome; a clock is resolved once`, { reason: 'outcome_recorded' })
      }
      return { record: have, isNew: false }
    }
    if (!this.findDecision(o.decision_id)) throw new EngineError('LEDGER_CONFLICT', `outcome for unknown decision ${o.decision_id}`, { reason: 'unknown_decision' })
    OUTCOMES_JOURNAL.check(o)
    this.stagedOutcomes.set(o.decision_id, o)
    return { record: o, isNew: true }
  }

  /**
   * Appends everything staged (decisions first), then makes it visible to reads. Serialised; what a failed append left
   * staged goes out on the next call.
   */
  flush(): Promise<void> {
    const next = this.chain.then(async () => {
      if (this.appendsDerived !== null) {
        const appends = this.appendsDerived()
        // Taking the appends over from another instance: first read back everything it appended, so none of it is
        // appended again from this stage.
        if (appends && !this.appending) await this.followers?.caughtUp(this.decisions.log)
        this.appending = appends
        // Each staged record the holder appended leaves the stage once it was read back into the index.
        for (const id of this.stagedDecisions.keys()) if (this.index.decision(id)) this.stagedDecisions.delete(id)
        for (const id of this.stagedOutcomes.keys()) if (this.index.outcome(id)) this.stagedOutcomes.delete(id)
        if (!appends) return
      }
      // Large flushes go out in several sends; what is durable leaves the stage as it lands, so a failed send
      // leaves only the unsent rest staged and a retry writes nothing twice.
      const decisions = [...this.stagedDecisions.values()]
      let decisionsDone = 0
      await this.decisions.append(decisions, (durable) => {
        for (; decisionsDone < durable; decisionsDone++) {
          const d = decisions[decisionsDone]!
          this.stagedDecisions.delete(d.decision_id)
          this.index.addDecision(d)
        }
      })
      const outcomes = [...this.stagedOutcomes.values()]
      let outcomesDone = 0
      await this.outcomes.append(outcomes, (durable) => {
        for (; outcomesDone < durable; outcomesDone++) {
          const o = outcomes[outcomesDone]!
          this.stagedOutcomes.delete(o.decision_id)
          if (this.index.addOutcome(o) === 'added') this.publishResolution(o)
        }
      })
    })
    this.chain = next.catch(() => undefined)
    return next
  }

  /**
   * Puts a decision in a paid call's unit of work: it is appended with the call's debit and answer receipt, atomically,
   * and enters the index and the bus once the unit is durable. A decision already recorded or staged is a re-serve
   * (isNew false: nothing to write, nothing to charge). A twin in another unit not yet durable (two identical asks at
   * once) is awaited: once it is recorded this one is its re-serve; if its unit failed, this one is written.
   */
  async appendIn(unit: UnitOfWork, d: LedgerDecision): Promise<{ record: LedgerDecision; isNew: boolean }> {
    this.assertOpen()
    for (;;) {
      // Another ask of identical inputs recorded first (a twin in flight here, or another instance's record read back
      // meanwhile): this ask re-serves it, as it would have had it arrived later, though its payment differs.
      const have = this.checkNew(d, true)
      if (have) return { record: have, isNew: false }
      const twin = this.inFlight.get(d.decision_id)
      if (!twin) break
      await twin
    }
    let settled: () => void = () => undefined
    this.inFlight.set(d.decision_id, new Promise<void>((resolve) => (settled = resolve)))
    const done = () => {
      this.inFlight.delete(d.decision_id)
      settled()
    }
    unit.add(this.decisions, [d], {
      applied: () => {
        if (!this.readBackEarly.delete(d.decision_id)) this.indexOwn(d, true)
        done()
      },
      aborted: () => {
        this.readBackEarly.delete(d.decision_id)
        done()
      },
    })
    return { record: d, isNew: true }
  }

  /** Own paid decisions indexed at acknowledgement and not read back yet (tests: none is left once the follower caught up). */
  get unreadOwn(): number {
    return this.unconfirmed.size + this.readBackEarly.size
  }

  get pending(): number {
    return this.stagedDecisions.size + this.stagedOutcomes.size
  }

  get failed(): Error | undefined {
    return this.followers?.followers.find((f) => f.failed)?.failed
  }

  private assertOpen(): void {
    if (this.closed) throw new EngineError('ENGINE_CLOSED', 'the decision ledger is closed')
  }

  get log(): EventLog {
    return this.decisions.log
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.chain
    await this.followers?.stop().catch((err: unknown) => log.warn({ err }, 'stopping the ledger followers failed'))
    await this.decisions.close()
    await this.outcomes.close()
  }
}
