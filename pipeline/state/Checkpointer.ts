/**
 * Writes a processor's state snapshot periodically and when it stops, then commits the positions the snapshot
 * reflects for the processor's consumer group (the snapshot first: a commit never runs ahead of a durable state).
 *
 * `capture` is asked for the positions the state reflects at this instant; it returns null when the state is not
 * consistent with any log position right now (an own write applied but not read back yet): the checkpoint is then
 * retried at the next interval. Runs never overlap; a failed write is logged and retried (the previous snapshot stays).
 */
import type { Logger } from 'pino'
import type { ConsumerPosition } from '../log/EventLog.ts'
import type { StateSnapshots, SnapshotWritten } from './StateSnapshots.ts'
import type { StateStore } from './StateStore.ts'

export interface CheckpointerOptions {
  snapshots: StateSnapshots
  store: StateStore
  /** Wall time between snapshots (0 or less: only on demand and at stop). */
  everyMs: number
  /** The positions the state reflects now, or null when it is between positions. */
  capture: () => ConsumerPosition[] | null
  /** Runs before each capture (a processor that learns its positions asynchronously, OwnWritesCheckpoint.ts). */
  prepare?: () => Promise<void>
  /** Commits the consumer group's positions once the snapshot at them is durable. */
  commit?: (positions: ConsumerPosition[]) => Promise<void>
  logger: Logger
}

export class Checkpointer {
  private timer: NodeJS.Timeout | null = null
  private running: Promise<SnapshotWritten | null> | null = null
  private stopped = false
  /** Positions of the last snapshot written (a checkpoint at the same positions is skipped). */
  private last: string | null = null

  constructor(private readonly o: CheckpointerOptions) {}

  start(): void {
    if (this.o.everyMs <= 0 || this.timer || this.stopped) return
    this.timer = setInterval(() => void this.checkpoint().catch(() => undefined), this.o.everyMs)
    this.timer.unref()
  }

  /** Writes a snapshot now unless one is running or nothing moved; null when skipped. */
  checkpoint(): Promise<SnapshotWritten | null> {
    if (this.running) return this.running
    this.running = this.write().finally(() => {
      this.running = null
    })
    return this.running
  }

  private async write(): Promise<SnapshotWritten | null> {
    if (this.o.prepare) await this.o.prepare()
    const positions = this.o.capture()
    if (positions === null) return null
    const key = JSON.stringify(positions)
    if (key === this.last) return null
    const started = Date.now()
    try {
      const written = await this.o.snapshots.write(this.o.store.name, this.o.store.schema, positions, this.o.store.rows())
      this.last = key
      if (this.o.commit) await this.o.commit(positions)
      this.o.logger.debug({ store: this.o.store.name, rows: written.rows, bytes: written.bytes, ms: Date.now() - started }, 'state snapshot written')
      return written
    } catch (err) {
      this.o.logger.error({ err, store: this.o.store.name }, 'state snapshot failed; the previous one stays, retrying at the next interval')
      throw err
    }
  }

  /** Stops the timer; with `final`, waits for a run in progress and writes one last snapshot. */
  async stop(options: { final?: boolean } = {}): Promise<void> {
    this.stopped = true
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.running?.catch(() => undefined)
    if (options.final) await this.checkpoint().catch(() => undefined)
  }
}
