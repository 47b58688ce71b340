/**
 * The ledger's public live streams (issue 33, streams): the feed (each resolution as the feed chip /v1/feed lists),
 * the open clocks (a clock opened, a clock closed: what /v1/clocks/open lists, as it changes) and the new decisions
 * (the public record GET /v1/decisions/{id} serves; market questions only, so no wallet is broadcast).
 *
 * Position: log positions, never page offsets. This follows the decisions and outcomes journals itself (its own
 * consumer groups, from the beginning, nothing committed) so each record comes with its (partition, offset); a cursor
 * is the vector of next offsets over every partition of both topics. An event is "after" a cursor when its offset is
 * at or past the cursor's for its partition, so a cursor resumes exactly, in this process or after a restart (whose
 * interleaving of partitions may differ: each partition's order is the log's).
 *
 * An event is emitted once the ledger index holds what it renders (the index's follower may trail this one for another
 * writer's records); until then it and everything after it wait, so the order stays the log's. A record already seen
 * (a duplicate append) is skipped. The whole sequence is kept in memory (one small entry per record, as the index
 * keeps every record), so every cursor the log still holds can be resumed without reading the log again.
 */
import { decodeCursor, encodeCursor, type CursorPart } from '../common/Cursor.ts'
import type { EventStream, StreamEvent, StreamReader } from '../common/EventStream.ts'
import { ServiceError } from '../common/ServiceError.ts'
import { childLogger } from '../common/logger.ts'
import type { JournalFollower } from '../pipeline/journal/Journal.ts'
import type { DecisionLedger } from './DecisionLedger.ts'
import { publicRecord } from './EngineServices.ts'
import { feedChip } from './LedgerView.ts'
import type { LedgerDecision } from '../pipeline/records/decisionRecord.ts'
import type { OpenClock } from './schemas.ts'

const log = childLogger('ledger-streams')

/** How long a record waits for the ledger index before it is looked at again. */
const HOLD_RETRY_MS = 10

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
}

export class LedgerStreams {
  readonly feed: EventStream
  readonly clocks: EventStream
  readonly decisions: EventStream
  private readonly entries: Entry[] = []
  /** Per slot, the indexes into `entries` of its records, in offset order (a reader finds its start by bisection). */
  private readonly bySlot: number[][]
  /** Per slot, the offset after the last record appended to `entries` (or skipped as a duplicate). */
  private readonly next: number[]
  private readonly held: Entry[] = []
  private holdTimer: NodeJS.Timeout | null = null
  private readonly seen = [new Set<string>(), new Set<string>()]
  private readonly listeners = new Map<LedgerStreamName, Set<(e: StreamEvent) => void>>()
  private followers: JournalFollower[] = []

  private constructor(
    private readonly ledger: DecisionLedger,
    private readonly clockOf: (d: LedgerDecision) => OpenClock | null,
    private readonly decisionPartitions: number,
    outcomePartitions: number,
  ) {
    const slots = decisionPartitions + outcomePartitions
    this.bySlot = Array.from({ length: slots }, () => [])
    this.next = new Array<number>(slots).fill(0)
    this.feed = this.stream('feed')
    this.clocks = this.stream('clocks')
    this.decisions = this.stream('decisions')
  }

  /** Follows both ledger journals from the beginning; resolves once it has read what they held at the call. */
  /** clockOf: the open clock a decision starts, or null (LedgerView.clockOf over the engine's catalog). */
  static async open(options: { ledger: DecisionLedger; clockOf: (d: LedgerDecision) => OpenClock | null; groupId?: string; catchUpTimeoutMs?: number }): Promise<LedgerStreams> {
    const { ledger } = options
    const group = options.groupId ?? 'svc.streams'
    const dp = await ledger.log.partitionsOf(ledger.names.decisions)
    const op = await ledger.log.partitionsOf(ledger.names.outcomes)
    const self = new LedgerStreams(ledger, options.clockOf, dp, op)
    const timeout = options.catchUpTimeoutMs !== undefined ? { catchUpTimeoutMs: options.catchUpTimeoutMs } : {}
    const invalid = (err: Error, r: { topic: string; partition: number; offset: number }) => {
      log.warn({ topic: r.topic, partition: r.partition, offset: r.offset, err: err.message }, 'undecodable ledger record left out of the streams')
      self.skip(r.topic === ledger.names.decisions ? DECISIONS : OUTCOMES, r.partition, r.offset)
    }
    try {
      self.followers.push(await ledger.decisions.follow(`${group}.decisions`, (d, at) => self.arrived(DECISIONS, at.partition, at.offset, d.decision_id), { onInvalid: invalid, ...timeout }))
      self.followers.push(await ledger.outcomes.follow(`${group}.outcomes`, (o, at) => self.arrived(OUTCOMES, at.partition, at.offset, o.decision_id), { onInvalid: invalid, ...timeout }))
    } catch (err) {
      await self.close()
      throw err
    }
    return self
  }

  /** Records followed so far and records still waiting for the ledger index (tests, metrics). */
  get size(): { entries: number; held: number } {
    return { entries: this.entries.length, held: this.held.length }
  }

  private slotOf(topic: 0 | 1, partition: number): number {
    return topic === DECISIONS ? partition : this.decisionPartitions + partition
  }

  private arrived(topic: 0 | 1, partition: number, offset: number, id: string): void {
    this.held.push({ topic, slot: this.slotOf(topic, partition), offset, id })
    this.release()
  }

  /** An undecodable record: its position passes like a duplicate's (in order behind whatever waits). */
  private skip(topic: 0 | 1, partition: number, offset: number): void {
    this.held.push({ topic, slot: this.slotOf(topic, partition), offset, id: '' })
    this.release()
  }

  private ready(e: Entry): boolean {
    if (e.id === '' || this.seen[e.topic]!.has(e.id)) return true
    const index = this.ledger.index
    return index.decision(e.id) !== null && (e.topic === DECISIONS || index.outcome(e.id) !== null)
  }

  /** Appends the waiting records the index can render, in arrival order; the first that it cannot holds the rest. */
  private release(): void {
    let i = 0
    for (; i < this.held.length; i++) {
      const e = this.held[i]!
      if (!this.ready(e)) break
      this.next[e.slot] = e.offset + 1
      const seen = this.seen[e.topic]!
      if (e.id === '' || seen.has(e.id)) continue
      seen.add(e.id)
      this.bySlot[e.slot]!.push(this.entries.length)
      this.entries.push(e)
      this.publish(e)
    }
    if (i > 0) this.held.splice(0, i)
    if (this.held.length > 0 && this.holdTimer === null) {
      this.holdTimer = setTimeout(() => {
        this.holdTimer = null
        this.release()
      }, HOLD_RETRY_MS)
      this.holdTimer.unref()
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

  /** The first entry not covered by `v`: per slot by bisection, the smallest over the slots. */
  private startOf(v: readonly number[]): number {
    let start = this.entries.length
    for (let slot = 0; slot < v.length; slot++) {
      const list = this.bySlot[slot]!
      let lo = 0
      let hi = list.length
      while (lo < hi) {
        const mid = (lo + hi) >> 1
        if (this.entries[list[mid]!]!.offset < v[slot]!) lo = mid + 1
        else hi = mid
      }
      if (lo < list.length && list[lo]! < start) start = list[lo]!
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
        let at = cursor === null ? this.entries.length : this.startOf(v)
        return {
          next: (max) => {
            const events: StreamEvent[] = []
            while (at < this.entries.length && events.length < max) {
              const e = this.entries[at++]!
              if (e.offset < v[e.slot]!) continue
              v[e.slot] = e.offset + 1
              const r = this.render(name, e)
              if (r !== null) events.push({ cursor: encodeCursor(name, v), event: r.event, data: r.data })
            }
            return { events, done: at >= this.entries.length }
          },
        }
      },
      listen: (fn) => {
        fns.add(fn)
        return () => void fns.delete(fn)
      },
    }
  }

  async close(): Promise<void> {
    if (this.holdTimer) clearTimeout(this.holdTimer)
    this.holdTimer = null
    for (const f of this.followers.splice(0)) await f.stop().catch(() => undefined)
  }
}
