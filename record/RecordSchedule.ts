/**
 * Runs the record's batch job every `intervalMs` inside `svc start` (and once right away). Runs never overlap: the
 * next waits for the one in progress. A failed run is logged and retried at the next tick (the job commits a run whole
 * or not at all, so a failure leaves nothing half-counted).
 */
import type { Logger } from 'pino'
import { childLogger } from '../common/logger.ts'
import type { RecordJob, RecordRunSummary } from './RecordJob.ts'

export class RecordSchedule {
  private readonly log: Logger = childLogger('record-schedule')
  private timer: NodeJS.Timeout | null = null
  private current: Promise<unknown> = Promise.resolve()
  private stopped = false

  constructor(
    private readonly job: RecordJob,
    private readonly intervalMs: number,
    private readonly onCommit: (summary: RecordRunSummary) => void,
  ) {}

  start(): void {
    if (this.intervalMs <= 0 || this.timer || this.stopped) return
    const tick = () => {
      this.current = this.job.run().then(
        (s) => {
          if (!s.idle) this.onCommit(s)
        },
        (err: unknown) => this.log.error({ err }, 'record run failed; retrying at the next tick'),
      )
    }
    tick()
    this.timer = setInterval(tick, this.intervalMs)
    this.timer.unref()
  }

  /** Stops the timer and waits for a run in progress. */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.current
  }
}
