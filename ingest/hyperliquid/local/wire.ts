/**
 * The local venue's wire format: numbers → the decimal strings Hyperliquid puts on the wire, and the venue's
 * numeric records → the documented JSON shapes (Candle, WsTrade, WsBook, asset contexts, funding rows).
 *
 * Reference §1: "Prices, sizes, rates, USD amounts: decimal strings ("30135.0", "0.0000125")". ingest/hyperliquid/
 * parseInfo.ts reads them with /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/; the venue never writes exponents or "NaN".
 */
import type { HlCandle } from '../parseInfo.ts'

/** candleSnapshot / candle intervals the stand-in simulates, in ms; open times sit on the UTC epoch grid. */
export const CANDLE_INTERVALS = {
  '1m': 60_000,
  '3m': 180_000,
  '5m': 300_000,
  '15m': 900_000,
  '30m': 1_800_000,
  '1h': 3_600_000,
  '2h': 7_200_000,
  '4h': 14_400_000,
  '8h': 28_800_000,
  '12h': 43_200_000,
  '1d': 86_400_000,
} as const
export type CandleInterval = keyof typeof CANDLE_INTERVALS
export const CANDLE_INTERVAL_NAMES = Object.keys(CANDLE_INTERVALS) as CandleInterval[]

/** Valid on the real venue (reference §2) but not simulated here: calendar grids the epoch grid cannot express. */
export const UNSIMULATED_INTERVALS = ['3d', '1w', '1M'] as const

export function isCandleInterval(v: unknown): v is CandleInterval {
  return typeof v === 'string' && Object.hasOwn(CANDLE_INTERVALS, v)
}

/** Rounds to `decimals` places; never returns -0. */
export function roundTo(x: number, decimals: number): number {
  const r = Number(x.toFixed(decimals))
  return r === 0 ? 0 : r
}

/**
 * A finite number as a plain decimal string with at least one decimal ("95000.0", "0.0000125", "-0.00000032").
 * String(x) is the shortest text that reads back as the same double, so parsing the wire value gives back exactly
 * the number the venue holds; only its exponent form (below 1e-6, from 1e21) is rewritten positionally.
 */
export function wireDecimal(x: number): string {
  if (!Number.isFinite(x)) throw new RangeError(`not a finite number: ${x}`)
  if (x === 0) return '0.0'
  let s = String(x)
  if (s.includes('e')) s = expandExponent(s)
  return s.includes('.') ? s : `${s}.0`
}

function expandExponent(s: string): string {
  const negative = s.startsWith('-')
  const [mantissa = '', exp = '0'] = (negative ? s.slice(1) : s).split('e')
  const [intPart = '', fracPart = ''] = mantissa.split('.')
  const digits = intPart + fracPart
  const point = intPart.length + Number(exp)
  let out: string
  if (point <= 0) out = `0.${'0'.repeat(-point)}${digits}`
  else if (point >= digits.length) out = digits + '0'.repeat(point - digits.length)
  else out = `${digits.slice(0, point)}.${digits.slice(point)}`
  return (negative ? '-' : '') + out
}

/** An integer count of 10^-decimals units as a decimal string, exactly (sizes and volumes are kept in units). */
export function unitsDecimal(units: number, decimals: number): string {
  return wireDecimal(units / 10 ** decimals)
}

// ---------- the venue's numeric records ----------

/** A candle as the client parses it (parseInfo.ts HlCandle: `T` inclusive), of an interval the venue simulates. */
export interface VenueCandle extends Omit<HlCandle, 'interval' | 'trades'> {
  interval: CandleInterval
  trades: number
}

export interface VenueTrade {
  coin: string
  side: 'B' | 'A'
  px: number
  sz: number
  time: number
  tid: number
  hash: string
  users: [string, string]
}

export interface VenueLevel {
  px: number
  sz: number
  n: number
}

export interface VenueBook {
  coin: string
  time: number
  bids: VenueLevel[]
  asks: VenueLevel[]
}

export interface VenueAssetCtx {
  funding: number
  openInterest: number
  oraclePx: number
  markPx: number
  midPx: number
  premium: number
  prevDayPx: number
  dayNtlVlm: number
  dayBaseVlm: number
  impactPxs: [number, number]
}

export interface VenueFundingRow {
  coin: string
  /** The hour the rate settles. */
  hour: number
  /** Publication time: the hour plus the venue's jitter. */
  time: number
  fundingRate: number
  premium: number
}

// ---------- wire shapes ----------

export function wireCandle(c: VenueCandle): Record<string, unknown> {
  return {
    t: c.openTime,
    T: c.closeTime,
    s: c.coin,
    i: c.interval,
    o: wireDecimal(c.open),
    c: wireDecimal(c.close),
    h: wireDecimal(c.high),
    l: wireDecimal(c.low),
    v: wireDecimal(c.volume),
    n: c.trades,
  }
}

export function wireTrade(t: VenueTrade): Record<string, unknown> {
  return { coin: t.coin, side: t.side, px: wireDecimal(t.px), sz: wireDecimal(t.sz), hash: t.hash, time: t.time, tid: t.tid, users: t.users }
}

const wireLevel = (l: VenueLevel) => ({ px: wireDecimal(l.px), sz: wireDecimal(l.sz), n: l.n })

export function wireBook(b: VenueBook): Record<string, unknown> {
  return { coin: b.coin, time: b.time, levels: [b.bids.map(wireLevel), b.asks.map(wireLevel)] }
}

export function wireAssetCtx(c: VenueAssetCtx): Record<string, unknown> {
  return {
    funding: wireDecimal(c.funding),
    openInterest: wireDecimal(c.openInterest),
    prevDayPx: wireDecimal(c.prevDayPx),
    dayNtlVlm: wireDecimal(c.dayNtlVlm),
    premium: wireDecimal(c.premium),
    oraclePx: wireDecimal(c.oraclePx),
    markPx: wireDecimal(c.markPx),
    midPx: wireDecimal(c.midPx),
    impactPxs: [wireDecimal(c.impactPxs[0]), wireDecimal(c.impactPxs[1])],
    dayBaseVlm: wireDecimal(c.dayBaseVlm),
  }
}

export function wireFundingRow(r: VenueFundingRow): Record<string, unknown> {
  return { coin: r.coin, fundingRate: wireDecimal(r.fundingRate), premium: wireDecimal(r.premium), time: r.time }
}
