/**
 * The checkpoint cycle of a single-writer processor (issue 31, item 1): one that reads its journals once at start and
 * afterwards applies its OWN appends when they are acknowledged (no follower: the credit ledger, the funnel's trend,
 * the payer sessions). Start: restoreState (the newest valid snapshot, or a rebuild from offset 0), then the tail from
 * the snapshot's positions to the log's current end; then a Checkpointer writes snapshots every `everyMs` and at close.
 *
 *   const cp = await OwnWritesCheckpoint.open({ store, sources: [tailOf(journal, (r) => store.apply(r))], checkpoints, logger })
 *   await cp.track(journal.append(rows).then(() => apply(rows)))   // every own write, until its effect is applied
 *   await cp.close()                                               // the final snapshot
 *
 * The positions rule (docs/decisions.md). A snapshot's positions are a lower bound of what its state reflects, never
 * above it:
 * - at start they are the ends the tail read stopped at (the state reflects exactly the records before them);
 * - later they come from the log's end offsets, read before each snapshot, and are used only once every own write
 *   that was in flight when the read returned has been applied (a record in the log below those ends was written by
 *   this writer, and its effect is in the state). Writes that begin later only add effects: the state may then reflect
 *   records at or past the positions;
 * - on Kafka a committed unit becomes readable (its marker lands) a few ms after the ack, so the ends can also lag
 *   behind applied writes.
 * So a restored processor's tail may hold records whose effects its snapshot already has; each store's apply skips
 * those (by record id, or because applying again changes nothing), which keeps snapshot + tail == full rebuild.
 * An own write that failed may still be in the log (a lost Kafka commit answer) without its effect: checkpoints stop
 * for the rest of this run (logged), so the next start reads it as a tail record from the last good snapshot.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from 'pino'
import type { Static, TObject } from '../../common/schema.ts'
import type { Journal, JournalPosition } from '../journal/Journal.ts'
import type { ConsumerPosition, EventLog } from '../log/EventLog.ts'
import type { SnapshotWritten } from './StateSnapshots.ts'
import { Checkpointer } from './Checkpointer.ts'
import { restoreState, type RestoredState } from './restoreState.ts'
import type { CheckpointSettings, StateStore } from './StateStore.ts'

/** How long a snapshot waits for the own writes in flight at its end-offset read before it gives up (until the next). */
const SETTLE_TIMEOUT_MS = 10_000

/** One journal the state is made of: its topic and how its records are read from positions and applied. */
export interface TailSource {
  readonly topic: string
  readonly log: EventLog
  /** Reads and applies the records from `from` to the topic's current end; returns that end per partition. */
  read(from: ReadonlyArray<JournalPosition>): Promise<number[]>
}

export function tailOf<S extends TObject>(journal: Journal<S>, apply: (record: Static<S>) => void): TailSource {
  return {
    topic: journal.topic,
    log: journal.log,
    read: async (from) => {
      const { records, ends } = await journal.readRange({ from })
      for (const r of records) apply(r)
      return ends
    },
  }
}

export interface OwnWritesCheckpointOptions {
  store: StateStore
  /** The journals, in the order their tails are applied. */
  sources: ReadonlyArray<TailSource>
  /** Absent or null: no snapshots (the state is rebuilt from the log at every start, as before issue 31). */
  checkpoints?: CheckpointSettings | null
  logger: Logger
  /**
   * False while the state holds effects the log does not (yet) have and no restart could re-derive from its tail: a
   * processor that also folds events from outside its journals (the Arena: a call event folded, its awards staged and
   * not yet written). A snapshot is then skipped (retried at the next interval), as after a failed own write.
   */
  consistent?: () => boolean
}

export class OwnWritesCheckpoint {
  private readonly inFlight = new Set<Promise<unknown>>()
  private positions: ConsumerPosition[]
  private failedWrite = false
  private readonly checkpointer: Checkpointer | null

  private constructor(
    private readonly o: OwnWritesCheckpointOptions,
    readonly restored: RestoredState,
    positions: ConsumerPosition[],
  ) {
    this.positions = positions
    const checkpoints = o.checkpoints ?? null
    this.checkpointer = checkpoints
      ? new Checkpointer({
          snapshots: checkpoints.snapshots,
          store: o.store,
          everyMs: checkpoints.everyMs,
          prepare: () => this.settle(),
          capture: () => (this.failedWrite || (o.consistent && !o.consistent()) ? null : this.positions),
          logger: o.logger,
        })
      : null
  }

  /** Restores (or rebuilds) the store and reads the tail; starts the periodic snapshots. */
  static async open(o: OwnWritesCheckpointOptions): Promise<OwnWritesCheckpoint> {
    const first = o.sources[0]
    if (!first) throw new Error('OwnWritesCheckpoint: at least one journal')
    const restored = await restoreState({ log: first.log, snapshots: o.checkpoints?.snapshots ?? null, store: o.store, topics: o.sources.map((s) => s.topic), logger: o.logger })
    const positions: ConsumerPosition[] = []
    for (const source of o.sources) {
      const from = restored.from.filter((p) => p.topic === source.topic).map((p) => ({ partition: p.partition, offset: p.next }))
      const ends = await source.read(from)
      ends.forEach((next, partition) => positions.push({ topic: source.topic, partition, next }))
    }
    const cp = new OwnWritesCheckpoint(o, restored, positions)
    cp.checkpointer?.start()
    return cp
  }

  /** Marks an own write in flight until `write` settles; `write` must include applying its effect to the state. */
  track<T>(write: Promise<T>): Promise<T> {
    this.inFlight.add(write)
    const done = () => void this.inFlight.delete(write)
    write.then(done, (err: unknown) => {
      done()
      this.writeFailed(err)
    })
    return write
  }

  /**
   * The same for a write whose end is signalled by callbacks (a unit of work's applied / aborted effects; an abort
   * with an error is a failed commit, without one a unit dropped before it was sent).
   */
  begin(): { applied: () => void; aborted: (err?: unknown) => void } {
    let settle!: () => void
    const write = new Promise<void>((resolve) => (settle = resolve))
    this.inFlight.add(write)
    const end = () => {
      this.inFlight.delete(write)
      settle()
    }
    return {
      applied: end,
      aborted: (err) => {
        end()
        if (err !== undefined) this.writeFailed(err)
      },
    }
  }

  private writeFailed(err: unknown): void {
    if (this.failedWrite || !this.checkpointer) return
    this.failedWrite = true
    this.o.logger.warn({ store: this.o.store.name, err }, 'an own write failed (it may be in the log without its effect here): no more state snapshots this run; the next start reads it from the last one')
  }

  /** Before a snapshot: the log's ends, used once the own writes in flight at that read are applied. */
  private async settle(): Promise<void> {
    try {
      const ends = await Promise.all(this.o.sources.map(async (s) => ({ topic: s.topic, ends: await s.log.endOffsets(s.topic) })))
      const pending = [...this.inFlight]
      if (pending.length > 0) {
        const timedOut = Symbol('timeout')
        const settled = await Promise.race([Promise.allSettled(pending), sleep(SETTLE_TIMEOUT_MS, timedOut, { ref: false })])
        if (settled === timedOut) return
      }
      // Each is a lower bound of what the state reflects: keep the higher per partition (a Kafka end may lag).
      const previous = new Map(this.positions.map((p) => [`${p.topic}/${p.partition}`, p.next]))
      this.positions = ends.flatMap(({ topic, ends }) => ends.map((end, partition) => ({ topic, partition, next: Math.max(end, previous.get(`${topic}/${partition}`) ?? 0) })))
    } catch (err) {
      this.o.logger.warn({ store: this.o.store.name, err }, 'reading the log ends for a state snapshot failed; using the previous positions')
    }
  }

  /** Writes a snapshot now (null when skipped: no checkpoints, nothing moved, or after a failed own write). */
  async checkpoint(): Promise<SnapshotWritten | null> {
    return this.checkpointer ? this.checkpointer.checkpoint() : null
  }

  /** Stops the periodic snapshots and writes the final one (call before the journals close). */
  async close(): Promise<void> {
    await this.checkpointer?.stop({ final: true })
  }
}
