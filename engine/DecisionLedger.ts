/**
 * The append-only decision ledger on the event log: decisions go to the `decisions` topic (key = question|asset|
 * subject), outcomes to `outcomes` (key = decision_id); the Parquet sink makes them tables. This class is the only
 * write path, and it only ever appends.
 *
 * Spec, What the service does 2: "Decisions are kept on an append-only ledger. A recorded row is never altered."
 * Endpoints, POST /v1/decisions: "identical inputs under the same policy version re-serve the recorded decision, and a
 * repeat is not charged as a new decision row".
 *
 * - Dedupe: an in-memory LedgerIndex, rebuilt on open from the two topics (a follower consumer that reads from the
 *   beginning and never commits), then fed by this process's appends and by whatever other writers append.
 * - Refusal to alter: staging a record whose decision_id (or an outcome whose decision_id) is already recorded with
 *   other content throws LEDGER_CONFLICT; identical content is a re-serve (no new row).
 * - Durability: stage*() keeps records in order; flush() sends decisions, then outcomes (an outcome never precedes its
 *   decision on the log), and only once a send resolved (fsynced / acks=all) are they visible to reads.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { childLogger } from '../common/logger.ts'
import type { ConsumedBatch, EventLog, LogConsumer, LogProducer, LogRecord } from '../pipeline/log/EventLog.ts'
import { decisionKey, decodeDecision, encodeDecision, type LedgerDecision } from '../pipeline/records/decisionRecord.ts'
import { decodeOutcome, encodeOutcome, type LedgerOutcome } from '../pipeline/records/outcomeRecord.ts'
import { topicNames, topicSpecs, type TopicNames } from '../pipeline/topics.ts'
import { canonicalJson } from '../common/jcs.ts'
import { EngineError } from './EngineError.ts'
import { LedgerIndex } from './LedgerIndex.ts'

const log = childLogger('decision-ledger')

/** Bytes of record values per send: well under Kafka's default 1 MiB message.max.bytes. */
const SEND_BYTES = 256 * 1024

export interface DecisionLedgerOptions {
  log: EventLog
  names?: TopicNames
  /** Partitions when this call creates the topics (default SVC_PARTITIONS or 3, as the pipeline). */
  partitions?: number
  /** Consumer group of the index follower (never commits; default 'svc.ledger-index'). */
  groupId?: string
  /** How long open() waits for the follower to reach the end offsets it saw (default 120 s). */
  catchUpTimeoutMs?: number
}

export class DecisionLedger {
  readonly index = new LedgerIndex()
  readonly names: TopicNames
  private stagedDecisions = new Map<string, LedgerDecision>()
  private stagedOutcomes = new Map<string, LedgerOutcome>()
  private chain: Promise<void> = Promise.resolve()
  private readonly positions = new Map<string, number>()
  private followerError: Error | undefined
  /** Called for each decision another writer appended (first seen on the topic, not through this ledger). */
  onFollowed: ((d: LedgerDecision) => void) | undefined
  private closed = false

  private constructor(
    private readonly eventLog: EventLog,
    names: TopicNames,
    private readonly producer: LogProducer,
    private readonly consumer: LogConsumer,
  ) {
    this.names = names
  }

  static async open(options: DecisionLedgerOptions): Promise<DecisionLedger> {
    const names = options.names ?? topicNames()
    await options.log.ensureTopics(topicSpecs(names, options.partitions ?? Number(process.env.SVC_PARTITIONS ?? 3)))
    const ends = { [names.decisions]: await options.log.endOffsets(names.decisions), [names.outcomes]: await options.log.endOffsets(names.outcomes) }
    const producer = await options.log.createProducer()
    const consumer = await options.log.createConsumer({ groupId: options.groupId ?? 'svc.ledger-index', topics: [names.decisions, names.outcomes], fromBeginning: true })
    const ledger = new DecisionLedger(options.log, names, producer, consumer)
    consumer.run((batch) => ledger.follow(batch)).catch((err: unknown) => {
      ledger.followerError = err instanceof Error ? err : new Error(String(err))
      log.error({ err }, 'ledger follower stopped')
    })
    const deadline = Date.now() + (options.catchUpTimeoutMs ?? 120_000)
    for (;;) {
      const behind = Object.entries(ends).some(([topic, e]) => e.some((end, p) => end > 0 && (ledger.positions.get(`${topic}/${p}`) ?? 0) < end))
      if (!behind) break
      if (ledger.followerError) throw ledger.followerError
      if (Date.now() > deadline) {
        await ledger.close()
        throw new EngineError('ENGINE_CLOSED', 'the ledger index did not catch up with the decisions/outcomes topics in time')
      }
      await sleep(10)
    }
    log.info({ ...ledger.index.size, conflicts: ledger.index.conflicts }, 'ledger index rebuilt from the log')
    return ledger
  }

  private async follow(batch: ConsumedBatch): Promise<void> {
    for (const r of batch.records) {
      try {
        let result
        if (batch.topic === this.names.decisions) {
          const d = decodeDecision(r.value)
          result = this.index.addDecision(d)
          if (result === 'added') this.onFollowed?.(d)
        } else result = this.index.addOutcome(decodeOutcome(r.value))
        if (result === 'conflict') log.warn({ topic: r.topic, partition: r.partition, offset: r.offset }, 'record conflicts with a recorded one; the first is kept')
      } catch (err) {
        log.warn({ topic: r.topic, partition: r.partition, offset: r.offset, err: (err as Error).message }, 'undecodable ledger record ignored by the index')
      }
      this.positions.set(`${batch.topic}/${batch.partition}`, r.offset + 1)
    }
  }

  /** A recorded (or staged) decision. */
  findDecision(id: string): LedgerDecision | null {
    return this.index.decision(id) ?? this.stagedDecisions.get(id) ?? null
  }

  hasOutcome(decisionId: string): boolean {
    return this.index.outcome(decisionId) !== null || this.stagedOutcomes.has(decisionId)
  }

  /**
   * Stages a decision for the next flush. An id already recorded or staged re-serves that record (isNew false) when
   * the content is identical, and throws LEDGER_CONFLICT when it differs: a recorded row is never replaced.
   */
  stageDecision(d: LedgerDecision): { record: LedgerDecision; isNew: boolean } {
    this.assertOpen()
    const have = this.findDecision(d.decision_id)
    if (have) {
      if (canonicalJson(have) !== canonicalJson(d)) {
        throw new EngineError('LEDGER_CONFLICT', `decision ${d.decision_id} is already recorded with other content; the ledger keeps the first`, { reason: 'decision_id_recorded' })
      }
      return { record: have, isNew: false }
    }
    encodeDecision(d) // validates before it can reach the log
    this.stagedDecisions.set(d.decision_id, d)
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
    encodeOutcome(o)
    this.stagedOutcomes.set(o.decision_id, o)
    return { record: o, isNew: true }
  }

  /**
   * Appends everything staged (decisions first), then makes it visible to reads. Serialised; what a failed send left
   * staged goes out on the next call. Sends are cut at SEND_BYTES so no request exceeds a broker's message limit.
   */
  flush(): Promise<void> {
    const next = this.chain.then(async () => {
      for (const d of await this.sendChunks(this.names.decisions, this.stagedDecisions, (d) => ({ key: decisionKey(d), value: encodeDecision(d), timestamp: Date.parse(d.created_at) }))) {
        this.index.addDecision(d)
      }
      for (const o of await this.sendChunks(this.names.outcomes, this.stagedOutcomes, (o) => ({ key: o.decision_id, value: encodeOutcome(o), timestamp: Date.parse(o.resolved_at) }))) {
        this.index.addOutcome(o)
      }
    })
    this.chain = next.catch(() => undefined)
    return next
  }

  private async sendChunks<T>(topic: string, staged: Map<string, T>, toRecord: (x: T) => LogRecord): Promise<T[]> {
    const sent: T[] = []
    let chunk: { id: string; item: T; record: LogRecord }[] = []
    let bytes = 0
    const send = async () => {
      if (chunk.length === 0) return
      await this.producer.send(topic, chunk.map((c) => c.record))
      for (const c of chunk) {
        staged.delete(c.id)
        sent.push(c.item)
      }
      chunk = []
      bytes = 0
    }
    for (const [id, item] of [...staged]) {
      const record = toRecord(item)
      if (bytes + record.value.length > SEND_BYTES) await send()
      chunk.push({ id, item, record })
      bytes += record.value.length + record.key.length
    }
    await send()
    return sent
  }

  /** Stages and flushes one decision: the acknowledged write of an API call. */
  async appendDecision(d: LedgerDecision): Promise<{ record: LedgerDecision; isNew: boolean }> {
    const staged = this.stageDecision(d)
    await this.flush()
    return staged
  }

  get pending(): number {
    return this.stagedDecisions.size + this.stagedOutcomes.size
  }

  get failed(): Error | undefined {
    return this.followerError
  }

  private assertOpen(): void {
    if (this.closed) throw new EngineError('ENGINE_CLOSED', 'the decision ledger is closed')
  }

  get log(): EventLog {
    return this.eventLog
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.chain
    await this.consumer.stop().catch((err: unknown) => log.warn({ err }, 'stopping the ledger follower failed'))
    await this.producer.close()
  }
}
