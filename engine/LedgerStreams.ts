/**
 * The ledger's public live streams (issue 33, streams): the feed (each resolution as the feed chip /v1/feed lists),
 * the open clocks (a clock opened, a clock closed: what /v1/clocks/open lists, as it changes) and the new decisions
 * (the public record GET /v1/decisions/{id} serves; market questions only, so no wallet is broadcast).
 *
 * Position: log positions, never page offsets. This follows the decisions and outcomes journals itself (its own
 * consumer groups) so each record comes with its (partition, offset); a cursor is the vector of next offsets over
 * every partition of both topics. An event is "after" a cursor when its offset is at or past the cursor's for its
 * partition, so a cursor resumes exactly, in this process or after a restart (whose interleaving of partitions may
 * differ: each partition's order is the log's).
 *
 * An event is emitted once the ledger index holds what it renders (the index's follower may trail this one for another
 * writer's records); until then it and everything after it wait, so the order stays the log's. A record already seen
 * (a duplicate append) is skipped.
 *
 * Bounded memory (issue 31, item 2): only a recent window of records is kept (one small entry each, by event time and
 * by count, `LedgerStreamWindow`), and a start follows the journals from a short way before their end, not from the
 * beginning, so neither memory nor the start grows with history. A reader whose cursor is older than the window reads
 * the journals from its cursor's positions through a consumer of its own (a cold read: both logs, chunked with
 * backpressure), then joins the window where it starts and goes live from there, so a reconnecting client still gets
 * every event once, in log order.
 */
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { decodeCursor, encodeCursor, type CursorPart } from '../common/Cursor.ts'
import type { EventStream, StreamEvent, StreamReader } from '../common/EventStream.ts'
import { ServiceError } from '../common/ServiceError.ts'
import { childLogger } from '../common/logger.ts'
import type { JournalFollower } from '../pipeline/journal/Journal.ts'
import type { ConsumedRecord, LogConsumer } from '../pipeline/log/EventLog.ts'
import type { DecisionLedger } from './DecisionLedger.ts'
import { publicRecord } from './EngineServices.ts'
import { feedChip } from './LedgerView.ts'
import type { LedgerDecision } from '../pipeline/records/decisionRecord.ts'
import type { OpenClock } from './schemas.ts'

const log = childLogger('ledger-streams')

/** How long a record waits for the ledger index before it is looked at again. */
const HOLD_RETRY_MS = 10

/** Records a cold read holds decoded ahead of its reader before its consumer waits (its memory bound). */
const COLD_BUFFER = 4096

/**
 * Ids a cold read remembers per topic to recognise a duplicate below where this process started (at most about 1.6 MB
 * a read): duplicate appends are retried units seconds apart, far fewer records than this.
 */
const COLD_REMEMBER = 10_000

const DAY_MS = 86_400_000

/** What the streams keep in memory (issue 31, item 2). */
export interface LedgerStreamWindow {
  /** Records whose event time is older than the newest one's minus this leave the window (default 7 days). */
  ms?: number
  /** At most this many records in the window, oldest out first (default 100,000: about 15 MB). */
  entries?: number
  /** A start follows each partition from this many records before its end (default 1,000), not from the beginning. */
  restartRecords?: number
  /** Cold reads (a consumer each) running at once; more resumes wait their turn (default 16). */
  coldReads?: number
}

export const DEFAULT_STREAM_WINDOW: Required<LedgerStreamWindow> = { ms: 7 * DAY_MS, entries: 100_000, restartRecords: 1_000, coldReads: 16 }

export type LedgerStreamName = 'feed' | 'clocks' | 'decisions'

const DECISIONS = 0
const OUTCOMES = 1

/** One record of either journal, where it sat on the log. */
interface Entry {
  readonly topic: 0 | 1
  /** Index of its partition in the cursor vector (decision partitions first, then outcome partitions). */
  readonly slot: number
  readonly offset: number
  readonly id: string
  /** Event time (created_at, resolved_at), epoch ms; NaN for an undecodable record. */
  readonly time: number
}

/** An array with cheap removal at the front: `at(seq)` by sequence number, counting every element ever pushed. */
class Window<T> {
  private items: T[] = []
  private head = 0
  /** Sequence number of the first element still held. */
  first = 0

  get end(): number {
    return this.first + this.items.length - this.head
  }

  at(seq: number): T {
    return this.items[this.head + seq - this.first]!
  }

  push(item: T): void {
    this.items.push(item)
  }

  shift(): T {
    const item = this.items[this.head++]!
    this.first++
    if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return item
  }
}

export class LedgerStreams {
  readonly feed: EventStream
  readonly clocks: EventStream
  readonly decisions: EventStream
  /** The window: the records released since the start, minus those evicted, in release order. */
  private readonly entries = new Window<Entry>()
  /** Per slot, the sequence numbers of its entries in `entries`, in offset order (a reader finds its start by bisection). */
  private readonly bySlot: Window<number>[]
  /** Per slot, the offset after the last record appended to `entries` (or skipped as a duplicate). */
  private readonly next: number[]
  /**
   * Per slot, the offset from which the window holds every event of the slot (the start offset, then the offset after
   * the last evicted entry): a cursor at or past it on every slot is served from memory, an older one reads the log.
   */
  private readonly floor: number[]
  /** Per slot, where this process started following: positions below were never classified here. */
  private readonly startedAt: number[]
  private readonly held: Entry[] = []
  private holdTimer: NodeJS.Timeout | null = null
  /** Ids of the window's entries per topic (duplicate appends are recognised within the window). */
  private readonly seen = [new Set<string>(), new Set<string>()]
  /** Positions (`slot:offset`) this process skipped as duplicates: a cold read skips them too (rare: a retried append). */
  private readonly duplicates = new Set<string>()
  private newest = Number.NEGATIVE_INFINITY
  private readCount = 0
  private coldReads = 0
  private coldActive = 0
  /** Readers waiting for a cold read to end (at most `window.coldReads` run at once). */
  private coldQueue: Array<() => void> = []
  private readonly colds = new Set<ColdRead>()
  private readonly listeners = new Map<LedgerStreamName, Set<(e: StreamEvent) => void>>()
  private followers: JournalFollower[] = []
  private readonly window: Required<LedgerStreamWindow>

  private constructor(
    private readonly ledger: DecisionLedger,
    private readonly clockOf: (d: LedgerDecision) => OpenClock | null,
    private readonly decisionPartitions: number,
    outcomePartitions: number,
    from: number[],
    window: LedgerStreamWindow,
  ) {
    const slots = decisionPartitions + outcomePartitions
    this.bySlot = Array.from({ length: slots }, () => new Window<number>())
    this.next = [...from]
    this.floor = [...from]
    this.startedAt = [...from]
    this.window = { ...DEFAULT_STREAM_WINDOW, ...window }
    this.feed = this.stream('feed')
    this.clocks = this.stream('clocks')
    this.decisions = this.stream('decisions')
  }

  /**
   * Follows both ledger journals from `window.restartRecords` before their end; resolves once it has read what they
   * held at the call. clockOf: the open clock a decision starts, or null (LedgerView.clockOf over the engine's catalog).
   */
  static async open(options: {
    ledger: DecisionLedger
    clockOf: (d: LedgerDecision) => OpenClock | null
    groupId?: string
    catchUpTimeoutMs?: number
    window?: LedgerStreamWindow
  }): Promise<LedgerStreams> {
    const { ledger } = options
    const window = { ...DEFAULT_STREAM_WINDOW, ...options.window }
    const group = options.groupId ?? 'svc.streams'
    // Kafka's end offsets end right after the last readable record (EventLog.endOffsets), so a position below an end
    // always has a record at or after it: a cold read reaching the window always sees a record that tells it so.
    const dEnds = await ledger.log.endOffsets(ledger.names.decisions)
    const oEnds = await ledger.log.endOffsets(ledger.names.outcomes)
    const back = (end: number) => Math.max(0, end - window.restartRecords)
    const dFrom = dEnds.map(back)
    const oFrom = oEnds.map(back)
    const self = new LedgerStreams(ledger, options.clockOf, dEnds.length, oEnds.length, [...dFrom, ...oFrom], window)
    const timeout = options.catchUpTimeoutMs !== undefined ? { catchUpTimeoutMs: options.catchUpTimeoutMs } : {}
    const invalid = (err: Error, r: { topic: string; partition: number; offset: number }) => {
      log.warn({ topic: r.topic, partition: r.partition, offset: r.offset, err: err.message }, 'undecodable ledger record left out of the streams')
      self.skip(r.topic === ledger.names.decisions ? DECISIONS : OUTCOMES, r.partition, r.offset)
    }
    const at = (from: number[]) => from.map((offset, partition) => ({ partition, offset }))
    try {
      self.followers.push(await ledger.decisions.follow(`${group}.decisions`, (d, p) => self.arrived(DECISIONS, p.partition, p.offset, d.decision_id, Date.parse(d.created_at)), { onInvalid: invalid, from: at(dFrom), ...timeout }))
      self.followers.push(await ledger.outcomes.follow(`${group}.outcomes`, (o, p) => self.arrived(OUTCOMES, p.partition, p.offset, o.decision_id, Date.parse(o.resolved_at)), { onInvalid: invalid, from: at(oFrom), ...timeout }))
    } catch (err) {
      await self.close()
      throw err
    }
    log.info({ read: self.readCount, entries: self.size.entries }, 'ledger streams started near the end of the journals')
    return self
  }

  /**
   * Records in the window, records still waiting for the ledger index, records the followers read since the start,
   * cold reads opened and running now (tests, metrics).
   */
  get size(): { entries: number; held: number; read: number; coldReads: number; coldActive: number } {
    return { entries: this.entries.end - this.entries.first, held: this.held.length, read: this.readCount, coldReads: this.coldReads, coldActive: this.coldActive }
  }

  private slotOf(topic: 0 | 1, partition: number): number {
    return topic === DECISIONS ? partition : this.decisionPartitions + partition
  }

  private arrived(topic: 0 | 1, partition: number, offset: number, id: string, time: number): void {
    this.readCount++
    this.held.push({ topic, slot: this.slotOf(topic, partition), offset, id, time })
    this.release()
  }

  /** An undecodable record: its position passes like a duplicate's (in order behind whatever waits). */
  private skip(topic: 0 | 1, partition: number, offset: number): void {
    this.readCount++
    this.held.push({ topic, slot: this.slotOf(topic, partition), offset, id: '', time: Number.NaN })
    this.release()
  }

  /** The ledger index holds what the record renders. */
  private indexed(topic: 0 | 1, id: string): boolean {
    const index = this.ledger.index
    return index.decision(id) !== null && (topic === DECISIONS || index.outcome(id) !== null)
  }

  private ready(e: Entry): boolean {
    return e.id === '' || this.seen[e.topic]!.has(e.id) || this.indexed(e.topic, e.id)
  }

  /** Appends the waiting records the index can render, in arrival order; the first that it cannot holds the rest. */
  private release(): void {
    let i = 0
    for (; i < this.held.length; i++) {
      const e = this.held[i]!
      if (!this.ready(e)) break
      this.next[e.slot] = e.offset + 1
      if (e.id === '') continue
      const seen = this.seen[e.topic]!
      if (seen.has(e.id)) {
        this.duplicates.add(`${e.slot}:${e.offset}`)
        continue
      }
      seen.add(e.id)
      this.bySlot[e.slot]!.push(this.entries.end)
      this.entries.push(e)
      if (e.time > this.newest) this.newest = e.time
      this.publish(e)
    }
    if (i > 0) {
      this.held.splice(0, i)
      this.evict()
    }
    if (this.held.length > 0 && this.holdTimer === null) {
      this.holdTimer = setTimeout(() => {
        this.holdTimer = null
        this.release()
      }, HOLD_RETRY_MS)
      this.holdTimer.unref()
    }
  }

  /** Drops the oldest entries past the window's count or age; the floor of their slot moves past them. */
  private evict(): void {
    const horizon = this.newest - this.window.ms
    while (this.entries.end > this.entries.first) {
      const e = this.entries.at(this.entries.first)
      if (this.entries.end - this.entries.first <= this.window.entries && !(e.time < horizon)) break
      this.entries.shift()
      this.bySlot[e.slot]!.shift()
      this.seen[e.topic]!.delete(e.id)
      this.floor[e.slot] = e.offset + 1
    }
  }

  private publish(e: Entry): void {
    for (const [name, fns] of this.listeners) {
      if (fns.size === 0) continue
      const rendered = this.render(name, e)
      if (rendered === null) continue
      const event: StreamEvent = { cursor: encodeCursor(name, this.next), event: rendered.event, data: rendered.data }
      for (const fn of fns) fn(event)
    }
  }

  /** What stream `name` sends for a record, or null when it sends nothing for it. */
  private render(name: LedgerStreamName, e: Entry): { event: string; data: unknown } | null {
    const d = this.ledger.index.decision(e.id)!
    if (name === 'decisions') return e.topic === DECISIONS && d.subject === null ? { event: 'decision', data: publicRecord(d) } : null
    if (name === 'feed') return e.topic === OUTCOMES ? { event: 'chip', data: feedChip(d, this.ledger.index.outcome(e.id)!) } : null
    const clock = this.clockOf(d)
    if (clock === null) return null
    if (e.topic === DECISIONS) return { event: 'opened', data: clock }
    const o = this.ledger.index.outcome(e.id)!
    return { event: 'closed', data: { decision_id: o.decision_id, question_id: o.question_id, asset: o.asset, status: o.outcome, resolved_at: o.resolved_at } }
  }

  /** The position a cursor names: one non-negative offset per partition of both topics. */
  private vectorOf(name: LedgerStreamName, token: string, field: string): number[] {
    const parts: CursorPart[] = decodeCursor(name, token, field)
    if (parts.length !== this.next.length || !parts.every((p) => typeof p === 'number' && Number.isSafeInteger(p) && p >= 0)) {
      throw new ServiceError('VALIDATION', { message: `${field}: not a position of this stream (the ledger's partitions changed?)`, detail: { reason: 'INVALID_CURSOR', field } })
    }
    return parts as number[]
  }

  /** Every event after `v` is in the window. */
  private covers(v: readonly number[]): boolean {
    return v.every((offset, slot) => offset >= this.floor[slot]!)
  }

  /** The first entry not covered by `v`: per slot by bisection, the smallest over the slots. */
  private startOf(v: readonly number[]): number {
    let start = this.entries.end
    for (let slot = 0; slot < v.length; slot++) {
      const list = this.bySlot[slot]!
      let lo = list.first
      let hi = list.end
      while (lo < hi) {
        const mid = (lo + hi) >> 1
        if (this.entries.at(list.at(mid)).offset < v[slot]!) lo = mid + 1
        else hi = mid
      }
      if (lo < list.end && list.at(lo) < start) start = list.at(lo)
    }
    return start
  }

  private stream(name: LedgerStreamName): EventStream {
    const fns = new Set<(e: StreamEvent) => void>()
    this.listeners.set(name, fns)
    return {
      topic: `ledger/${name}`,
      reader: (cursor, field): StreamReader => {
        const v = cursor === null ? [...this.next] : this.vectorOf(name, cursor, field)
        let at = cursor === null ? this.entries.end : this.startOf(v)
        let cold: ColdRead | null = null
        const stopCold = () => {
          cold?.stop()
          cold = null
        }
        return {
          next: (max) => {
            const events: StreamEvent[] = []
            while (events.length < max) {
              if (!this.covers(v)) {
                // Older than the window (or the window moved past a paused reader): read the log from `v`.
                if (cold === null) {
                  if (this.coldActive >= this.window.coldReads) return { events, done: false, ...(events.length === 0 ? { wait: this.coldTurn() } : {}) }
                  cold = this.openCold(v)
                }
                const step = this.coldStep(name, cold, v, events, max)
                if (step === 'stale') {
                  stopCold()
                  continue
                }
                if (step !== null) return { events, done: false, ...(events.length === 0 ? { wait: step } : {}) }
                continue
              }
              if (cold) {
                stopCold()
                at = this.startOf(v)
              }
              if (at < this.entries.first) at = this.entries.first
              if (at >= this.entries.end) return { events, done: true }
              const e = this.entries.at(at++)
              if (e.offset < v[e.slot]!) continue
              v[e.slot] = e.offset + 1
              const r = this.render(name, e)
              if (r !== null) events.push({ cursor: encodeCursor(name, v), event: r.event, data: r.data })
            }
            return { events, done: !cold && this.covers(v) && at >= this.entries.end }
          },
          close: stopCold,
        }
      },
      listen: (fn) => {
        fns.add(fn)
        return () => void fns.delete(fn)
      },
    }
  }

  /** Resolves when a running cold read ended (the reader then tries again: another may have taken the place). */
  private coldTurn(): Promise<void> {
    return new Promise<void>((resolve) => this.coldQueue.push(resolve))
  }

  /** Every waiting reader tries again (one whose connection ended meanwhile must not take the turn from the others). */
  private coldEnded(read: ColdRead): void {
    this.colds.delete(read)
    this.coldActive--
    for (const fn of this.coldQueue.splice(0)) fn()
  }

  private openCold(v: readonly number[]): ColdRead {
    this.coldReads++
    this.coldActive++
    const names = this.ledger.names
    const startAt = v.map((next, slot) =>
      slot < this.decisionPartitions ? { topic: names.decisions, partition: slot, next } : { topic: names.outcomes, partition: slot - this.decisionPartitions, next },
    )
    const read: ColdRead = new ColdRead(this.ledger.log.createConsumer({ groupId: `svc.streams.resume-${randomUUID()}`, topics: [names.decisions, names.outcomes], startAt }), v, (topic, partition) =>
      this.slotOf(topic === names.decisions ? DECISIONS : OUTCOMES, partition), this.floor, COLD_REMEMBER, () => this.coldEnded(read))
    this.colds.add(read)
    return read
  }

  /**
   * Moves a cold reader on: appends events (from the log, below the window) to `events` until `max`, or until the
   * reader's position is covered by the window (null: go on), or it must wait (the promise), or its consumer went past
   * records the window has since dropped ('stale': open a new one from `v`).
   */
  private coldStep(name: LedgerStreamName, cold: ColdRead, v: number[], events: StreamEvent[], max: number): Promise<void> | 'stale' | null {
    if (cold.failed) return Promise.reject(cold.failed)
    while (events.length < max && !this.covers(v)) {
      // Of the slots still below the window, the one whose next record is the oldest in event time (a merge in time).
      let pick = -1
      for (let slot = 0; slot < v.length; slot++) {
        if (v[slot]! >= this.floor[slot]!) continue
        const head = cold.head(slot)
        if (head === undefined) {
          const hot = cold.hotAt[slot]
          if (hot === undefined) continue
          // The consumer read every record of the slot up to `hot`, which is in the window: nothing lies between.
          if (hot >= this.floor[slot]!) v[slot] = this.floor[slot]!
          else return 'stale'
          continue
        }
        if (pick < 0 || head.timestamp < cold.head(pick)!.timestamp) pick = slot
      }
      if (pick < 0) return this.covers(v) ? null : cold.more()
      const r = cold.head(pick)!
      if (r.offset < v[pick]!) {
        cold.take(pick)
        continue
      }
      const topic = pick < this.decisionPartitions ? DECISIONS : OUTCOMES
      let id = ''
      try {
        id = (topic === DECISIONS ? this.ledger.decisions.def : this.ledger.outcomes.def).decode(r.value).decision_id
      } catch {
        // Undecodable: its position passes (as the live followers skip it).
      }
      let duplicate = id === ''
      if (!duplicate) {
        // Positions this process followed were classified when they arrived; older ones by this read's own memory.
        duplicate = r.offset >= this.startedAt[pick]! ? this.duplicates.has(`${pick}:${r.offset}`) : cold.seenBefore(topic, id)
      }
      if (!duplicate && !this.indexed(topic, id)) return sleep(HOLD_RETRY_MS)
      cold.take(pick)
      v[pick] = r.offset + 1
      if (duplicate) continue
      const rendered = this.render(name, { topic, slot: pick, offset: r.offset, id, time: r.timestamp })
      if (rendered !== null) events.push({ cursor: encodeCursor(name, v), event: rendered.event, data: rendered.data })
    }
    return null
  }

  async close(): Promise<void> {
    if (this.holdTimer) clearTimeout(this.holdTimer)
    this.holdTimer = null
    for (const c of [...this.colds]) c.stop()
    for (const f of this.followers.splice(0)) await f.stop().catch(() => undefined)
  }
}

/**
 * One reader's read of both journals below the window: a consumer of its own started at the reader's positions. Per
 * slot it queues the records below the window's floor (as they arrive) and notes the first at or past it (the slot
 * reached the window; the rest is in memory, so later records of that partition are dropped). The consumer's handler
 * waits while COLD_BUFFER records are queued, so a cold read holds a bounded amount whatever its cursor's age.
 */
class ColdRead {
  private readonly queues: ConsumedRecord[][]
  /**
   * Per slot, the offset after the last record queued (from the reader's start): a redelivery (a Kafka re-join) or a
   * start the log moved (a position past its end reset to the earliest) queues nothing twice, and nothing the reader
   * would never take (a slot it no longer reads would hold the consumer for good).
   */
  private readonly queuedTo: number[]
  /** Per slot, the offset of the first record that arrived at or past the floor. */
  readonly hotAt: (number | undefined)[]
  private buffered = 0
  private waiting: Array<() => void> = []
  private space: (() => void) | null = null
  private consumer: LogConsumer | null = null
  private stopped = false
  failed: Error | undefined
  /** Ids this read passed, per topic, the newest `remember` of them (duplicates below where this process started). */
  private readonly seen = [new Set<string>(), new Set<string>()]

  constructor(
    consumer: Promise<LogConsumer>,
    from: readonly number[],
    private readonly slotOf: (topic: string, partition: number) => number,
    private readonly floor: readonly number[],
    private readonly remember: number,
    private readonly ended: () => void,
  ) {
    this.queues = Array.from({ length: from.length }, () => [])
    this.queuedTo = [...from]
    this.hotAt = new Array<number | undefined>(from.length).fill(undefined)
    consumer.then(
      (c) => {
        this.consumer = c
        if (this.stopped) return void c.stop().catch(() => undefined)
        c.run((batch) => this.arrived(batch.topic, batch.partition, batch.records)).catch((err: unknown) => this.fail(err))
      },
      (err: unknown) => this.fail(err),
    )
  }

  private fail(err: unknown): void {
    if (this.stopped) return
    this.failed = err instanceof Error ? err : new Error(String(err))
    log.warn({ err: this.failed.message }, 'a stream resume could not read the ledger journals')
    this.wake()
  }

  private async arrived(topic: string, partition: number, records: ConsumedRecord[]): Promise<void> {
    if (this.stopped) return
    const slot = this.slotOf(topic, partition)
    const queue = this.queues[slot]!
    for (const r of records) {
      if (this.hotAt[slot] !== undefined) break
      if (r.offset < this.queuedTo[slot]!) continue
      if (r.offset >= this.floor[slot]!) {
        this.hotAt[slot] = r.offset
        break
      }
      queue.push(r)
      this.queuedTo[slot] = r.offset + 1
      this.buffered++
    }
    this.wake()
    while (!this.stopped && this.buffered >= COLD_BUFFER) await new Promise<void>((resolve) => (this.space = resolve))
  }

  private wake(): void {
    for (const fn of this.waiting.splice(0)) fn()
  }

  head(slot: number): ConsumedRecord | undefined {
    return this.queues[slot]![0]
  }

  take(slot: number): void {
    this.queues[slot]!.shift()
    this.buffered--
    if (this.buffered < COLD_BUFFER / 2 && this.space) {
      const fn = this.space
      this.space = null
      fn()
    }
  }

  /** True when this read passed `id` on `topic` before (then remembers it). */
  seenBefore(topic: 0 | 1, id: string): boolean {
    const seen = this.seen[topic]!
    if (seen.has(id)) return true
    seen.add(id)
    if (seen.size > this.remember) seen.delete(seen.values().next().value!)
    return false
  }

  /** Resolves when the consumer delivered more (or failed: it rejects). */
  more(): Promise<void> {
    return new Promise<void>((resolve, reject) => this.waiting.push(() => (this.failed ? reject(this.failed) : resolve())))
  }

  stop(): void {
    if (this.stopped) return
    this.stopped = true
    this.ended()
    this.space?.()
    this.wake()
    this.consumer?.stop().catch(() => undefined)
  }
}
