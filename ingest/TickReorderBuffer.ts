/**
 * Puts live ticks from several feeds into event-time order before they reach a tape (readTape rejects a record
 * earlier than the one before it).
 *
 * Ticks wait in the buffer until the local clock is `windowMs` past their event time; then they are released
 * sorted by (event time, arrival order). A tick whose event time is earlier than the last one released cannot be
 * placed any more: push() refuses it as late and the caller routes it elsewhere (tape record writes it to a
 * side file), so it is neither dropped nor written out of order, and its timestamp is never altered.
 */
import { tickTime, type Tick } from './Tick.ts'

interface Held {
  tick: Tick
  time: number
  seq: number
}

export class TickReorderBuffer {
  readonly windowMs: number
  #held: Held[] = []
  #seq = 0
  #lastReleased = -Infinity

  constructor(windowMs: number) {
    if (!Number.isFinite(windowMs) || windowMs < 0) throw new RangeError(`TickReorderBuffer windowMs: must be >= 0, got ${windowMs}`)
    this.windowMs = windowMs
  }

  get size(): number {
    return this.#held.length
  }

  /** Event time (epoch ms) of the last released tick; -Infinity before the first. */
  get watermark(): number {
    return this.#lastReleased
  }

  /** Holds the tick; returns false (and holds nothing) when it is older than what was already released. */
  push(tick: Tick): boolean {
    const time = tickTime(tick)
    if (time < this.#lastReleased) return false
    this.#held.push({ tick, time, seq: this.#seq++ })
    return true
  }

  /** Releases, in order, every tick whose event time is at least `windowMs` before `nowMs`. */
  release(nowMs: number): Tick[] {
    return this.#releaseThrough(nowMs - this.windowMs)
  }

  /** Releases everything held, in order (at shutdown). */
  releaseAll(): Tick[] {
    return this.#releaseThrough(Infinity)
  }

  #releaseThrough(limit: number): Tick[] {
    if (this.#held.length === 0) return []
    this.#held.sort((a, b) => a.time - b.time || a.seq - b.seq)
    let n = 0
    while (n < this.#held.length && this.#held[n]!.time <= limit) n++
    const out = this.#held.splice(0, n)
    if (out.length > 0) this.#lastReleased = out[out.length - 1]!.time
    return out.map((h) => h.tick)
  }
}
