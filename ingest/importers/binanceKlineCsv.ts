/**
 * Binance spot klines as written by ccxt `fetch_ohlcv` dumps: `timestamp,open,high,low,close,volume`, naive UTC
 * open time, volume in the base coin. Spot stays spot: source 'binance:spot', never a perp.
 * File name `<SYMBOL>_<interval>.csv` (e.g. BTCUSDT_1m.csv) inside a path that names Binance.
 */
import type { Importer } from './Importer.ts'
import { barCsvTicks } from './bars.ts'
import { instant, symbolFromName } from './parse.ts'

const HEADER = 'timestamp,open,high,low,close,volume'
const NAME = /^([A-Z0-9]+)_\d+[mhd]\.csv$/i

export const binanceKlineCsv: Importer = {
  id: 'binance-kline-csv',
  source: 'binance:spot',
  summary: 'Binance spot OHLCV CSV (<SYMBOL>_<interval>.csv, naive UTC open time, base volume)',
  detect: (file) => /binance/i.test(file.path) && NAME.test(file.name) && file.firstLine === HEADER,
  parse: (file) =>
    barCsvTicks(file, {
      provider: 'binance-kline-csv',
      source: 'binance:spot',
      header: HEADER,
      volumeUnit: 'base',
      instrument: (f) => symbolFromName(f, NAME),
      openTime: (path, line, text) => instant(path, line, 'timestamp', text, 'naive-utc'),
      lastBarMayBeOpen: false,
    }),
}
