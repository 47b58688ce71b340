/**
 * Group commit, once for every writer of the event log (Journal appends, EmbeddedLog's atomic units and fsync rounds,
 * KafkaUnitWriter's transactions): callers enqueue items with their size; a single flush is in flight at a time, and
 * the next one takes everything queued meanwhile, in order, up to `maxBytes` / `maxItems` (a first item over the bound
 * goes alone, so it fails alone rather than with its neighbours). Each item's promise settles with the flush that
 * took it: a failed flush rejects exactly its items, and the loop goes on with the rest.
 *
 * - The first flush waits one microtask, so items enqueued in the same tick share it.
 * - A flush may hand back `{ settled }`: the queue then starts the next flush at once and settles the items with
 *   `settled` (EmbeddedLog writes the next transaction while the previous one's fsync round runs).
 * - `enqueueChain` submits the parts of one larger write (an append cut into broker-sized sends): they go in order,
 *   and once one part's flush failed, its parts not yet taken reject with the same error without being flushed, so a
 *   caller that retries knows that only a durable prefix was written.
 */

/** What a flush may return instead of settling its items itself: a later promise they settle with. */
export interface Pipelined {
  readonly settled: Promise<void>
}

export interface GroupCommitOptions<T> {
  /** Writes one group, in enqueue order; rejects (or returns a rejecting `settled`) when none of it is acknowledged. */
  flush: (items: T[]) => Promise<void | Pipelined>
  /** Most summed item bytes per flush (a single larger item goes alone). */
  maxBytes: number
  /** Most items per flush. Default unbounded. */
  maxItems?: number
}

/** The parts of one enqueueChain call: once a flush of one of them failed, this holds why. */
interface Chain {
  failed: { err: unknown } | null
}

interface Entry<T> {
  item: T
  bytes: number
  chain: Chain | null
  resolve: () => void
  reject: (err: unknown) => void
}

export class GroupCommitQueue<T> {
  private readonly queue: Entry<T>[] = []
  private loop: Promise<void> | null = null
  private readonly maxItems: number

  constructor(private readonly options: GroupCommitOptions<T>) {
    this.maxItems = options.maxItems ?? Number.POSITIVE_INFINITY
  }

  /** Resolves once the flush that takes this item succeeded; rejects with that flush's error. */
  enqueue(item: T, bytes: number): Promise<void> {
    return this.push(item, bytes, null)
  }

  /** The parts of one write, in order (see the file comment); one promise per part. */
  enqueueChain(parts: ReadonlyArray<{ item: T; bytes: number }>): Promise<void>[] {
    const chain: Chain = { failed: null }
    return parts.map((p) => this.push(p.item, p.bytes, chain))
  }

  /** Whether items are queued or a flush runs (a pipelined flush's `settled` may outlast it). */
  get busy(): boolean {
    return this.loop !== null
  }

  /** Resolves once nothing is queued and no flush runs (a pipelined flush's `settled` may still be pending). */
  async drained(): Promise<void> {
    while (this.loop) await this.loop
  }

  private push(item: T, bytes: number, chain: Chain | null): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ item, bytes, chain, resolve, reject })
      this.loop ??= this.run()
    })
  }

  private async run(): Promise<void> {
    await null // items enqueued in the same tick as the first one join its flush
    for (;;) {
      const group = this.take()
      if (group.length === 0) {
        this.loop = null
        return
      }
      let out: void | Pipelined
      try {
        out = await this.options.flush(group.map((e) => e.item))
      } catch (err) {
        this.fail(group, err) // before the next take, so the failed chains' later parts are not flushed
        continue
      }
      if (out) {
        out.settled.then(
          () => group.forEach((e) => e.resolve()),
          (err: unknown) => this.fail(group, err),
        )
      } else {
        for (const e of group) e.resolve()
      }
    }
  }

  private fail(group: Entry<T>[], err: unknown): void {
    for (const e of group) {
      if (e.chain) e.chain.failed ??= { err }
      e.reject(err)
    }
  }

  /** The next group: queued items in order within the bounds; parts of a failed chain are rejected on the way. */
  private take(): Entry<T>[] {
    const group: Entry<T>[] = []
    let bytes = 0
    while (this.queue.length > 0 && group.length < this.maxItems) {
      const next = this.queue[0]!
      if (next.chain?.failed) {
        this.queue.shift()
        next.reject(next.chain.failed.err)
        continue
      }
      if (group.length > 0 && bytes + next.bytes > this.options.maxBytes) break
      group.push(this.queue.shift()!)
      bytes += next.bytes
    }
    return group
  }
}
