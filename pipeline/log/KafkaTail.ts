/**
 * The readable end of Kafka partitions: per partition, the last record a read_committed consumer can read, and the
 * offset after it. KafkaLog.endOffsets and lastRecords answer from here.
 *
 * Why not the high watermark: a transaction (KafkaLog.sendAtomic) leaves a commit or abort marker in every partition
 * it wrote, and the marker takes an offset that no consumer ever receives. Callers wait until they have handled the
 * record at end - 1 (DecisionLedger, DrawsJournal.readAll, Pipeline.drain); with the high watermark as the end a
 * partition whose last entry is a marker would never count as caught up. Records of an open transaction are excluded
 * the same way, by reading below the last stable offset (LSO, ListOffsets with read_committed) only.
 *
 * How: ListOffsets (read_committed) for the LSO and the log start, then Fetch (read_committed) backwards in growing
 * windows from the LSO until a readable record is found (kafkajs' Batch drops control records and records of aborted
 * transactions, as the consumer does). For a partition without markers that is one small fetch of its newest records.
 * kafkajs has no public Fetch without a consumer group (a throwaway group costs a join, 3 s by default on a
 * production broker), so this uses two kafkajs internals: the Kafka instance's cluster factory and its Batch class.
 * kafkajs is at its last release (2.2.4, unmaintained); connect() fails with LOG_IO naming the missing piece if an
 * upgrade ever moves them.
 */
import { createRequire } from 'node:module'
import type { Kafka } from 'kafkajs'
import { LogError } from './LogError.ts'

const require = createRequire(import.meta.url)
const READ_COMMITTED = 1
/** First window of offsets read back from the LSO; grows ×8 while no readable record is found. */
const FIRST_WINDOW = 16
const FETCH_MAX_BYTES = 1024 * 1024

/** A record as kafkajs decodes it (only the fields used here). */
export interface TailMessage {
  offset: string
  key: Buffer | null
  value: Buffer | null
  timestamp: string
}

export interface PartitionTail {
  /** Offset after the last readable record; 0 when there is none. */
  end: number
  last: TailMessage | null
}

interface FetchPartition {
  partition: number
  errorCode: number
  highWatermark: string
  abortedTransactions: unknown[]
  messages: unknown[]
}

interface InternalBroker {
  fetch(request: {
    replicaId: number
    isolationLevel: number
    maxWaitTime: number
    minBytes: number
    maxBytes: number
    topics: { topic: string; partitions: { partition: number; fetchOffset: string; maxBytes: number }[] }[]
  }): Promise<{ responses: { topicName: string; partitions: FetchPartition[] }[] }>
}

interface InternalCluster {
  connect(): Promise<void>
  disconnect(): Promise<void>
  addTargetTopic(topic: string): Promise<void>
  refreshMetadataIfNecessary(): Promise<void>
  refreshMetadata(): Promise<void>
  findLeaderForPartitions(topic: string, partitions: number[]): Record<string, number[]>
  findBroker(query: { nodeId: string }): Promise<InternalBroker>
  fetchTopicsOffset(
    topics: { topic: string; fromBeginning: boolean; partitions: { partition: number }[] }[],
  ): Promise<{ topic: string; partitions: { partition: number; offset: string }[] }[]>
}

interface InternalBatch {
  messages: TailMessage[]
  lastOffset(): string
}

type BatchClass = new (topic: string, fetchedOffset: string, partitionData: FetchPartition) => InternalBatch

function internals(kafka: Kafka): { createCluster: (options: object) => InternalCluster; Batch: BatchClass } {
  const symbol = Object.getOwnPropertySymbols(kafka).find((s) => s.description === 'private:Kafka:createCluster')
  const createCluster = symbol ? (kafka as unknown as Record<symbol, unknown>)[symbol] : undefined
  let Batch: unknown
  try {
    Batch = require('kafkajs/src/consumer/batch.js')
  } catch {
    Batch = undefined
  }
  if (typeof createCluster !== 'function' || typeof Batch !== 'function') {
    throw new LogError('LOG_IO', 'kafkajs internals used by KafkaTail (Kafka cluster factory, consumer/batch.js) are missing: was kafkajs upgraded past 2.2.4?')
  }
  return { createCluster: createCluster as (options: object) => InternalCluster, Batch: Batch as BatchClass }
}

export class KafkaTail {
  private constructor(
    private readonly cluster: InternalCluster,
    private readonly Batch: BatchClass,
  ) {}

  static async connect(kafka: Kafka): Promise<KafkaTail> {
    const { createCluster, Batch } = internals(kafka)
    const cluster = createCluster({ allowAutoTopicCreation: false, isolationLevel: READ_COMMITTED })
    await cluster.connect()
    return new KafkaTail(cluster, Batch)
  }

  /** Reads in flight, one at a time (see tails()); disconnect() waits for it. */
  private queue: Promise<unknown> = Promise.resolve()

  /**
   * The tail of every partition 0..partitions-1 of a physical topic (index = partition). Calls are served one at a
   * time: kafkajs opens a broker's connection lazily, and two first requests to one broker in flight together each
   * open one, orphaning all but the last: a socket that outlives disconnect() and keeps the process alive (CI: a test
   * file that passed every check never exited; the checkpoint reads the end offsets of several topics at once).
   */
  tails(topic: string, partitions: number): Promise<PartitionTail[]> {
    const next = this.queue.then(() => this.readTails(topic, partitions))
    this.queue = next.catch(() => undefined)
    return next
  }

  private async readTails(topic: string, partitions: number): Promise<PartitionTail[]> {
    await this.cluster.addTargetTopic(topic)
    await this.cluster.refreshMetadataIfNecessary()
    const ids = Array.from({ length: partitions }, (_, p) => ({ partition: p }))
    const stable = await this.cluster.fetchTopicsOffset([{ topic, fromBeginning: false, partitions: ids }])
    const start = await this.cluster.fetchTopicsOffset([{ topic, fromBeginning: true, partitions: ids }])
    const offsetOf = (answer: typeof stable, p: number) => Number(answer[0]?.partitions.find((x) => x.partition === p)?.offset ?? 0)
    // One partition at a time, for the same reason as one call at a time (tails()).
    const tails: PartitionTail[] = []
    for (const { partition } of ids) tails.push(await this.partitionTail(topic, partition, offsetOf(start, partition), offsetOf(stable, partition)))
    return tails
  }

  /** After the reads in flight: one that connected after the disconnect would leave its socket open. */
  async disconnect(): Promise<void> {
    await this.queue
    await this.cluster.disconnect()
  }

  /** The last readable record below `stable` (the LSO), reading back from it in growing windows. */
  private async partitionTail(topic: string, partition: number, logStart: number, stable: number): Promise<PartitionTail> {
    let hi = stable
    let window = FIRST_WINDOW
    while (hi > logStart) {
      const lo = Math.max(logStart, hi - window)
      let last: TailMessage | null = null
      for (let at = lo; at < hi; ) {
        const batch = await this.fetch(topic, partition, at)
        for (const m of batch.messages) if (Number(m.offset) < hi) last = m
        const next = Number(batch.lastOffset()) + 1
        if (next <= at) break // nothing more below the LSO at this moment
        at = next
      }
      if (last) return { end: Number(last.offset) + 1, last }
      hi = lo
      window *= 8
    }
    return { end: 0, last: null }
  }

  private async fetch(topic: string, partition: number, offset: number): Promise<InternalBatch> {
    const leaders = this.cluster.findLeaderForPartitions(topic, [partition])
    const nodeId = Object.keys(leaders)[0]
    if (nodeId === undefined) {
      await this.cluster.refreshMetadata()
      throw new LogError('LOG_IO', `no leader known for ${topic}/${partition}`, { retryable: true })
    }
    const broker = await this.cluster.findBroker({ nodeId })
    const fetchOffset = String(offset)
    const { responses } = await broker.fetch({
      replicaId: -1,
      isolationLevel: READ_COMMITTED,
      maxWaitTime: 0,
      minBytes: 0,
      maxBytes: FETCH_MAX_BYTES,
      topics: [{ topic, partitions: [{ partition, fetchOffset, maxBytes: FETCH_MAX_BYTES }] }],
    })
    const data = responses[0]?.partitions.find((p) => p.partition === partition)
    if (!data) throw new LogError('LOG_IO', `fetch of ${topic}/${partition} at ${offset} returned no partition data`, { retryable: true })
    return new this.Batch(topic, fetchOffset, data)
  }
}
