/**
 * Per-asset rolling feature state, computed from ticks in EVENT time (never the wall clock).
 *
 * QuestionModel contract: "Models never read the wall clock or the network: everything they use is in the snapshot,
 * so a journaled snapshot replays to the same answer." snapshot(asset, at) uses only records whose event time is at or
 * before `at` (every lookup is a binary search bounded by `at`), so it is a pure function of the ticks up to `at`
 * whatever was ingested after.
 *
 * Memory is bounded: each series keeps `retentionMs` (default 31 days: the 30-day baselines plus a day) of rows.
 * Bars: the first bar series seen for an asset (source + interval) is the asset's bar series; bars of other series
 * are counted and ignored, because mixing intervals or venues would corrupt returns and range estimates.
 * Funding likewise keeps the first funding source seen per asset.
 *
 * dump()/prepareLoad(): the state as one plain row per asset (sorted) for the engine's state snapshot
 * (engine/EngineTickState.ts); a load is validated whole before it replaces anything.
 */
import type { FeatureSnapshot, InputFreshness } from './FeatureSnapshot.ts'
import { isoMs, tickTime, type Tick } from '../../ingest/Tick.ts'
import { stalenessBudgetMs, type FeatureInput } from './stalenessBudgets.ts'
import { NEUTRAL_FUNDING_PER_HOUR, fundingPerHour, fundingSide } from './funding.ts'
import { parkinsonVariance, perHourVol } from './volatility.ts'
import { TimeSeries, type SeriesDump } from './TimeSeries.ts'
import { HOUR_MS, DAY_MS } from '../../common/time.ts'

const QUALITY_CODE = { real: 0, degraded: 1, simulated: 2 } as const
const QUALITY_NAME = ['real', 'degraded', 'simulated'] as const

/** Windows of the return and volatility features (name suffix → length). */
export const VOL_WINDOWS = { '1h': HOUR_MS, '4h': 4 * HOUR_MS, '24h': DAY_MS, '7d': 7 * DAY_MS, '30d': 30 * DAY_MS } as const
export const RETURN_WINDOWS = { '1h': HOUR_MS, '4h': 4 * HOUR_MS, '24h': DAY_MS } as const
/** Trailing window of the funding distribution (mean, sd, z-score). */
export const FUNDING_BASELINE_MS = 30 * DAY_MS
/**
 * The longest trailing window any feature reads (the 30-day volatility and funding baselines): ticks older than this
 * behind the newest one no longer change a feature, which is what lets retention delete them from the log.
 */
export const LONGEST_FEATURE_WINDOW_MS = Math.max(...Object.values(VOL_WINDOWS), ...Object.values(RETURN_WINDOWS), FUNDING_BASELINE_MS)
/** A volatility window needs bars covering at least this share of it, else the feature is null. */
export const MIN_WINDOW_COVERAGE = 0.5

/** Every feature name, in a fixed order; a snapshot always carries all of them (null when not computable). */
export const FEATURE_NAMES = [
  'price_last',
  'bar_interval_ms',
  'history_hours',
  ...Object.keys(RETURN_WINDOWS).map((w) => `ret_${w}`),
  ...Object.keys(VOL_WINDOWS).map((w) => `rv_${w}`),
  ...Object.keys(VOL_WINDOWS).map((w) => `pk_${w}`),
  'funding_rate_per_hour',
  'funding_interval_hours',
  'funding_dev_per_hour',
  'funding_mean_30d',
  'funding_sd_30d',
  'funding_n_30d',
  'funding_z',
  'funding_absz_mean_24h',
  'funding_same_side_streak',
  'funding_same_side_share_24h',
  'funding_history_hours',
  'mark',
  'index',
  'mid',
  'basis_bps',
  'spread_bps',
  'depth_usd_top',
  'open_interest',
  'liq_hours_24h',
  'liq_count_24h',
  'liq_notional_24h_usd',
] as const
export type FeatureName = (typeof FEATURE_NAMES)[number]

export interface FeatureStateOptions {
  /** How much history each series keeps (default 31 days). */
  retentionMs?: number
}

type BarCols = 'close' | 'r2' | 'pk' | 'cumR2' | 'cumPk' | 'quality'
type FundCols = 'ratePerHour' | 'intervalHours' | 'quality'
type PriceCols = 'price' | 'quality'
type BookCols = 'bid' | 'ask' | 'depth' | 'quality'
type LiqCols = 'notional'

interface AssetState {
  sources: Set<string>
  barKey: string | null
  barIntervalMs: number
  firstBarTime: number | null
  bars: TimeSeries<BarCols>
  fundingSource: string | null
  firstFundingTime: number | null
  funding: TimeSeries<FundCols>
  mark: TimeSeries<PriceCols>
  index: TimeSeries<PriceCols>
  mid: TimeSeries<PriceCols>
  book: TimeSeries<BookCols>
  oi: TimeSeries<PriceCols>
  liq: TimeSeries<LiqCols>
  ignoredBars: number
}

const SERIES_COLUMNS = {
  bars: ['close', 'r2', 'pk', 'cumR2', 'cumPk', 'quality'],
  funding: ['ratePerHour', 'intervalHours', 'quality'],
  mark: ['price', 'quality'],
  index: ['price', 'quality'],
  mid: ['price', 'quality'],
  book: ['bid', 'ask', 'depth', 'quality'],
  oi: ['price', 'quality'],
  liq: ['notional'],
} as const
type SeriesName = keyof typeof SERIES_COLUMNS

/** One asset's feature state as plain values (a state snapshot row; numbers may be non-finite). */
export interface FeatureAssetDump {
  asset: string
  sources: string[]
  barKey: string | null
  barIntervalMs: number
  firstBarTime: number | null
  fundingSource: string | null
  firstFundingTime: number | null
  ignoredBars: number
  series: Record<SeriesName, SeriesDump<string>>
}

function newAsset(): AssetState {
  return {
    sources: new Set(),
    barKey: null,
    barIntervalMs: 0,
    firstBarTime: null,
    bars: new TimeSeries<BarCols>(['close', 'r2', 'pk', 'cumR2', 'cumPk', 'quality']),
    fundingSource: null,
    firstFundingTime: null,
    funding: new TimeSeries<FundCols>(['ratePerHour', 'intervalHours', 'quality']),
    mark: new TimeSeries<PriceCols>(['price', 'quality']),
    index: new TimeSeries<PriceCols>(['price', 'quality']),
    mid: new TimeSeries<PriceCols>(['price', 'quality']),
    book: new TimeSeries<BookCols>(['bid', 'ask', 'depth', 'quality']),
    oi: new TimeSeries<PriceCols>(['price', 'quality']),
    liq: new TimeSeries<LiqCols>(['notional']),
    ignoredBars: 0,
  }
}

/** Parses an interval label ('1m', '5m', '1h', '1d', '1w') to ms. */
export function intervalMs(label: string): number {
  const m = /^(\d+)([mhdw])$/.exec(label)
  if (!m) throw new RangeError(`bad bar interval '${label}'`)
  const unit = { m: 60_000, h: HOUR_MS, d: DAY_MS, w: 7 * DAY_MS }[m[2] as 'm' | 'h' | 'd' | 'w']
  return Number(m[1]) * unit
}

export class FeatureState {
  private readonly assets = new Map<string, AssetState>()
  private readonly retentionMs: number

  constructor(options: FeatureStateOptions = {}) {
    this.retentionMs = options.retentionMs ?? FUNDING_BASELINE_MS + DAY_MS
    if (!(this.retentionMs >= FUNDING_BASELINE_MS)) throw new RangeError('retentionMs must cover the 30-day baselines')
  }

  /** Assets seen so far, sorted. */
  assetList(): string[] {
    return [...this.assets.keys()].sort()
  }

  /** Bars ignored per asset because they belong to a second bar series (other venue or interval). */
  ignoredBars(asset: string): number {
    return this.assets.get(asset)?.ignoredBars ?? 0
  }

  private state(asset: string): AssetState {
    let s = this.assets.get(asset)
    if (!s) {
      s = newAsset()
      this.assets.set(asset, s)
    }
    return s
  }

  /** Every asset's state, sorted by asset. */
  dump(): FeatureAssetDump[] {
    return this.assetList().map((asset) => {
      const s = this.assets.get(asset)!
      const series = Object.fromEntries((Object.keys(SERIES_COLUMNS) as SeriesName[]).map((k) => [k, s[k].dump()])) as Record<SeriesName, SeriesDump<string>>
      return { asset, sources: [...s.sources].sort(), barKey: s.barKey, barIntervalMs: s.barIntervalMs, firstBarTime: s.firstBarTime, fundingSource: s.fundingSource, firstFundingTime: s.firstFundingTime, ignoredBars: s.ignoredBars, series }
    })
  }

  /**
   * Validates dumped assets and returns the step that replaces this state with them; throws, having changed nothing,
   * when a dump does not fit.
   */
  prepareLoad(dumps: readonly unknown[]): () => void {
    const next = new Map<string, AssetState>()
    for (const raw of dumps) {
      const d = raw as Partial<FeatureAssetDump> | null
      if (typeof d !== 'object' || d === null || typeof d.asset !== 'string' || next.has(d.asset)) throw new Error('feature asset: no asset name, or a second row for one')
      if (!Array.isArray(d.sources) || !d.sources.every((x) => typeof x === 'string')) throw new Error(`feature asset ${d.asset}: sources`)
      if (!nullableString(d.barKey) || !nullableString(d.fundingSource) || !nullableNumber(d.firstBarTime) || !nullableNumber(d.firstFundingTime)) throw new Error(`feature asset ${d.asset}: series keys`)
      if (typeof d.barIntervalMs !== 'number' || typeof d.ignoredBars !== 'number' || typeof d.series !== 'object' || d.series === null) throw new Error(`feature asset ${d.asset}: fields`)
      const series = d.series as Record<string, unknown>
      const s: AssetState = {
        ...newAsset(),
        sources: new Set(d.sources),
        barKey: d.barKey,
        barIntervalMs: d.barIntervalMs,
        firstBarTime: d.firstBarTime,
        fundingSource: d.fundingSource,
        firstFundingTime: d.firstFundingTime,
        ignoredBars: d.ignoredBars,
      }
      for (const k of Object.keys(SERIES_COLUMNS) as SeriesName[]) (s as unknown as Record<SeriesName, TimeSeries<string>>)[k] = TimeSeries.fromDump(SERIES_COLUMNS[k], series[k])
      next.set(d.asset, s)
    }
    return () => {
      this.assets.clear()
      for (const [k, v] of next) this.assets.set(k, v)
    }
  }

  /** Folds one tick into the state. Ticks must arrive in event-time order per series. */
  ingest(tick: Tick): void {
    if (tick.kind === 'universe' || tick.kind === 'trade' || tick.kind === 'predicted_funding') return
    const time = tickTime(tick)
    const s = this.state(tick.asset)
    // Quality code per row: 0 real, 1 degraded, 2 simulated.
    const quality = QUALITY_CODE[tick.provenance.quality]
    const horizon = time - this.retentionMs
    switch (tick.kind) {
      case 'bar': {
        const key = `${tick.provenance.source}|${tick.interval}`
        if (s.barKey === null) {
          s.barKey = key
          s.barIntervalMs = intervalMs(tick.interval)
        } else if (s.barKey !== key) {
          s.ignoredBars++
          return
        }
        s.sources.add(tick.provenance.source)
        const prevClose = s.bars.last('close')
        const r = prevClose !== null && prevClose > 0 && tick.close > 0 ? Math.log(tick.close / prevClose) : 0
        const r2 = r * r
        const pk = parkinsonVariance(tick.high, tick.low)
        const cumR2 = (s.bars.last('cumR2') ?? 0) + r2
        const cumPk = (s.bars.last('cumPk') ?? 0) + pk
        s.bars.push(time, { close: tick.close, r2, pk, cumR2, cumPk, quality })
        if (s.firstBarTime === null) s.firstBarTime = time
        s.bars.prune(horizon)
        return
      }
      case 'funding': {
        if (s.fundingSource === null) s.fundingSource = tick.provenance.source
        else if (s.fundingSource !== tick.provenance.source) return
        s.sources.add(tick.provenance.source)
        s.funding.push(time, { ratePerHour: fundingPerHour(tick.rate, tick.interval_hours), intervalHours: tick.interval_hours, quality })
        if (s.firstFundingTime === null) s.firstFundingTime = time
        s.funding.prune(horizon)
        return
      }
      case 'mark':
      case 'index':
      case 'mid': {
        s.sources.add(tick.provenance.source)
        const series = s[tick.kind]
        series.push(time, { price: tick.price, quality })
        series.prune(time - DAY_MS)
        return
      }
      case 'book_top': {
        s.sources.add(tick.provenance.source)
        const depth = tick.bid_depth_usd !== null && tick.ask_depth_usd !== null ? tick.bid_depth_usd + tick.ask_depth_usd : NaN
        s.book.push(time, { bid: tick.bid, ask: tick.ask, depth, quality })
        s.book.prune(time - DAY_MS)
        return
      }
      case 'open_interest': {
        s.sources.add(tick.provenance.source)
        s.oi.push(time, { price: tick.value, quality })
        s.oi.prune(time - DAY_MS)
        return
      }
      case 'liquidation': {
        s.sources.add(tick.provenance.source)
        s.liq.push(time, { notional: tick.notional_usd })
        s.liq.prune(time - 2 * DAY_MS)
        return
      }
    }
  }

  /** The feature snapshot of `asset` at event time `at` (epoch ms); only records at or before `at` are used. */
  snapshot(asset: string, at: number): FeatureSnapshot {
    const features: Record<string, number | null> = Object.fromEntries(FEATURE_NAMES.map((n) => [n, null]))
    const s = this.assets.get(asset)
    if (!s) return { asset, at, features, freshness: [], sources: [] }
    const freshness: InputFreshness[] = []
    this.barFeatures(s, at, features, freshness)
    this.fundingFeatures(s, at, features, freshness)
    this.marketFeatures(s, at, features, freshness)
    return { asset, at, features, freshness, sources: [...s.sources].sort() }
  }

  private barFeatures(s: AssetState, at: number, f: Record<string, number | null>, fresh: InputFreshness[]): void {
    const bars = s.bars
    const end = bars.upperBound(at) // rows [0, end) are at or before `at`
    if (end === 0 || s.firstBarTime === null) return
    const last = end - 1
    const iv = s.barIntervalMs
    fresh.push(freshnessEntry('bars', at, bars.time(last), stalenessBudgetMs('bars', iv), bars.get('quality', last)))
    const close = bars.get('close', last)
    f.price_last = close
    f.bar_interval_ms = iv
    f.history_hours = (at - s.firstBarTime) / HOUR_MS
    for (const [name, w] of Object.entries(RETURN_WINDOWS)) {
      const j = bars.upperBound(at - w) - 1
      f[`ret_${name}`] = j >= 0 && at - w - bars.time(j) <= iv ? Math.log(close / bars.get('close', j)) : null
    }
    for (const [name, w] of Object.entries(VOL_WINDOWS)) {
      const first = bars.upperBound(at - w) // first bar with close > at − w
      const n = end - first
      if (n <= 0 || n < Math.ceil((MIN_WINDOW_COVERAGE * w) / iv) || s.firstBarTime > at - w + iv) continue
      const before = first - 1
      // Σ pk over rows [first, last]. The running sums start at the first bar ever seen, and the rows before `first` may
      // be pruned (after a gap only post-gap bars are left in the window), so the sum below `first` is then
      // cumPk[first] − pk[first], never 0: subtracting 0 added back the variance of every pruned bar and inflated the
      // 7-day baseline. With the row before `first` retained, its running sum is used as it always was (same bits).
      const below = before >= 0 ? bars.get('cumPk', before) : bars.get('cumPk', first) - bars.get('pk', first)
      const pk = bars.get('cumPk', last) - below
      f[`pk_${name}`] = perHourVol(Math.max(pk, 0), n, iv)
      // The oldest retained bar's r² may use a pruned predecessor; close-to-close needs that predecessor in the window.
      if (before >= 0) {
        const r2 = bars.get('cumR2', last) - bars.get('cumR2', before)
        f[`rv_${name}`] = perHourVol(Math.max(r2, 0), n, iv)
      }
    }
  }

  private fundingFeatures(s: AssetState, at: number, f: Record<string, number | null>, fresh: InputFreshness[]): void {
    const fu = s.funding
    const end = fu.upperBound(at)
    if (end === 0 || s.firstFundingTime === null) return
    const last = end - 1
    const rate = fu.get('ratePerHour', last)
    const ih = fu.get('intervalHours', last)
    fresh.push(freshnessEntry('funding', at, fu.time(last), stalenessBudgetMs('funding', ih * HOUR_MS), fu.get('quality', last)))
    f.funding_rate_per_hour = rate
    f.funding_interval_hours = ih
    f.funding_dev_per_hour = rate - NEUTRAL_FUNDING_PER_HOUR
    f.funding_history_hours = (at - s.firstFundingTime) / HOUR_MS
    const first = fu.upperBound(at - FUNDING_BASELINE_MS)
    const n = end - first
    let sum = 0
    for (let i = first; i < end; i++) sum += fu.get('ratePerHour', i)
    const mean = sum / n
    let ss = 0
    for (let i = first; i < end; i++) ss += (fu.get('ratePerHour', i) - mean) ** 2
    f.funding_n_30d = n
    f.funding_mean_30d = mean
    const sd = n >= 2 ? Math.sqrt(ss / (n - 1)) : null
    f.funding_sd_30d = sd
    f.funding_z = sd !== null && sd > 0 ? (rate - NEUTRAL_FUNDING_PER_HOUR) / sd : null
    const dayFirst = fu.upperBound(at - DAY_MS)
    if (sd !== null && sd > 0) {
      let absz = 0
      for (let i = dayFirst; i < end; i++) absz += Math.abs(fu.get('ratePerHour', i) - NEUTRAL_FUNDING_PER_HOUR) / sd
      f.funding_absz_mean_24h = absz / (end - dayFirst)
    }
    const side = fundingSide(rate)
    let streak = 0
    for (let i = last; i >= 0 && side !== 0 && fundingSide(fu.get('ratePerHour', i)) === side; i--) streak++
    f.funding_same_side_streak = streak
    let same = 0
    for (let i = dayFirst; i < end; i++) if (side !== 0 && fundingSide(fu.get('ratePerHour', i)) === side) same++
    f.funding_same_side_share_24h = same / (end - dayFirst)
  }

  private marketFeatures(s: AssetState, at: number, f: Record<string, number | null>, fresh: InputFreshness[]): void {
    const price = (input: 'mark' | 'index' | 'mid' | 'open_interest', series: TimeSeries<PriceCols>): number | null => {
      const i = series.upperBound(at) - 1
      if (i < 0) return null
      fresh.push(freshnessEntry(input, at, series.time(i), stalenessBudgetMs(input), series.get('quality', i)))
      return series.get('price', i)
    }
    f.mark = price('mark', s.mark)
    f.index = price('index', s.index)
    f.mid = price('mid', s.mid)
    f.open_interest = price('open_interest', s.oi)
    if (f.mark !== null && f.index !== null && f.index > 0) f.basis_bps = (f.mark / f.index - 1) * 1e4
    const b = s.book.upperBound(at) - 1
    if (b >= 0) {
      fresh.push(freshnessEntry('book', at, s.book.time(b), stalenessBudgetMs('book'), s.book.get('quality', b)))
      const bid = s.book.get('bid', b)
      const ask = s.book.get('ask', b)
      if (bid > 0 && ask >= bid) f.spread_bps = ((ask - bid) / ((ask + bid) / 2)) * 1e4
      const depth = s.book.get('depth', b)
      f.depth_usd_top = Number.isFinite(depth) ? depth : null
    }
    // Liquidation readiness: distinct clock hours in (at − 24 h, at] with liquidation-tape records (S02 needs 24/24).
    const lEnd = s.liq.upperBound(at)
    const lFirst = s.liq.upperBound(at - DAY_MS)
    const hours = new Set<number>()
    let notional = 0
    for (let i = lFirst; i < lEnd; i++) {
      hours.add(Math.floor(s.liq.time(i) / HOUR_MS))
      notional += s.liq.get('notional', i)
    }
    f.liq_hours_24h = hours.size
    f.liq_count_24h = lEnd - lFirst
    f.liq_notional_24h_usd = notional
  }
}

function nullableString(v: unknown): v is string | null {
  return v === null || typeof v === 'string'
}

function nullableNumber(v: unknown): v is number | null {
  return v === null || typeof v === 'number'
}

/** One input's freshness at `at`: ok when its last record is within budget and not degraded. */
function freshnessEntry(input: FeatureInput, at: number, last: number, budget: number, qualityCode: number): InputFreshness {
  const age = at - last
  const quality = QUALITY_NAME[qualityCode] ?? 'degraded'
  return {
    input,
    ok: age <= budget && quality !== 'degraded',
    staleness_budget_ms: budget,
    age_ms: age,
    last_success_at: isoMs(last),
    quality,
  }
}
