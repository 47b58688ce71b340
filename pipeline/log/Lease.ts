/**
 * A lease: at most one live instance of a cluster holds it at a time (issue 32). What runs once per cluster, not once
 * per instance, runs under one: the venue feed (one writer of `venue.ticks`, every instance a reader).
 *
 * On Kafka a lease is a consumer group of its own over a one-partition topic (KafkaLease.ts): the group coordinator
 * gives that partition to exactly one member, moves it when the member leaves (at once) or dies (after the session
 * timeout), and the assignment is sticky (a newcomer never takes it from a live holder). On the embedded log there is
 * one process by construction (its data folder is locked), so it holds every lease (SoleLease).
 */
import type { EventLog } from './EventLog.ts'
import type { KafkaLog } from './KafkaLog.ts'

/** Who is asking: the instance id and, for people reading /readyz or the logs, where it answers. */
export interface LeaseMember {
  instance: string
  url: string | null
}

export interface Lease {
  readonly name: string
  /** True while this process holds the lease. */
  readonly held: boolean
  /** Resolves once this process holds the lease (at once when it does); rejects when `signal` aborts or on close. */
  acquired(signal?: AbortSignal): Promise<void>
  /** Calls `listener` at every change of `held`; returns the unsubscribe. */
  onChange(listener: (held: boolean) => void): () => void
  /** The member that holds it as the cluster sees it now (null: none, or not known yet). */
  holder(): Promise<LeaseMember | null>
  /** Gives the lease up (another member takes it at once) and stops taking part. */
  close(): Promise<void>
}

/** The lease of a process that is alone by construction (the embedded log, one data folder, one process). */
export class SoleLease implements Lease {
  readonly held = true
  constructor(
    readonly name: string,
    private readonly member: LeaseMember,
  ) {}

  acquired(): Promise<void> {
    return Promise.resolve()
  }

  onChange(): () => void {
    return () => {}
  }

  holder(): Promise<LeaseMember | null> {
    return Promise.resolve(this.member)
  }

  close(): Promise<void> {
    return Promise.resolve()
  }
}

/**
 * The lease `name` for this process: on Kafka with several instances (`clustered`), a KafkaLease shared by every
 * instance of the cluster; otherwise a SoleLease (kafkajs is loaded only when a lease on Kafka is asked for).
 */
export async function openLease(log: EventLog, name: string, member: LeaseMember, clustered: boolean): Promise<Lease> {
  if (!clustered || log.kind !== 'kafka') return new SoleLease(name, member)
  const { KafkaLease } = await import('./KafkaLease.ts')
  return KafkaLease.open(log as KafkaLog, name, member)
}
