/**
 * Puts live ticks from several feeds into event-time order before they reach a tape or the log (readTape rejects a
 * record earlier than the one before it; the engine reads each series in order).
 *
 * Ticks wait in the buffer until the clock is `windowMs` past their event time; then they are released sorted by
 * (event time, arrival order). A tick whose event time is earlier than the last one released cannot be placed any
 * more: push() refuses it as late and the caller routes it elsewhere (tape record writes it to a side file), so it is
 * neither dropped silently nor written out of order, and its timestamp is never altered. A tick whose key (given by
 * the caller: the venue's identity of the record, e.g. coin + trade id + time) is already held is a duplicate.
 *
 * Barriers hold the release below an instant: a feed that knows a record at time B is due (the bar closing at B, the
 * funding settled just after the hour B) sets a barrier at B, and nothing at or after B is released until the barrier
 * is lifted, so the record can still be placed when it arrives seconds later (fetched over REST).
 */
import { tickTime, type Tick } from './Tick.ts'

interface Held {
  tick: Tick
  time: number
  /** When the tick arrived (its received_at), read once at push. */
  received: number
  seq: number
  key: string | null
}

export type PushResult = 'held' | 'late' | 'duplicate'

export class TickReorderBuffer {
  readonly windowMs: number
  #held: Held[] = []
  #keys = new Set<string>()
  /**
   * Keys of the released ticks at the last released instant: a tick of that instant may still be pushed (it is in
   * order), so a repeat of one already released there (a venue re-sending its last frame) must be told from news.
   */
  #releasedKeys = new Set<string>()
  #seq = 0
  #lastReleased = -Infinity
  #barriers = new Map<string, number>()

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

  /** Starts the buffer after what is already written: ticks earlier than `ms` are late. */
  resumeAfter(ms: number): void {
    if (ms > this.#lastReleased) this.#lastReleased = ms
  }

  /** The lowest barrier, or Infinity. */
  get barrier(): number {
    let low = Infinity
    for (const at of this.#barriers.values()) if (at < low) low = at
    return low
  }

  /** The barriers set, by id. */
  barriers(): ReadonlyMap<string, number> {
    return this.#barriers
  }

  /** Nothing at or after `at` is released until clearBarrier(id) (setting an id again moves its barrier). */
  setBarrier(id: string, at: number): void {
    this.#barriers.set(id, at)
  }

  clearBarrier(id: string): void {
    this.#barriers.delete(id)
  }

  /**
   * When the ticks a barrier holds back arrived: the earliest `received_at` among held ticks at or after the lowest
   * barrier, or null when it holds nothing back. (Their event times say nothing of how long they have waited: a gap
   * repair fetches hours-old bars that arrive now.)
   */
  heldBehindBarrierSince(): number | null {
    const b = this.barrier
    if (b === Infinity) return null
    let oldest: number | null = null
    for (const h of this.#held) if (h.time >= b && (oldest === null || h.received < oldest)) oldest = h.received
    return oldest
  }

  /** How many held ticks are at or after the lowest barrier (held back by it, not by the window). */
  heldBehindBarrierCount(): number {
    const b = this.barrier
    if (b === Infinity) return 0
    let n = 0
    for (const h of this.#held) if (h.time >= b) n++
    return n
  }

  /** Holds the tick, unless it is older than what was already released (late) or its key is held (duplicate). */
  push(tick: Tick, key: string | null = null): PushResult {
    const time = tickTime(tick)
    if (time < this.#lastReleased) return 'late'
    if (key !== null) {
      if (this.#keys.has(key) || (time === this.#lastReleased && this.#releasedKeys.has(key))) return 'duplicate'
      this.#keys.add(key)
    }
    this.#held.push({ tick, time, received: Date.parse(tick.provenance.received_at), seq: this.#seq++, key })
    return 'held'
  }

  /** Releases, in order, every tick at least `windowMs` before `nowMs` and below the lowest barrier. */
  release(nowMs: number): Tick[] {
    return this.#releaseThrough(Math.min(nowMs - this.windowMs, this.barrier - 1))
  }

  /** Releases everything held below the lowest barrier, in order (at shutdown; what a barrier holds stays). */
  releaseAll(): Tick[] {
    return this.#releaseThrough(this.barrier - 1)
  }

  #releaseThrough(limit: number): Tick[] {
    if (this.#held.length === 0) return []
    this.#held.sort((a, b) => a.time - b.time || a.seq - b.seq)
    let n = 0
    while (n < this.#held.length && this.#held[n]!.time <= limit) n++
    if (n === 0) return []
    const out = this.#held.splice(0, n)
    const last = out[out.length - 1]!.time
    if (last !== this.#lastReleased) this.#releasedKeys.clear()
    this.#lastReleased = last
    for (let i = n - 1; i >= 0 && out[i]!.time === last; i--) if (out[i]!.key !== null) this.#releasedKeys.add(out[i]!.key!)
    const ticks = new Array<Tick>(n)
    for (let i = 0; i < n; i++) {
      const h = out[i]!
      if (h.key !== null) this.#keys.delete(h.key)
      ticks[i] = h.tick
    }
    return ticks
  }
}
