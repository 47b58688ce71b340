/**
 * A batch job run every `intervalMs` inside `svc start` (the record's build, Parquet compaction). Runs never overlap:
 * a tick that finds the previous run still going is skipped. A failed run is logged and retried at the next tick — the
 * jobs it drives commit whole or not at all, so a failure leaves nothing half done. The timer does not keep the
 * process alive; stop() waits for a run in progress.
 */
import type { Logger } from 'pino'
import { childLogger } from './logger.ts'

export interface PeriodicTaskOptions {
  /** Names the task in its log lines. */
  name: string
  /** 0 or less: never runs (the job is run on demand only). */
  intervalMs: number
  run: () => Promise<unknown>
  /** Run once at start() too (default false: the first run one interval after start, so a start-up is not slowed). */
  immediately?: boolean
}

export class PeriodicTask {
  readonly #o: PeriodicTaskOptions
  readonly #log: Logger
  #timer: NodeJS.Timeout | null = null
  #current: Promise<unknown> | null = null
  #stopped = false

  constructor(options: PeriodicTaskOptions) {
    this.#o = options
    this.#log = childLogger(options.name)
  }

  start(): void {
    if (this.#o.intervalMs <= 0 || this.#timer || this.#stopped) return
    const tick = () => {
      if (this.#current || this.#stopped) return
      this.#current = this.#o.run().then(
        () => undefined,
        (err: unknown) => this.#log.error({ err }, `${this.#o.name} failed; retrying at the next tick`),
      ).finally(() => {
        this.#current = null
      })
    }
    if (this.#o.immediately) tick()
    this.#timer = setInterval(tick, this.#o.intervalMs)
    this.#timer.unref()
  }

  /** Stops the timer and waits for a run in progress. */
  async stop(): Promise<void> {
    this.#stopped = true
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
    await this.#current
  }
}
