/**
 * A journal on the event log: an append-only topic of one record type (JournalDef), its durable writes and its
 * followers. Every append-only thing of the service is one: the decision ledger, the outcomes, the credit draws.
 *
 *   const draws = await Journal.open({ log, def: DRAWS, topic: names.draws, partitions })
 *   await draws.append([row])                                   // resolves once durable (fsync / acks=all)
 *   const f = await draws.follow('svc.credits', (row) => ...)   // every record from the beginning, then live
 *
 * - Appends are validated and encoded before anything is sent (a bad record never reaches the log) and resolve only
 *   once durable. Appends arriving while a send is in flight are group-committed into the next send, so concurrent
 *   callers share round trips (the credits rail appends from up to 64 concurrent requests).
 * - A follower reads the topic from the beginning with a consumer group that never commits (an in-memory index is
 *   rebuilt at every start) and resolves once it reached the end offsets the topic had when it was asked to follow;
 *   records appended later arrive as they are written, by this process or any other.
 */
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Static, TObject } from '../../common/schema.ts'
import type { ConsumedRecord, EventLog, LogConsumer, LogProducer, LogRecord, TopicRecords } from '../log/EventLog.ts'
import { DEFAULT_PARTITIONS } from '../topics.ts'
import { GroupCommitQueue } from '../work/GroupCommitQueue.ts'
import type { JournalDef } from './JournalDef.ts'

/** Bytes of record values per send: well under Kafka's default 1 MiB message.max.bytes. */
const SEND_BYTES = 256 * 1024

export interface JournalOptions<S extends TObject> {
  log: EventLog
  def: JournalDef<S>
  /** Topic name; default the definition's name. */
  topic?: string
  /** Partitions when the topic is created here. */
  partitions?: number
}

/** Cuts encoded records into runs of at most SEND_BYTES (a single larger record goes alone). */
function chunksOf(records: LogRecord[]): Array<{ records: LogRecord[]; bytes: number }> {
  const chunks: Array<{ records: LogRecord[]; bytes: number }> = []
  let chunk: LogRecord[] = []
  let bytes = 0
  for (const r of records) {
    const size = r.value.length + r.key.length
    if (chunk.length > 0 && bytes + size > SEND_BYTES) {
      chunks.push({ records: chunk, bytes })
      chunk = []
      bytes = 0
    }
    chunk.push(r)
    bytes += size
  }
  if (chunk.length > 0) chunks.push({ records: chunk, bytes })
  return chunks
}

/** Where a followed record sat on the log. */
export interface JournalPosition {
  partition: number
  offset: number
}

export interface JournalFollower {
  /** The follower's consumer stopped with an error (the index it feeds is no longer current). */
  readonly failed: Error | undefined
  /**
   * Per partition, the offset of the next record `onRecord` has not been given yet: the state fed so far reflects
   * exactly the records before these (what a state snapshot records, pipeline/state/).
   */
  positions(): JournalPosition[]
  /** Commits positions for the follower's group (after a snapshot reflecting them is durable). */
  commit(positions: ReadonlyArray<JournalPosition>): Promise<void>
  stop(): Promise<void>
}

export class Journal<S extends TObject> {
  /** Group commit: appends queued while a send runs go out in the next one, in at most SEND_BYTES per request. */
  private readonly sends = new GroupCommitQueue<LogRecord[]>({ maxBytes: SEND_BYTES, flush: (chunks) => this.flush(chunks) })
  private closed = false
  private readonly followers = new Set<LogConsumer>()
  /**
   * Records this process wrote and its own-writes follower has not read back yet, by key: the follower skips them
   * (their effects were applied when the write was acknowledged) instead of decoding, validating and comparing each.
   */
  private readonly echoes = new Map<string, Buffer[]>()
  private echoFollower = false
  /** Appends and atomic units not settled yet, counted until their callers' effects ran (writesUnsettled). */
  private writesInFlight = 0

  private constructor(
    readonly log: EventLog,
    readonly def: JournalDef<S>,
    readonly topic: string,
    private readonly producer: LogProducer,
  ) {}

  static async open<S extends TObject>(options: JournalOptions<S>): Promise<Journal<S>> {
    const topic = options.topic ?? options.def.name
    await options.log.ensureTopics([{ name: topic, partitions: options.partitions ?? DEFAULT_PARTITIONS }])
    return new Journal(options.log, options.def, topic, await options.log.createProducer())
  }

  /**
   * Appends records of this and other journals on the same log as one atomic unit (UnitOfWork.commit); resolves once
   * durable. Concurrent units share fsync rounds (embedded) or transactions (Kafka).
   */
  sendAtomic(batches: ReadonlyArray<TopicRecords>, journals: ReadonlyArray<Journal<TObject>> = []): Promise<void> {
    if (this.closed) return Promise.reject(new Error(`journal ${this.topic} is closed`))
    const byTopic = new Map(journals.map((j) => [j.topic, j]))
    for (const b of batches) byTopic.get(b.topic)?.expectEchoes(b.records)
    const sent = this.producer.sendAtomic(batches).catch((err: unknown) => {
      for (const b of batches) byTopic.get(b.topic)?.forgetEchoes(b.records)
      throw err
    })
    for (const j of new Set([this, ...journals])) j.trackWrite(sent)
    return sent
  }

  /**
   * Counts a write until it settled and the microtasks after it ran: the caller's `await` continuation (a unit's
   * applied effects, an index updated after an append) runs before the count drops.
   */
  private trackWrite(write: Promise<unknown>): void {
    this.writesInFlight++
    const done = () => setImmediate(() => this.writesInFlight--)
    write.then(done, done)
  }

  /** Records about to be written by this process: its own-writes follower will skip them when it reads them back. */
  expectEchoes(records: readonly LogRecord[]): void {
    if (!this.echoFollower) return
    for (const r of records) {
      const list = this.echoes.get(r.key)
      if (list) list.push(r.value)
      else this.echoes.set(r.key, [r.value])
    }
  }

  private forgetEchoes(records: readonly LogRecord[]): void {
    for (const r of records) this.takeEcho(r.key, r.value)
  }

  /** True (and forgotten) when this exact record was written by this process and not read back yet. */
  private takeEcho(key: string, value: Buffer): boolean {
    const list = this.echoes.get(key)
    if (!list) return false
    const i = list.findIndex((v) => v.equals(value))
    if (i < 0) return false
    list.splice(i, 1)
    if (list.length === 0) this.echoes.delete(key)
    return true
  }

  /**
   * True while a write of this journal is queued, being sent, or acknowledged but not yet read back by its own-writes
   * follower: an index fed at acknowledgement then holds records past that follower's positions, so its state matches
   * no log position (a state snapshot must wait, pipeline/state/CheckpointedFollowers.ts).
   */
  get writesUnsettled(): boolean {
    return this.writesInFlight > 0 || this.echoes.size > 0
  }

  /** Validates and encodes now; throws LedgerRecordError naming the bad field. */
  toLogRecord(record: Static<S>): LogRecord {
    return this.def.toLogRecord(record)
  }

  /**
   * Appends records; resolves once they are durable on the log. An append over SEND_BYTES (a catch-up writing a
   * thousand decisions) goes out as several sends in order, so no request passes a broker's message.max.bytes; when
   * one fails the rest are not sent and the append rejects, with `onDurable(n)` having reported the first n records
   * that are durable (a caller that retries sends only the others, so nothing is written twice).
   */
  append(records: readonly Static<S>[], onDurable?: (count: number) => void): Promise<void> {
    if (this.closed) return Promise.reject(new Error(`journal ${this.topic} is closed`))
    if (records.length === 0) return Promise.resolve()
    let encoded: LogRecord[]
    try {
      encoded = records.map((r) => this.def.toLogRecord(r))
    } catch (err) {
      return Promise.reject(err)
    }
    // One chain: once a chunk failed, the later chunks of this append are not sent.
    let durable = 0
    const chunks = chunksOf(encoded)
    const sent = this.sends.enqueueChain(chunks.map((c) => ({ item: c.records, bytes: c.bytes })))
    const all = Promise.all(
      sent.map((p, i) =>
        p.then(() => {
          durable += chunks[i]!.records.length
          onDurable?.(durable)
        }),
      ),
    ).then(() => undefined)
    this.trackWrite(all)
    return all
  }

  /** One send of the chunks a group commit took. */
  private async flush(chunks: LogRecord[][]): Promise<void> {
    const records = chunks.length === 1 ? chunks[0]! : chunks.flat()
    this.expectEchoes(records)
    try {
      await this.producer.send(this.topic, records)
    } catch (err) {
      // Not acknowledged: if any of it is in the log after all, the follower must apply it as a stranger's write.
      this.forgetEchoes(records)
      throw err
    }
  }

  /**
   * Follows the topic from the beginning: `onRecord` gets every record in per-partition order (a record that does not
   * decode goes to `onInvalid`, never silently dropped from the count). Resolves once the follower reached the end
   * offsets the topic had when this was called; rejects when it fails first or reads nothing for `catchUpTimeoutMs`
   * on the way (default 120 s: a stall, however long the journal).
   */
  async follow(
    groupId: string,
    onRecord: (record: Static<S>, at: JournalPosition) => void,
    options: {
      onInvalid?: (err: Error, at: ConsumedRecord) => void
      catchUpTimeoutMs?: number
      /**
       * Skip the records this process wrote through this journal (their effects were applied when the write was
       * acknowledged): the follower of an index fed by its own appends. At most one such follower per journal.
       */
      skipOwnWrites?: boolean
      /** With skipOwnWrites: told of each own write as it is read back and skipped (its place in the log is now known). */
      onOwnWrite?: (value: Buffer, at: JournalPosition) => void
      /**
       * Start here instead of at the beginning (`offset` = the next record to read, per partition): the tail after a
       * restored state snapshot. Partitions not named start at 0.
       */
      from?: ReadonlyArray<JournalPosition>
    } = {},
  ): Promise<JournalFollower> {
    if (options.skipOwnWrites) {
      if (this.echoFollower) throw new Error(`journal ${this.topic} already has a follower that skips its own writes`)
      this.echoFollower = true
    }
    const skipOwn = options.skipOwnWrites === true
    const ends = await this.log.endOffsets(this.topic)
    const reached = ends.map((_, p) => options.from?.find((f) => f.partition === p)?.offset ?? 0)
    // Without `from`, a follower reads from the beginning; it pins no offsets (a readAll's throwaway group would pay a
    // group join on Kafka for nothing).
    const startAt = options.from ? reached.map((next, partition) => ({ topic: this.topic, partition, next })) : undefined
    const consumer = await this.log.createConsumer({ groupId, topics: [this.topic], fromBeginning: true, ...(startAt ? { startAt } : {}) })
    this.followers.add(consumer)
    let failed: Error | undefined
    // run() resolves once the consumer is positioned (delivery then goes on in the background): a follower returned on
    // an empty topic is already reading, and its consumer already reports its positions (lag).
    const positioned = consumer
      .run(async (batch) => {
        for (const r of batch.records) {
          if (skipOwn && this.takeEcho(r.key, r.value)) {
            options.onOwnWrite?.(r.value, { partition: r.partition, offset: r.offset })
            reached[batch.partition] = r.offset + 1
            continue
          }
          let record: Static<S>
          try {
            record = this.def.decode(r.value)
          } catch (err) {
            options.onInvalid?.(err as Error, r)
            reached[batch.partition] = r.offset + 1
            continue
          }
          onRecord(record, { partition: r.partition, offset: r.offset })
          reached[batch.partition] = r.offset + 1
        }
      })
      .catch((err: unknown) => {
        failed = err instanceof Error ? err : new Error(String(err))
      })
    const follower: JournalFollower = {
      get failed() {
        return failed
      },
      positions: () => reached.map((offset, partition) => ({ partition, offset })),
      commit: async (positions) => {
        await consumer.commitPositions(positions.map((p) => ({ topic: this.topic, partition: p.partition, next: p.offset })))
      },
      stop: async () => {
        this.followers.delete(consumer)
        await consumer.stop()
        // The journal may be followed again (a store reopened on it): a new follower reads every record it is given.
        if (skipOwn) {
          this.echoFollower = false
          this.echoes.clear()
        }
      },
    }
    await positioned
    // A stall, not a total: a year of a busy journal takes minutes to read (the Arena's notifications at 365 days and a
    // million calls missed a 120 s total), while a follower that reads nothing for that long is stuck.
    const stallMs = options.catchUpTimeoutMs ?? 120_000
    let read = reached.reduce((a, b) => a + b, 0)
    let deadline = Date.now() + stallMs
    while (ends.some((end, p) => end > 0 && (reached[p] ?? 0) < end)) {
      if (failed) {
        await follower.stop().catch(() => undefined)
        throw failed
      }
      const now = reached.reduce((a, b) => a + b, 0)
      if (now > read) {
        read = now
        deadline = Date.now() + stallMs
      } else if (Date.now() > deadline) {
        await follower.stop().catch(() => undefined)
        throw new Error(`journal ${this.topic}: the follower read nothing for ${stallMs} ms before reaching the end of the topic`)
      }
      await sleep(5)
    }
    return follower
  }

  /** Every record up to the topic's current end, in per-partition offset order (a throwaway follower). */
  async readAll(timeoutMs = 120_000): Promise<Static<S>[]> {
    return (await this.readRange({ timeoutMs })).records
  }

  /**
   * Hands over the records from `from` (per partition, the next offset to read; partitions not named start at 0) up to
   * the topic's end at the call, each partition in offset order (partitions interleaved), without holding them: a
   * fold of a whole journal (CallEvents.history) keeps only what it derives. Resolves with that end per partition.
   */
  async scan(onRecord: (record: Static<S>, at: JournalPosition) => void, options: { from?: ReadonlyArray<JournalPosition>; timeoutMs?: number } = {}): Promise<number[]> {
    const ends = await this.log.endOffsets(this.topic)
    const from = ends.map((_, p) => options.from?.find((f) => f.partition === p)?.offset ?? 0)
    const reached = ends.map((end, p) => Math.max(end, from[p]!))
    if (options.from && ends.every((end, p) => from[p]! >= end)) return reached
    const f = await this.follow(
      `svc.${this.def.name}-read-${randomUUID()}`,
      (record, at) => {
        if (at.offset < (ends[at.partition] ?? 0)) onRecord(record, at)
      },
      {
        catchUpTimeoutMs: options.timeoutMs ?? 120_000,
        ...(options.from ? { from: from.map((offset, partition) => ({ partition, offset })) } : {}),
        onInvalid: (err, r) => {
          throw new Error(`journal ${this.topic}: record ${r.partition}/${r.offset} does not decode: ${err.message}`)
        },
      },
    )
    await f.stop()
    return reached
  }

  /**
   * Hands over every record up to the topic's end at the call in readAll's order (partition 0 in offset order, then
   * partition 1, ...), each once, without holding them: a fold whose result depends on the journal's order reads a
   * whole journal in it. One read per partition, the others started at their ends (on Kafka a group join each).
   */
  async scanInOrder(onRecord: (record: Static<S>, at: JournalPosition) => void, options: { timeoutMs?: number } = {}): Promise<void> {
    const ends = await this.log.endOffsets(this.topic)
    for (let partition = 0; partition < ends.length; partition++) {
      const end = ends[partition]!
      if (end === 0) continue
      let next = 0
      await this.scan(
        (record, at) => {
          // Records appended to the other partitions since, and a redelivery (offsets not increasing), are not this turn's.
          if (at.partition !== partition || at.offset < next || at.offset >= end) return
          next = at.offset + 1
          onRecord(record, at)
        },
        { from: ends.map((e, p) => ({ partition: p, offset: p === partition ? 0 : e })), ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}) },
      )
    }
  }

  /**
   * The records from `from` (per partition, the next offset to read; partitions not named start at 0) up to the
   * topic's end at the call, in per-partition offset order, and that end (`ends`: the records returned are exactly
   * those before it): a checkpointed processor's tail after its restored snapshot (pipeline/state/).
   */
  async readRange(options: { from?: ReadonlyArray<JournalPosition>; timeoutMs?: number } = {}): Promise<{ records: Static<S>[]; ends: number[] }> {
    // Per partition, in the order delivered: a consumer delivers each partition in offset order, so concatenating the
    // partitions is the (partition, offset) order without a wrapper per record or a sort of them all (a million
    // records at an Arena's restart). A redelivery (offsets not increasing) falls back to the sort.
    const parts: Array<{ records: Static<S>[]; offsets: number[] }> = []
    let ordered = true
    const reached = await this.scan((record, at) => {
      const part = (parts[at.partition] ??= { records: [], offsets: [] })
      const last = part.offsets[part.offsets.length - 1]
      if (last !== undefined && at.offset <= last) ordered = false
      part.records.push(record)
      part.offsets.push(at.offset)
    }, options)
    const filled = parts.filter((p) => p !== undefined)
    if (ordered) return { records: filled.length === 1 ? filled[0]!.records : filled.flatMap((p) => p.records), ends: reached }
    const out: Array<{ record: Static<S>; partition: number; offset: number }> = []
    parts.forEach((p, partition) => p.records.forEach((record, i) => out.push({ record, partition, offset: p.offsets[i]! })))
    return { records: out.sort((a, b) => a.partition - b.partition || a.offset - b.offset).map((x) => x.record), ends: reached }
  }

  /** Waits for appends in flight, stops the followers it started, then closes the producer. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.sends.drained()
    for (const f of [...this.followers]) await f.stop().catch(() => undefined)
    this.followers.clear()
    await this.producer.close()
  }
}
