/**
 * Strict field parsers shared by the importers. Each names file, line and column on failure, so a malformed
 * row stops the import where it is instead of being skipped or turned into NaN/0.
 */
import { ImportError } from './ImportError.ts'
import type { SourceFile } from './Importer.ts'

export interface CsvRow {
  /** 1-based line number in the file (the header is line 1). */
  line: number
  fields: string[]
}

/**
 * Splits a simple CSV (no quoting: every source here is plain numbers and symbols) after checking its header.
 * A blank line anywhere but the very end is a malformed row.
 */
export function csvRows(file: SourceFile, header: string): CsvRow[] {
  const lines = file.text.split('\n')
  if (lines.at(-1) === '') lines.pop()
  const headerLine = stripCr(lines[0] ?? '')
  if (headerLine !== header) {
    throw new ImportError('IMPORT_FORMAT', file.path, 1, `expected header '${header}', found '${headerLine}'`)
  }
  const width = header.split(',').length
  const rows: CsvRow[] = []
  for (let i = 1; i < lines.length; i++) {
    const text = stripCr(lines[i]!)
    const fields = text.split(',')
    if (fields.length !== width) {
      throw new ImportError('IMPORT_ROW', file.path, i + 1, `expected ${width} columns, found ${text === '' ? 'an empty line' : fields.length}`)
    }
    rows.push({ line: i + 1, fields })
  }
  if (rows.length === 0) throw new ImportError('IMPORT_FORMAT', file.path, 1, 'no data rows after the header')
  return rows
}

function stripCr(s: string): string {
  return s.endsWith('\r') ? s.slice(0, -1) : s
}

const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/

/** A decimal number as the venues print them ('63460.0', '1.25e-05'); rejects '', 'NaN', 'Infinity', hex. */
export function decimal(file: string, line: number, column: string, text: string): number {
  const value = DECIMAL.test(text) ? Number(text) : NaN
  if (!Number.isFinite(value)) throw new ImportError('IMPORT_ROW', file, line, `${column}: not a decimal number: '${text}'`)
  return value
}

/** Epoch milliseconds as an integer string or number. */
export function epochMs(file: string, line: number, column: string, value: string | number): number {
  const ms = typeof value === 'number' ? value : /^\d{1,15}$/.test(value) ? Number(value) : NaN
  if (!Number.isSafeInteger(ms) || ms < 0) throw new ImportError('IMPORT_ROW', file, line, `${column}: not epoch milliseconds: '${String(value)}'`)
  return ms
}

const INSTANT = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})?$/

/**
 * An ISO-like instant. `zone` says what the source promises: 'naive-utc' (no zone; the source documents UTC)
 * or 'offset' (an explicit 'Z' or ±HH:MM is required). Sub-millisecond digits are truncated, since tapes carry
 * ms precision. Calendar-invalid dates (Feb 30) are rejected rather than rolled over.
 */
export function instant(file: string, line: number, column: string, text: string, zone: 'naive-utc' | 'offset'): number {
  const m = INSTANT.exec(text)
  const bad = (why: string) => new ImportError('IMPORT_ROW', file, line, `${column}: ${why}: '${text}'`)
  if (!m) throw bad('not a timestamp')
  const [, y, mo, d, h, mi, s, frac, tz] = m
  if (zone === 'naive-utc' && tz !== undefined) throw bad('expected a naive UTC timestamp without offset')
  if (zone === 'offset' && tz === undefined) throw bad('expected a timestamp with a UTC offset')
  const ms = Number((frac ?? '').padEnd(3, '0').slice(0, 3))
  const local = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s), ms)
  if (new Date(local).toISOString().slice(0, 19) !== `${y}-${mo}-${d}T${h}:${mi}:${s}`) throw bad('not a calendar date/time')
  if (tz === undefined || tz === 'Z') return local
  const sign = tz.startsWith('-') ? -1 : 1
  const offsetMin = Number(tz.slice(1, 3)) * 60 + Number(tz.slice(4, 6))
  return local - sign * offsetMin * 60_000
}

export interface BarInterval {
  /** Canonical label: minutes below an hour ('1m', '5m'), hours below a day ('1h', '4h'), else days ('1d'). */
  label: string
  ms: number
}

/** Reads the bar interval from a file name such as 'BTCUSDT_5m.csv', 'BTCUSDT_60m.csv' or 'BTC-USDT-SWAP_1H.csv'. */
export function intervalFromName(file: SourceFile): BarInterval {
  const m = /_(\d+)([mhd])\.[a-z]+$/i.exec(file.name)
  if (!m) throw new ImportError('IMPORT_FORMAT', file.path, 1, `cannot read the bar interval from the file name '${file.name}' (expected e.g. _1m, _5m, _1H)`)
  const unitMin = { m: 1, h: 60, d: 1440 }[m[2]!.toLowerCase() as 'm' | 'h' | 'd']
  const minutes = Number(m[1]) * unitMin
  if (minutes <= 0) throw new ImportError('IMPORT_FORMAT', file.path, 1, `bar interval must be positive in '${file.name}'`)
  const label = minutes % 1440 === 0 ? `${minutes / 1440}d` : minutes % 60 === 0 ? `${minutes / 60}h` : `${minutes}m`
  return { label, ms: minutes * 60_000 }
}

const ASSET = /^[A-Z0-9]{1,20}$/

/** The base asset of a venue pair symbol: 'BTCUSDT' → 'BTC', 'BTC-USDT-SWAP' → 'BTC'. */
export function baseAsset(file: SourceFile, line: number, symbol: string): string {
  return assetSymbol(file, line, symbol.includes('-') ? symbol.split('-')[0]! : symbol.replace(/(USDT|USDC|FDUSD|BUSD|USD)$/, ''))
}

/** A coin name that already is the asset (Hyperliquid 'BTC', 'kPEPE'), upper-cased for the tick's `asset`. */
export function assetSymbol(file: SourceFile, line: number, coin: string): string {
  const asset = coin.toUpperCase()
  if (!ASSET.test(asset)) throw new ImportError('IMPORT_ROW', file.path, line, `cannot derive an asset symbol from '${coin}'`)
  return asset
}

/** The symbol part of a file name before the first '_': 'BTCUSDT_1m.csv' → 'BTCUSDT'. */
export function symbolFromName(file: SourceFile, pattern: RegExp): string {
  const m = pattern.exec(file.name)
  if (!m?.[1]) throw new ImportError('IMPORT_FORMAT', file.path, 1, `cannot read the instrument from the file name '${file.name}'`)
  return m[1]
}

export interface Ohlcv {
  open: number
  high: number
  low: number
  close: number
  volume: number
}

/** Parses the five OHLCV columns and checks they describe a possible bar (low ≤ open, close ≤ high; volume ≥ 0). */
export function ohlcv(file: string, line: number, fields: string[], names: readonly string[]): Ohlcv {
  const [open, high, low, close, volume] = names.map((name, i) => decimal(file, line, name, fields[i] ?? '')) as [number, number, number, number, number]
  if (!(low <= Math.min(open, close) && high >= Math.max(open, close))) {
    throw new ImportError('IMPORT_ROW', file, line, `impossible bar: low ${low} / high ${high} do not bracket open ${open} and close ${close}`)
  }
  if (volume < 0) throw new ImportError('IMPORT_ROW', file, line, `volume: negative (${volume})`)
  return { open, high, low, close, volume }
}
