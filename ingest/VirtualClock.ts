/**
 * Event time for everything downstream of a replay. Processors take a `Clock` and call now() instead of
 * Date.now(), so a replayed tape produces the same decisions and outcomes as the live feed it records,
 * at any replay speed.
 */

import type { Clock } from '../common/Clock.ts'

export class VirtualClock implements Clock {
  #now: number
  #started: boolean

  /** `startMs`: the time now() reports before the first record (default: not started, now() throws). */
  constructor(startMs?: number) {
    if (startMs !== undefined && !Number.isFinite(startMs)) throw new RangeError(`VirtualClock start must be finite, got ${startMs}`)
    this.#now = startMs ?? 0
    this.#started = startMs !== undefined
  }

  /** Event time, epoch ms: the time of the record most recently emitted. */
  now(): number {
    if (!this.#started) throw new Error('VirtualClock has no time yet: no record has been replayed')
    return this.#now
  }

  /** True once the clock has a time. */
  get started(): boolean {
    return this.#started
  }

  /** Event time as an ISO-8601 UTC instant. */
  nowIso(): string {
    return new Date(this.now()).toISOString()
  }

  /** Moves the clock to `ms`. Event time never runs backwards: an earlier time is a caller bug. */
  advanceTo(ms: number): void {
    if (!Number.isFinite(ms)) throw new RangeError(`VirtualClock time must be finite, got ${ms}`)
    if (this.#started && ms < this.#now) {
      throw new RangeError(`VirtualClock cannot go back from ${new Date(this.#now).toISOString()} to ${new Date(ms).toISOString()}`)
    }
    this.#now = ms
    this.#started = true
  }
}
