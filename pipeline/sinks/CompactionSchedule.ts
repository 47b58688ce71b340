/**
 * Runs the Parquet compactor every `intervalMs` inside `svc start` (first run one interval after start, so a start-up
 * is not slowed by it). Passes never overlap. A failed pass is logged and retried at the next tick: it leaves either
 * the small files or a merged file that covers them (ParquetCompactor.ts), both read exactly once.
 */
import type { Logger } from 'pino'
import { childLogger } from '../../common/logger.ts'
import type { ParquetCompactor } from './ParquetCompactor.ts'

export class CompactionSchedule {
  private readonly log: Logger = childLogger('compaction-schedule')
  private timer: NodeJS.Timeout | null = null
  private current: Promise<unknown> = Promise.resolve()
  private busy = false

  constructor(
    private readonly compactor: ParquetCompactor,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    if (this.intervalMs <= 0 || this.timer) return
    this.timer = setInterval(() => {
      if (this.busy) return
      this.busy = true
      this.current = this.compactor.compact().then(
        () => undefined,
        (err: unknown) => this.log.error({ err }, 'compaction failed; retrying at the next tick'),
      ).finally(() => {
        this.busy = false
      })
    }, this.intervalMs)
    this.timer.unref()
  }

  /** Stops the timer, waits for a pass in progress and closes the compactor. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.current
    await this.compactor.close()
  }
}
