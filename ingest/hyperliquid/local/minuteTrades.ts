/**
 * Trades behind a synthetic 1-minute bar: SyntheticMarket simulates bars, not prints, and the venue's candles are
 * aggregates of its trades, so every bar [M − 60 s, M) is dealt into a deterministic set of trades whose aggregate is
 * the bar exactly: the first at the open, the last at the close, one at the high and one at the low (low first on an
 * up bar, high first on a down bar), the rest inside [low, high]; sizes in whole 10^-szDecimals units summing to the
 * bar volume.
 *
 * Deterministic per (seed, coin, minute): one named Prng stream per minute, so any minute can be dealt on its own
 * (random access) and gives the same trades every time.
 */
import { createHash } from 'node:crypto'
import { Prng } from '../../Prng.ts'
import { CANONICAL_ASSETS, type CanonicalAsset } from '../../Tick.ts'
import type { VenueTrade } from './wire.ts'
import { MINUTE_MS } from '../../../common/time.ts'

/** Reference §3: "tid = 50-bit hash of the two order ids". */
const TID_MASK = (1n << 50n) - 1n
/** Odd, so multiplying modulo 2^50 is a bijection: distinct trade numbers keep distinct tids. */
const TID_MIX = 0x2545f4914f6cdn

/** Buyer and seller of every simulated trade (WsTrade `users` is [buyer, seller]). */
export const TRADE_USERS: [string, string] = [
  '0x1111111111111111111111111111111111111111',
  '0x2222222222222222222222222222222222222222',
]

export interface MinuteBar {
  coin: CanonicalAsset
  /** Open time of the minute, epoch ms. */
  startMs: number
  open: number
  high: number
  low: number
  close: number
  /** Bar volume in 10^-szDecimals units. */
  volumeUnits: number
  szDecimals: number
}

function minuteRng(seed: number, coin: string, startMs: number): Prng {
  return new Prng(seed, `local-venue/trades:${coin}:${startMs}`)
}

/**
 * How many trades the minute holds: 6..12 from the minute's stream (its first draw), never more than the volume has
 * units (every size is at least one unit), 0 for a minute without volume.
 */
export function tradeCount(seed: number, coin: string, startMs: number, volumeUnits: number): number {
  return Math.min(minuteRng(seed, coin, startMs).int(6, 12), Math.max(0, volumeUnits))
}

/** Price decimals as SyntheticMarket writes mids: at most 5 significant figures and 6 − szDecimals decimals, plus one. */
function midDecimals(price: number, szDecimals: number): number {
  const sig = 4 - Math.floor(Math.log10(price))
  return Math.max(0, Math.min(6 - szDecimals, sig)) + 1
}

export function minuteTrades(seed: number, bar: MinuteBar): VenueTrade[] {
  const rng = minuteRng(seed, bar.coin, bar.startMs)
  const n = Math.min(rng.int(6, 12), Math.max(0, bar.volumeUnits))
  if (n === 0) return []

  const offsets = new Set<number>()
  while (offsets.size < n) offsets.add(rng.int(0, MINUTE_MS - 1))
  const times = [...offsets].sort((a, b) => a - b).map((o) => bar.startMs + o)

  // Prices: open first, close last, the extremes at two interior places in the order the bar's direction implies.
  const decimals = midDecimals(bar.open, bar.szDecimals)
  const prices = new Array<number>(n)
  for (let k = 0; k < n; k++) {
    const px = Number((bar.low + rng.float() * (bar.high - bar.low)).toFixed(decimals))
    prices[k] = Math.min(bar.high, Math.max(bar.low, px))
  }
  if (n >= 4) {
    const a = rng.int(1, n - 2)
    let b = rng.int(1, n - 3)
    if (b >= a) b++
    const [first, second] = a < b ? [a, b] : [b, a]
    const up = bar.close >= bar.open
    prices[first] = up ? bar.low : bar.high
    prices[second] = up ? bar.high : bar.low
  }
  prices[0] = bar.open
  prices[n - 1] = bar.close

  // Sizes: one unit each, the rest dealt by exponential weights (a flat Dirichlet), the remainder a unit at a time.
  const units = new Array<number>(n).fill(1)
  const weights = Array.from({ length: n }, () => rng.exponential(1))
  const total = weights.reduce((s, w) => s + w, 0)
  const rest = bar.volumeUnits - n
  for (let k = 0; k < n; k++) units[k]! += Math.floor((rest * weights[k]!) / total)
  let leftover = bar.volumeUnits - units.reduce((s, u) => s + u, 0)
  for (let k = 0; leftover !== 0; k = (k + 1) % n) {
    if (leftover > 0) {
      units[k]!++
      leftover--
    } else if (units[k]! > 1) {
      units[k]!--
      leftover++
    }
  }

  const coinCode = CANONICAL_ASSETS.indexOf(bar.coin)
  const scale = 10 ** bar.szDecimals
  const trades: VenueTrade[] = []
  let previous = bar.open
  for (let k = 0; k < n; k++) {
    const px = prices[k]!
    const time = times[k]!
    const tradeNumber = (bar.startMs / MINUTE_MS) * 64 + coinCode * 16 + k
    const tid = Number((BigInt(tradeNumber) * TID_MIX) & TID_MASK)
    trades.push({
      coin: bar.coin,
      side: px >= previous ? 'B' : 'A',
      px,
      sz: units[k]! / scale,
      time,
      tid,
      hash: `0x${createHash('sha256').update(`${seed}:${bar.coin}:${time}:${tid}`).digest('hex')}`,
      users: [TRADE_USERS[0], TRADE_USERS[1]],
    })
    previous = px
  }
  return trades
}
