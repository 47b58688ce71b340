/**
 * OKX swap candles (`/api/v5/market/history-candles`, confirmed bars): `ts,open,high,low,close,volume`, ts = bar
 * open in epoch ms, volume = OKX `vol` in contracts, kept raw (volume_unit 'contracts'; contract size is not in
 * the file). File name `<instId>_<bar>.csv`, e.g. BTC-USDT-SWAP_1H.csv.
 */
import type { Importer } from './Importer.ts'
import { barCsvTicks } from './bars.ts'
import { epochMs, symbolFromName } from './parse.ts'

const HEADER = 'ts,open,high,low,close,volume'
const NAME = /^([A-Z0-9]+-[A-Z0-9]+-SWAP)_\d+[mhd]\.csv$/i

export const okxCandlesCsv: Importer = {
  id: 'okx-candles-csv',
  source: 'okx:swap',
  summary: 'OKX swap candles CSV (<instId>_<bar>.csv, epoch-ms open time, volume in contracts)',
  detect: (file) => NAME.test(file.name) && file.firstLine === HEADER,
  parse: (file) =>
    barCsvTicks(file, {
      provider: 'okx-candles-csv',
      source: 'okx:swap',
      header: HEADER,
      volumeUnit: 'contracts',
      instrument: (f) => symbolFromName(f, NAME),
      openTime: (path, line, text) => epochMs(path, line, 'ts', text),
      lastBarMayBeOpen: false,
    }),
}
