/**
 * A consumer of the Kafka log (kafkajs): eachBatch with autoCommit off and eachBatchAutoResolve off, so a batch is
 * resolved (fetch position advanced) only after the handler succeeded, and offsets are committed only by commit().
 * A failing handler makes kafkajs restart the consumer from the last resolved offset: the batch is redelivered.
 *
 * A broker restart or an outage: kafkajs restarts a crashed consumer by itself only when the cause is one of its own
 * retriable errors; anything else (a handler's error, an offset commit that failed with the broker gone) left it
 * stopped for good, and the processor with it (issue 31: tick feed, market state and Parquet sink stopped until the
 * process restarted). So every crash kafkajs does not restart from is revived here: a fresh kafkajs consumer joins
 * the group again, after a back-off that grows to REVIVE_MAX_MS, and resumes from the committed offsets. fault()
 * names the crash until the group is joined again (the event-log readiness reads it).
 */
import { setTimeout as delay } from 'node:timers/promises'
import type { Admin, Consumer, Kafka } from 'kafkajs'
import type { Logger } from 'pino'
import type { ConsumedBatch, ConsumerOptions, ConsumerPosition, LogConsumer } from './EventLog.ts'
import { LogError } from './LogError.ts'

/** What the consumer needs from KafkaLog (kept narrow to avoid a circular import). */
export interface KafkaLogInternals {
  readonly kafka: Kafka
  readonly admin: Admin
  readonly logger: Logger
  /** Physical (prefixed) topic / group name for a logical one. */
  physicalTopic(topic: string): string
  logicalTopic(physical: string): string
  physicalGroup(groupId: string): string
  forget(consumer: KafkaConsumer): void
  /** See KafkaLogOptions.sessionTimeoutMs. */
  readonly sessionTimeoutMs: number
}

const JOIN_TIMEOUT_MS = 60_000
/** First wait before a crashed consumer is revived; doubles up to REVIVE_MAX_MS while the broker stays away. */
const REVIVE_FIRST_MS = 1_000
const REVIVE_MAX_MS = 10_000

export class KafkaConsumer implements LogConsumer {
  private consumer: Consumer | null = null
  private stopped = false
  /** The logical group (as given; consumerLag() reports it). */
  readonly groupId: string
  private readonly physicalGroupId: string
  private readonly topics: string[]
  /** Next offset to hand over, by `${logical topic}/${partition}`: seeded from the group's start, then per handled batch. */
  private readonly nextOffsets = new Map<string, ConsumerPosition>()
  private readonly fromBeginning: boolean
  private readonly startAt: ReadonlyArray<ConsumerPosition>
  private startPinned = false
  /** Why the consumer is not consuming now (a crash not yet followed by a re-join), else null. */
  private crash: Error | null = null
  private reviving: Promise<void> | null = null
  /** Aborted by stop(), so a revive waiting out its back-off ends at once. */
  private readonly stopping = new AbortController()

  constructor(
    private readonly log: KafkaLogInternals,
    options: ConsumerOptions,
  ) {
    this.physicalGroupId = log.physicalGroup(options.groupId)
    this.groupId = options.groupId
    this.topics = [...new Set(options.topics)].map((t) => log.physicalTopic(t))
    this.fromBeginning = options.fromBeginning ?? true
    this.startAt = options.startAt ?? []
  }

  /**
   * Resolves once the group is joined and positioned (committed offset, else beginning or the end at the time of
   * this call); delivery then continues in the background until stop().
   */
  async run(handler: (batch: ConsumedBatch) => Promise<void>): Promise<void> {
    if (this.stopped) throw new LogError('LOG_CLOSED', `consumer of group ${this.physicalGroupId} was stopped`)
    if (this.consumer || this.starting) throw new LogError('LOG_INVALID_ARGUMENT', `consumer of group ${this.physicalGroupId} is already running`)
    // stop() waits for a start in progress: stopping mid-connect used to leave kafkajs connecting, joining and
    // fetching afterwards, a live client nobody owned (it kept test processes alive).
    this.starting = this.start(handler)
    try {
      await this.starting
    } catch (err) {
      this.starting = null
      await this.stop()
      throw err
    } finally {
      this.starting = null
    }
  }

  private starting: Promise<void> | null = null

  /** The crash this consumer has not recovered from yet (it is being revived), or null while it consumes. */
  fault(): Error | null {
    return this.crash
  }

  private async start(handler: (batch: ConsumedBatch) => Promise<void>): Promise<void> {
    // The given start is pinned once: a revived consumer resumes where it handled (resumeWhereHandled), not there.
    if (this.startAt.length > 0 && !this.startPinned) await this.pinOffsets(this.startAt.map((p) => ({ topic: this.log.physicalTopic(p.topic), partition: p.partition, offset: String(p.next) })))
    this.startPinned = true
    if (!this.fromBeginning) await this.commitEndForUncommitted()
    const consumer = this.log.kafka.consumer({
      groupId: this.physicalGroupId,
      allowAutoTopicCreation: false,
      // read_committed (kafkajs' default, stated here because atomic units depend on it): records of a transaction
      // are delivered only once it commits, never if it aborts, so no one sees part of a unit.
      readUncommitted: false,
      // Idle fetches return after this long; it bounds how long stop() waits for a fetch in flight.
      maxWaitTimeInMs: 500,
      sessionTimeout: this.log.sessionTimeoutMs,
      // Heartbeats well inside the session: a tenth of it, the ratio of kafkajs' own 30 s / 3 s defaults.
      heartbeatInterval: Math.max(500, Math.floor(this.log.sessionTimeoutMs / 10)),
      retry: { retries: 10 },
    })
    this.consumer = consumer
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      const resumed = this.resumeWhereHandled(consumer, payload.memberAssignment)
      if (this.crash) this.log.logger.info({ group: this.groupId, resumed }, 'consumer rejoined its group after a crash')
      this.crash = null
    })
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (this.stopped || this.consumer !== consumer) return
      this.crash = payload.error
      if (payload.restart) {
        this.log.logger.warn({ err: payload.error, group: this.groupId }, 'consumer crashed; kafkajs restarts it')
        return
      }
      this.log.logger.warn({ err: payload.error, group: this.groupId }, 'consumer crashed; reviving it')
      this.reviving ??= this.revive(handler).finally(() => (this.reviving = null))
    })
    await consumer.connect()
    // Every partition of ours has a committed offset here when fromBeginning is false (see commitEndForUncommitted),
    // so 'fromBeginning: true' only decides where a group with no commit starts.
    await consumer.subscribe({ topics: this.topics, fromBeginning: true })
    let removeListener = (): void => {}
    const joined = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new LogError('LOG_IO', `group ${this.physicalGroupId} did not join within ${JOIN_TIMEOUT_MS} ms`, { retryable: true })), JOIN_TIMEOUT_MS)
      const removeJoin = consumer.on(consumer.events.GROUP_JOIN, () => {
        clearTimeout(timer)
        resolve()
      })
      // A crash kafkajs will not restart from ends this start at once (the revive loop tries again), rather than
      // after the join timeout.
      const removeCrash = consumer.on(consumer.events.CRASH, ({ payload }) => {
        if (payload.restart) return
        clearTimeout(timer)
        reject(new LogError('LOG_IO', `group ${this.physicalGroupId} crashed before it joined: ${payload.error.message}`, { cause: payload.error, retryable: true }))
      })
      removeListener = () => {
        removeJoin()
        removeCrash()
      }
    })
    // Settled by the first join or crash; until awaited below, a crash must not count as unhandled.
    joined.catch(() => undefined)
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: 1,
      eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
        if (!isRunning() || isStale() || batch.messages.length === 0) return
        const topic = this.log.logicalTopic(batch.topic)
        const records = batch.messages.map((m) => ({
          topic,
          partition: batch.partition,
          offset: Number(m.offset),
          key: m.key === null ? '' : m.key.toString('utf8'),
          value: m.value ?? Buffer.alloc(0),
          timestamp: Number(m.timestamp),
        }))
        try {
          await handler({ topic, partition: batch.partition, records })
        } catch (err) {
          // kafkajs re-joins the group when eachBatch throws its own membership error (by type), and crashes the
          // consumer on anything else: hand it the cause, so a member whose session lapsed mid-batch (a slow disk, a
          // busy machine) comes back and re-reads from its last commit instead of stopping for good.
          if (err instanceof LogError && err.code === 'LOG_REBALANCED' && err.cause) throw err.cause
          throw err
        }
        this.advance(topic, batch.partition, records[records.length - 1]!.offset + 1)
        resolveOffset(batch.messages[batch.messages.length - 1]!.offset)
        await heartbeat()
      },
    })
    try {
      await joined
    } finally {
      removeListener()
    }
    // Positions only feed the lag metric: a broker that cannot answer yet (a topic created a moment ago has no leader,
    // and kafkajs's fetchTopicOffsets then throws a TypeError) must never stop the consumer. Handled batches fill the
    // positions in anyway.
    this.seedPositions().catch((err: unknown) => this.log.logger.warn({ err, group: this.groupId }, 'consumer positions not seeded; lag shows once batches arrive'))
  }

  /**
   * After a (re-)join kafkajs starts each partition at the group's committed offset, and a group that never commits
   * (the engine, the market state and the journal followers keep their state in memory) at the beginning: a revived
   * consumer would fold every record into that state a second time. So each assigned partition this consumer has
   * handled records of is moved to the next record it has not handed over (seek, applied at the next fetch): its
   * owner's state already holds everything before it. Returns how many partitions were moved.
   */
  private resumeWhereHandled(consumer: Consumer, assignment: Record<string, number[]>): number {
    let moved = 0
    for (const [physical, partitions] of Object.entries(assignment)) {
      const topic = this.log.logicalTopic(physical)
      for (const partition of partitions) {
        const at = this.nextOffsets.get(`${topic}/${partition}`)
        if (!at || at.next <= 0) continue
        consumer.seek({ topic: physical, partition, offset: String(at.next) })
        moved++
      }
    }
    return moved
  }

  /** A fresh kafkajs consumer in place of a crashed one, retried with back-off until it joins or stop() is called. */
  private async revive(handler: (batch: ConsumedBatch) => Promise<void>): Promise<void> {
    for (let wait = REVIVE_FIRST_MS; !this.stopped; wait = Math.min(wait * 2, REVIVE_MAX_MS)) {
      await delay(wait, undefined, { signal: this.stopping.signal }).catch(() => undefined)
      if (this.stopped) return
      // The crashed consumer stays in this.consumer until start() replaces it: a commit meanwhile fails on it, typed
      // (through the admin API instead it would need an empty group and fail untyped).
      await this.consumer?.disconnect().catch(() => undefined)
      if (this.stopped) return
      this.starting = this.start(handler)
      try {
        await this.starting
        return
      } catch (err) {
        this.crash = err instanceof Error ? err : new Error(String(err))
        this.log.logger.warn({ err, group: this.groupId, retryInMs: Math.min(wait * 2, REVIVE_MAX_MS) }, 'reviving the consumer failed; retrying')
      } finally {
        this.starting = null
      }
    }
  }

  positions(): ReadonlyArray<ConsumerPosition> {
    return [...this.nextOffsets.values()].map((p) => ({ ...p }))
  }

  private advance(topic: string, partition: number, next: number): void {
    const key = `${topic}/${partition}`
    const pos = this.nextOffsets.get(key)
    if (pos) pos.next = Math.max(pos.next, next)
    else this.nextOffsets.set(key, { topic, partition, next })
  }

  /**
   * Where the group starts on each partition (kafkajs does not expose its fetch positions): the committed offset, else
   * the log start (fromBeginning; a group that starts at the end has a committed offset by now). A batch handled
   * meanwhile is never moved back (advance keeps the larger).
   */
  private async seedPositions(): Promise<void> {
    const committed = await this.log.admin.fetchOffsets({ groupId: this.physicalGroupId, topics: this.topics })
    for (const { topic: physical, partitions } of committed) {
      const topic = this.log.logicalTopic(physical)
      const missing = partitions.filter((p) => Number(p.offset) < 0)
      const low = missing.length === 0 ? [] : await this.log.admin.fetchTopicOffsets(physical)
      for (const p of partitions) {
        const start = Number(p.offset) >= 0 ? Number(p.offset) : Number(low.find((l) => l.partition === p.partition)?.low ?? 0)
        this.advance(topic, p.partition, start)
      }
    }
  }

  async commit(topic: string, partition: number, nextOffset: number): Promise<void> {
    await this.commitPositions([{ topic, partition, next: nextOffset }])
  }

  async commitPositions(positions: ReadonlyArray<ConsumerPosition>): Promise<void> {
    if (positions.length === 0) return
    for (const p of positions) {
      if (!Number.isSafeInteger(p.next) || p.next < 0) throw new LogError('LOG_INVALID_ARGUMENT', `nextOffset: ${p.next} must be a non-negative integer`)
    }
    const what = positions.map((p) => `${p.topic}/${p.partition}@${p.next}`).join(', ')
    if (this.consumer) {
      try {
        await this.consumer.commitOffsets(positions.map((p) => ({ topic: this.log.physicalTopic(p.topic), partition: p.partition, offset: String(p.next) })))
      } catch (err) {
        const lost = membershipLoss(err)
        // Typed, so an owner can tell a commit that did not reach the broker (an outage: nothing is lost, the records
        // after the last commit come again) from a failure of its own.
        if (!lost) throw new LogError('LOG_IO', `offset commit ${what} failed: ${(err as Error)?.message ?? String(err)}`, { cause: err, retryable: true })
        throw new LogError('LOG_REBALANCED', `offset commit ${what} refused (${lost.type}): this member left the group; the records after the last commit are delivered again once it rejoins`, { cause: lost })
      }
      return
    }
    // Not running (no group membership): commit through the admin API, which needs the group to be empty; one
    // request per topic.
    const byTopic = new Map<string, Array<{ partition: number; offset: string }>>()
    for (const p of positions) {
      const physical = this.log.physicalTopic(p.topic)
      const list = byTopic.get(physical) ?? []
      list.push({ partition: p.partition, offset: String(p.next) })
      byTopic.set(physical, list)
    }
    for (const [topic, partitions] of byTopic) {
      try {
        await this.log.admin.setOffsets({ groupId: this.physicalGroupId, topic, partitions })
      } catch (err) {
        throw new LogError('LOG_IO', `offset commit ${what} (admin) failed: ${(err as Error)?.message ?? String(err)}`, { cause: err, retryable: true })
      }
    }
  }

  /** Waits for the batch being handled, leaves the group (LeaveGroup, so the next member need not wait). */
  async stop(): Promise<void> {
    this.stopped = true
    this.stopping.abort()
    if (this.starting) await this.starting.catch(() => undefined)
    if (this.reviving) await this.reviving.catch(() => undefined)
    const consumer = this.consumer
    this.consumer = null
    if (consumer) await consumer.disconnect()
    this.nextOffsets.clear()
    this.log.forget(this)
  }

  /**
   * fromBeginning false means "start at the end as of run()". kafkajs would resolve 'latest' only when the first
   * fetch happens, racing with records produced right after run(), and after a crash-restart it would fall back to
   * the subscription's reset policy. Committing the current end offsets for every partition the group has never
   * committed makes the start point exact and stable, as in the embedded log. (admin.setOffsets does the same but
   * waits out a full 5 s fetch; a short-lived member of the group commits in well under a second.)
   */
  private async commitEndForUncommitted(): Promise<void> {
    const committed = await this.log.admin.fetchOffsets({ groupId: this.physicalGroupId, topics: this.topics })
    const commits: { topic: string; partition: number; offset: string }[] = []
    for (const { topic, partitions } of committed) {
      const missing = new Set(partitions.filter((p) => Number(p.offset) < 0).map((p) => p.partition))
      if (missing.size === 0) continue
      for (const end of await this.log.admin.fetchTopicOffsets(topic)) {
        if (missing.has(end.partition)) commits.push({ topic, partition: end.partition, offset: end.high })
      }
    }
    await this.pinOffsets(commits)
  }

  /** Commits offsets for the group through a short-lived member (the group has none of ours yet). */
  private async pinOffsets(commits: { topic: string; partition: number; offset: string }[]): Promise<void> {
    if (commits.length === 0) return
    const pinner = this.log.kafka.consumer({ groupId: this.physicalGroupId, allowAutoTopicCreation: false, readUncommitted: false, maxWaitTimeInMs: 100 })
    try {
      await pinner.connect()
      await pinner.subscribe({ topics: this.topics, fromBeginning: false })
      await pinner.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: async () => {} }) // resolves once joined
      await pinner.commitOffsets(commits)
    } finally {
      await pinner.disconnect()
    }
  }
}

/** kafkajs error types that mean "this member is no longer in the group" (kafkajs/src/errors.js isRebalancing, plus UNKNOWN_MEMBER_ID). */
const MEMBERSHIP_LOST = new Set(['UNKNOWN_MEMBER_ID', 'ILLEGAL_GENERATION', 'REBALANCE_IN_PROGRESS', 'NOT_COORDINATOR_FOR_GROUP'])

/** The kafkajs protocol error, possibly wrapped by its retrier (KafkaJSNonRetriableError.cause), naming a lost membership. */
function membershipLoss(err: unknown): (Error & { type: string }) | null {
  for (let e = err as { type?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e.type === 'string' && MEMBERSHIP_LOST.has(e.type)) return e as Error & { type: string }
  }
  return null
}
