/**
 * The local venue's market: the seeded synthetic perp market (ingest/SyntheticMarket.ts) run from an origin on a
 * whole hour, kept per coin as columns of its 1-minute records, with random access to what the venue serves at any
 * instant t up to now: trades, candles aggregated from them, funding rows, asset contexts and books.
 *
 * Time discipline: the synthetic market is generated lazily, one minute ahead of the instant asked for (a bar of
 * [M − 60 s, M) is simulated once t ≥ M − 60 s), so a minute's trades exist before they happen and are served at
 * their own timestamps; what is served at t is only what has happened by t (trades with time ≤ t, candles of those
 * trades, funding rows published by t, contexts and books of the last minute closed by t).
 */
import type { HlCandle } from '../parseInfo.ts'
import { OptionsError, validateOptions } from '../../../common/validation.ts'
import { systemClock, type Clock } from '../../../common/Clock.ts'
import { Prng } from '../../Prng.ts'
import { SYNTHETIC_MODEL, SyntheticMarket } from '../../SyntheticMarket.ts'
import { CANONICAL_ASSETS, isoMs, tickTime, type CanonicalAsset, type Tick } from '../../Tick.ts'
import { minuteTrades, tradeCount } from './minuteTrades.ts'
import {
  CANDLE_INTERVALS,
  roundTo,
  type CandleInterval,
  type VenueAssetCtx,
  type VenueBook,
  type VenueCandle,
  type VenueFundingRow,
  type VenueLevel,
  type VenueTrade,
} from './wire.ts'
import { MINUTE_MS, HOUR_MS } from '../../../common/time.ts'

const DAY_MINUTES = 1440
/** SyntheticMarket's longest run (its options schema's bound): the venue never runs out of future. */
const RUN_HOURS = 24 * 366 * 5
const BOOK_LEVELS = 20
/** Recently dealt minutes kept: every connection streams the same few minutes. */
const TRADE_CACHE_MINUTES = 256

/** meta.universe maxLeverage of the simulated coins (the task's chosen values; margin tables are not simulated). */
export const MAX_LEVERAGE: Record<CanonicalAsset, number> = { BTC: 40, ETH: 25, SOL: 20 }

export interface LocalVenueMarketOptions {
  /** Non-negative safe integer. Default 1. */
  seed?: number
  /** Subset of BTC, ETH, SOL. Default all three. */
  coins?: string[]
  /** Epoch ms on a whole hour, at least a minute before the clock's now: the first simulated minute starts here. */
  originMs: number
  /** Venue time. Default the system clock. */
  clock?: Clock
  /** candleSnapshot serves only the newest this many candles per coin and interval (reference §1). Default 5000. */
  candleRetention?: number
}

const OPTIONS_SCHEMA = {
  type: 'object',
  required: ['originMs'],
  additionalProperties: false,
  properties: {
    seed: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    coins: { type: 'array', minItems: 1, uniqueItems: true, items: { enum: [...CANONICAL_ASSETS] } },
    originMs: { type: 'integer' },
    clock: {},
    candleRetention: { type: 'integer', minimum: 1 },
  },
} as const
const ROOT = 'LocalVenueMarket options'

interface Series {
  coin: CanonicalAsset
  szDecimals: number
  open: number[]
  high: number[]
  low: number[]
  close: number[]
  volumeUnits: number[]
  trades: number[]
  mid: number[]
  mark: number[]
  oracle: number[]
  predictedFunding: number[]
  openInterest: number[]
  bid: number[]
  ask: number[]
  bidSize: number[]
  askSize: number[]
  bidDepth: number[]
  askDepth: number[]
  /** Prefix sums over minutes (length = minutes + 1), for the rolling 24-hour volumes. */
  cumVolumeUnits: number[]
  cumNotional: number[]
  funding: VenueFundingRow[]
}

/** One generated 1-minute bar as numbers. */
export interface GeneratedBar extends Pick<HlCandle, 'coin' | 'openTime' | 'open' | 'high' | 'low' | 'close' | 'volume'> {
  /** The minute's end (exclusive), unlike HlCandle's inclusive `T`. */
  closeTime: number
  trades: number
}

export class LocalVenueMarket {
  readonly seed: number
  readonly coins: readonly CanonicalAsset[]
  readonly originMs: number
  readonly clock: Clock
  readonly candleRetention: number
  readonly #series = new Map<string, Series>()
  readonly #ticks: Generator<Tick>
  readonly #lastCoin: CanonicalAsset
  readonly #tradeCache = new Map<string, VenueTrade[]>()
  #minutes = 0

  constructor(options: LocalVenueMarketOptions) {
    const o = validateOptions<LocalVenueMarketOptions>(ROOT, OPTIONS_SCHEMA, options)
    const clock = o.clock ?? systemClock
    if (typeof (clock as Partial<Clock>).now !== 'function') throw OptionsError.at(ROOT, '/clock', 'must have a now() method')
    if (o.originMs % HOUR_MS !== 0) throw OptionsError.at(ROOT, '/originMs', 'must fall on a whole hour')
    if (o.originMs + MINUTE_MS > clock.now()) throw OptionsError.at(ROOT, '/originMs', 'must be at least one minute before the clock reads now')
    this.seed = o.seed ?? 1
    this.coins = (o.coins ?? [...CANONICAL_ASSETS]) as CanonicalAsset[]
    this.originMs = o.originMs
    this.clock = clock
    this.candleRetention = o.candleRetention ?? 5000
    for (const coin of this.coins) {
      this.#series.set(coin, {
        coin,
        szDecimals: SYNTHETIC_MODEL.assets[coin].szDecimals,
        open: [], high: [], low: [], close: [], volumeUnits: [], trades: [],
        mid: [], mark: [], oracle: [], predictedFunding: [], openInterest: [],
        bid: [], ask: [], bidSize: [], askSize: [], bidDepth: [], askDepth: [],
        cumVolumeUnits: [0], cumNotional: [0], funding: [],
      })
    }
    this.#lastCoin = this.coins[this.coins.length - 1]!
    this.#ticks = new SyntheticMarket({ seed: this.seed, hours: RUN_HOURS, assets: [...this.coins], start: isoMs(this.originMs) }).ticks()
    this.advance(clock.now())
  }

  now(): number {
    return this.clock.now()
  }

  hasCoin(coin: unknown): coin is CanonicalAsset {
    return typeof coin === 'string' && this.#series.has(coin)
  }

  /** Minutes simulated so far (the last one may still be forming). */
  get generatedMinutes(): number {
    return this.#minutes
  }

  /** Simulates every minute that has started by `at` (one minute ahead of the last closed one). */
  advance(at: number): void {
    const target = Math.floor((at - this.originMs) / MINUTE_MS)
    while (this.#minutes <= target) this.#generateMinute()
  }

  /** Index of the last minute closed by `at` (its end ≤ at); −1 before the first one closed. */
  lastClosedMinute(at: number): number {
    return Math.floor((at - this.originMs) / MINUTE_MS) - 1
  }

  /** The bar SyntheticMarket generated for the minute [openTime, openTime + 1 min); null if not simulated yet. */
  generatedBar(coin: string, openTime: number): GeneratedBar | null {
    const s = this.#series.get(coin)
    const i = (openTime - this.originMs) / MINUTE_MS
    if (!s || !Number.isInteger(i) || i < 0 || i >= this.#minutes) return null
    return {
      coin,
      openTime,
      closeTime: openTime + MINUTE_MS,
      open: s.open[i]!,
      high: s.high[i]!,
      low: s.low[i]!,
      close: s.close[i]!,
      volume: s.volumeUnits[i]! / 10 ** s.szDecimals,
      trades: s.trades[i]!,
    }
  }

  // ---------- trades ----------

  /** Trades of `coin` with after < time ≤ upTo, ascending. */
  trades(coin: string, after: number, upTo: number): VenueTrade[] {
    const s = this.#series.get(coin)
    if (!s || upTo <= after) return []
    this.advance(upTo)
    const first = Math.max(0, Math.floor((after + 1 - this.originMs) / MINUTE_MS))
    const last = Math.min(this.#minutes - 1, Math.floor((upTo - this.originMs) / MINUTE_MS))
    const out: VenueTrade[] = []
    for (let i = first; i <= last; i++) {
      for (const t of this.#minuteTrades(s, i)) if (t.time > after && t.time <= upTo) out.push(t)
    }
    return out
  }

  /** The latest trade of `coin` at or before `at` (searching back at most a day), or null. */
  tradeAtOrBefore(coin: string, at: number): VenueTrade | null {
    const s = this.#series.get(coin)
    if (!s) return null
    this.advance(at)
    const from = Math.min(this.#minutes - 1, Math.floor((at - this.originMs) / MINUTE_MS))
    for (let i = from; i >= 0 && i > from - DAY_MINUTES; i--) {
      const hit = this.#minuteTrades(s, i).filter((t) => t.time <= at).at(-1)
      if (hit) return hit
    }
    return null
  }

  #minuteTrades(s: Series, i: number): VenueTrade[] {
    const key = `${s.coin}:${i}`
    let trades = this.#tradeCache.get(key)
    if (!trades) {
      trades = minuteTrades(this.seed, {
        coin: s.coin,
        startMs: this.originMs + i * MINUTE_MS,
        open: s.open[i]!,
        high: s.high[i]!,
        low: s.low[i]!,
        close: s.close[i]!,
        volumeUnits: s.volumeUnits[i]!,
        szDecimals: s.szDecimals,
      })
      this.#tradeCache.set(key, trades)
      if (this.#tradeCache.size > TRADE_CACHE_MINUTES) this.#tradeCache.delete(this.#tradeCache.keys().next().value!)
    }
    return trades
  }

  // ---------- candles ----------

  /**
   * The candle of `interval` opening at `openTime` as it stands at `at`: the aggregate of its trades with time ≤ at
   * (a closed minute contributes its generated bar, which its trades reproduce exactly). Null when none has traded.
   * A candle that opens before the origin holds only the minutes from the origin on.
   */
  candle(coin: string, interval: CandleInterval, openTime: number, at: number): VenueCandle | null {
    const s = this.#series.get(coin)
    if (!s) return null
    this.advance(at)
    const ivMs = CANDLE_INTERVALS[interval]
    const from = Math.max(openTime, this.originMs)
    const to = Math.min(openTime + ivMs, at + 1)
    if (to <= from) return null
    const firstMinute = Math.floor((from - this.originMs) / MINUTE_MS)
    const endMinute = Math.min(this.#minutes, Math.ceil((to - this.originMs) / MINUTE_MS))
    const scale = 10 ** s.szDecimals
    let open = 0
    let close = 0
    let high = -Infinity
    let low = Infinity
    let units = 0
    let trades = 0
    for (let i = firstMinute; i < endMinute; i++) {
      if (this.originMs + (i + 1) * MINUTE_MS <= at) {
        if (s.trades[i] === 0) continue
        if (trades === 0) open = s.open[i]!
        close = s.close[i]!
        high = Math.max(high, s.high[i]!)
        low = Math.min(low, s.low[i]!)
        units += s.volumeUnits[i]!
        trades += s.trades[i]!
      } else {
        for (const t of this.#minuteTrades(s, i)) {
          if (t.time > at) break
          if (trades === 0) open = t.px
          close = t.px
          high = Math.max(high, t.px)
          low = Math.min(low, t.px)
          units += Math.round(t.sz * scale)
          trades++
        }
      }
    }
    if (trades === 0) return null
    return { coin, interval, openTime, closeTime: openTime + ivMs - 1, open, high, low, close, volume: units / scale, trades }
  }

  /**
   * candleSnapshot at `at`: the candles overlapping [startTime, endTime] (the one containing startTime included, as
   * the venue answers), ascending, that exist at `at` (the forming one included), and only the newest
   * `candleRetention` of the coin and interval.
   */
  candles(coin: string, interval: CandleInterval, startTime: number, endTime: number, at: number): VenueCandle[] {
    if (!this.#series.has(coin) || endTime < startTime) return []
    const ivMs = CANDLE_INTERVALS[interval]
    let newest = Math.floor(at / ivMs) * ivMs
    if (!this.candle(coin, interval, newest, at)) newest -= ivMs
    const oldest = Math.max(newest - (this.candleRetention - 1) * ivMs, Math.floor(this.originMs / ivMs) * ivMs)
    const first = Math.max(oldest, Math.floor(startTime / ivMs) * ivMs)
    const last = Math.min(newest, Math.floor(endTime / ivMs) * ivMs)
    const out: VenueCandle[] = []
    for (let openTime = first; openTime <= last; openTime += ivMs) {
      const c = this.candle(coin, interval, openTime, at)
      if (c) out.push(c)
    }
    return out
  }

  /** Every candle of the coin and interval closed by `at` (T + 1 ≤ at), from the one holding the origin; no retention. */
  closedCandles(coin: string, interval: CandleInterval, at: number): VenueCandle[] {
    if (!this.#series.has(coin)) return []
    const ivMs = CANDLE_INTERVALS[interval]
    const out: VenueCandle[] = []
    for (let openTime = Math.floor(this.originMs / ivMs) * ivMs; openTime + ivMs <= at; openTime += ivMs) {
      const c = this.candle(coin, interval, openTime, at)
      if (c) out.push(c)
    }
    return out
  }

  // ---------- funding ----------

  /** Every funding row published by `at` (time ≤ at), ascending. */
  fundingRows(coin: string, at: number): VenueFundingRow[] {
    const s = this.#series.get(coin)
    if (!s) return []
    this.advance(at)
    return s.funding.filter((r) => r.time <= at)
  }

  /** fundingHistory at `at`: published rows with startTime ≤ time ≤ endTime, ascending, at most `limit`. */
  fundingHistory(coin: string, startTime: number, endTime: number | null, at: number, limit: number): VenueFundingRow[] {
    const s = this.#series.get(coin)
    if (!s) return []
    this.advance(at)
    const end = Math.min(at, endTime ?? Infinity)
    const out: VenueFundingRow[] = []
    for (const r of s.funding) {
      if (r.time < startTime) continue
      if (r.time > end || out.length >= limit) break
      out.push(r)
    }
    return out
  }

  // ---------- contexts, books, mids ----------

  /** The asset context at `at`, from the last minute closed by then. */
  assetCtx(coin: string, at: number): VenueAssetCtx | null {
    const s = this.#series.get(coin)
    const k = this.#closedIndex(at)
    if (!s || k < 0) return null
    const from = Math.max(0, k - (DAY_MINUTES - 1))
    const mid = s.mid[k]!
    const oracle = s.oracle[k]!
    return {
      funding: s.predictedFunding[k]!,
      openInterest: s.openInterest[k]!,
      oraclePx: oracle,
      markPx: s.mark[k]!,
      midPx: mid,
      premium: roundTo(mid / oracle - 1, 10),
      prevDayPx: k >= DAY_MINUTES ? s.mid[k - DAY_MINUTES]! : s.mid[0]!,
      dayNtlVlm: roundTo(s.cumNotional[k + 1]! - s.cumNotional[from]!, 2),
      dayBaseVlm: (s.cumVolumeUnits[k + 1]! - s.cumVolumeUnits[from]!) / 10 ** s.szDecimals,
      impactPxs: [s.bid[k]!, s.ask[k]!],
    }
  }

  /** The predicted hourly rate accruing at `at` and the next settlement (the next whole hour). */
  predictedFunding(coin: string, at: number): { rate: number; nextFundingTime: number } | null {
    const s = this.#series.get(coin)
    const k = this.#closedIndex(at)
    if (!s || k < 0) return null
    return { rate: s.predictedFunding[k]!, nextFundingTime: Math.floor(at / HOUR_MS) * HOUR_MS + HOUR_MS }
  }

  mids(at: number): Record<string, number> {
    const k = this.#closedIndex(at)
    const out: Record<string, number> = {}
    if (k < 0) return out
    for (const s of this.#series.values()) out[s.coin] = s.mid[k]!
    return out
  }

  /**
   * The book at `at`, built from the last closed minute's book top: the best bid and ask with their sizes, then 19
   * more levels a side, each the quoted spread (at least one price tick) further out, with sizes growing outward so
   * the 20-level notional comes to the minute's quoted depth.
   */
  book(coin: string, at: number): VenueBook | null {
    const s = this.#series.get(coin)
    const k = this.#closedIndex(at)
    if (!s || k < 0) return null
    const bid = s.bid[k]!
    const ask = s.ask[k]!
    const decimals = priceDecimals(bid, s.szDecimals)
    const tick = 10 ** -decimals
    const step = Math.max(1, Math.round((ask - bid) / tick)) * tick
    const topSize = SYNTHETIC_MODEL.assets[s.coin].topSize
    const side = (best: number, size: number, depth: number, sign: 1 | -1): VenueLevel[] => {
      const minSize = 10 ** -s.szDecimals
      const rest = Math.max(0, depth - best * size)
      const weightSum = ((BOOK_LEVELS - 1) * BOOK_LEVELS) / 2
      const levels: VenueLevel[] = [{ px: best, sz: size, n: orderCount(size, topSize, 0, k) }]
      for (let j = 1; j < BOOK_LEVELS; j++) {
        const px = roundTo(best + sign * j * step, decimals)
        const sz = Math.max(minSize, roundTo((rest * j) / weightSum / px, s.szDecimals))
        levels.push({ px, sz, n: orderCount(sz, topSize, j, k) })
      }
      return levels
    }
    return {
      coin,
      time: at,
      bids: side(bid, s.bidSize[k]!, s.bidDepth[k]!, -1),
      asks: side(ask, s.askSize[k]!, s.askDepth[k]!, 1),
    }
  }

  /** The last minute closed by `at`, generated if need be and never past what has been simulated. */
  #closedIndex(at: number): number {
    this.advance(at)
    return Math.min(this.lastClosedMinute(at), this.#minutes - 1)
  }

  // ---------- generation ----------

  /** Pulls one simulated minute (every coin) from the synthetic market into the columns. */
  #generateMinute(): void {
    for (;;) {
      const next = this.#ticks.next()
      if (next.done) throw new RangeError(`LocalVenueMarket: the synthetic market ends after ${RUN_HOURS} hours`)
      const tick = next.value
      const s = this.#series.get(tick.asset)!
      switch (tick.kind) {
        case 'bar': {
          const units = Math.round(tick.volume * 10 ** s.szDecimals)
          const startMs = tickTime(tick) - MINUTE_MS
          s.open.push(tick.open)
          s.high.push(tick.high)
          s.low.push(tick.low)
          s.close.push(tick.close)
          s.volumeUnits.push(units)
          s.trades.push(tradeCount(this.seed, s.coin, startMs, units))
          s.cumVolumeUnits.push(s.cumVolumeUnits.at(-1)! + units)
          s.cumNotional.push(s.cumNotional.at(-1)! + tick.volume * tick.close)
          break
        }
        case 'mid':
          s.mid.push(tick.price)
          break
        case 'mark':
          s.mark.push(tick.price)
          break
        case 'index':
          s.oracle.push(tick.price)
          break
        case 'predicted_funding':
          s.predictedFunding.push(tick.rate)
          break
        case 'open_interest':
          s.openInterest.push(tick.value)
          break
        case 'funding': {
          const hour = tickTime(tick)
          // Reference §1: "Funding time carries jitter past the hour (0–~250 ms)".
          const jitter = new Prng(this.seed, `local-venue/funding-jitter:${s.coin}:${hour}`).int(1, 250)
          s.funding.push({ coin: s.coin, hour, time: hour + jitter, fundingRate: tick.rate, premium: tick.premium ?? 0 })
          break
        }
        case 'book_top':
          s.bid.push(tick.bid)
          s.ask.push(tick.ask)
          s.bidSize.push(tick.bid_size)
          s.askSize.push(tick.ask_size)
          s.bidDepth.push(tick.bid_depth_usd ?? tick.bid * tick.bid_size)
          s.askDepth.push(tick.ask_depth_usd ?? tick.ask * tick.ask_size)
          // book_top is the last record of an asset's minute, and the last asset's closes the minute.
          if (tick.asset === this.#lastCoin) {
            this.#minutes++
            return
          }
          break
        default:
          // Liquidations: Hyperliquid publishes no market-wide liquidation feed (reference §4), so none is served.
          break
      }
    }
  }
}

/** Price decimals on Hyperliquid perps: at most 5 significant figures and at most 6 − szDecimals decimals. */
function priceDecimals(price: number, szDecimals: number): number {
  const sig = 4 - Math.floor(Math.log10(price))
  return Math.max(0, Math.min(6 - szDecimals, sig))
}

/** A plausible, deterministic number of resting orders at a level: more for bigger and deeper levels. */
function orderCount(size: number, topSize: number, level: number, minute: number): number {
  return 1 + Math.min(40, Math.floor((4 * size) / topSize)) + ((level * 7 + minute) % 4)
}
