/**
 * A lease of many partitions on Kafka (PartitionLease.ts): a consumer group `<prefix>lease.<name>` over a topic of P
 * partitions, where each partition is held by exactly one member at a time: the work keyed to partition p (a payer's
 * credits, issue 32) is done by its holder only. Kafka's group membership does the lock service's work: a member that
 * leaves hands its partitions on at once (a rebalance), one that dies without leaving (SIGKILL) holds them until its
 * session times out (KAFKA_SESSION_TIMEOUT_MS), then the others share them.
 *
 * The assignment is sticky and balanced (stickyBalancedAssignment): every member says in its group metadata which
 * partitions it holds now; the leader keeps each with its holder up to the member's fair share (P / members, the
 * first P mod members members one more), and gives the rest to the members below their share. So a joining member
 * takes only the partitions that make the shares even, and no partition moves for a member that stays.
 * No record is ever produced to the topic: the group's fetches find nothing, and its heartbeats are its liveness.
 *
 * Who holds each partition is read with DescribeGroups (each member's metadata carries its instance id and URL, each
 * assignment its partitions), after every rebalance this member takes part in, and on demand (refresh()).
 *
 * The window a lease cannot close (no fencing tokens): a holder frozen past its session believes it still holds its
 * partitions until its next heartbeat is refused, while the new holder already acts (docs/decisions.md).
 */
import { AssignerProtocol, type Consumer, type PartitionAssigner } from 'kafkajs'
import type { Logger } from 'pino'
import { setTimeout as sleep } from 'node:timers/promises'
import { RetryPolicy } from '../work/RetryPolicy.ts'
import type { KafkaLog } from './KafkaLog.ts'
import type { LeaseMember } from './Lease.ts'
import type { PartitionLease } from './PartitionLease.ts'

const ASSIGNER = 'SvcStickyLease'

interface MemberInfo extends LeaseMember {
  /** The partitions the member holds when it joins. */
  holds: number[]
}

function encodeInfo(info: MemberInfo): Buffer {
  return Buffer.from(JSON.stringify(info), 'utf8')
}

/** A member's lease metadata from its group metadata; null when it is not ours or unreadable (it then holds nothing). */
function infoOf(memberMetadata: Buffer): MemberInfo | null {
  try {
    const userData = AssignerProtocol.MemberMetadata.decode(memberMetadata)?.userData
    if (!userData || userData.length === 0) return null
    const v = JSON.parse(userData.toString('utf8')) as Partial<MemberInfo>
    if (typeof v.instance !== 'string') return null
    const holds = Array.isArray(v.holds) ? v.holds.filter((p): p is number => Number.isInteger(p)) : []
    return { instance: v.instance, url: typeof v.url === 'string' ? v.url : null, holds }
  } catch {
    return null
  }
}

/**
 * The group leader's assignment of `partitions` partitions: each member's fair share (⌊P/n⌋, one more for the P mod n
 * members that hold the most now, ties to the lowest member id); a partition stays with the member that says it holds
 * it (the lowest member id among several, which only a healed split produces) while that member is within its share;
 * every other partition goes to the lowest-id member still below its share.
 */
export function stickyBalancedAssignment(topic: string, partitions: number, members: ReadonlyArray<{ memberId: string; memberMetadata: Buffer }>): Array<{ memberId: string; memberAssignment: Buffer }> {
  const sorted = [...members].sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0))
  const claims = sorted.map((m) => new Set((infoOf(m.memberMetadata)?.holds ?? []).filter((p) => p >= 0 && p < partitions)))
  const n = sorted.length
  const quota = new Array<number>(n).fill(Math.floor(partitions / n))
  const byClaims = sorted.map((_, i) => i).sort((a, b) => claims[b]!.size - claims[a]!.size || a - b)
  for (const i of byClaims.slice(0, partitions % n)) quota[i]! += 1
  const assigned = sorted.map(() => [] as number[])
  const free: number[] = []
  for (let p = 0; p < partitions; p++) {
    const i = claims.findIndex((c) => c.has(p))
    if (i >= 0 && assigned[i]!.length < quota[i]!) assigned[i]!.push(p)
    else free.push(p)
  }
  for (const p of free) {
    const i = assigned.findIndex((a, j) => a.length < quota[j]!)
    assigned[i]!.push(p)
  }
  return sorted.map((m, i) => ({
    memberId: m.memberId,
    memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 0, assignment: assigned[i]!.length > 0 ? { [topic]: assigned[i]!.sort((x, y) => x - y) } : {}, userData: Buffer.alloc(0) }),
  }))
}

export class KafkaPartitionLease implements PartitionLease {
  private heldNow: ReadonlySet<number> = new Set()
  private closed = false
  private readonly listeners = new Set<(held: ReadonlySet<number>) => void>()
  private readonly physicalTopic: string
  private readonly groupId: string
  /** The holders as last described (refresh()), by partition. */
  private owners: Array<LeaseMember | null>
  /** Aborted by close(): a rejoin waiting to try again stops at once. */
  private readonly closing = new AbortController()
  /** Rejoining after kafkajs gave up: about a session timeout between attempts, until it joins or the lease closes. */
  private readonly rejoinRetry: RetryPolicy

  private constructor(
    readonly name: string,
    readonly topic: string,
    readonly partitions: number,
    private readonly log: KafkaLog,
    private readonly member: LeaseMember,
    private readonly logger: Logger,
    private consumer: Consumer | null = null,
  ) {
    this.physicalTopic = log.physicalTopic(topic)
    // A lease group is shared by every instance: never named per instance (KafkaLog.physicalGroup may be).
    this.groupId = log.sharedGroup(`lease.${name}`)
    this.owners = new Array<LeaseMember | null>(partitions).fill(null)
    this.rejoinRetry = new RetryPolicy({ attempts: Number.POSITIVE_INFINITY, baseMs: log.sessionTimeoutMs, factor: 1, jitter: 0.2 })
  }

  /** Joins the lease's group over `topic` (created with `partitions` partitions); resolves after the first assignment. */
  static async open(log: KafkaLog, name: string, member: LeaseMember, o: { topic: string; partitions: number }): Promise<KafkaPartitionLease> {
    await log.ensureTopics([{ name: o.topic, partitions: o.partitions }])
    const lease = new KafkaPartitionLease(name, o.topic, o.partitions, log, member, log.logger.child({ lease: name }))
    await lease.join()
    return lease
  }

  get held(): ReadonlySet<number> {
    return this.heldNow
  }

  holds(partition: number): boolean {
    return this.heldNow.has(partition)
  }

  onChange(listener: (held: ReadonlySet<number>) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  owner(partition: number): LeaseMember | null {
    if (this.heldNow.has(partition)) return this.member
    return this.owners[partition] ?? null
  }

  async refresh(): Promise<Array<LeaseMember | null>> {
    const { groups } = await this.log.admin.describeGroups([this.groupId])
    const owners = new Array<LeaseMember | null>(this.partitions).fill(null)
    for (const m of groups[0]?.members ?? []) {
      const assignment = m.memberAssignment.length > 0 ? AssignerProtocol.MemberAssignment.decode(m.memberAssignment) : null
      const info = infoOf(m.memberMetadata)
      if (!info) continue
      for (const p of assignment?.assignment[this.physicalTopic] ?? []) if (p < this.partitions) owners[p] = { instance: info.instance, url: info.url }
    }
    if (!this.closed) this.owners = owners
    return owners
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.closing.abort(new Error(`lease ${this.name} is closed`))
    const consumer = this.consumer
    this.consumer = null
    // disconnect() leaves the group: the coordinator rebalances and the other members take the partitions at once.
    await consumer?.disconnect().catch((err: unknown) => this.logger.warn({ err }, 'leaving the lease group failed; the session timeout hands the partitions on'))
    this.owners = this.owners.map(() => null)
    this.set(new Set())
    // Waiters hear of the close even when nothing was held (their listener sees closed).
    for (const l of [...this.listeners]) l(this.heldNow)
  }

  get isClosed(): boolean {
    return this.closed
  }

  private set(held: ReadonlySet<number>): void {
    const same = held.size === this.heldNow.size && [...held].every((p) => this.heldNow.has(p))
    if (same) return
    this.heldNow = held
    this.logger.info({ instance: this.member.instance, partitions: [...held].sort((a, b) => a - b) }, `this instance holds ${held.size} of ${this.partitions} partitions of the lease ${this.name}`)
    for (const l of [...this.listeners]) l(held)
  }

  /** After a rebalance: who holds what, read until every partition has a holder (the group may still be syncing). */
  private async describeAfterJoin(): Promise<void> {
    for (let i = 0; i < 50 && !this.closed; i++) {
      try {
        const owners = await this.refresh()
        if (owners.every((o) => o !== null)) return
      } catch (err) {
        this.logger.debug({ err }, 'describing the lease group failed; trying again')
      }
      await sleep(100)
    }
  }

  private async join(): Promise<void> {
    const heartbeatInterval = Math.max(500, Math.floor(this.log.sessionTimeoutMs / 10))
    const assigner: PartitionAssigner = () => ({
      name: ASSIGNER,
      version: 0,
      assign: async ({ members }) => stickyBalancedAssignment(this.physicalTopic, this.partitions, members),
      protocol: ({ topics }) => ({
        name: ASSIGNER,
        // Read at every join: a holder rejoining says what it holds, and the leader keeps it there.
        metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: encodeInfo({ ...this.member, holds: [...this.heldNow] }) }),
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
        this.set(new Set(payload.memberAssignment[this.physicalTopic] ?? []))
        void this.describeAfterJoin()
        resolve()
      })
    })
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (this.closed) return
      this.logger.warn({ err: payload.error, restart: payload.restart }, 'the lease group consumer crashed')
      // kafkajs rejoins by itself when it restarts the consumer (the next GROUP_JOIN says what is held); when it does
      // not, this process no longer takes part, so it must not act as a holder.
      if (!payload.restart) {
        this.set(new Set())
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
