/**
 * Parsed Hyperliquid payloads → tick records (ingest/Tick.ts).
 *
 * Provenance: source 'hyperliquid:perp'; provider 'hyperliquid-info' (REST) or 'hyperliquid-ws' (stream);
 * received_at = the local instant the payload arrived; quality 'real' unless stated.
 * Event time: the venue's own time where the payload has one (l2Book `time`, trade `time`, funding `time`, candle
 * `T`); metaAndAssetCtxs, activeAssetCtx, allMids and predictedFundings carry none, so their event time is the
 * receive time (the instant the value was observed).
 *
 * Assets: `asset` is the venue coin upper-cased when it is a plain ticker (BTC, kPEPE → KPEPE); HIP-3 ('xyz:TSLA')
 * and spot ('@107', 'PURR/USDC') names are not perp assets and yield no per-asset ticks. `instrument` keeps the
 * venue's own spelling.
 */
import {
  isoMs,
  TICK_SCHEMA_VERSION,
  type BarTick,
  type BookTopTick,
  type FundingTick,
  type OpenInterestTick,
  type PredictedFundingTick,
  type PriceTick,
  type Provenance,
  type Tick,
  type TradeTick,
  type UniverseAsset,
  type UniverseTick,
} from '../Tick.ts'
import {
  bookTopOf,
  type HlActiveAssetCtx,
  type HlAssetCtx,
  type HlBook,
  type HlBookTop,
  type HlCandle,
  type HlFundingRow,
  type HlMetaAndAssetCtxs,
  type HlMids,
  type HlPredictedFunding,
  type HlTrade,
} from './parseInfo.ts'
import { HOUR_MS } from '../../common/time.ts'

export const HL_SOURCE = 'hyperliquid:perp'
export type HlProvider = 'hyperliquid-info' | 'hyperliquid-ws'

export interface HlTickContext {
  receivedAt: number
  provider: HlProvider
}

/** Restricts per-asset ticks to these venue coins (e.g. ['BTC','ETH','SOL']); null = every plain-ticker coin. */
export type CoinFilter = readonly string[] | null


/**
 * tapes/README.md (BTC fundingHistory): "8-hourly until 2023-06-08 00:00, hourly after". The 00:00 record of that
 * day still settles the last 8-hour period (its rate is 0.0001, an 8-hour interest component).
 */
export const HL_HOURLY_FUNDING_FROM = Date.parse('2023-06-08T00:00:00Z')

export function hlFundingIntervalHours(timeMs: number): number {
  return Math.floor(timeMs / HOUR_MS) * HOUR_MS <= HL_HOURLY_FUNDING_FROM ? 8 : 1
}

/** The upper-case asset symbol of a venue coin, or null for names that are not plain perp tickers. */
export function hlAsset(coin: string): string | null {
  return /^[A-Za-z0-9]{1,20}$/.test(coin) ? coin.toUpperCase() : null
}

function provenance(eventTime: number, ctx: HlTickContext, quality: Provenance['quality'] = 'real'): Provenance {
  return { source: HL_SOURCE, provider: ctx.provider, timestamp: isoMs(eventTime), received_at: isoMs(ctx.receivedAt), quality }
}

function wanted(coin: string, coins: CoinFilter): string | null {
  if (coins && !coins.includes(coin)) return null
  return hlAsset(coin)
}

/** Next top of the hour strictly after `ms`: Hyperliquid settles funding hourly. */
function nextHour(ms: number): number {
  return Math.floor(ms / HOUR_MS) * HOUR_MS + HOUR_MS
}

/**
 * One asset context → mark (markPx), index (oraclePx), mid (midPx), open_interest (base units) and
 * predicted_funding (the hourly rate accruing now, settling at the next top of the hour). Null fields give no tick.
 */
export function assetCtxToTicks(coin: string, asset: string, c: HlAssetCtx, ctx: HlTickContext): Tick[] {
  const t = ctx.receivedAt
  const base = { v: TICK_SCHEMA_VERSION, asset, instrument: coin } as const
  const out: Tick[] = []
  if (c.markPx !== null) out.push({ ...base, kind: 'mark', provenance: provenance(t, ctx), price: c.markPx } satisfies PriceTick<'mark'>)
  if (c.oraclePx !== null) out.push({ ...base, kind: 'index', provenance: provenance(t, ctx), price: c.oraclePx } satisfies PriceTick<'index'>)
  if (c.midPx !== null) out.push({ ...base, kind: 'mid', provenance: provenance(t, ctx), price: c.midPx } satisfies PriceTick<'mid'>)
  if (c.openInterest !== null) {
    out.push({ ...base, kind: 'open_interest', provenance: provenance(t, ctx), value: c.openInterest, unit: 'base' } satisfies OpenInterestTick)
  }
  if (c.funding !== null) {
    out.push({
      ...base,
      kind: 'predicted_funding',
      provenance: provenance(t, ctx),
      rate: c.funding,
      interval_hours: 1,
      next_funding_at: isoMs(nextHour(t)),
    } satisfies PredictedFundingTick)
  }
  return out
}

/** Per-asset ticks for the wanted coins, then one universe tick (all assets) when `universe` is set. */
export function metaAndAssetCtxsToTicks(
  data: HlMetaAndAssetCtxs,
  ctx: HlTickContext,
  opts: { coins?: CoinFilter; universe?: boolean } = {},
): Tick[] {
  const out: Tick[] = []
  for (const m of data.markets) {
    const asset = wanted(m.meta.name, opts.coins ?? null)
    if (asset && m.ctx) out.push(...assetCtxToTicks(m.meta.name, asset, m.ctx, ctx))
  }
  if (opts.universe ?? true) out.push(universeTick(data, ctx))
  return out
}

/**
 * The venue universe at receive time. `open_interest` is in base units like the open_interest tick (× mark for
 * USD); `day_volume_usd` is dayNtlVlm; `delisted` is meta.isDelisted (absent = false).
 */
export function universeTick(data: HlMetaAndAssetCtxs, ctx: HlTickContext): UniverseTick {
  const assets: UniverseAsset[] = data.markets.map(({ meta, ctx: c }) => ({
    symbol: meta.name,
    mark: c?.markPx ?? null,
    mid: c?.midPx ?? null,
    oracle: c?.oraclePx ?? null,
    funding: c?.funding ?? null,
    open_interest: c?.openInterest ?? null,
    day_volume_usd: c?.dayNtlVlm ?? null,
    prev_day_price: c?.prevDayPx ?? null,
    max_leverage: meta.maxLeverage,
    delisted: meta.isDelisted,
  }))
  return { v: TICK_SCHEMA_VERSION, kind: 'universe', asset: '*', instrument: '*', provenance: provenance(ctx.receivedAt, ctx), assets }
}

export function activeAssetCtxToTicks(data: HlActiveAssetCtx, ctx: HlTickContext): Tick[] {
  const asset = hlAsset(data.coin)
  return asset ? assetCtxToTicks(data.coin, asset, data.ctx, ctx) : []
}

export function allMidsToTicks(mids: HlMids, ctx: HlTickContext, coins: CoinFilter = null): PriceTick<'mid'>[] {
  const out: PriceTick<'mid'>[] = []
  for (const [coin, price] of Object.entries(mids)) {
    const asset = wanted(coin, coins)
    if (asset) out.push({ v: TICK_SCHEMA_VERSION, kind: 'mid', asset, instrument: coin, provenance: provenance(ctx.receivedAt, ctx), price })
  }
  return out
}

/**
 * Best bid/ask with their sizes; depth is the USD notional Σ px·sz over every level the venue sent on that side
 * (20 per side from l2Book, 5 with `fast`). A book with an empty side has no top: null.
 */
export function l2BookToTick(book: HlBook, ctx: HlTickContext): BookTopTick | null {
  const top = bookTopOf(book)
  return top ? bookTopToTick(top, ctx) : null
}

/** A book's top (bookTopOf, or scanBookFrame straight from a stream frame) as a book_top tick; null for a coin not ours. */
export function bookTopToTick(top: HlBookTop, ctx: HlTickContext): BookTopTick | null {
  const asset = hlAsset(top.coin)
  if (!asset) return null
  return {
    v: TICK_SCHEMA_VERSION,
    kind: 'book_top',
    asset,
    instrument: top.coin,
    provenance: provenance(top.time, ctx),
    bid: top.bidPx,
    ask: top.askPx,
    bid_size: top.bidSz,
    ask_size: top.askSz,
    bid_depth_usd: top.bidDepthUsd,
    ask_depth_usd: top.askDepthUsd,
  }
}

/**
 * Candles → bars. Event time is the bar close `T + 1` (= t + interval; `T` is inclusive), the instant the bar became
 * knowable. A bar whose close is after the receive time was still forming: quality 'degraded'.
 * The tick schema has no calendar-month interval, so '1M' candles are refused.
 */
export function candlesToBars(candles: readonly HlCandle[], ctx: HlTickContext): BarTick[] {
  const out: BarTick[] = []
  for (const c of candles) {
    if (!/^\d+[mhdw]$/.test(c.interval)) throw new RangeError(`candle interval '${c.interval}' has no bar interval in the tick schema`)
    const asset = hlAsset(c.coin)
    if (!asset) continue
    const close = c.closeTime + 1
    out.push({
      v: TICK_SCHEMA_VERSION,
      kind: 'bar',
      asset,
      instrument: c.coin,
      provenance: provenance(close, ctx, close > ctx.receivedAt ? 'degraded' : 'real'),
      interval: c.interval,
      open_time: isoMs(c.openTime),
      open: c.open,
      high: c.high,
      low: c.low,
      close: c.close,
      volume: c.volume,
      volume_unit: 'base',
    })
  }
  return out
}

/** Settled funding; the rate is per interval_hours (8 before the 2023-06-08 switch to hourly, 1 after). */
export function fundingHistoryToTicks(rows: readonly HlFundingRow[], ctx: HlTickContext): FundingTick[] {
  const out: FundingTick[] = []
  for (const r of rows) {
    const asset = hlAsset(r.coin)
    if (!asset) continue
    out.push({
      v: TICK_SCHEMA_VERSION,
      kind: 'funding',
      asset,
      instrument: r.coin,
      provenance: provenance(r.time, ctx),
      rate: r.fundingRate,
      interval_hours: hlFundingIntervalHours(r.time),
      premium: r.premium,
    })
  }
  return out
}

/** The venue's own ('HlPerp') predicted rate per coin; the CEX entries are other venues and are not emitted. */
export function predictedFundingsToTicks(data: readonly HlPredictedFunding[], ctx: HlTickContext, coins: CoinFilter = null): PredictedFundingTick[] {
  const out: PredictedFundingTick[] = []
  for (const p of data) {
    const asset = wanted(p.coin, coins)
    const hl = p.venues.find((v) => v.venue === 'HlPerp')
    if (!asset || !hl) continue
    out.push({
      v: TICK_SCHEMA_VERSION,
      kind: 'predicted_funding',
      asset,
      instrument: p.coin,
      provenance: provenance(ctx.receivedAt, ctx),
      rate: hl.fundingRate,
      interval_hours: hl.fundingIntervalHours ?? 1,
      next_funding_at: isoMs(hl.nextFundingTime),
    })
  }
  return out
}

/** Trades: side is the aggressor ('B' → buy, 'A' → sell); trade_id is the venue tid. */
export function tradesToTicks(trades: readonly HlTrade[], ctx: HlTickContext): TradeTick[] {
  const out: TradeTick[] = []
  for (const t of trades) {
    const asset = hlAsset(t.coin)
    if (!asset) continue
    out.push({
      v: TICK_SCHEMA_VERSION,
      kind: 'trade',
      asset,
      instrument: t.coin,
      provenance: provenance(t.time, ctx),
      side: t.side === 'B' ? 'buy' : 'sell',
      price: t.px,
      size: t.sz,
      trade_id: t.tid,
    })
  }
  return out
}
