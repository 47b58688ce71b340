/**
 * The event log seam: produce keyed records to a topic, consume from committed offsets, commit.
 * Two implementations: EmbeddedLog (file-backed, single process, the default) and KafkaLog (kafkajs).
 * Both place a key on the same partition (common/murmur2.ts), so per-asset order and partition layout agree.
 */

export interface TopicSpec {
  name: string
  partitions: number
  /**
   * Kafka only, applied when the service creates the topic: records may be deleted this long after they were appended
   * (retention.ms, judged by append time: message.timestamp.type=LogAppendTime, since record timestamps are event
   * times and a replayed history's are months old). Absent: nothing ever expires. The embedded log deletes only through
   * deleteSegmentsBelow (pipeline/TickRetention.ts).
   */
  retentionMs?: number
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

/** The records of one topic within an atomic unit (LogProducer.sendAtomic). */
export interface TopicRecords {
  topic: string
  records: LogRecord[]
}

export interface LogProducer {
  /** Resolves only when every record is durable (embedded: fsynced; Kafka: acks=-1). */
  send(topic: string, records: LogRecord[]): Promise<void>
  /**
   * Issue 11, item 7: "A paid call is one durable unit of work: its debit, its decision and its answer receipt are
   * appended atomically (one fsync round on the embedded log; a kafkajs transaction with read_committed consumers on
   * Kafka), so a crash leaves all or nothing."
   *
   * Appends records to one or more topics as one unit: once it resolves every record is durable; after a crash at any
   * point either every record of the unit is in the log or none is; consumers see a unit's records only once the whole
   * unit is durable (Kafka: read_committed). Records keep their per-key partitioning and order.
   * Concurrent calls share one fsync round (embedded) or one transaction (Kafka). A rejected unit wrote nothing
   * consumers can see — except a Kafka commit whose answer was lost (LOG_IO, not retryable), whose outcome is unknown.
   * Kafka only: every partition a unit touched gets a transaction marker, which takes an offset, so offsets there are
   * not dense (endOffsets still ends right after the last readable record); and the broker writes the markers just
   * after the commit returns, so a unit can become readable a few milliseconds after this resolves (embedded: at once).
   */
  sendAtomic(batches: ReadonlyArray<TopicRecords>): Promise<void>
  close(): Promise<void>
}

export interface ConsumerOptions {
  groupId: string
  topics: string[]
  /** Where a group with no committed offset starts. Default true. */
  fromBeginning?: boolean
  /**
   * Start positions that override the group's committed offsets on the partitions they name (a processor restored
   * from a state snapshot reads the tail after the snapshot's positions; a rebuild passes offset 0 everywhere). The
   * positions are committed for the group before it joins, so a rebalance later resumes from them too.
   */
  startAt?: ReadonlyArray<ConsumerPosition>
}

/** Where a consumer stands on one partition: the offset of the next record it hands over. */
export interface ConsumerPosition {
  topic: string
  partition: number
  next: number
}

/** How far one consumer group is behind the end of one topic, summed over partitions (consumerLag()). */
export interface ConsumerLag {
  groupId: string
  topic: string
  lag: number
}

/** A consumer that is not consuming now, and why (EventLog.consumerFaults). */
export interface ConsumerFault {
  groupId: string
  error: string
}

export interface LogConsumer {
  /**
   * Delivers batches until stop(). Each batch is one partition's records in offset order. The handler's
   * promise must settle before the next batch of that partition. Offsets advance only through commit().
   */
  run(handler: (batch: ConsumedBatch) => Promise<void>): Promise<void>
  /** Commits `nextOffset` (the offset of the next record to read) for a partition. */
  commit(topic: string, partition: number, nextOffset: number): Promise<void>
  /**
   * Commits several partitions' positions (`next` each) as one request per topic: a processor's checkpoint commits
   * every partition it reads, and on Kafka after stop() each commit is an admin round trip (an engine's final
   * checkpoint took 15-30 s committed one by one, issue 31's stop deadline).
   */
  commitPositions(positions: ReadonlyArray<ConsumerPosition>): Promise<void>
  /**
   * Per partition it is positioned on, the offset of the next record this consumer hands over (after a batch's
   * handler resolved: a batch in flight is not consumed yet). Empty before run() positioned it and after stop().
   */
  positions(): ReadonlyArray<ConsumerPosition>
  stop(): Promise<void>
}

export interface EventLog {
  readonly kind: 'embedded' | 'kafka'
  ensureTopics(specs: TopicSpec[]): Promise<void>
  partitionsOf(topic: string): Promise<number>
  /**
   * Offset after the last record, per partition (index = partition): once a consumer has handled a record at offset
   * end - 1 it has seen everything that was readable at the call. (Kafka: records of open or aborted transactions and
   * transaction markers are not records; they may sit at or past this end.)
   */
  endOffsets(topic: string): Promise<number[]>
  /** The last record of each partition, or null for an empty partition (index = partition). */
  lastRecords(topic: string): Promise<(ConsumedRecord | null)[]>
  createProducer(): Promise<LogProducer>
  createConsumer(options: ConsumerOptions): Promise<LogConsumer>
  /**
   * The lag of every consumer of this process that is running, per group and topic: end offset − position, summed
   * over partitions (consumerLag.ts). What /metrics reports as consumer lag.
   */
  consumerLag(): Promise<ConsumerLag[]>
  /**
   * Consumers of this process that crashed and are not consuming until they re-join (Kafka: a broker outage, a lost
   * membership, a failing handler; each is revived by itself). The event-log readiness is down while any is listed.
   * Absent on a log whose consumers do not crash this way (the embedded log).
   */
  consumerFaults?(): ConsumerFault[]
  close(): Promise<void>
}
