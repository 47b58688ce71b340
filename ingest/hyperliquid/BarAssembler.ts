/**
 * Closed bars from the websocket `candle` channel. The venue pushes the forming candle of the subscribed interval,
 * whole (every update carries the candle's open, high, low, close and volume so far), whenever a block's trades change
 * it. A candle is final when the connection that delivered its last update pushes the next candle: the channel's
 * frames arrive in the venue's order, so nothing of the closed candle can follow. Other channels prove nothing: a
 * trades frame past the close may arrive before the candle channel's last update of the closed candle.
 *
 * A candle whose last update came on a connection that has since dropped cannot be confirmed: the updates of its last
 * minutes may be lost. It is reported as unconfirmed and the caller fetches it over REST (candleSnapshot), as it does
 * for a candle the stream never finished (no trade after the close, or a silent venue).
 */
import type { HlCandle } from './parseInfo.ts'

interface Held {
  candle: HlCandle
  connection: number
}

export interface BarAssemblerCallbacks {
  /** A final candle (emitted once per open time). */
  final: (candle: HlCandle) => void
  /** A candle that closed while its updates came on a lost connection: fetch it over REST. */
  unconfirmed: (coin: string, closeTime: number) => void
}

export class BarAssembler {
  readonly interval: string
  readonly #held = new Map<string, Held>()
  readonly #cb: BarAssemblerCallbacks

  constructor(interval: string, callbacks: BarAssemblerCallbacks) {
    this.interval = interval
    this.#cb = callbacks
  }

  /** One `candle` message. Updates of another interval, or older than the one held, are ignored. */
  update(candle: HlCandle, connection: number): void {
    if (candle.interval !== this.interval) return
    const held = this.#held.get(candle.coin)
    if (held && candle.openTime < held.candle.openTime) return
    if (held && candle.openTime > held.candle.openTime) {
      if (held.connection === connection) this.#cb.final(held.candle)
      else this.#cb.unconfirmed(held.candle.coin, held.candle.closeTime + 1)
    }
    this.#held.set(candle.coin, { candle, connection })
  }
}
