/**
 * A lease of many partitions (issue 32): each of P partitions is held by at most one live instance of a cluster at a
 * time, so work keyed to a partition (a payer's holds and debits: the payer's key partition, common/murmur2.ts) is
 * serialized by one owner while the partitions spread over the instances.
 *
 * On Kafka it is a consumer group of its own over a topic of P partitions (KafkaPartitionLease.ts): sticky and
 * balanced, moved when a member leaves (at once) or dies (after the session timeout). On the embedded log, or one
 * instance, this process holds every partition (SolePartitionLease).
 */
import type { EventLog } from './EventLog.ts'
import type { KafkaLog } from './KafkaLog.ts'
import type { LeaseMember } from './Lease.ts'

export interface PartitionLease {
  readonly name: string
  readonly partitions: number
  /** The partitions this process holds now. */
  readonly held: ReadonlySet<number>
  holds(partition: number): boolean
  /** Calls `listener` at every change of `held`; returns the unsubscribe. */
  onChange(listener: (held: ReadonlySet<number>) => void): () => void
  /** Who holds `partition` as last seen (this process for its own; others as of the last refresh); null: none known. */
  owner(partition: number): LeaseMember | null
  /** Reads who holds each partition now (the cluster's view); owner() answers from it afterwards. */
  refresh(): Promise<Array<LeaseMember | null>>
  /** Gives every partition up (the others take them at once) and stops taking part. */
  close(): Promise<void>
}

/** The partition lease of a process that is alone by construction: it holds every partition. */
export class SolePartitionLease implements PartitionLease {
  readonly held: ReadonlySet<number>
  constructor(
    readonly name: string,
    readonly partitions: number,
    private readonly member: LeaseMember,
  ) {
    this.held = new Set(Array.from({ length: partitions }, (_, p) => p))
  }

  holds(partition: number): boolean {
    return this.held.has(partition)
  }

  onChange(): () => void {
    return () => {}
  }

  owner(): LeaseMember {
    return this.member
  }

  refresh(): Promise<Array<LeaseMember | null>> {
    return Promise.resolve([...this.held].map(() => this.member))
  }

  close(): Promise<void> {
    return Promise.resolve()
  }
}

/**
 * The partition lease `name` over `topic` for this process: on Kafka with several instances (`clustered`), a
 * KafkaPartitionLease shared by every instance; otherwise a SolePartitionLease.
 */
export async function openPartitionLease(log: EventLog, name: string, member: LeaseMember, o: { topic: string; partitions: number; clustered: boolean }): Promise<PartitionLease> {
  if (!o.clustered || log.kind !== 'kafka') return new SolePartitionLease(name, o.partitions, member)
  const { KafkaPartitionLease } = await import('./KafkaPartitionLease.ts')
  return KafkaPartitionLease.open(log as KafkaLog, name, member, { topic: o.topic, partitions: o.partitions })
}
