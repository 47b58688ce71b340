/** Ticks and ConsumedBatch objects for the sink and catalog tests: a small, fully known tick stream. */
import { partitionForKey } from '../../../common/murmur2.ts'
import { isoMs, tickKey, tickTime, type Tick } from '../../../ingest/Tick.ts'
import type { ConsumedBatch, ConsumedRecord } from '../../../pipeline/log/EventLog.ts'
import { encodeTick, encodeTickEnvelope } from '../../../pipeline/TickEnvelope.ts'

export const TOPIC = 'venue.ticks'
export const PARTITIONS = 3
const T0 = Date.parse('2024-03-01T23:00:00.000Z')

function prov(ms: number) {
  return { source: 'hyperliquid:perp', provider: 'test-fixture', timestamp: isoMs(ms), received_at: isoMs(ms + 5), quality: 'real' as const }
}

/**
 * `n` ticks per asset (BTC, ETH, SOL) cycling through bar, mid, mark, index, funding, book_top, open_interest,
 * liquidation, trade, predicted_funding, one minute apart from 23:00 UTC (so they span two dates), plus a
 * universe snapshot (asset '*') every 10 minutes.
 */
export function makeTicks(n: number): Tick[] {
  const out: Tick[] = []
  for (let i = 0; i < n; i++) {
    const ms = T0 + i * 60_000
    for (const [j, asset] of ['BTC', 'ETH', 'SOL'].entries()) {
      const base = { v: 1 as const, asset, instrument: asset, provenance: prov(ms + j) }
      const px = 100 * (j + 1) + i
      switch (i % 10) {
        case 0:
          out.push({ ...base, kind: 'bar', interval: '1m', open_time: isoMs(ms - 60_000), open: px - 1, high: px + 2, low: px - 2, close: px, volume: 10 + i, volume_unit: 'base' })
          break
        case 1:
          out.push({ ...base, kind: 'mid', price: px })
          break
        case 2:
          out.push({ ...base, kind: 'mark', price: px + 0.5 })
          break
        case 3:
          out.push({ ...base, kind: 'index', price: px - 0.5 })
          break
        case 4:
          out.push({ ...base, kind: 'funding', rate: 0.0001 * (j + 1), interval_hours: 1, premium: null })
          break
        case 5:
          out.push({ ...base, kind: 'book_top', bid: px - 0.1, ask: px + 0.1, bid_size: 3, ask_size: 4, bid_depth_usd: null, ask_depth_usd: 1e6 })
          break
        case 6:
          out.push({ ...base, kind: 'open_interest', value: 1000 + i, unit: 'base' })
          break
        case 7:
          out.push({ ...base, kind: 'liquidation', side: 'long', price: px, size: 2, notional_usd: 2 * px })
          break
        case 8:
          out.push({ ...base, kind: 'trade', side: 'buy', price: px, size: 0.5, trade_id: `t${i}` })
          break
        default:
          out.push({ ...base, kind: 'predicted_funding', rate: 0.00005, interval_hours: 1, next_funding_at: isoMs(ms + 3_600_000) })
      }
    }
    if (i % 10 === 0) {
      out.push({
        v: 1,
        kind: 'universe',
        asset: '*',
        instrument: '*',
        provenance: prov(ms + 9),
        assets: [{ symbol: 'BTC', mark: 1, mid: 1, oracle: 1, funding: 0, open_interest: 1, day_volume_usd: 1, prev_day_price: 1, max_leverage: 50, delisted: false }],
      })
    }
  }
  return out
}

/**
 * What the log would hold after producing `ticks` in order: records keyed by asset, partitioned like both logs,
 * offsets consecutive per partition. `envelope` wraps every other tick as a replay envelope.
 */
export function toRecords(ticks: Tick[], { envelope = false, partitions = PARTITIONS } = {}): ConsumedRecord[][] {
  const byPartition: ConsumedRecord[][] = Array.from({ length: partitions }, () => [])
  ticks.forEach((tick, i) => {
    const partition = partitionForKey(tickKey(tick), partitions)
    const list = byPartition[partition]!
    const value = envelope && i % 2 === 0 ? encodeTickEnvelope({ seq: i + 1, tape: 'fixture-tape', tick }) : encodeTick(tick)
    list.push({ topic: TOPIC, partition, offset: list.length, key: tickKey(tick), value, timestamp: tickTime(tick) })
  })
  return byPartition
}

/** Splits each partition's records into batches of `size`, interleaving partitions as a consumer would. */
export function toBatches(byPartition: ConsumedRecord[][], size: number): ConsumedBatch[] {
  const out: ConsumedBatch[] = []
  const longest = Math.max(...byPartition.map((r) => r.length))
  for (let start = 0; start < longest; start += size) {
    byPartition.forEach((records, partition) => {
      const slice = records.slice(start, start + size)
      if (slice.length > 0) out.push({ topic: TOPIC, partition, records: slice })
    })
  }
  return out
}
