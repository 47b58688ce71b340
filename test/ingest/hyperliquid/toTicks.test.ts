/**
 * Recorded responses (served over HTTP by the replay server) → tick records. Every tick must pass the tick schema;
 * expected values come from the cassettes named beside each check.
 */
import t, { type Test } from 'tap'
import { join } from 'node:path'
import { HyperliquidInfoClient } from '../../../ingest/hyperliquid/HyperliquidInfoClient.ts'
import {
  allMidsToTicks,
  candlesToBars,
  fundingHistoryToTicks,
  hlAsset,
  hlFundingIntervalHours,
  l2BookToTick,
  metaAndAssetCtxsToTicks,
  predictedFundingsToTicks,
  tradesToTicks,
} from '../../../ingest/hyperliquid/toTicks.ts'
import { parseTrades } from '../../../ingest/hyperliquid/parseInfo.ts'
import { validateTick, type Tick } from '../../../ingest/Tick.ts'
import { TapeWriter } from '../../../ingest/TapeWriter.ts'
import { readTape } from '../../../ingest/TapeReader.ts'
import { withReplayServer } from '../../helpers/HyperliquidReplayServer.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const COINS = ['BTC', 'ETH', 'SOL'] as const

function allValid(t: Test, ticks: Tick[]): void {
  for (const tick of ticks) validateTick(tick)
  t.pass(`${ticks.length} ticks pass the tick schema`)
}

t.test('responses map to schema-valid ticks', async (t) => {
  const server = await withReplayServer(t)
  const client = new HyperliquidInfoClient({ baseUrl: server.baseUrl })

  t.test('metaAndAssetCtxs → mark, index, mid, open_interest, predicted_funding + universe', async (t) => {
    const { data, receivedAt } = await client.metaAndAssetCtxs()
    const ticks = metaAndAssetCtxsToTicks(data, { receivedAt, provider: 'hyperliquid-info' }, { coins: COINS })
    allValid(t, ticks)
    const btc = ticks.filter((x) => x.asset === 'BTC')
    const by = (kind: string) => btc.find((x) => x.kind === kind) as Record<string, unknown> | undefined
    t.equal(by('mark')!.price, 77562.0)
    t.equal(by('index')!.price, 77605.0, 'index = oraclePx')
    t.equal(by('mid')!.price, 77558.5)
    t.match(by('open_interest'), { value: 27353.17682, unit: 'base' })
    const hourEnd = Math.floor(receivedAt / 3_600_000) * 3_600_000 + 3_600_000
    t.match(by('predicted_funding'), { rate: -0.0000015186, interval_hours: 1, next_funding_at: new Date(hourEnd).toISOString() })
    for (const tick of ticks) {
      t.equal(tick.provenance.timestamp, new Date(receivedAt).toISOString(), 'no venue time: event time = receive time')
      t.match(tick.provenance, { source: 'hyperliquid:perp', provider: 'hyperliquid-info', quality: 'real' })
    }
    t.same(new Set(ticks.filter((x) => x.kind !== 'universe').map((x) => x.asset)), new Set(COINS), 'only the wanted coins')
    const universe = ticks.find((x) => x.kind === 'universe')
    if (universe?.kind !== 'universe') throw new Error('no universe tick')
    t.equal(universe.asset, '*')
    t.equal(universe.assets.length, 29, 'every market, not just the wanted coins')
    t.same(universe.assets.find((a) => a.symbol === 'BTC'), {
      symbol: 'BTC',
      mark: 77562.0,
      mid: 77558.5,
      oracle: 77605.0,
      funding: -0.0000015186,
      open_interest: 27353.17682,
      day_volume_usd: 1516669192.1953897476,
      prev_day_price: 76317.0,
      max_leverage: 50,
      delisted: false,
    })
    t.match(universe.assets.find((a) => a.symbol === 'LOOM'), { delisted: true, mid: null })
    t.equal(universe.assets.find((a) => a.symbol === 'kPEPE')?.symbol, 'kPEPE', 'universe keeps venue spelling')
  })

  t.test('allMids → mid', async (t) => {
    const { data, receivedAt } = await client.allMids()
    const ticks = allMidsToTicks(data, { receivedAt, provider: 'hyperliquid-info' }, COINS)
    allValid(t, ticks)
    t.same(
      ticks.map((x) => [x.asset, x.price]),
      [
        ['BTC', 30135.0],
        ['ETH', 1903.95],
        ['SOL', 26.516],
      ],
    )
  })

  t.test('l2Book → book_top with USD depth over the served levels', async (t) => {
    const { data, receivedAt } = await client.l2Book('DYDX')
    const tick = l2BookToTick(data, { receivedAt, provider: 'hyperliquid-info' })!
    allValid(t, [tick])
    t.match(tick, { kind: 'book_top', asset: 'DYDX', bid: 2.111, ask: 2.1124, bid_size: 134.4, ask_size: 352.3 })
    t.equal(tick.provenance.timestamp, '2023-07-17T21:43:23.930Z', 'event time = book time 1689630203930')
    // Σ px·sz over the 20 recorded levels of each side (test_get_l2_snapshot.yaml), summed independently here.
    const bidDepth = data.bids.reduce((s, l) => s + l.px * l.sz, 0)
    t.ok(Math.abs(tick.bid_depth_usd! - bidDepth) < 1e-9)
    t.ok(tick.bid_depth_usd! > 2.111 * 134.4 && tick.ask_depth_usd! > 2.1124 * 352.3, 'depth covers more than the top level')
    t.equal(l2BookToTick({ ...data, asks: [] }, { receivedAt, provider: 'hyperliquid-info' }), null, 'one-sided book: no top')
  })

  t.test('candleSnapshot → bars closed at T + 1', async (t) => {
    const { data, receivedAt } = await client.candleSnapshot('kPEPE', '1h', { startTime: 1684702007000, endTime: 1684784807000 })
    const bars = candlesToBars(data, { receivedAt, provider: 'hyperliquid-info' })
    allValid(t, bars)
    t.equal(bars.length, 24)
    t.match(bars[0], {
      kind: 'bar',
      asset: 'KPEPE',
      instrument: 'kPEPE',
      interval: '1h',
      open_time: '2023-05-21T20:00:00.000Z',
      open: 0.001601,
      high: 0.001616,
      low: 0.001601,
      close: 0.001604,
      volume: 520665683.0,
      volume_unit: 'base',
    })
    t.equal(bars[0]!.provenance.timestamp, '2023-05-21T21:00:00.000Z', 'close = T 1684702799999 + 1 ms')
    t.equal(bars[0]!.provenance.quality, 'real')
    const early = candlesToBars(data.slice(0, 1), { receivedAt: data[0]!.closeTime - 60_000, provider: 'hyperliquid-info' })
    t.equal(early[0]!.provenance.quality, 'degraded', 'a bar fetched before its close was unfinished')
    t.throws(() => candlesToBars([{ ...data[0]!, interval: '1M' }], { receivedAt, provider: 'hyperliquid-info' }), RangeError)
  })

  t.test('fundingHistory → funding, 8-hourly before 2023-06-08 01:00 and hourly after', async (t) => {
    const { data, receivedAt } = await client.fundingHistory('BTC', { startTime: 1681923833000 })
    const ticks = fundingHistoryToTicks(data, { receivedAt, provider: 'hyperliquid-info' })
    allValid(t, ticks)
    t.equal(ticks.length, 1038)
    const at = (iso: string) => ticks.find((x) => x.provenance.timestamp === iso)!
    t.match(at('2023-06-08T00:00:00.254Z'), { rate: 0.0001, interval_hours: 8, premium: 0.00020358 })
    t.match(at('2023-06-08T01:00:00.054Z'), { rate: 0.0000125, interval_hours: 1, premium: 0.00023467 })
    t.equal(hlFundingIntervalHours(Date.parse('2023-05-23T08:23:53Z')), 8, 'the off-schedule May record is 8-hourly')
    t.ok(ticks.every((x, i) => i === 0 || x.provenance.timestamp >= ticks[i - 1]!.provenance.timestamp), 'in event-time order')
  })

  t.test('predictedFundings → predicted_funding from the HlPerp entry', async (t) => {
    const { data, receivedAt } = await client.predictedFundings()
    const ticks = predictedFundingsToTicks(data, { receivedAt, provider: 'hyperliquid-info' }, COINS)
    allValid(t, ticks)
    t.equal(ticks.length, 1, 'AVAX filtered out; no ETH/SOL entries in the quoted payload')
    t.match(ticks[0], { asset: 'BTC', rate: 0.0000125, interval_hours: 1, next_funding_at: new Date(1754470800000).toISOString() })
    const avax = predictedFundingsToTicks(data, { receivedAt, provider: 'hyperliquid-info' }, ['AVAX'])
    t.equal(avax[0]!.interval_hours, 1, 'missing fundingIntervalHours: the venue interval, 1 h')
  })
})

t.test('trades map aggressor side and keep tid as a string', async (t) => {
  const trades = parseTrades([
    { coin: 'BTC', side: 'B', px: '113377.0', sz: '0.01', hash: '0xab', time: 1754450974231, tid: 1125899906842623, users: ['0x1', '0x2'] },
    { coin: 'BTC', side: 'A', px: '113376.0', sz: '0.5', hash: '0xac', time: 1754450974231 },
  ])
  const ticks = tradesToTicks(trades, { receivedAt: 1754450974300, provider: 'hyperliquid-ws' })
  allValid(t, ticks)
  t.match(ticks[0], { side: 'buy', price: 113377, size: 0.01, trade_id: '1125899906842623' })
  t.match(ticks[1], { side: 'sell', trade_id: null })
})

t.test('asset names: plain tickers only', async (t) => {
  t.equal(hlAsset('BTC'), 'BTC')
  t.equal(hlAsset('kPEPE'), 'KPEPE')
  t.equal(hlAsset('xyz:TSLA'), null, 'HIP-3 dex coin')
  t.equal(hlAsset('@107'), null, 'spot index')
  t.equal(hlAsset('PURR/USDC'), null, 'spot pair')
})

t.test('mapped ticks make a readable tape', async (t) => {
  const server = await withReplayServer(t)
  const dir = await makeTempDir(t)
  const client = new HyperliquidInfoClient({ baseUrl: server.baseUrl })
  const { data, receivedAt } = await client.fundingHistory('BTC', { startTime: 1681923833000 })
  const file = join(dir, 'funding.ndjson')
  const writer = TapeWriter.open(file)
  for (const tick of fundingHistoryToTicks(data, { receivedAt, provider: 'hyperliquid-info' })) await writer.write(tick)
  await writer.close()
  let n = 0
  for await (const entry of readTape(file)) if (entry.tick.kind === 'funding') n++
  t.equal(n, 1038, 'readTape accepts every record, in order')
})
