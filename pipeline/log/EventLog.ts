/**
 * The event log seam: produce keyed records to a topic, consume from committed offsets, commit.
 * Two implementations: EmbeddedLog (file-backed, single process, the default) and KafkaLog (kafkajs).
 * Both place a key on the same partition (common/murmur2.ts), so per-asset order and partition layout agree.
 */

export interface TopicSpec {
  name: string
  partitions: number
}

export interface LogRecord {
  /** Partitioning key; records with one key keep their order. */
  key: string
  value: Buffer
  /** Event time, epoch ms. */
  timestamp: number
}

export interface ConsumedRecord extends LogRecord {
  topic: string
  partition: number
  /** Offset within the partition; JSON-safe as a number (< 2^53). */
  offset: number
}

export interface ConsumedBatch {
  topic: string
  partition: number
  /** In offset order. */
  records: ConsumedRecord[]
}

export interface LogProducer {
  /** Resolves only when every record is durable (embedded: fsynced; Kafka: acks=-1). */
  send(topic: string, records: LogRecord[]): Promise<void>
  close(): Promise<void>
}

export interface ConsumerOptions {
  groupId: string
  topics: string[]
  /** Where a group with no committed offset starts. Default true. */
  fromBeginning?: boolean
}

export interface LogConsumer {
  /**
   * Delivers batches until stop(). Each batch is one partition's records in offset order. The handler's
   * promise must settle before the next batch of that partition. Offsets advance only through commit().
   */
  run(handler: (batch: ConsumedBatch) => Promise<void>): Promise<void>
  /** Commits `nextOffset` (the offset of the next record to read) for a partition. */
  commit(topic: string, partition: number, nextOffset: number): Promise<void>
  stop(): Promise<void>
}

export interface EventLog {
  readonly kind: 'embedded' | 'kafka'
  ensureTopics(specs: TopicSpec[]): Promise<void>
  partitionsOf(topic: string): Promise<number>
  /** Offset after the last record, per partition (index = partition). */
  endOffsets(topic: string): Promise<number[]>
  /** The last record of each partition, or null for an empty partition (index = partition). */
  lastRecords(topic: string): Promise<(ConsumedRecord | null)[]>
  createProducer(): Promise<LogProducer>
  createConsumer(options: ConsumerOptions): Promise<LogConsumer>
  close(): Promise<void>
}
