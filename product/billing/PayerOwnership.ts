/**
 * Which instance of a cluster serializes a payer's holds and debits (issue 32): the holder of the payer's partition of
 * the `payers` partition lease (pipeline/log/PartitionLease.ts). A payer's partition is its draws journal partition
 * (the same murmur2 of the same key, CreditLedger.payerKey), so the partitions an instance owns are the journal
 * partitions whose rows it writes. Every instance reads every payer (CreditLedger follows the journal); only the owner
 * reserves, so two instances never spend one balance twice.
 *
 * A new owner (at start, or after a failover took a partition from a dead instance) first reads the draws journal to
 * the end it had when the partition was taken, so every row the previous owner wrote is in the balances before its
 * first hold, then reverses that partition's unanswered debits (CreditLedger.recover, the owner's alone). The
 * catch-up is tried again through the one retry policy until it succeeds or the partition moves on.
 */
import type { Logger } from 'pino'
import { partitionForKey } from '../../common/murmur2.ts'
import type { LeaseMember } from '../../pipeline/log/Lease.ts'
import type { PartitionLease } from '../../pipeline/log/PartitionLease.ts'
import { RetryPolicy } from '../../pipeline/work/RetryPolicy.ts'
import { CreditLedger } from './CreditLedger.ts'

/** The partition lease's name; its topic has as many partitions as the draws journal. */
export const PAYERS_LEASE = 'payers'
export const PAYERS_LEASE_TOPIC = 'cluster.payers'

/** A takeover's catch-up with the draws journal, tried again until it succeeds or the partition moves on. */
const CATCH_UP_RETRY = new RetryPolicy({ attempts: Number.POSITIVE_INFINITY, baseMs: 200, capMs: 5_000 })

/**
 * Where a payer's credits are served: here (once `ready` resolves: the catch-up of a partition just taken), at a peer
 * (its URL), or nowhere known right now (a rebalance in progress, or the owner never said where it answers).
 */
export type PayerRoute =
  | { kind: 'here'; ready: Promise<void> | null }
  | { kind: 'peer'; owner: LeaseMember & { url: string } }
  | { kind: 'unowned'; partition: number }

export class PayerOwnership {
  private lease: PartitionLease | null = null
  /** Per partition taken: its catch-up (resolved once done), aborted when the partition moves on. */
  private readonly taking = new Map<number, { ready: Promise<void>; done: boolean; abort: AbortController }>()
  private off: (() => void) | null = null
  private readonly servingListeners = new Set<(partition: number, signal: AbortSignal) => void>()

  constructor(
    private readonly ledger: CreditLedger,
    readonly partitions: number,
    private readonly logger: Logger,
  ) {}

  /** Starts owning the lease's partitions (the lease is opened once this instance knows its URL). */
  attach(lease: PartitionLease): void {
    if (lease.partitions !== this.partitions) throw new Error(`the payers lease has ${lease.partitions} partitions, the draws journal ${this.partitions}`)
    this.lease = lease
    this.off = lease.onChange((held) => this.changed(held))
    this.changed(lease.held)
  }

  partitionOf(payer: string): number {
    return partitionForKey(CreditLedger.payerKey(payer), this.partitions)
  }

  route(payer: string): PayerRoute {
    const partition = this.partitionOf(payer)
    const lease = this.lease
    if (lease?.holds(partition)) {
      const t = this.taking.get(partition)
      return { kind: 'here', ready: !t || t.done ? null : t.ready }
    }
    const owner = lease?.owner(partition) ?? null
    if (owner?.url) return { kind: 'peer', owner: { instance: owner.instance, url: owner.url } }
    return { kind: 'unowned', partition }
  }

  /** Whether this instance serves the payer's credits now: it owns the payer's partition and has caught up with it. */
  serves(payer: string): boolean {
    const route = this.route(payer)
    return route.kind === 'here' && route.ready === null
  }

  /**
   * Tells `listener` of each partition this instance starts serving (taken and caught up), with a signal aborted when
   * the partition moves on: the Arena writes that partition's payers' awards from then on. Returns the unsubscribe.
   */
  onServing(listener: (partition: number, signal: AbortSignal) => void): () => void {
    this.servingListeners.add(listener)
    return () => this.servingListeners.delete(listener)
  }

  /** Who owns each payer partition as last read (null: nobody right now), and whether it is this instance. */
  owners(): Array<{ partition: number; owner: string | null; here: boolean }> {
    return Array.from({ length: this.partitions }, (_, partition) => ({
      partition,
      owner: this.lease?.owner(partition)?.instance ?? null,
      here: this.lease?.holds(partition) ?? false,
    }))
  }

  /** After a peer could not be reached: who owns what now (the peer may have died and its partitions moved). */
  async refresh(): Promise<void> {
    await this.lease?.refresh()
  }

  async close(): Promise<void> {
    this.off?.()
    for (const t of this.taking.values()) t.abort.abort(new Error('closed'))
    this.taking.clear()
    await this.lease?.close()
  }

  private changed(held: ReadonlySet<number>): void {
    for (const [p, t] of this.taking) {
      if (held.has(p)) continue
      t.abort.abort(new Error(`partition ${p} moved on`))
      this.taking.delete(p)
    }
    for (const p of held) if (!this.taking.has(p)) this.take(p)
  }

  private take(partition: number): void {
    const abort = new AbortController()
    const entry = { ready: Promise.resolve(), done: false, abort }
    entry.ready = (async () => {
      await CATCH_UP_RETRY.run(() => this.ledger.caughtUp(abort.signal), {
        signal: abort.signal,
        retryable: () => true,
        onRetry: (err, attempt, waitMs) => this.logger.warn({ err, partition, attempt, waitMs }, 'taking a payer partition over: the credit ledger did not catch up; retrying'),
      })
      try {
        const reversed = await this.ledger.recover((payer) => this.partitionOf(payer) === partition)
        this.logger.info({ partition, reversed: reversed.length }, 'this instance owns the payers of a draws partition')
      } catch (err) {
        // The debits stay unanswered in the log: the next owner's takeover (or this one's next start) reverses them.
        this.logger.warn({ err, partition }, 'reversing the unanswered debits of a payer partition failed; serving it')
      }
      entry.done = true
      for (const listener of this.servingListeners) listener(partition, abort.signal)
    })()
    // A takeover aborted (the partition moved on, or closing) is no failure: nobody waits on it here.
    entry.ready.catch(() => undefined)
    this.taking.set(partition, entry)
  }
}
