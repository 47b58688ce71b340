/**
 * Hyperliquid universe snapshots (`metaAndAssetCtxs` captures saved as `timestamp,symbol,funding_rate,mark_price`,
 * one row per listed perp per capture). Each capture time becomes one `universe` tick (asset and instrument '*')
 * listing every symbol of that capture in file order, with `funding` (current hourly rate) and `mark`; the
 * columns the file lacks (mid, oracle, open interest, volume, previous-day price, max leverage) are null.
 *
 * Delisted rule (docs/decisions.md): the file has no listing flag, so a symbol is `delisted` when its funding
 * is exactly 0 in every capture it appears in and its mark is identical in all of them. Live perps carry the
 * 0.00125 %/h interest component, so an exact 0 together with a frozen mark marks an idle market.
 */
import { TICK_SCHEMA_VERSION, isoMs, type UniverseAsset, type UniverseTick } from '../Tick.ts'
import { ImportError } from './ImportError.ts'
import type { Importer, SourceTick } from './Importer.ts'
import { csvRows, decimal, instant } from './parse.ts'

const HEADER = 'timestamp,symbol,funding_rate,mark_price'

interface Capture {
  line: number
  timeMs: number
  rows: { line: number; symbol: string; funding: number; mark: number }[]
}

export const hyperliquidUniverseCsv: Importer = {
  id: 'hyperliquid-universe-csv',
  source: 'hyperliquid:perp',
  summary: 'Hyperliquid universe snapshots CSV (timestamp,symbol,funding_rate,mark_price; one universe tick per capture)',
  detect: (file) => /\.csv$/i.test(file.name) && file.firstLine === HEADER,
  parse(file) {
    const captures = new Map<string, Capture>()
    for (const { line, fields } of csvRows(file, HEADER)) {
      const [stamp, symbol, funding, mark] = fields as [string, string, string, string]
      if (!/^[A-Za-z0-9]+$/.test(symbol)) throw new ImportError('IMPORT_ROW', file.path, line, `symbol: not a coin name: '${symbol}'`)
      let capture = captures.get(stamp)
      if (!capture) {
        capture = { line, timeMs: instant(file.path, line, 'timestamp', stamp, 'offset'), rows: [] }
        captures.set(stamp, capture)
      }
      const seen = capture.rows.find((r) => r.symbol === symbol)
      if (seen) throw new ImportError('IMPORT_DUPLICATE', file.path, line, `symbol ${symbol} appears twice in capture ${stamp} (first on line ${seen.line})`)
      capture.rows.push({
        line,
        symbol,
        funding: decimal(file.path, line, 'funding_rate', funding),
        mark: decimal(file.path, line, 'mark_price', mark),
      })
    }

    const idle = new Map<string, { mark: number; idle: boolean }>()
    for (const capture of captures.values()) {
      for (const row of capture.rows) {
        const seen = idle.get(row.symbol)
        const frozen = row.funding === 0 && (seen === undefined || (seen.idle && seen.mark === row.mark))
        idle.set(row.symbol, { mark: row.mark, idle: frozen })
      }
    }

    return [...captures.values()].map((capture): SourceTick => {
      const at = isoMs(capture.timeMs)
      const assets: UniverseAsset[] = capture.rows.map((row) => ({
        symbol: row.symbol,
        mark: row.mark,
        mid: null,
        oracle: null,
        funding: row.funding,
        open_interest: null,
        day_volume_usd: null,
        prev_day_price: null,
        max_leverage: null,
        delisted: idle.get(row.symbol)!.idle,
      }))
      const tick: UniverseTick = {
        v: TICK_SCHEMA_VERSION,
        kind: 'universe',
        asset: '*',
        instrument: '*',
        provenance: {
          source: 'hyperliquid:perp',
          provider: 'hyperliquid-universe-csv',
          timestamp: at,
          received_at: at,
          quality: 'real',
        },
        assets,
      }
      return { tick, line: capture.line }
    })
  },
}
