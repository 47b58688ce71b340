/**
 * Bybit v5 linear (USDT perpetual) klines: `timestamp,open,high,low,close,volume`, open time with a UTC offset,
 * volume in the base coin. Bybit's kline endpoint returns the still-open current bar and these files carry no
 * download time, so the latest bar of every file is marked quality 'degraded' (docs/tape-format.md).
 * File name `<SYMBOL>_<interval>.csv` (e.g. BTCUSDT_5m.csv, BTCUSDT_60m.csv) inside a path that names Bybit.
 */
import type { Importer } from './Importer.ts'
import { barCsvTicks } from './bars.ts'
import { instant, symbolFromName } from './parse.ts'

const HEADER = 'timestamp,open,high,low,close,volume'
const NAME = /^([A-Z0-9]+)_\d+[mhd]\.csv$/i

export const bybitKlineCsv: Importer = {
  id: 'bybit-kline-csv',
  source: 'bybit:linear_perp',
  summary: 'Bybit linear-perp OHLCV CSV (<SYMBOL>_<interval>.csv, open time with offset, base volume)',
  detect: (file) => /bybit/i.test(file.path) && NAME.test(file.name) && file.firstLine === HEADER,
  parse: (file) =>
    barCsvTicks(file, {
      provider: 'bybit-kline-csv',
      source: 'bybit:linear_perp',
      header: HEADER,
      volumeUnit: 'base',
      instrument: (f) => symbolFromName(f, NAME),
      openTime: (path, line, text) => instant(path, line, 'timestamp', text, 'offset'),
      lastBarMayBeOpen: true,
    }),
}
