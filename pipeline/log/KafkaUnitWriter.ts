/**
 * KafkaLog's atomic units (LogProducer.sendAtomic): one transactional kafkajs producer per KafkaLog, and group commit.
 *
 * kafkajs runs one transaction at a time per producer, so units arriving while a transaction is in flight queue, and
 * the next transaction takes all of them (up to GROUP_BYTES): one AddPartitionsToTxn, one Produce per broker, one
 * EndTxn for many paid calls. A read_committed consumer sees a unit's records only after that commit, and never those
 * of an aborted transaction. GROUP_BYTES also keeps a unit the broker would refuse (a partition's records over its
 * message.max.bytes, 1 MiB by default) in a transaction of its own, so it fails alone rather than with its neighbours.
 *
 * Failures:
 * - A send that fails inside the transaction aborts it, so nothing of the group is visible, and its units reject
 *   (LOG_INVALID_ARGUMENT for a refused record, else LOG_IO, retryable). The producer is then replaced, always: when
 *   a Produce fails for one partition, kafkajs does not advance the idempotence sequence of the partitions that did
 *   append, so the next batch there reuses a sequence number and the broker acknowledges it as a duplicate without
 *   writing it — a committed unit with records missing (seen here: a unit over message.max.bytes, then the next
 *   unit's draws records were silently dropped). A new producer's InitProducerId starts a new epoch with fresh
 *   sequences, and also aborts the transaction if the abort itself failed.
 * - A commit whose answer is lost has an unknown outcome (the coordinator may have logged it): the units reject with
 *   LOG_IO and are not retried here, since a retry could write them twice.
 * - INVALID_PRODUCER_EPOCH / PRODUCER_FENCED mean another producer initialised the same transactional id (a restarted
 *   instance, or a second live one with the same instanceId), which aborted our open transaction. This writer then
 *   refuses every unit with LOG_FENCED for good, as the Java client treats a fenced producer: retrying would fence the
 *   other instance in turn, and the two would take the id from each other forever. (kafkajs speaks the request
 *   versions for which the broker reports a coordinator's transaction-timeout abort with the same code, so a
 *   transaction open longer than transactionTimeout, only possible during a broker outage, also ends here.)
 */
import type { Message, Producer, TopicMessages } from 'kafkajs'
import type { Logger } from 'pino'
import { GroupCommitQueue } from '../work/GroupCommitQueue.ts'
import { LogError } from './LogError.ts'

/** Most record bytes in one transaction: well under the broker's default message.max.bytes (1 MiB) per partition batch. */
const GROUP_BYTES = 512 * 1024
const FENCED_TYPES = new Set(['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED', 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED'])
const FENCED_CODES = new Set([47, 90, 53])
const TOO_LARGE_TYPES = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD'])

/** kafkajs nests the broker's error under cause / originalError / errors[]; every type and code found on the way. */
function errorChain(err: unknown): { types: Set<string>; codes: Set<number> } {
  const types = new Set<string>()
  const codes = new Set<number>()
  const seen = new Set<unknown>()
  const visit = (e: unknown, depth: number): void => {
    if (typeof e !== 'object' || e === null || seen.has(e) || depth > 6) return
    seen.add(e)
    const x = e as { type?: unknown; code?: unknown; cause?: unknown; originalError?: unknown; errors?: unknown }
    if (typeof x.type === 'string') types.add(x.type)
    if (typeof x.code === 'number') codes.add(x.code)
    visit(x.cause, depth + 1)
    visit(x.originalError, depth + 1)
    if (Array.isArray(x.errors)) for (const inner of x.errors) visit(inner, depth + 1)
  }
  visit(err, 0)
  return { types, codes }
}

export class KafkaUnitWriter {
  private producer: Producer | null = null
  /** Units arriving while a transaction is in flight: the next transaction takes them all, up to GROUP_BYTES. */
  private readonly units = new GroupCommitQueue<TopicMessages[]>({ maxBytes: GROUP_BYTES, flush: (group) => this.commitGroup(group) })
  private fenced: LogError | null = null

  constructor(
    readonly transactionalId: string,
    private readonly makeProducer: (transactionalId: string) => Producer,
    private readonly logger: Logger,
  ) {}

  /** Resolves once the unit's transaction is committed. `topicMessages` are physical topics, one entry per topic. */
  write(topicMessages: TopicMessages[], bytes: number): Promise<void> {
    if (this.fenced) return Promise.reject(this.fenced)
    return this.units.enqueue(topicMessages, bytes)
  }

  /** Lets queued units finish, then disconnects the producer. */
  async close(): Promise<void> {
    await this.units.drained()
    await this.dropProducer()
  }

  /** One transaction for the group; rejects its units together (see the file comment for what each failure leaves). */
  private async commitGroup(group: TopicMessages[][]): Promise<void> {
    const failure = await this.transact(group.length === 1 ? group[0]! : merge(group))
    if (failure) throw failure
  }

  /** One transaction: null once committed, else why not (see the file comment for what each failure leaves). */
  private async transact(topicMessages: TopicMessages[]): Promise<LogError | null> {
    if (this.fenced) return this.fenced
    let producer: Producer
    let tx: Awaited<ReturnType<Producer['transaction']>>
    try {
      producer = await this.connectedProducer()
      tx = await producer.transaction()
    } catch (err) {
      await this.dropProducer()
      return this.classify(err, 'starting a transaction failed', true)
    }
    try {
      await tx.sendBatch({ topicMessages, acks: -1 })
    } catch (err) {
      const error = this.classify(err, 'a transactional send failed; the transaction was aborted', true)
      if (!this.fenced) {
        await tx.abort().catch((abortErr: unknown) => this.logger.warn({ err: abortErr }, 'abort failed; the next producer aborts the open transaction'))
      }
      await this.dropProducer()
      return error
    }
    try {
      await tx.commit()
      return null
    } catch (err) {
      await this.dropProducer()
      // Not retryable as such: the records may be committed, and a blind retry would write them twice.
      return this.classify(err, 'the commit failed and its outcome is unknown', false)
    }
  }

  private async connectedProducer(): Promise<Producer> {
    if (this.producer) return this.producer
    const producer = this.makeProducer(this.transactionalId)
    await producer.connect()
    this.producer = producer
    return producer
  }

  private async dropProducer(): Promise<void> {
    const producer = this.producer
    this.producer = null
    await producer?.disconnect().catch((err: unknown) => this.logger.debug({ err }, 'disconnecting the transactional producer failed'))
  }

  private classify(err: unknown, what: string, retryable: boolean): LogError {
    const { types, codes } = errorChain(err)
    if ([...types].some((t) => FENCED_TYPES.has(t)) || [...codes].some((c) => FENCED_CODES.has(c))) {
      this.fenced ??= new LogError(
        'LOG_FENCED',
        `transactional id ${this.transactionalId} was taken over by another producer (a restarted or second instance with the same instanceId); atomic appends of this log are refused`,
        { cause: err },
      )
      this.logger.error({ err, transactionalId: this.transactionalId }, 'transactional producer fenced')
      return this.fenced
    }
    if ([...types].some((t) => TOO_LARGE_TYPES.has(t))) {
      return new LogError('LOG_INVALID_ARGUMENT', `the broker refused the unit's records (${[...types].join(', ')}): ${what}`, { cause: err })
    }
    return new LogError('LOG_IO', `kafka: ${what}: ${(err as Error)?.message ?? String(err)}`, { cause: err, retryable })
  }
}

/** The units' records per topic, in unit order (one entry per topic, so one batch per partition). */
function merge(group: TopicMessages[][]): TopicMessages[] {
  const byTopic = new Map<string, Message[]>()
  for (const unit of group) {
    for (const { topic, messages } of unit) {
      let list = byTopic.get(topic)
      if (!list) byTopic.set(topic, (list = []))
      for (const m of messages) list.push(m)
    }
  }
  return [...byTopic].map(([topic, messages]) => ({ topic, messages }))
}
