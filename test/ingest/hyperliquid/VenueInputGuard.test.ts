/**
 * VenueInputGuard: which ticks built from parsed venue payloads may reach the log. The ticks are built the way the
 * connector builds them: wire-shaped payloads (reference ../shared/reference/hyperliquid-api.md §2 and §3: decimal
 * strings, epoch ms) → parseInfo.ts → toTicks.ts. Values a parser refuses (NaN, Infinity) cannot come that way, so
 * those rows copy a parsed tick and set the one field.
 *
 * Rules (VenueInputGuard.ts): prices positive and finite, sizes non-negative, a bar's high and low bound its open and
 * close, |funding| per hour ≤ 4 % (reference §5: "Cap: 4 % per hour, same for all assets"), bid ≤ ask, event time no
 * more than the tolerance (default 60 s) past now. A refusal is counted by reason and logged once per reason.
 */
import t from 'tap'
import { Writable } from 'node:stream'
import { pino, type Logger } from 'pino'
import { VenueInputGuard, type VenueRejectReason } from '../../../ingest/hyperliquid/VenueInputGuard.ts'
import {
  activeAssetCtxToTicks,
  allMidsToTicks,
  candlesToBars,
  fundingHistoryToTicks,
  l2BookToTick,
  metaAndAssetCtxsToTicks,
  predictedFundingsToTicks,
  tradesToTicks,
} from '../../../ingest/hyperliquid/toTicks.ts'
import {
  parseActiveAssetCtx,
  parseAllMids,
  parseBook,
  parseCandle,
  parseFundingHistory,
  parseMetaAndAssetCtxs,
  parsePredictedFundings,
  parseTrades,
} from '../../../ingest/hyperliquid/parseInfo.ts'
import type { BarTick, BookTopTick, FundingTick, OpenInterestTick, PredictedFundingTick, PriceTick, Tick, TradeTick } from '../../../ingest/Tick.ts'
import { RECORDED_BTC_CTX } from '../../helpers/HyperliquidReplayServer.ts'

const NOW = Date.parse('2025-06-02T10:30:00Z')
const HOUR = 3_600_000
const CTX = { receivedAt: NOW, provider: 'hyperliquid-ws' } as const

/** A log sink that keeps every line pino writes. */
function captureLogger(): { logger: Logger; lines: () => Array<Record<string, unknown>> } {
  const chunks: string[] = []
  const stream = new Writable({
    write(chunk: Buffer | string, _enc, cb) {
      chunks.push(chunk.toString())
      cb()
    },
  })
  const logger: Logger = pino({ level: 'warn' }, stream)
  const lines = () =>
    chunks
      .join('')
      .split('\n')
      .filter((l) => l.length > 0)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
  return { logger, lines }
}

// ---------------------------------------------------------------- ticks from wire-shaped payloads

function bar(o: string, h: string, l: string, c: string, v: string, openTime = NOW - 2 * HOUR): BarTick {
  const candle = parseCandle({ t: openTime, T: openTime + HOUR - 1, s: 'BTC', i: '1h', o, c, h, l, v, n: 12 })
  return candlesToBars([candle], CTX)[0]!
}

function mid(px: string): PriceTick<'mid'> {
  return allMidsToTicks(parseAllMids({ BTC: px }), CTX)[0]!
}

/** Reference §2, the real BTC ctx of metaAndAssetCtxs (the replay server's recording), with fields overridden. */
function ctxTicks(over: Record<string, string | null> = {}): Tick[] {
  const ctx = { ...RECORDED_BTC_CTX, ...over }
  return activeAssetCtxToTicks(parseActiveAssetCtx({ coin: 'BTC', ctx }), CTX)
}
function ctxTick<K extends Tick['kind']>(kind: K, over: Record<string, string | null> = {}): Extract<Tick, { kind: K }> {
  const tick = ctxTicks(over).find((x) => x.kind === kind)
  if (!tick) throw new Error(`no ${kind} tick`)
  return tick as Extract<Tick, { kind: K }>
}

function trade(px: string, sz: string, time = NOW - 1000): TradeTick {
  return tradesToTicks(parseTrades([{ coin: 'BTC', side: 'B', px, sz, hash: '0xabc', time, tid: 118906512037719, users: ['0x1', '0x2'] }]), CTX)[0]!
}

function book(bidPx: string, bidSz: string, askPx: string, askSz: string, time = NOW - 500): BookTopTick {
  // Reference §2 l2Book: levels[0] bids, levels[1] asks.
  const tick = l2BookToTick(parseBook({ coin: 'BTC', time, levels: [[{ px: bidPx, sz: bidSz, n: 17 }], [{ px: askPx, sz: askSz, n: 3 }]] }), CTX)
  if (!tick) throw new Error('no book tick')
  return tick
}

function funding(rate: string, time = NOW - 30 * 60_000 + 76): FundingTick {
  return fundingHistoryToTicks(parseFundingHistory([{ coin: 'BTC', fundingRate: rate, premium: '-0.00052196', time }]), CTX)[0]!
}

function predicted(rate: string, intervalHours: number): PredictedFundingTick {
  const data = parsePredictedFundings([['BTC', [['HlPerp', { fundingRate: rate, nextFundingTime: NOW + 30 * 60_000, fundingIntervalHours: intervalHours }]]]])
  return predictedFundingsToTicks(data, CTX)[0]!
}

// ---------------------------------------------------------------- the table

type Row = [label: string, tick: Tick, reason: VenueRejectReason | null]

const GOOD: Row[] = [
  ['bar o 100 h 105 l 95 c 101 v 1.5', bar('100.0', '105.0', '95.0', '101.0', '1.5'), null],
  ['bar whose open is the high and close the low, no volume', bar('105.0', '105.0', '95.0', '95.0', '0.0'), null],
  ['bar with o = h = l = c', bar('100.0', '100.0', '100.0', '100.0', '2.0'), null],
  ['mid 30135.0 (reference §2 allMids)', mid('30135.0'), null],
  ['mark 77562.0 (reference §2 BTC ctx)', ctxTick('mark'), null],
  ['index 77605.0 (reference §2 BTC ctx)', ctxTick('index'), null],
  ['mid 77558.5 (reference §2 BTC ctx)', ctxTick('mid'), null],
  ['open interest 27353.17682 (reference §2 BTC ctx)', ctxTick('open_interest'), null],
  ['open interest 0.0 (reference §2: idle market)', ctxTick('open_interest', { openInterest: '0.0' }), null],
  ['predicted funding −0.0000015186/h (reference §2 BTC ctx)', ctxTick('predicted_funding'), null],
  ['trade 30135.0 × 0.01', trade('30135.0', '0.01'), null],
  ['book 113377.0 / 113378.0 (reference §2 l2Book)', book('113377.0', '7.6699', '113378.0', '0.5'), null],
  ['book with an empty best-bid size', book('113377.0', '0.0', '113378.0', '0.5'), null],
  ['funding 0.0000125/h, the neutral rate (reference §5)', funding('0.0000125'), null],
  ['funding −2.0514e-03/h, the SOL series minimum (reference §5)', funding('-0.0020514'), null],
  ['funding exactly at the 4 %/h cap', funding('0.04'), null],
  ['funding exactly at −4 %/h', funding('-0.04'), null],
  ['funding 0.0001 per 8 h before 2023-06-08 (reference §2 fundingHistory)', funding('0.0001', Date.parse('2023-06-01T08:00:00.076Z')), null],
  ['predicted funding 0.0000125 per 1 h (reference §2 predictedFundings)', predicted('0.0000125', 1), null],
  ['trade exactly 60 s (the tolerance) ahead of now', trade('30135.0', '0.01', NOW + 60_000), null],
]

const BAD: Row[] = [
  ['mid 0.0', mid('0.0'), 'non_positive_price'],
  ['mid −1.0', mid('-1.0'), 'non_positive_price'],
  ['mid NaN', { ...mid('1.0'), price: Number.NaN }, 'non_positive_price'],
  ['mid +Infinity', { ...mid('1.0'), price: Number.POSITIVE_INFINITY }, 'non_positive_price'],
  ['mark 0.0', ctxTick('mark', { markPx: '0.0' }), 'non_positive_price'],
  ['index −5.0', ctxTick('index', { oraclePx: '-5.0' }), 'non_positive_price'],
  ['trade price 0', trade('0', '0.01'), 'non_positive_price'],
  ['trade price −Infinity', { ...trade('1.0', '0.01'), price: Number.NEGATIVE_INFINITY }, 'non_positive_price'],
  ['trade size −0.5', trade('30135.0', '-0.5'), 'bad_size'],
  ['trade size NaN', { ...trade('30135.0', '1'), size: Number.NaN }, 'bad_size'],
  ['bar open 0', bar('0.0', '105.0', '95.0', '101.0', '1.5'), 'non_positive_price'],
  ['bar low −1', bar('100.0', '105.0', '-1.0', '101.0', '1.5'), 'non_positive_price'],
  ['bar high +Infinity', { ...bar('100.0', '105.0', '95.0', '101.0', '1.5'), high: Number.POSITIVE_INFINITY }, 'non_positive_price'],
  ['bar close NaN', { ...bar('100.0', '105.0', '95.0', '101.0', '1.5'), close: Number.NaN }, 'non_positive_price'],
  ['bar volume −2', bar('100.0', '105.0', '95.0', '101.0', '-2.0'), 'bad_size'],
  ['bar volume NaN', { ...bar('100.0', '105.0', '95.0', '101.0', '1.5'), volume: Number.NaN }, 'bad_size'],
  ['bar high below close', bar('100.0', '104.0', '95.0', '104.5', '1.5'), 'bad_bar'],
  ['bar high below open', bar('106.0', '105.0', '95.0', '101.0', '1.5'), 'bad_bar'],
  ['bar low above open', bar('96.0', '105.0', '97.0', '101.0', '1.5'), 'bad_bar'],
  ['bar low above close', bar('100.0', '105.0', '95.0', '94.0', '1.5'), 'bad_bar'],
  ['bar low above high', bar('100.0', '99.0', '101.0', '100.0', '1.5'), 'bad_bar'],
  ['funding 0.05/h (beyond the 4 %/h cap)', funding('0.05'), 'funding_out_of_range'],
  ['funding −0.0401/h', funding('-0.0401'), 'funding_out_of_range'],
  ['funding 0.33 per 8 h (0.04125/h)', funding('0.33', Date.parse('2023-06-01T08:00:00.076Z')), 'funding_out_of_range'],
  ['funding NaN', { ...funding('0.0000125'), rate: Number.NaN }, 'funding_out_of_range'],
  ['funding +Infinity', { ...funding('0.0000125'), rate: Number.POSITIVE_INFINITY }, 'funding_out_of_range'],
  ['funding over an interval of 0 h', { ...funding('0.0000125'), interval_hours: 0 }, 'funding_out_of_range'],
  ['predicted funding 0.041/h', predicted('0.041', 1), 'funding_out_of_range'],
  ['predicted funding from the ctx, 0.5/h', ctxTick('predicted_funding', { funding: '0.5' }), 'funding_out_of_range'],
  ['crossed book: bid 113379.0 above ask 113378.0', book('113379.0', '1.0', '113378.0', '0.5'), 'crossed_book'],
  ['book bid 0.0', book('0.0', '1.0', '113378.0', '0.5'), 'non_positive_price'],
  ['book ask NaN', { ...book('113377.0', '1.0', '113378.0', '0.5'), ask: Number.NaN }, 'non_positive_price'],
  ['book ask size −1', book('113377.0', '1.0', '113378.0', '-1.0'), 'bad_size'],
  ['open interest −5', ctxTick('open_interest', { openInterest: '-5.0' }), 'bad_size'],
  ['open interest NaN', { ...ctxTick('open_interest'), value: Number.NaN } satisfies OpenInterestTick, 'bad_size'],
  ['trade 60.001 s ahead of now', trade('30135.0', '0.01', NOW + 60_001), 'future_time'],
  ['book from an hour ahead', book('113377.0', '1.0', '113378.0', '0.5', NOW + HOUR), 'future_time'],
  ['bar closing tomorrow', bar('100.0', '105.0', '95.0', '101.0', '1.5', NOW + 24 * HOUR), 'future_time'],
  ['funding settled tomorrow', funding('0.0000125', NOW + 24 * HOUR + 76), 'future_time'],
  ['a future trade that is also bad: the time is reported', trade('-1', '0.01', NOW + HOUR), 'future_time'],
]

t.test('good ticks are admitted, nothing counted or logged', async (t) => {
  const { logger, lines } = captureLogger()
  const guard = new VenueInputGuard({ logger })
  for (const [label, tick] of GOOD) t.equal(guard.admit(tick, NOW), true, `admitted: ${label}`)
  t.same(guard.counts(), {})
  t.equal(guard.total, 0)
  t.same(lines(), [], 'no log line')
})

t.test('bad ticks are refused with their reason and counted', async (t) => {
  const { logger, lines } = captureLogger()
  const guard = new VenueInputGuard({ logger })
  const expected: Record<string, number> = {}
  for (const [label, tick, reason] of BAD) {
    const before = guard.counts()[reason!] ?? 0
    const totalBefore = guard.total
    t.equal(guard.admit(tick, NOW), false, `refused: ${label}`)
    t.equal(guard.counts()[reason!], before + 1, `  counted under ${reason}`)
    t.equal(guard.total, totalBefore + 1, '  and nowhere else')
    expected[reason!] = (expected[reason!] ?? 0) + 1
  }
  t.same(guard.counts(), expected, 'counts by reason')
  t.equal(guard.total, BAD.length)
  const logged = lines()
  t.same(
    logged.map((l) => l.reason).sort(),
    Object.keys(expected).sort(),
    'one log line per reason seen',
  )
  for (const l of logged) t.equal(l.level, 40, `${String(l.reason)} logged at warn`)
  // The first refusal of each reason is the one logged, with what was refused.
  const firstNonPositive = logged.find((l) => l.reason === 'non_positive_price')
  t.equal(firstNonPositive?.detail, `mid BTC at ${mid('0.0').provenance.timestamp}`, 'detail names kind, asset and event time of the first one')
})

t.test('the same bad input 100 times: counted 100 times, logged once', async (t) => {
  const { logger, lines } = captureLogger()
  const guard = new VenueInputGuard({ logger })
  const crossed = book('113379.0', '1.0', '113378.0', '0.5')
  for (let i = 0; i < 100; i++) t.equal(guard.admit(crossed, NOW), false)
  t.same(guard.counts(), { crossed_book: 100 })
  t.equal(guard.total, 100)
  const logged = lines()
  t.equal(logged.length, 1, 'exactly one log line')
  t.equal(logged[0]?.reason, 'crossed_book')
  t.match(logged[0]?.msg, /once per reason/)

  // Another reason after that: its own single line; the first reason stays silent.
  for (let i = 0; i < 100; i++) {
    guard.admit(trade('30135.0', `-${i + 1}.0`), NOW) // different inputs, one reason
    guard.admit(crossed, NOW)
  }
  t.same(guard.counts(), { crossed_book: 200, bad_size: 100 })
  t.same(
    lines().map((l) => l.reason),
    ['crossed_book', 'bad_size'],
    'two lines in all, one per reason',
  )
})

t.test('frame-level refusals go through reject(): counted and logged once per reason', async (t) => {
  const { logger, lines } = captureLogger()
  const guard = new VenueInputGuard({ logger })
  for (let i = 0; i < 5; i++) guard.reject('not_json', `frame ${i}`)
  guard.reject('unknown_channel', 'channel foo')
  t.same(guard.counts(), { not_json: 5, unknown_channel: 1 })
  t.same(
    lines().map((l) => [l.reason, l.detail]),
    [
      ['not_json', 'frame 0'],
      ['unknown_channel', 'channel foo'],
    ],
  )
})

t.test('futureToleranceMs sets how far ahead an event time may be', async (t) => {
  const { logger } = captureLogger()
  const guard = new VenueInputGuard({ logger, futureToleranceMs: 1000 })
  t.equal(guard.admit(trade('30135.0', '0.01', NOW + 1000), NOW), true, '1 s ahead: admitted')
  t.equal(guard.admit(trade('30135.0', '0.01', NOW + 1001), NOW), false, '1.001 s ahead: refused')
  t.equal(guard.admit(trade('30135.0', '0.01', NOW + 1001), NOW + 1), true, 'the same tick a ms later: admitted')
  t.same(guard.counts(), { future_time: 1 })
})

t.test('a universe tick carries the prices of the per-asset ticks: the same bad price is refused in both', async (t) => {
  // metaAndAssetCtxs with BTC markPx "-1.0": the connector admits both the per-asset ticks and the universe tick
  // (pipeline/venue/HyperliquidConnector.ts #pollContexts). The mark tick is refused; the universe tick carries the
  // same −1 mark for BTC.
  const { logger } = captureLogger()
  const guard = new VenueInputGuard({ logger })
  const payload = [
    { universe: [{ name: 'BTC', szDecimals: 5, maxLeverage: 40 }] },
    [{ funding: '0.0000125', openInterest: '27353.17682', prevDayPx: '76317.0', dayNtlVlm: '1516669192.19', premium: '-0.0005927453', oraclePx: '77605.0', markPx: '-1.0', midPx: '77558.5', impactPxs: ['77558.0', '77559.0'], dayBaseVlm: '19707.77457' }],
  ]
  const ticks = metaAndAssetCtxsToTicks(parseMetaAndAssetCtxs(payload), { receivedAt: NOW, provider: 'hyperliquid-info' }, { coins: ['BTC'], universe: true })
  const mark = ticks.find((x) => x.kind === 'mark')!
  const universe = ticks.find((x) => x.kind === 'universe')!
  t.equal(guard.admit(mark, NOW), false, 'the mark tick with −1 is refused')
  t.equal(universe.kind === 'universe' && universe.assets[0]?.mark, -1, 'the universe tick holds the same −1 mark for BTC')
  t.equal(guard.admit(universe, NOW), false, 'the universe tick with a −1 mark is refused too')
})
