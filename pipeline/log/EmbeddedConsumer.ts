/**
 * A consumer of the embedded log. One running consumer per (group, topic) — the embedded log is single-process,
 * so there is nobody to share partitions with; a second concurrent one gets LOG_GROUP_BUSY.
 * Delivery: one batch at a time across all partitions (like kafkajs' default partitionsConsumedConcurrently = 1),
 * round-robin over partitions, each batch one partition's records in offset order. Idle consumers sleep on an
 * in-process notification from the producer's fsync — no polling.
 */
import { setTimeout as delay } from 'node:timers/promises'
import type { Logger } from 'pino'
import type { ConsumedBatch, ConsumedRecord, ConsumerOptions, ConsumerPosition, LogConsumer } from './EventLog.ts'
import { LogError } from './LogError.ts'
import { RetryPolicy } from '../work/RetryPolicy.ts'


/** What the consumer needs from EmbeddedLog (kept narrow to avoid a circular import). */
export interface EmbeddedLogInternals {
  readonly logger: Logger
  partitionCount(topic: string): number
  durableEnd(topic: string, partition: number): number
  /** First offset the partition still holds (retention deleted the segments below it). */
  logStart(topic: string, partition: number): number
  readBatch(topic: string, partition: number, fromOffset: number): Promise<ConsumedRecord[]>
  committedOffset(groupId: string, topic: string, partition: number): Promise<number | undefined>
  commitOffset(groupId: string, topic: string, partition: number, nextOffset: number): Promise<void>
  claim(consumer: EmbeddedConsumer, groupId: string, topics: string[]): void
  release(consumer: EmbeddedConsumer, groupId: string, topics: string[]): void
  watch(topics: string[], signal: WakeSignal): void
  unwatch(topics: string[], signal: WakeSignal): void
}

export class WakeSignal {
  dirty = false
  private waiter: (() => void) | null = null

  wake(): void {
    this.dirty = true
    const w = this.waiter
    this.waiter = null
    w?.()
  }

  wait(): Promise<void> {
    if (this.dirty) return Promise.resolve()
    return new Promise((resolve) => (this.waiter = resolve))
  }
}

type Position = ConsumerPosition

/** A failing handler's batch is delivered again, with no bound (the log never skips a record), waiting up to 5 s. */
const REDELIVERY = new RetryPolicy({ attempts: Number.POSITIVE_INFINITY, baseMs: 100, capMs: 5000 })

export class EmbeddedConsumer implements LogConsumer {
  private running = false
  private stopped = false
  private loop: Promise<void> | null = null
  private readonly signal = new WakeSignal()
  private readonly stopping = new AbortController()
  readonly groupId: string
  private readonly topics: string[]
  private readonly fromBeginning: boolean
  private readonly startAt: ReadonlyArray<ConsumerPosition>
  /** The delivery loop's own positions (it advances them in place); empty until run() positioned it. */
  private current: Position[] = []

  constructor(
    private readonly log: EmbeddedLogInternals,
    options: ConsumerOptions,
  ) {
    this.groupId = options.groupId
    this.topics = [...new Set(options.topics)]
    this.fromBeginning = options.fromBeginning ?? true
    this.startAt = options.startAt ?? []
  }

  /**
   * Resolves once the consumer is positioned (committed offset, else beginning or current end); delivery then
   * continues in the background until stop(). Records sent after run() resolves are always delivered.
   * A handler that throws gets the same batch again after a back-off (nothing is skipped).
   */
  async run(handler: (batch: ConsumedBatch) => Promise<void>): Promise<void> {
    if (this.stopped) throw new LogError('LOG_CLOSED', `consumer of group ${this.groupId} was stopped`)
    if (this.running) throw new LogError('LOG_INVALID_ARGUMENT', `consumer of group ${this.groupId} is already running`)
    this.log.claim(this, this.groupId, this.topics)
    const positions: Position[] = []
    try {
      for (const topic of this.topics) {
        const n = this.log.partitionCount(topic)
        for (let partition = 0; partition < n; partition++) {
          const end = this.log.durableEnd(topic, partition)
          const given = this.startAt.find((p) => p.topic === topic && p.partition === partition)
          if (given) await this.log.commitOffset(this.groupId, topic, partition, given.next)
          const committed = given?.next ?? (await this.log.committedOffset(this.groupId, topic, partition))
          let next = committed ?? (this.fromBeginning ? 0 : end)
          if (next > end) {
            this.log.logger.warn({ groupId: this.groupId, topic, partition, committed, end }, 'committed offset beyond end of log; starting at end')
            next = end
          }
          const logStart = this.log.logStart(topic, partition)
          if (next < logStart) {
            // Retention deleted the records below the log start: a consumer positioned there starts at it (Kafka's earliest).
            if (committed !== undefined) this.log.logger.info({ groupId: this.groupId, topic, partition, committed, logStart }, 'position below the log start; starting at the log start')
            next = logStart
          }
          positions.push({ topic, partition, next })
        }
      }
    } catch (err) {
      this.log.release(this, this.groupId, this.topics)
      throw err
    }
    if (this.stopped) {
      // stop() came while positioning (it found nothing running and returned): a consumer nobody holds must not start
      // delivering now. Journal.readAll of an empty topic does exactly this: it stops without awaiting run().
      this.log.release(this, this.groupId, this.topics)
      return
    }
    this.running = true
    this.current = positions
    this.log.watch(this.topics, this.signal)
    this.loop = this.deliver(positions, handler)
  }

  async commit(topic: string, partition: number, nextOffset: number): Promise<void> {
    await this.log.commitOffset(this.groupId, topic, partition, nextOffset)
  }

  async commitPositions(positions: ReadonlyArray<ConsumerPosition>): Promise<void> {
    for (const p of positions) await this.commit(p.topic, p.partition, p.next)
  }

  positions(): ReadonlyArray<ConsumerPosition> {
    return this.current.map((p) => ({ topic: p.topic, partition: p.partition, next: p.next }))
  }

  /** Waits for the batch being handled, then stops. Do not await stop() from inside the handler. */
  async stop(): Promise<void> {
    this.stopped = true
    if (!this.running) return
    this.running = false
    this.stopping.abort()
    this.signal.wake()
    await this.loop
    this.current = []
    this.log.unwatch(this.topics, this.signal)
    this.log.release(this, this.groupId, this.topics)
  }

  private async deliver(positions: Position[], handler: (batch: ConsumedBatch) => Promise<void>): Promise<void> {
    let failures = 0
    while (this.running) {
      this.signal.dirty = false
      let busy = false
      for (const pos of positions) {
        if (!this.running) break
        let records: ConsumedRecord[]
        try {
          records = await this.log.readBatch(pos.topic, pos.partition, pos.next)
        } catch (err) {
          // The log is closing or failed; stop delivering rather than spin.
          if (this.running) this.log.logger.error({ err, groupId: this.groupId, topic: pos.topic, partition: pos.partition }, 'embedded consumer read failed; stopping')
          this.running = false
          return
        }
        if (records.length === 0) continue
        busy = true
        try {
          await handler({ topic: pos.topic, partition: pos.partition, records })
          pos.next = records[records.length - 1]!.offset + 1
          failures = 0
        } catch (err) {
          const backoff = REDELIVERY.waitBefore(++failures + 1)
          this.log.logger.error(
            { err, groupId: this.groupId, topic: pos.topic, partition: pos.partition, offset: records[0]!.offset, retryInMs: backoff },
            'consumer handler failed; the batch will be redelivered',
          )
          await this.sleep(backoff)
        }
      }
      if (!busy && this.running) await this.signal.wait()
    }
  }

  private async sleep(ms: number): Promise<void> {
    await delay(ms, undefined, { signal: this.stopping.signal }).catch(() => {})
  }
}
