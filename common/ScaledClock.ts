/**
 * A clock that runs `speed` times faster than the machine's, from an anchor: now() = anchorMs + (wall − wallAnchor) ×
 * speed. A compressed session puts the local venue and the service on one such clock, so hours of venue time (bars,
 * funding settlements, staleness budgets) pass in minutes of wall time; two processes agree on it when they are given
 * the same anchor, wall anchor and speed.
 */
import type { Clock } from './Clock.ts'

export interface ScaledClockOptions {
  /** The clock's time at `wallAnchorMs`, epoch ms. */
  anchorMs: number
  /** The machine's time the anchor belongs to (default: now). */
  wallAnchorMs?: number
  /** Clock time per wall time (1: real time). */
  speed: number
}

export class ScaledClock implements Clock {
  readonly anchorMs: number
  readonly wallAnchorMs: number
  readonly speed: number

  constructor(options: ScaledClockOptions) {
    if (!Number.isFinite(options.anchorMs)) throw new RangeError(`ScaledClock anchorMs must be finite, got ${options.anchorMs}`)
    if (!(options.speed > 0) || !Number.isFinite(options.speed)) throw new RangeError(`ScaledClock speed must be a positive number, got ${options.speed}`)
    this.anchorMs = options.anchorMs
    this.wallAnchorMs = options.wallAnchorMs ?? Date.now()
    this.speed = options.speed
  }

  now(): number {
    return Math.floor(this.anchorMs + (Date.now() - this.wallAnchorMs) * this.speed)
  }

  /** Wall milliseconds until this clock reads `ms` (0 when it already has). */
  wallMsUntil(ms: number): number {
    return Math.max(0, (ms - this.now()) / this.speed)
  }
}
