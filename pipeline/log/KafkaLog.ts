/**
 * The Kafka event log (kafkajs), used when `SVC_LOG=kafka`.
 *
 * Producer: idempotent, acks -1, maxInFlightRequests 1 (no duplicates from retries, order kept per partition), and
 * a partitioner that calls common/murmur2.ts partitionForKey, so a key lands on the same partition as in EmbeddedLog
 * (kafkajs' DefaultPartitioner computes the same function; test/common/murmur2.test.ts checks they agree). Passing a
 * createPartitioner also silences kafkajs' KAFKAJS_NO_PARTITIONER_WARNING.
 * Topics are created explicitly (auto-creation off) with the retry the broker needs right after creation.
 *
 * `topicPrefix` (an addition beyond the EventLog seam) maps every logical topic and group id to `<prefix><name>` on
 * the broker, so tests and tenants can share one broker without seeing each other; records carry the logical name.
 *
 * Atomic units (sendAtomic) go through one transactional producer per KafkaLog (KafkaUnitWriter: group commit, abort
 * on failure, fencing) with transactional id `<topicPrefix><instanceId>.atomic`. The id must be the same for the same
 * service instance across restarts, so that the restarted producer's InitProducerId fences its crashed predecessor
 * and aborts the transaction it left open at once; with a fresh id every start, read_committed consumers would stall
 * behind that open transaction until the broker's transaction timeout (60 s) expires it. `instanceId` defaults to the
 * clientId, so one service instance per (clientId, topicPrefix) needs no setting; two live instances sharing a broker
 * and prefix must each set their own, or they fence each other (the loser's atomic appends fail with LOG_FENCED).
 * Consumers read committed records only (readUncommitted: false), and plain send() stays non-transactional.
 */
import { setTimeout as delay } from 'node:timers/promises'
import { Kafka, type Admin, type ICustomPartitioner, type Producer } from 'kafkajs'
import type { JSONSchemaType } from 'ajv'
import type { Logger } from 'pino'
import { childLogger } from '../../common/logger.ts'
import { murmur2 } from '../../common/murmur2.ts'
import type { ConsumedRecord, ConsumerFault, ConsumerLag, ConsumerOptions, EventLog, LogConsumer, LogProducer, LogRecord, TopicRecords, TopicSpec } from './EventLog.ts'
import { lagOf } from './consumerLag.ts'
import { KafkaConsumer, type KafkaLogInternals } from './KafkaConsumer.ts'
import { kafkaLogLevel, pinoLogCreator } from './kafkaLogging.ts'
import { KafkaTail, type PartitionTail } from './KafkaTail.ts'
import { KafkaUnitWriter } from './KafkaUnitWriter.ts'
import { LogError } from './LogError.ts'
import { RetryPolicy } from '../work/RetryPolicy.ts'
import { assertRecords, assertTopicBatches, assertTopicName, assertTopicSpecs } from './validate.ts'
import { optionsValidator } from '../../common/validation.ts'


/**
 * Journals are the system of record (the decision ledger, the draws journal, ...), so nothing of theirs expires. The
 * broker default (retention.ms = 7 days) judges age by record timestamps, and ours are event times — a replayed tape
 * from months ago would be deleted range by range at the next retention check, silently losing records under
 * committed offsets. No time or size retention; cleanup by deletion only, never compaction: every journal's key is an
 * ordering key shared by records of many ids, so keeping the last record per key would drop rows (docs/decisions.md).
 */
const TOPIC_CONFIG = [
  { name: 'retention.ms', value: '-1' },
  { name: 'retention.bytes', value: '-1' },
  { name: 'cleanup.policy', value: 'delete' },
]

/**
 * A topic created with a retentionMs (the ticks: issue 31 item 3): records go that long after they were appended. Age
 * by append time (LogAppendTime), not by the record's event time, so a history replayed today is kept for the whole
 * retention from today: the Parquet sink has that long to seal it. Nothing else reads a tick's log timestamp (the
 * sink's tables take event time from the tick itself; only its rejects table records the log timestamp).
 */
function topicConfig(spec: TopicSpec): Array<{ name: string; value: string }> {
  if (spec.retentionMs === undefined) return TOPIC_CONFIG
  return [
    { name: 'retention.ms', value: String(spec.retentionMs) },
    { name: 'retention.bytes', value: '-1' },
    { name: 'cleanup.policy', value: 'delete' },
    { name: 'message.timestamp.type', value: 'LogAppendTime' },
  ]
}

export interface KafkaLogOptions {
  /** host:port list; use 127.0.0.1 rather than localhost (Node may resolve localhost to ::1 first). */
  brokers: string[]
  clientId?: string
  /** Prepended to every topic and group id on the broker (see the file comment). Default ''. */
  topicPrefix?: string
  /**
   * Names this service instance for its transactional id, `<topicPrefix><instanceId>.atomic` (see the file comment):
   * stable across restarts of one instance, distinct between live instances. Default: the clientId.
   */
  instanceId?: string
  /** Replication factor of topics created by ensureTopics. Default 1 (single broker). */
  replicationFactor?: number
  connectionTimeoutMs?: number
  requestTimeoutMs?: number
  /**
   * How long the group coordinator waits for a silent consumer before handing its partitions to another. A consumer
   * that died without leaving (SIGKILL, power loss) holds its partitions this long, so a restart waits up to this long
   * before it consumes. Default 30 s (kafkajs'); the broker's floor is group.min.session.timeout.ms (6 s by default).
   */
  sessionTimeoutMs?: number
  /**
   * Several instances on one cluster (SVC_CLUSTER=on, issue 32): every processor's consumer group is named by the
   * instance, `<topicPrefix><group>.<instanceId>`, so each instance reads every partition into its own state (a
   * replica) instead of splitting the partitions with the other instances. Leases (KafkaLease.ts) stay shared.
   */
  replicaGroups?: boolean
}

const validateOptions = optionsValidator<KafkaLogOptions>(
  {
    type: 'object',
    additionalProperties: false,
    required: ['brokers'],
    properties: {
      brokers: { type: 'array', minItems: 1, items: { type: 'string', pattern: '^[^\\s:,]+:[0-9]{1,5}$' } },
      clientId: { type: 'string', minLength: 1, nullable: true, default: 'decision-intelligence-service' },
      topicPrefix: { type: 'string', pattern: '^[a-zA-Z0-9._-]*$', maxLength: 100, nullable: true, default: '' },
      instanceId: { type: 'string', pattern: '^[a-zA-Z0-9._-]+$', maxLength: 100, nullable: true },
      replicationFactor: { type: 'integer', minimum: 1, maximum: 32, nullable: true, default: 1 },
      connectionTimeoutMs: { type: 'integer', minimum: 100, nullable: true, default: 10_000 },
      requestTimeoutMs: { type: 'integer', minimum: 100, nullable: true, default: 30_000 },
      sessionTimeoutMs: { type: 'integer', minimum: 1_000, maximum: 1_800_000, nullable: true, default: 30_000 },
      replicaGroups: { type: 'boolean', nullable: true, default: false },
    },
  } as JSONSchemaType<KafkaLogOptions>,
  'KafkaLog options',
  LogError.config,
)

/** partition = toPositive(murmur2(key)) % n, exactly as EmbeddedLog places keys. */
export const murmur2Partitioner: ICustomPartitioner = () => ({ partitionMetadata, message }) => {
  if (message.partition !== undefined && message.partition !== null) return message.partition
  const key = message.key ?? ''
  return (murmur2(Buffer.isBuffer(key) ? key : Buffer.from(key, 'utf8')) & 0x7fffffff) % partitionMetadata.length
}

/** A new topic's create-and-verify step: a KRaft broker may need a few seconds before it answers for it. */
const CREATE_RETRY = new RetryPolicy({ attempts: 5, baseMs: 1000, factor: 1, jitter: 0.2 })
/** Reading the partition tails again after a leader move or a lost connection. */
const TAIL_RETRY = new RetryPolicy({ attempts: 5, baseMs: 200, capMs: 1000 })

/** A plain producer of a LogProducer: replaced after a failed send, disconnected once its sends in flight settle. */
interface PlainProducer {
  producer: Producer
  ready: Promise<Producer>
  inflight: number
  retired: boolean
}

/** How long a send waits for an unreachable broker before trying again, doubling up to the max. */
const OUTAGE_FIRST_WAIT_MS = 500
const OUTAGE_MAX_WAIT_MS = 5_000

/** A send that failed because no connection to the broker could be made (kafkajs: KafkaJSConnectionError in the chain, ECONNREFUSED and the like). */
function brokerUnreachable(err: unknown): boolean {
  for (let e = err as { name?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 6; e = e.cause as typeof e, depth++) {
    if (e.name === 'KafkaJSConnectionError') return true
  }
  return false
}

function errorType(err: unknown): string | undefined {
  const e = err as { type?: string; cause?: { type?: string }; errors?: Array<{ type?: string }> }
  return e?.type ?? e?.cause?.type ?? e?.errors?.[0]?.type
}

export class KafkaLog implements EventLog, KafkaLogInternals {
  readonly kind = 'kafka' as const
  readonly logger: Logger
  private readonly partitionCounts = new Map<string, number>()
  private readonly producers = new Set<Producer>()
  private readonly consumers = new Set<KafkaConsumer>()
  private units: KafkaUnitWriter | null = null
  private tail: Promise<KafkaTail> | null = null
  private closed = false
  /** The transactional id of this log's atomic appends (see the file comment). */
  readonly transactionalId: string

  private constructor(
    readonly kafka: Kafka,
    readonly admin: Admin,
    private readonly options: Required<KafkaLogOptions>,
    logger: Logger,
  ) {
    this.logger = logger
    this.transactionalId = `${options.topicPrefix}${options.instanceId}.atomic`
  }

  get sessionTimeoutMs(): number {
    return this.options.sessionTimeoutMs
  }

  static async connect(options: KafkaLogOptions): Promise<KafkaLog> {
    const resolved = validateOptions(options) as Required<KafkaLogOptions>
    resolved.instanceId ??= resolved.clientId
    const logger = childLogger('kafka-log')
    const kafka = new Kafka({
      clientId: resolved.clientId,
      brokers: resolved.brokers,
      connectionTimeout: resolved.connectionTimeoutMs,
      requestTimeout: resolved.requestTimeoutMs,
      logLevel: kafkaLogLevel(logger),
      logCreator: pinoLogCreator(childLogger('kafkajs')),
      retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 5000 },
    })
    const admin = kafka.admin()
    await admin.connect()
    return new KafkaLog(kafka, admin, resolved, logger)
  }

  // ---- KafkaLogInternals ----

  physicalTopic(topic: string): string {
    assertTopicName(topic)
    const physical = this.options.topicPrefix + topic
    assertTopicName(physical)
    return physical
  }

  logicalTopic(physical: string): string {
    return physical.slice(this.options.topicPrefix.length)
  }

  physicalGroup(groupId: string): string {
    const shared = this.sharedGroup(groupId)
    return this.options.replicaGroups ? `${shared}.${this.options.instanceId}` : shared
  }

  /** A group every instance of the cluster joins as one (a lease), whatever replicaGroups says. */
  sharedGroup(groupId: string): string {
    if (typeof groupId !== 'string' || groupId.length === 0) throw new LogError('LOG_INVALID_ARGUMENT', 'groupId: must be a non-empty string')
    return this.options.topicPrefix + groupId
  }

  /** This instance's id (KafkaLogOptions.instanceId, defaulting to the client id). */
  get instanceId(): string {
    return this.options.instanceId
  }

  forget(consumer: KafkaConsumer): void {
    this.consumers.delete(consumer)
  }

  // ---- EventLog ----

  async ensureTopics(specs: TopicSpec[]): Promise<void> {
    this.assertOpen()
    assertTopicSpecs(specs)
    const wanted = new Map(specs.map((s) => [this.physicalTopic(s.name), s.partitions]))
    const specOf = new Map(specs.map((s) => [this.physicalTopic(s.name), s]))
    // Right after creation a KRaft broker may still answer UNKNOWN_TOPIC_OR_PARTITION or LEADER_NOT_AVAILABLE, which
    // kafkajs' createTopics does not retry (kafka-broker.md §6.2): retry the whole create-and-verify step.
    await CREATE_RETRY.run(
      async () => {
        const existing = new Set(await this.admin.listTopics())
        const missing = [...wanted].filter(([name]) => !existing.has(name))
        if (missing.length > 0) {
          await this.admin
            .createTopics({
              waitForLeaders: true,
              topics: missing.map(([topic, numPartitions]) => ({
                topic,
                numPartitions,
                replicationFactor: this.options.replicationFactor,
                configEntries: topicConfig(specOf.get(topic)!),
              })),
            })
            .catch((err: unknown) => {
              if (errorType(err) !== 'TOPIC_ALREADY_EXISTS') throw err
            })
        }
        const { topics } = await this.admin.fetchTopicMetadata({ topics: [...wanted.keys()] })
        for (const t of topics) {
          const expected = wanted.get(t.name)!
          if (t.partitions.length !== expected) {
            throw new LogError('LOG_TOPIC_MISMATCH', `topic ${this.logicalTopic(t.name)} has ${t.partitions.length} partitions, not ${expected}`)
          }
          if (t.partitions.some((p) => p.leader < 0)) throw Object.assign(new Error(`no leader yet for ${t.name}`), { type: 'LEADER_NOT_AVAILABLE' })
          await this.admin.fetchTopicOffsets(t.name)
          this.partitionCounts.set(t.name, expected)
        }
      },
      {
        // kafkajs' errors (not yet a leader, unknown topic) are retried; our own (a partition mismatch) are final.
        retryable: (err) => !(err instanceof LogError),
        onRetry: (err, attempt) => this.logger.warn({ err, attempt }, 'ensureTopics: broker not ready for the new topics yet; retrying'),
      },
    )
  }

  async partitionsOf(topic: string): Promise<number> {
    this.assertOpen()
    const physical = this.physicalTopic(topic)
    const cached = this.partitionCounts.get(physical)
    if (cached !== undefined) return cached
    try {
      const { topics } = await this.admin.fetchTopicMetadata({ topics: [physical] })
      const n = topics[0]!.partitions.length
      this.partitionCounts.set(physical, n)
      return n
    } catch (err) {
      if (errorType(err) === 'UNKNOWN_TOPIC_OR_PARTITION') {
        throw new LogError('LOG_UNKNOWN_TOPIC', `topic ${topic} does not exist (create it with ensureTopics)`, { cause: err })
      }
      throw err
    }
  }

  /** After the last record a read_committed consumer can read, per partition (KafkaTail: not the high watermark). */
  async endOffsets(topic: string): Promise<number[]> {
    return (await this.tails(topic)).map((t) => t.end)
  }

  async lastRecords(topic: string): Promise<(ConsumedRecord | null)[]> {
    return (await this.tails(topic)).map(({ last }, partition) =>
      last
        ? {
            topic,
            partition,
            offset: Number(last.offset),
            key: last.key === null ? '' : last.key.toString('utf8'),
            value: last.value ?? Buffer.alloc(0),
            timestamp: Number(last.timestamp),
          }
        : null,
    )
  }

  private async tails(topic: string): Promise<PartitionTail[]> {
    const n = await this.partitionsOf(topic)
    const physical = this.physicalTopic(topic)
    return TAIL_RETRY.run(
      async () => {
        // Never a new connection after close(): it would be a socket nobody disconnects.
        this.assertOpen()
        try {
          this.tail ??= KafkaTail.connect(this.kafka)
          return await (await this.tail).tails(physical, n)
        } catch (err) {
          // A leader move or a connection lost between ListOffsets and Fetch: the next attempt asks with fresh metadata.
          const failed = this.tail
          this.tail = null
          await failed?.then((t) => t.disconnect()).catch(() => {})
          throw err
        }
      },
      {
        retryable: (err) => !(err instanceof LogError && !err.retryable),
        onRetry: (err, attempt) => this.logger.warn({ err, topic, attempt }, 'reading the partition tails failed; retrying'),
      },
    )
  }

  async createProducer(): Promise<LogProducer> {
    this.assertOpen()
    let current = this.plainProducer()
    await current.ready
    let closed = false
    return {
      send: async (topic: string, records: LogRecord[]) => {
        if (closed || this.closed) throw new LogError('LOG_CLOSED', 'producer is closed')
        assertRecords(records)
        const physical = this.physicalTopic(topic)
        await this.partitionsOf(topic) // LOG_UNKNOWN_TOPIC now, rather than after kafkajs' retries
        if (records.length === 0) return
        const used = current
        used.inflight++
        try {
          const messages = records.map((r) => ({ key: r.key, value: r.value, timestamp: String(r.timestamp) }))
          // kafkajs gives up on a broker it cannot connect to (a non-retriable error wrapping the connection error),
          // whatever its retry count: the tick feed's send failed in a broker restart and stopped the feed for good
          // (issue 31). Such a send is waited out here, on the same producer: no partition acknowledged it, so its
          // sequence numbers did not move, and if the broker did write it the resend is deduplicated as idempotent.
          for (let wait = OUTAGE_FIRST_WAIT_MS; ; wait = Math.min(wait * 2, OUTAGE_MAX_WAIT_MS)) {
            try {
              await (await used.ready).send({ topic: physical, acks: -1, messages })
              break
            } catch (err) {
              if (!brokerUnreachable(err) || closed || this.closed) throw err
              this.logger.warn({ err: (err as Error).message, topic, retryInMs: wait }, 'the broker cannot be reached; the send waits for it')
              await delay(wait)
            }
          }
        } catch (err) {
          // When a Produce fails for one partition (a record over the broker's message.max.bytes), kafkajs does not
          // advance the idempotence sequence of the partitions that did append, so the next send there reuses a
          // sequence number and the broker acknowledges it as a duplicate without writing it: a later send lost in
          // silence (kafkaTransactions.test.ts). A new producer has a new producer id and fresh sequences.
          if (current === used && !closed) {
            used.retired = true
            current = this.plainProducer()
          }
          throw err
        } finally {
          used.inflight--
          if (used.retired && used.inflight === 0) await this.dropPlainProducer(used)
        }
      },
      sendAtomic: async (batches: ReadonlyArray<TopicRecords>) => {
        if (closed || this.closed) throw new LogError('LOG_CLOSED', 'producer is closed')
        await this.sendAtomic(batches)
      },
      close: async () => {
        if (closed) return
        closed = true
        await this.dropPlainProducer(current)
      },
    }
  }

  /** An idempotent, non-transactional kafkajs producer for send(), connecting. */
  private plainProducer(): PlainProducer {
    const producer = this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      // An idempotent producer must not give up (kafkajs warns otherwise): a send that failed after the broker
      // wrote it, then resent by the caller, would be a duplicate. send() waits out a broker outage instead.
      retry: { retries: Number.MAX_SAFE_INTEGER, initialRetryTime: 200, maxRetryTime: 5000 },
      allowAutoTopicCreation: false,
      createPartitioner: murmur2Partitioner,
    })
    this.producers.add(producer)
    const ready = producer.connect().then(() => producer)
    ready.catch(() => this.producers.delete(producer))
    return { producer, ready, inflight: 0, retired: false }
  }

  private async dropPlainProducer(handle: PlainProducer): Promise<void> {
    handle.retired = true
    if (!this.producers.delete(handle.producer)) return
    await handle.producer.disconnect().catch((err: unknown) => this.logger.debug({ err }, 'disconnecting a producer failed'))
  }

  async createConsumer(options: ConsumerOptions): Promise<LogConsumer> {
    this.assertOpen()
    if (!Array.isArray(options?.topics) || options.topics.length === 0) throw new LogError('LOG_INVALID_ARGUMENT', 'topics: must be a non-empty array')
    for (const topic of options.topics) await this.partitionsOf(topic)
    const consumer = new KafkaConsumer(this, options)
    this.consumers.add(consumer)
    return consumer
  }

  consumerLag(): Promise<ConsumerLag[]> {
    return lagOf(this.consumers, (topic) => this.endOffsets(topic))
  }

  consumerFaults(): ConsumerFault[] {
    const faults: ConsumerFault[] = []
    for (const c of this.consumers) {
      const crash = c.fault()
      if (crash) faults.push({ groupId: c.groupId, error: crash.message })
    }
    return faults
  }

  /** Validated whole (topics must exist) before it is queued, so a bad unit writes nothing; see KafkaUnitWriter. */
  private async sendAtomic(batches: ReadonlyArray<TopicRecords>): Promise<void> {
    this.assertOpen()
    assertTopicBatches(batches)
    const byTopic = new Map<string, { topic: string; messages: { key: string; value: Buffer; timestamp: string }[] }>()
    let bytes = 0
    for (const b of batches) {
      const physical = this.physicalTopic(b.topic)
      await this.partitionsOf(b.topic) // LOG_UNKNOWN_TOPIC now, rather than after kafkajs' retries
      let entry = byTopic.get(physical)
      if (!entry) byTopic.set(physical, (entry = { topic: physical, messages: [] }))
      for (const r of b.records) {
        entry.messages.push({ key: r.key, value: r.value, timestamp: String(r.timestamp) })
        bytes += r.key.length + r.value.length
      }
    }
    const topicMessages = [...byTopic.values()].filter((t) => t.messages.length > 0)
    if (topicMessages.length === 0) return
    this.assertOpen()
    this.units ??= new KafkaUnitWriter(this.transactionalId, (transactionalId) => this.transactionalProducer(transactionalId), this.logger)
    await this.units.write(topicMessages, bytes)
  }

  private transactionalProducer(transactionalId: string): Producer {
    return this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      transactionalId,
      // As for send(): a retriable failure is waited out rather than surfaced and resent by the caller. The first
      // retry comes sooner: right after a commit the coordinator answers the next transaction's AddPartitionsToTxn
      // with CONCURRENT_TRANSACTIONS until it has written the markers (a few ms), and a 200 ms back-off there cut
      // back-to-back transactions to ~5 per second (measured: 183 units/s at 16 callers, 800-1000 with 10-30 ms).
      retry: { retries: Number.MAX_SAFE_INTEGER, initialRetryTime: 20, maxRetryTime: 5000 },
      allowAutoTopicCreation: false,
      createPartitioner: murmur2Partitioner,
    })
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await Promise.all([...this.consumers].map((c) => c.stop()))
    await this.units?.close()
    await this.tail?.then((t) => t.disconnect()).catch(() => {})
    await Promise.all([...this.producers].map((p) => p.disconnect()))
    this.producers.clear()
    await this.admin.disconnect()
  }

  private assertOpen(): void {
    if (this.closed) throw new LogError('LOG_CLOSED', 'kafka log is closed')
  }
}
