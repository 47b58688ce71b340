/**
 * OKX swap funding history (`/api/v5/public/funding-rate-history`): `ts,rate`, ts = fundingTime in epoch ms,
 * rate = settled fraction per 8 h. No premium in the file (premium null). File name `<instId>_funding_8h.csv`.
 */
import { TICK_SCHEMA_VERSION, isoMs, type FundingTick } from '../Tick.ts'
import type { Importer } from './Importer.ts'
import { baseAsset, csvRows, decimal, epochMs, symbolFromName } from './parse.ts'

const HEADER = 'ts,rate'
const NAME = /^([A-Z0-9]+-[A-Z0-9]+-SWAP)_funding(?:_\d+h)?\.csv$/i
/** OKX USDT swaps settle funding every 8 hours (00:00, 08:00, 16:00 UTC). */
const INTERVAL_HOURS = 8

export const okxFundingCsv: Importer = {
  id: 'okx-funding-csv',
  source: 'okx:swap',
  summary: 'OKX swap funding CSV (<instId>_funding_8h.csv, epoch-ms fundingTime, rate per 8 h)',
  detect: (file) => NAME.test(file.name) && file.firstLine === HEADER,
  parse(file) {
    const instrument = symbolFromName(file, NAME)
    const asset = baseAsset(file, 1, instrument)
    return csvRows(file, HEADER).map(({ line, fields }) => {
      const at = isoMs(epochMs(file.path, line, 'ts', fields[0]!))
      const tick: FundingTick = {
        v: TICK_SCHEMA_VERSION,
        kind: 'funding',
        asset,
        instrument,
        provenance: { source: 'okx:swap', provider: 'okx-funding-csv', timestamp: at, received_at: at, quality: 'real' },
        rate: decimal(file.path, line, 'rate', fields[1]!),
        interval_hours: INTERVAL_HOURS,
        premium: null,
      }
      return { tick, line }
    })
  },
}
