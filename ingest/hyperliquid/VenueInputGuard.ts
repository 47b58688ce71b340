/**
 * The gate between what the venue sends and what may reach the log. Frames that do not parse are refused by the
 * stream and the REST client (HL_BAD_RESPONSE names the field); the ticks built from what did parse are checked here
 * for what a parser cannot see: prices that are not positive, negative sizes, bars whose high and low do not bound
 * their open and close, funding beyond the venue's cap, books that cross, and event times in the future (a candle
 * from tomorrow). A refused input is counted by reason and logged once per reason (the first time it is seen): a
 * venue that keeps sending the same bad thing does not flood the log, and /readyz shows the counts.
 */
import type { Logger } from 'pino'
import { childLogger } from '../../common/logger.ts'
import { tickTime, type Tick } from '../Tick.ts'

/** Reference §5: "Cap: 4 % per hour, same for all assets." */
const FUNDING_CAP_PER_HOUR = 0.04

export const VENUE_REJECT_REASONS = [
  /** Frame-level (the stream): not JSON, a channel we did not subscribe to, a field of the wrong shape (a price "NaN"). */
  'not_json',
  'unknown_channel',
  'bad_field',
  /** Tick-level (here). */
  'non_positive_price',
  'negative_size',
  'bad_bar',
  'funding_out_of_range',
  'crossed_book',
  'future_time',
] as const
export type VenueRejectReason = (typeof VENUE_REJECT_REASONS)[number]

export interface VenueInputGuardOptions {
  /** An event time further than this past `now` is from the future. Default 60 000 (clock ms). */
  futureToleranceMs?: number
  logger?: Logger
}

const positive = (x: number) => Number.isFinite(x) && x > 0
const nonNegative = (x: number) => Number.isFinite(x) && x >= 0

export class VenueInputGuard {
  readonly #futureToleranceMs: number
  readonly #log: Logger
  readonly #counts = new Map<VenueRejectReason, number>()

  constructor(options: VenueInputGuardOptions = {}) {
    this.#futureToleranceMs = options.futureToleranceMs ?? 60_000
    this.#log = options.logger ?? childLogger('venue-input')
  }

  /** Refused inputs so far, by reason (only reasons seen). */
  counts(): Record<string, number> {
    return Object.fromEntries(this.#counts)
  }

  get total(): number {
    let n = 0
    for (const c of this.#counts.values()) n += c
    return n
  }

  /** Counts a refused input; the first of each reason is logged with its detail. */
  reject(reason: VenueRejectReason, detail: string): void {
    const seen = this.#counts.get(reason) ?? 0
    this.#counts.set(reason, seen + 1)
    if (seen === 0) this.#log.warn({ reason, detail }, 'venue input refused (logged once per reason; /readyz counts every one)')
  }

  /** True when the tick may go on; otherwise it is counted under its reason and false. `now`: the clock's time. */
  admit(tick: Tick, now: number): boolean {
    const reason = this.#check(tick, now)
    if (reason === null) return true
    this.reject(reason, `${tick.kind} ${tick.asset} at ${tick.provenance.timestamp}`)
    return false
  }

  #check(tick: Tick, now: number): VenueRejectReason | null {
    if (tickTime(tick) > now + this.#futureToleranceMs) return 'future_time'
    switch (tick.kind) {
      case 'bar':
        if (![tick.open, tick.high, tick.low, tick.close].every(positive)) return 'non_positive_price'
        if (!nonNegative(tick.volume)) return 'negative_size'
        if (tick.low > tick.high || tick.high < Math.max(tick.open, tick.close) || tick.low > Math.min(tick.open, tick.close)) return 'bad_bar'
        return null
      case 'mid':
      case 'mark':
      case 'index':
        return positive(tick.price) ? null : 'non_positive_price'
      case 'trade':
        if (!positive(tick.price)) return 'non_positive_price'
        return positive(tick.size) ? null : 'negative_size'
      case 'book_top':
        if (!positive(tick.bid) || !positive(tick.ask)) return 'non_positive_price'
        if (!nonNegative(tick.bid_size) || !nonNegative(tick.ask_size)) return 'negative_size'
        return tick.bid > tick.ask ? 'crossed_book' : null
      case 'open_interest':
        return nonNegative(tick.value) ? null : 'negative_size'
      case 'funding':
      case 'predicted_funding':
        return Number.isFinite(tick.rate) && Math.abs(tick.rate / tick.interval_hours) <= FUNDING_CAP_PER_HOUR ? null : 'funding_out_of_range'
      default:
        return null
    }
  }
}
