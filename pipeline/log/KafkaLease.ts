/**
 * A lease on Kafka (Lease.ts): a consumer group `<prefix>lease.<name>` over the one-partition topic `cluster.leases`,
 * whose only partition the coordinator gives to exactly one member. Kafka's own group membership does the work of a
 * lock service: a member that leaves hands the lease on at once (a rebalance), a member that dies without leaving
 * (SIGKILL, power loss) holds it until its session times out (KAFKA_SESSION_TIMEOUT_MS), then another member gets it.
 *
 * The assignment is sticky (StickyLeaseAssigner): every member says in its group metadata whether it holds the lease
 * now, and the group leader keeps it with that member at each rebalance, so an instance that joins never takes over a
 * live holder's feed. With no holder it goes to the member with the lowest member id. No record is ever produced to
 * the topic: the group's fetches find nothing, and its heartbeats are the lease's liveness.
 *
 * Who holds a lease is read with DescribeGroups: each member's metadata carries its instance id and URL, each
 * assignment the partition, so any instance (and /readyz) can say who feeds the venue.
 *
 * The window a lease cannot close (as with any lease without fencing tokens): a holder whose process froze past the
 * session timeout believes it still holds the lease until its next heartbeat is refused (a heartbeat interval after
 * it wakes), while the new holder already acts. What runs under a lease must tolerate that overlap (the venue feed:
 * docs/decisions.md, "Several instances").
 */
import { AssignerProtocol, type Consumer, type PartitionAssigner } from 'kafkajs'
import type { Logger } from 'pino'
import { RetryPolicy } from '../work/RetryPolicy.ts'
import type { KafkaLog } from './KafkaLog.ts'
import type { Lease, LeaseMember } from './Lease.ts'
import { LogError } from './LogError.ts'

/** The topic every lease group subscribes to: one partition, one holder per group. */
export const LEASES_TOPIC = 'cluster.leases'
const ASSIGNER = 'SvcStickyLease'

interface MemberInfo extends LeaseMember {
  holds: boolean
}

function encodeInfo(info: MemberInfo): Buffer {
  return Buffer.from(JSON.stringify(info), 'utf8')
}

/** A member's lease metadata from its group metadata; null when it is not ours or unreadable (it then does not hold). */
function infoOf(memberMetadata: Buffer): MemberInfo | null {
  try {
    const userData = AssignerProtocol.MemberMetadata.decode(memberMetadata)?.userData
    if (!userData || userData.length === 0) return null
    const v = JSON.parse(userData.toString('utf8')) as Partial<MemberInfo>
    return typeof v.instance === 'string' ? { instance: v.instance, url: typeof v.url === 'string' ? v.url : null, holds: v.holds === true } : null
  } catch {
    return null
  }
}

/**
 * The group leader's assignment: the partition stays with the member that says it holds it (the lowest member id
 * among several, which only a split that has since healed can produce); with none, the lowest member id gets it.
 */
export function stickyLeaseAssignment(topic: string, members: ReadonlyArray<{ memberId: string; memberMetadata: Buffer }>): Array<{ memberId: string; memberAssignment: Buffer }> {
  const sorted = [...members].sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0))
  const holder = sorted.find((m) => infoOf(m.memberMetadata)?.holds === true) ?? sorted[0]
  return sorted.map((m) => ({
    memberId: m.memberId,
    memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 0, assignment: m === holder ? { [topic]: [0] } : {}, userData: Buffer.alloc(0) }),
  }))
}

export class KafkaLease implements Lease {
  private heldNow = false
  private closed = false
  private readonly listeners = new Set<(held: boolean) => void>()
  private readonly physicalTopic: string
  private readonly groupId: string
  /** Aborted by close(): a rejoin waiting to try again stops at once. */
  private readonly closing = new AbortController()
  /** Rejoining after kafkajs gave up: about a session timeout between attempts, until it joins or the lease closes. */
  private readonly rejoinRetry: RetryPolicy

  private constructor(
    readonly name: string,
    private readonly log: KafkaLog,
    private readonly member: LeaseMember,
    private readonly logger: Logger,
    private consumer: Consumer | null = null,
  ) {
    this.physicalTopic = log.physicalTopic(LEASES_TOPIC)
    // A lease group is shared by every instance: never named per instance (KafkaLog.physicalGroup may be).
    this.groupId = log.sharedGroup(`lease.${name}`)
    this.rejoinRetry = new RetryPolicy({ attempts: Number.POSITIVE_INFINITY, baseMs: log.sessionTimeoutMs, factor: 1, jitter: 0.2 })
  }

  /** Joins the lease's group; resolves once the first assignment says whether this process holds it. */
  static async open(log: KafkaLog, name: string, member: LeaseMember): Promise<KafkaLease> {
    await log.ensureTopics([{ name: LEASES_TOPIC, partitions: 1 }])
    const lease = new KafkaLease(name, log, member, log.logger.child({ lease: name }))
    await lease.join()
    return lease
  }

  get held(): boolean {
    return this.heldNow
  }

  acquired(signal?: AbortSignal): Promise<void> {
    if (this.heldNow) return Promise.resolve()
    return new Promise<void>((resolve, reject) => {
      const done = (err?: unknown) => {
        off()
        signal?.removeEventListener('abort', onAbort)
        if (err) reject(err)
        else resolve()
      }
      const onAbort = () => done(signal!.reason ?? new Error('aborted'))
      const off = this.onChange((held) => {
        if (held) done()
        else if (this.closed) done(new LogError('LOG_CLOSED', `lease ${this.name} is closed`))
      })
      if (signal?.aborted) return onAbort()
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  onChange(listener: (held: boolean) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  async holder(): Promise<LeaseMember | null> {
    const { groups } = await this.log.admin.describeGroups([this.groupId])
    for (const m of groups[0]?.members ?? []) {
      const assignment = m.memberAssignment.length > 0 ? AssignerProtocol.MemberAssignment.decode(m.memberAssignment) : null
      if (!assignment?.assignment[this.physicalTopic]?.includes(0)) continue
      const info = infoOf(m.memberMetadata)
      return info ? { instance: info.instance, url: info.url } : null
    }
    return null
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.closing.abort(new LogError('LOG_CLOSED', `lease ${this.name} is closed`))
    const consumer = this.consumer
    this.consumer = null
    // disconnect() leaves the group: the coordinator rebalances and another member holds the lease at once.
    await consumer?.disconnect().catch((err: unknown) => this.logger.warn({ err }, 'leaving the lease group failed; the session timeout hands the lease on'))
    this.set(false)
    // Waiters for the lease hear of the close even when it was not held (acquired() rejects).
    for (const l of [...this.listeners]) l(false)
  }

  private set(held: boolean): void {
    if (held === this.heldNow) return
    this.heldNow = held
    this.logger.info({ instance: this.member.instance }, held ? `this instance holds the lease ${this.name}` : `this instance no longer holds the lease ${this.name}`)
    for (const l of [...this.listeners]) l(held)
  }

  private async join(): Promise<void> {
    const heartbeatInterval = Math.max(500, Math.floor(this.log.sessionTimeoutMs / 10))
    const assigner: PartitionAssigner = () => ({
      name: ASSIGNER,
      version: 0,
      assign: async ({ members }) => stickyLeaseAssignment(this.physicalTopic, members),
      protocol: ({ topics }) => ({
        name: ASSIGNER,
        // Read at every join: a holder rejoining says so, and the leader keeps the lease with it.
        metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: encodeInfo({ ...this.member, holds: this.heldNow }) }),
      }),
    })
    const consumer = this.log.kafka.consumer({
      groupId: this.groupId,
      allowAutoTopicCreation: false,
      partitionAssigners: [assigner],
      sessionTimeout: this.log.sessionTimeoutMs,
      heartbeatInterval,
      // Nothing is ever produced to the topic: fetches come back empty after this long and the loop heartbeats between.
      maxWaitTimeInMs: heartbeatInterval,
      retry: { retries: 10 },
    })
    this.consumer = consumer
    const joined = new Promise<void>((resolve) => {
      consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
        this.set((payload.memberAssignment[this.physicalTopic] ?? []).includes(0))
        resolve()
      })
    })
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (this.closed) return
      this.logger.warn({ err: payload.error, restart: payload.restart }, 'the lease group consumer crashed')
      // kafkajs rejoins by itself when it restarts the consumer (the next GROUP_JOIN says who holds it); when it does
      // not, this process no longer takes part, so it must not act as the holder.
      if (!payload.restart) {
        this.set(false)
        void this.rejoin()
      }
    })
    await consumer.connect()
    await consumer.subscribe({ topics: [this.physicalTopic], fromBeginning: false })
    await consumer.run({ autoCommit: false, eachBatch: async () => {} })
    await joined
  }

  /** A consumer kafkajs gave up on: a new one joins (the broker may be back), the old one is dropped. */
  private async rejoin(): Promise<void> {
    const old = this.consumer
    this.consumer = null
    await old?.disconnect().catch(() => {})
    try {
      await this.rejoinRetry.run(() => this.join(), {
        signal: this.closing.signal,
        // Whatever made the join fail (the broker away, the group coordinator moving) may be over at the next attempt.
        retryable: () => true,
        onRetry: (err, attempt, waitMs) => this.logger.warn({ err, attempt, waitMs }, 'rejoining the lease group failed; retrying in a session timeout'),
      })
    } catch {
      return // closed: the lease no longer takes part
    }
    // Closed while joining: the consumer just joined must leave too.
    const joined = this.consumer as Consumer | null
    if (this.closed) await joined?.disconnect().catch(() => {})
  }
}
