/**
 * The gate between what the venue sends and what may reach the log. Frames that do not parse are refused by the
 * stream and the REST client (HL_BAD_RESPONSE names the field); the ticks built from what did parse are checked here
 * for what a parser cannot see: prices that are not positive, negative sizes, bars whose high and low do not bound
 * their open and close, funding beyond the venue's cap, books that cross, and event times in the future (a candle
 * from tomorrow). A universe snapshot is refused whole when one of its rows is bad: it is one observation. A refused input is counted by reason and logged once per reason (the first time it is seen): a
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
  /** A size or volume that is negative, or not positive where the venue only reports positive ones (a trade's). */
  'bad_size',
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
const nullOrNonNegative = (x: number | null) => x === null || nonNegative(x)
const fundingOk = (perHour: number) => Number.isFinite(perHour) && Math.abs(perHour) <= FUNDING_CAP_PER_HOUR

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
        if (!nonNegative(tick.volume)) return 'bad_size'
        if (tick.low > tick.high || tick.high < Math.max(tick.open, tick.close) || tick.low > Math.min(tick.open, tick.close)) return 'bad_bar'
        return null
      case 'mid':
      case 'mark':
      case 'index':
        return positive(tick.price) ? null : 'non_positive_price'
      case 'trade':
      case 'liquidation':
        if (!positive(tick.price)) return 'non_positive_price'
        return positive(tick.size) ? null : 'bad_size'
      case 'book_top':
        if (!positive(tick.bid) || !positive(tick.ask)) return 'non_positive_price'
        if (!nonNegative(tick.bid_size) || !nonNegative(tick.ask_size)) return 'bad_size'
        return tick.bid > tick.ask ? 'crossed_book' : null
      case 'open_interest':
        return nonNegative(tick.value) ? null : 'bad_size'
      case 'funding':
      case 'predicted_funding':
        return fundingOk(tick.rate / tick.interval_hours) ? null : 'funding_out_of_range'
      case 'universe':
        for (const a of tick.assets) {
          // An idle or delisted market reports 0.0 prices (reference §2): zero is data here, a negative price is not.
          if (![a.mark, a.mid, a.oracle, a.prev_day_price].every(nullOrNonNegative)) return 'non_positive_price'
          if (!nullOrNonNegative(a.open_interest) || !nullOrNonNegative(a.day_volume_usd)) return 'bad_size'
          if (a.funding !== null && !fundingOk(a.funding)) return 'funding_out_of_range'
        }
        return null
      default:
        return null
    }
  }
}
