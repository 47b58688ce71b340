/**
 * Recent bars and funding settlements per asset, enough to build the ResolutionWindow of any decision whose window
 * [t, t + h] has not yet been resolved. Memory is bounded: the owner prunes what no pending window can need.
 * dump()/prepareLoad() carry it through the engine's state snapshot (engine/EngineTickState.ts).
 *
 * Spec, What the service does 3: "When the horizon ends, a resolution engine re-derives the event from the same input
 * grammar and writes an outcome: obtains, not, or unresolvable."
 */
import type { ResolutionWindow } from './ResolutionWindow.ts'
import { tickTime, type Tick } from '../../ingest/Tick.ts'
import { fundingPerHour } from './funding.ts'
import { intervalMs } from './FeatureState.ts'
import { HOUR_MS } from '../../common/time.ts'
import { TimeSeries, type SeriesDump } from './TimeSeries.ts'

/** A funding gap up to this multiple of the settlement interval still counts as covered (venue timing jitter). */
export const FUNDING_GAP_TOLERANCE = 1.5

type BarCols = 'open' | 'high' | 'low' | 'close'
type FundCols = 'ratePerHour' | 'intervalHours'

interface AssetHistory {
  barKey: string | null
  barIntervalMs: number
  bars: TimeSeries<BarCols>
  fundingSource: string | null
  funding: TimeSeries<FundCols>
}

const BAR_COLUMNS = ['open', 'high', 'low', 'close'] as const
const FUND_COLUMNS = ['ratePerHour', 'intervalHours'] as const

/** One asset's history as plain values (a state snapshot row). */
export interface HistoryAssetDump {
  asset: string
  barKey: string | null
  barIntervalMs: number
  fundingSource: string | null
  bars: SeriesDump<string>
  funding: SeriesDump<string>
}

export class TickHistory {
  private readonly assets = new Map<string, AssetHistory>()

  /** Folds a bar or funding tick in; other kinds are not needed to resolve the catalog's market questions. */
  ingest(tick: Tick): void {
    if (tick.kind !== 'bar' && tick.kind !== 'funding') return
    let h = this.assets.get(tick.asset)
    if (!h) {
      h = {
        barKey: null,
        barIntervalMs: 0,
        bars: new TimeSeries<BarCols>(BAR_COLUMNS),
        fundingSource: null,
        funding: new TimeSeries<FundCols>(FUND_COLUMNS),
      }
      this.assets.set(tick.asset, h)
    }
    const time = tickTime(tick)
    if (tick.kind === 'bar') {
      // Same series rule as FeatureState: the asset's first bar series (venue + interval) is its only one.
      const key = `${tick.provenance.source}|${tick.interval}`
      if (h.barKey === null) {
        h.barKey = key
        h.barIntervalMs = intervalMs(tick.interval)
      } else if (h.barKey !== key) return
      h.bars.push(time, { open: tick.open, high: tick.high, low: tick.low, close: tick.close })
    } else {
      if (h.fundingSource === null) h.fundingSource = tick.provenance.source
      else if (h.fundingSource !== tick.provenance.source) return
      h.funding.push(time, { ratePerHour: fundingPerHour(tick.rate, tick.interval_hours), intervalHours: tick.interval_hours })
    }
  }

  /** Drops rows older than `before` (keep one bar and one settlement before any window start still pending). */
  prune(before: number): void {
    for (const h of this.assets.values()) {
      h.bars.prune(before)
      h.funding.prune(before)
    }
  }

  /** Every asset's history, sorted by asset. */
  dump(): HistoryAssetDump[] {
    return [...this.assets.keys()].sort().map((asset) => {
      const h = this.assets.get(asset)!
      return { asset, barKey: h.barKey, barIntervalMs: h.barIntervalMs, fundingSource: h.fundingSource, bars: h.bars.dump(), funding: h.funding.dump() }
    })
  }

  /** Validates dumped assets and returns the step that replaces this history with them; throws, having changed nothing. */
  prepareLoad(dumps: readonly unknown[]): () => void {
    const next = new Map<string, AssetHistory>()
    for (const raw of dumps) {
      const d = raw as Partial<HistoryAssetDump> | null
      if (typeof d !== 'object' || d === null || typeof d.asset !== 'string' || next.has(d.asset)) throw new Error('history asset: no asset name, or a second row for one')
      if (!(d.barKey === null || typeof d.barKey === 'string') || !(d.fundingSource === null || typeof d.fundingSource === 'string') || typeof d.barIntervalMs !== 'number') throw new Error(`history asset ${d.asset}: fields`)
      next.set(d.asset, { barKey: d.barKey, barIntervalMs: d.barIntervalMs, fundingSource: d.fundingSource, bars: TimeSeries.fromDump(BAR_COLUMNS, d.bars), funding: TimeSeries.fromDump(FUND_COLUMNS, d.funding) })
    }
    return () => {
      this.assets.clear()
      for (const [k, v] of next) this.assets.set(k, v)
    }
  }

  /** Rows held, for tests of bounded memory. */
  size(): number {
    let n = 0
    for (const h of this.assets.values()) n += h.bars.length + h.funding.length
    return n
  }

  /** The ticks of (start, end] for `asset`; call once every record up to `end` (plus the grace) has been ingested. */
  window(asset: string, start: number, end: number): ResolutionWindow {
    const h = this.assets.get(asset)
    if (!h) return { asset, start, end, bars: [], funding: [], startPrice: null, complete: false, fundingComplete: false }
    const b = h.bars
    const bFirst = b.upperBound(start)
    const bEnd = b.upperBound(end)
    const iv = h.barIntervalMs
    const bars = []
    for (let i = bFirst; i < bEnd; i++) {
      bars.push({ close_time: b.time(i), open: b.get('open', i), high: b.get('high', i), low: b.get('low', i), close: b.get('close', i), interval_ms: iv })
    }
    const startPrice = bFirst > 0 ? b.get('close', bFirst - 1) : null
    let complete = startPrice !== null && bars.length > 0 && iv > 0
    if (complete) {
      let prev = start
      for (const bar of bars) {
        if (bar.close_time - prev > iv) complete = false
        prev = bar.close_time
      }
      if (end - prev >= iv) complete = false
    }

    const f = h.funding
    const fFirst = f.upperBound(start)
    const fEnd = f.upperBound(end)
    const funding = []
    for (let i = fFirst; i < fEnd; i++) {
      funding.push({ time: f.time(i), rate_per_hour: f.get('ratePerHour', i), interval_hours: f.get('intervalHours', i) })
    }
    // Covered when a settlement precedes the window, the series is known past the window end, and no gap inside
    // exceeds the settlement cadence (with tolerance for timing jitter).
    let fundingComplete = fFirst > 0 && f.length > 0 && (f.lastTime() ?? -Infinity) >= end - FUNDING_GAP_TOLERANCE * f.get('intervalHours', fFirst - 1) * HOUR_MS
    if (fundingComplete) {
      let prev = f.time(fFirst - 1)
      let cadence = f.get('intervalHours', fFirst - 1) * HOUR_MS
      for (const s of funding) {
        if (s.time - prev > FUNDING_GAP_TOLERANCE * cadence) fundingComplete = false
        prev = s.time
        cadence = s.interval_hours * HOUR_MS
      }
      if (end - prev > FUNDING_GAP_TOLERANCE * cadence) fundingComplete = false
    }
    return { asset, start, end, bars, funding, startPrice, complete, fundingComplete }
  }
}
