/**
 * Hyperliquid `POST /info {"type":"fundingHistory"}` responses saved as a JSON array of
 * `{"coin","fundingRate","premium","time"}` (decimal strings, epoch-ms time with sub-second jitter, kept exact).
 *
 * Hyperliquid settled funding every 8 hours until 2023-06-08 00:00 UTC and hourly from 01:00 that day (shared
 * tapes README: the BTC SDK cassette is "8-hourly until 2023-06-08 00:00, hourly after"), so interval_hours is 8
 * for records in an hour before HOURLY_FROM and 1 from then on.
 */
import { TICK_SCHEMA_VERSION, isoMs, type FundingTick } from '../Tick.ts'
import { ImportError } from './ImportError.ts'
import type { Importer, SourceFile, SourceTick } from './Importer.ts'
import { assetSymbol, decimal, epochMs } from './parse.ts'
import { HOUR_MS } from '../../common/time.ts'

/** First hour of hourly funding on Hyperliquid. */
export const HYPERLIQUID_HOURLY_FROM = Date.UTC(2023, 5, 8, 1)

/** 1-based line on which each top-level array element starts (JSON.parse gives no positions). */
function elementLines(text: string): number[] {
  const starts: number[] = []
  let depth = 0
  let line = 1
  let inString = false
  let escaped = false
  let expectValue = false
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!
    if (ch === '\n') line++
    if (inString) {
      if (escaped) escaped = false
      else if (ch === '\\') escaped = true
      else if (ch === '"') inString = false
      continue
    }
    if (depth === 1 && expectValue && ch !== ']' && !/\s/.test(ch)) {
      starts.push(line)
      expectValue = false
    }
    if (ch === '"') inString = true
    else if (ch === '[' || ch === '{') {
      depth++
      if (depth === 1) expectValue = true
    } else if (ch === ']' || ch === '}') depth--
    else if (ch === ',' && depth === 1) expectValue = true
  }
  return starts
}

function lineAt(text: string, position: number): number {
  let line = 1
  for (let i = 0; i < position && i < text.length; i++) if (text[i] === '\n') line++
  return line
}

function parseArray(file: SourceFile): unknown[] {
  let doc: unknown
  try {
    doc = JSON.parse(file.text)
  } catch (err) {
    const message = (err as Error).message
    const position = /position (\d+)/.exec(message)
    throw new ImportError('IMPORT_FORMAT', file.path, position ? lineAt(file.text, Number(position[1])) : 1, `not valid JSON (${message})`)
  }
  if (!Array.isArray(doc)) throw new ImportError('IMPORT_FORMAT', file.path, 1, 'expected a JSON array of fundingHistory records')
  if (doc.length === 0) throw new ImportError('IMPORT_FORMAT', file.path, 1, 'no records in the array')
  return doc
}

export const hyperliquidFundingJson: Importer = {
  id: 'hyperliquid-funding-json',
  source: 'hyperliquid:perp',
  summary: 'Hyperliquid fundingHistory JSON array ({coin, fundingRate, premium, time}; hourly rate, 8-hourly before 2023-06-08)',
  detect: (file) =>
    /\.json$/i.test(file.name) && file.text.trimStart().startsWith('[') && /"fundingRate"\s*:/.test(file.text.slice(0, 4096)),
  parse(file) {
    const records = parseArray(file)
    const lines = elementLines(file.text)
    return records.map((record, index): SourceTick => {
      const line = lines[index] ?? 1
      const where = `record ${index + 1}`
      if (typeof record !== 'object' || record === null || Array.isArray(record)) {
        throw new ImportError('IMPORT_ROW', file.path, line, `${where}: not an object`)
      }
      const r = record as Record<string, unknown>
      if (typeof r.coin !== 'string' || r.coin === '') throw new ImportError('IMPORT_ROW', file.path, line, `${where}: coin: missing or not a string`)
      if (typeof r.fundingRate !== 'string' && typeof r.fundingRate !== 'number') {
        throw new ImportError('IMPORT_ROW', file.path, line, `${where}: fundingRate: missing or not a decimal string`)
      }
      if (r.premium !== undefined && r.premium !== null && typeof r.premium !== 'string' && typeof r.premium !== 'number') {
        throw new ImportError('IMPORT_ROW', file.path, line, `${where}: premium: not a decimal string`)
      }
      if (typeof r.time !== 'number' && typeof r.time !== 'string') throw new ImportError('IMPORT_ROW', file.path, line, `${where}: time: missing`)
      const timeMs = epochMs(file.path, line, `${where}: time`, r.time)
      const at = isoMs(timeMs)
      const tick: FundingTick = {
        v: TICK_SCHEMA_VERSION,
        kind: 'funding',
        asset: assetSymbol(file, line, r.coin),
        instrument: r.coin,
        provenance: { source: 'hyperliquid:perp', provider: 'hyperliquid-funding-json', timestamp: at, received_at: at, quality: 'real' },
        rate: decimal(file.path, line, `${where}: fundingRate`, String(r.fundingRate)),
        interval_hours: Math.floor(timeMs / HOUR_MS) * HOUR_MS >= HYPERLIQUID_HOURLY_FROM ? 1 : 8,
        premium: r.premium === undefined || r.premium === null ? null : decimal(file.path, line, `${where}: premium`, String(r.premium)),
      }
      return { tick, line }
    })
  },
}
