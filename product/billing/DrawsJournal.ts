/**
 * The draws journal: every credit movement as one append-only row on the `billing.draws` topic, the source of truth
 * for balances (the Parquet sink copies it to the `billing_draws` table; pipeline/sinks/drawsTable.ts).
 *
 * Spec (Billing resources): "Draws journal | { payer, count, draws: [{ id, kind (debit, credit or refund), amount
 * (negative for a debit), reason, ref, lot_id, created_at, reversed_at (null unless reversed) }] }".
 * Spec (States, Credit debit): "reversed_at stamped; idempotent; never a second credit".
 *
 * Rows are never updated: a reversal is a NEW refund row carrying the debit's ref and lot_id, and reversed_at is
 * derived on read. Rows carry expires_at too (credit rows: the lot's expiry, null = never) so balances rebuild from
 * the journal alone. Records are keyed by payer, so one payer's rows keep their order on one partition.
 *
 * Durability: append() resolves only once producer.send resolved (embedded: fsynced; Kafka: acks=-1). Appends that
 * arrive while a send is in flight are group-committed into the next send, so concurrent callers share round trips.
 */
import { randomUUID } from 'node:crypto'
import { decodeDraw, encodeDraw, type DrawRow } from '../../pipeline/records/drawRecord.ts'
import type { ConsumedRecord, EventLog, LogProducer } from '../../pipeline/log/EventLog.ts'
import { topicNames } from '../../pipeline/topics.ts'

export { newDrawId, type DrawKind, type DrawRow } from '../../pipeline/records/drawRecord.ts'

export interface DrawsJournalOptions {
  /** Topic name; default pipeline/topics.ts `draws` (SVC_TOPIC_DRAWS, 'billing.draws'). */
  topic?: string
  /** Partitions when the topic is created here; default SVC_PARTITIONS or 3. */
  partitions?: number
}

interface Pending {
  rows: DrawRow[]
  resolve: () => void
  reject: (err: unknown) => void
}

export class DrawsJournal {
  private pending: Pending[] = []
  private flushing = false
  private closed = false

  private constructor(
    readonly log: EventLog,
    readonly topic: string,
    private readonly producer: LogProducer,
  ) {}

  static async open(log: EventLog, options: DrawsJournalOptions = {}): Promise<DrawsJournal> {
    const topic = options.topic ?? topicNames().draws
    await log.ensureTopics([{ name: topic, partitions: options.partitions ?? Number(process.env.SVC_PARTITIONS ?? 3) }])
    return new DrawsJournal(log, topic, await log.createProducer())
  }

  /** Appends rows; resolves once they are durable on the log. Rejects when the send failed (nothing acknowledged). */
  append(rows: DrawRow[]): Promise<void> {
    if (this.closed) return Promise.reject(new Error('draws journal is closed'))
    if (rows.length === 0) return Promise.resolve()
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ rows, resolve, reject })
      if (!this.flushing) void this.flush()
    })
  }

  private async flush(): Promise<void> {
    this.flushing = true
    try {
      while (this.pending.length > 0) {
        const batch = this.pending
        this.pending = []
        const records = batch.flatMap((p) =>
          p.rows.map((row) => ({ key: row.payer, value: encodeDraw(row), timestamp: Date.parse(row.created_at) })),
        )
        try {
          await this.producer.send(this.topic, records)
          for (const p of batch) p.resolve()
        } catch (err) {
          for (const p of batch) p.reject(err)
        }
      }
    } finally {
      this.flushing = false
    }
  }

  /**
   * Every row in the journal up to its current end, in per-partition offset order (a throwaway consumer group
   * reading from the beginning; it never commits).
   */
  async readAll(timeoutMs = 120_000): Promise<DrawRow[]> {
    const ends = await this.log.endOffsets(this.topic)
    const total = ends.reduce((a, b) => a + b, 0)
    if (total === 0) return []
    const consumer = await this.log.createConsumer({ groupId: `svc.draws-replay-${randomUUID()}`, topics: [this.topic], fromBeginning: true })
    const records: ConsumedRecord[] = []
    const seen = ends.map(() => 0)
    let done: () => void = () => undefined
    const finished = new Promise<void>((resolve) => (done = resolve))
    const complete = () => seen.every((n, p) => n >= ends[p]!)
    await consumer.run(async (batch) => {
      for (const r of batch.records) {
        if (r.offset < ends[batch.partition]!) {
          records.push(r)
          seen[batch.partition] = Math.max(seen[batch.partition]!, r.offset + 1)
        }
      }
      if (complete()) done()
    })
    let timer: NodeJS.Timeout | undefined
    try {
      if (!complete()) {
        await Promise.race([
          finished,
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`draws replay: ${records.length}/${total} records after ${timeoutMs} ms`)), timeoutMs)
          }),
        ])
      }
    } finally {
      clearTimeout(timer)
      await consumer.stop()
    }
    records.sort((a, b) => a.partition - b.partition || a.offset - b.offset)
    return records.map((r) => decodeDraw(r.value))
  }

  /** Waits for appends in flight, then closes the producer. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    while (this.flushing || this.pending.length > 0) await new Promise((r) => setTimeout(r, 5))
    await this.producer.close()
  }
}
