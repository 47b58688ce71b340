/**
 * The named steps of a stop in progress: which ones are still running when a stop deadline passes is what the operator
 * needs to read (issue 31: a stop that "printed stopped" while work went on for minutes, with nothing saying what).
 * A step that takes longer than `slowMs` is logged when it ends, so a slow stop shows where its time went.
 */
import type { Logger } from 'pino'

export class StopSteps {
  readonly #running = new Map<string, number>()

  constructor(
    private readonly log: Logger,
    private readonly slowMs = 1_000,
  ) {}

  async run<T>(name: string, step: () => T | Promise<T>): Promise<T> {
    const since = Date.now()
    this.#running.set(name, since)
    try {
      return await step()
    } finally {
      this.#running.delete(name)
      const ms = Date.now() - since
      if (ms >= this.slowMs) this.log.info({ step: name, ms }, 'slow stop step')
    }
  }

  /** The steps not yet ended, each with how long it has run (ms). */
  running(): Array<{ step: string; ms: number }> {
    const now = Date.now()
    return [...this.#running].map(([step, since]) => ({ step, ms: now - since }))
  }
}
