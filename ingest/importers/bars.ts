/**
 * The shared half of every OHLCV importer: one CSV row per bar, keyed by its open time, emitted as a `bar` tick
 * whose event time is the bar close (open + interval), the instant the bar became knowable.
 */
import { TICK_SCHEMA_VERSION, isoMs, type BarTick, type VolumeUnit } from '../Tick.ts'
import type { SourceFile, SourceTick } from './Importer.ts'
import { baseAsset, csvRows, intervalFromName, ohlcv } from './parse.ts'

export interface BarCsvLayout {
  provider: string
  source: string
  header: string
  volumeUnit: VolumeUnit
  /** The venue's instrument name, read from the file name. */
  instrument(file: SourceFile): string
  /** Parses the open-time column (epoch ms). */
  openTime(file: string, line: number, text: string): number
  /** Whether the latest bar in the file may still have been open when the file was written. */
  lastBarMayBeOpen: boolean
}

export function barCsvTicks(file: SourceFile, layout: BarCsvLayout): SourceTick[] {
  const rows = csvRows(file, layout.header)
  const instrument = layout.instrument(file)
  const asset = baseAsset(file, 1, instrument)
  const interval = intervalFromName(file)
  const names = layout.header.split(',').slice(1)
  const parsed = rows.map((row) => ({
    line: row.line,
    openMs: layout.openTime(file.path, row.line, row.fields[0]!),
    bar: ohlcv(file.path, row.line, row.fields.slice(1), names),
  }))
  const latestOpen = parsed.reduce((max, p) => Math.max(max, p.openMs), -Infinity)
  return parsed.map(({ line, openMs, bar }) => {
    const close = isoMs(openMs + interval.ms)
    const tick: BarTick = {
      v: TICK_SCHEMA_VERSION,
      kind: 'bar',
      asset,
      instrument,
      provenance: {
        source: layout.source,
        provider: layout.provider,
        timestamp: close,
        received_at: close,
        quality: layout.lastBarMayBeOpen && openMs === latestOpen ? 'degraded' : 'real',
      },
      interval: interval.label,
      open_time: isoMs(openMs),
      open: bar.open,
      high: bar.high,
      low: bar.low,
      close: bar.close,
      volume: bar.volume,
      volume_unit: layout.volumeUnit,
    }
    return { tick, line }
  })
}
