/**
 * A lease on Kafka (Lease.ts): the one-partition case of a partition lease (KafkaPartitionLease.ts), a consumer group
 * `<prefix>lease.<name>` over the one-partition topic `cluster.leases`, whose only partition the coordinator gives to
 * exactly one member. Kafka's own group membership does the work of a lock service: a member that leaves hands the
 * lease on at once (a rebalance), a member that dies without leaving (SIGKILL, power loss) holds it until its session
 * times out (KAFKA_SESSION_TIMEOUT_MS), then another member gets it.
 *
 * The assignment is sticky: every member says in its group metadata whether it holds the lease now, and the group
 * leader keeps it with that member at each rebalance, so an instance that joins never takes over a live holder's feed.
 * With no holder it goes to the member with the lowest member id. No record is ever produced to the topic.
 *
 * Who holds a lease is read with DescribeGroups: each member's metadata carries its instance id and URL, each
 * assignment the partition, so any instance (and /readyz) can say who feeds the venue.
 *
 * The window a lease cannot close (as with any lease without fencing tokens): a holder whose process froze past the
 * session timeout believes it still holds the lease until its next heartbeat is refused (a heartbeat interval after
 * it wakes), while the new holder already acts. What runs under a lease must tolerate that overlap (the venue feed:
 * docs/decisions.md, "Several instances").
 */
import type { KafkaLog } from './KafkaLog.ts'
import { KafkaPartitionLease, stickyBalancedAssignment } from './KafkaPartitionLease.ts'
import type { Lease, LeaseMember } from './Lease.ts'
import { LogError } from './LogError.ts'

/** The topic every lease group subscribes to: one partition, one holder per group. */
export const LEASES_TOPIC = 'cluster.leases'

/** The group leader's assignment of the one partition (stickyBalancedAssignment with P = 1). */
export function stickyLeaseAssignment(topic: string, members: ReadonlyArray<{ memberId: string; memberMetadata: Buffer }>): Array<{ memberId: string; memberAssignment: Buffer }> {
  return stickyBalancedAssignment(topic, 1, members)
}

export class KafkaLease implements Lease {
  private constructor(private readonly lease: KafkaPartitionLease) {}

  /** Joins the lease's group; resolves once the first assignment says whether this process holds it. */
  static async open(log: KafkaLog, name: string, member: LeaseMember): Promise<KafkaLease> {
    return new KafkaLease(await KafkaPartitionLease.open(log, name, member, { topic: LEASES_TOPIC, partitions: 1 }))
  }

  get name(): string {
    return this.lease.name
  }

  get held(): boolean {
    return this.lease.holds(0)
  }

  acquired(signal?: AbortSignal): Promise<void> {
    if (this.held) return Promise.resolve()
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
        else if (this.lease.isClosed) done(new LogError('LOG_CLOSED', `lease ${this.name} is closed`))
      })
      if (signal?.aborted) return onAbort()
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  onChange(listener: (held: boolean) => void): () => void {
    let was = this.held
    return this.lease.onChange((partitions) => {
      const now = partitions.has(0)
      // close() tells every listener (held or not), so waiters hear of it.
      if (now !== was || this.lease.isClosed) listener(now)
      was = now
    })
  }

  async holder(): Promise<LeaseMember | null> {
    return (await this.lease.refresh())[0] ?? null
  }

  close(): Promise<void> {
    return this.lease.close()
  }
}
