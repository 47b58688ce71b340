/**
 * LocalVenueMarket on a hand-held clock: trades that reproduce the generated bars, served only from their own time;
 * candles aggregated from them; funding rows equal to SyntheticMarket's settlements, published with jitter; books and
 * contexts from the last closed minute; lazy generation one minute ahead.
 */
import t from 'tap'
import { LocalVenueMarket } from '../../../../ingest/hyperliquid/local/LocalVenueMarket.ts'
import { minuteTrades } from '../../../../ingest/hyperliquid/local/minuteTrades.ts'
import { SYNTHETIC_MODEL, SyntheticMarket } from '../../../../ingest/SyntheticMarket.ts'
import { isoMs, tickTime, type BarTick, type BookTopTick, type FundingTick } from '../../../../ingest/Tick.ts'

const MINUTE = 60_000
const HOUR = 3_600_000
const ORIGIN = Date.parse('2026-03-01T00:00:00Z')

function handClock(startMs: number): { now: () => number; set: (ms: number) => void } {
  let now = startMs
  return { now: () => now, set: (ms) => (now = ms) }
}

/** The generator's own 1-minute bars and funding ticks for the same seed, coins and origin. */
function reference(hours: number, coins: string[]): { bars: Map<string, BarTick>; funding: FundingTick[]; tops: Map<string, BookTopTick> } {
  const bars = new Map<string, BarTick>()
  const tops = new Map<string, BookTopTick>()
  const funding: FundingTick[] = []
  for (const tick of new SyntheticMarket({ seed: 1, hours, assets: coins, start: isoMs(ORIGIN) })) {
    if (tick.kind === 'bar') bars.set(`${tick.asset}|${tickTime(tick) - MINUTE}`, tick)
    if (tick.kind === 'book_top') tops.set(`${tick.asset}|${tickTime(tick)}`, tick)
    if (tick.kind === 'funding') funding.push(tick)
  }
  return { bars, funding, tops }
}

t.test('generates lazily, one minute ahead of the clock', async (t) => {
  const clock = handClock(ORIGIN + 3 * HOUR + 30_500)
  const market = new LocalVenueMarket({ originMs: ORIGIN, clock, coins: ['BTC'] })
  t.equal(market.generatedMinutes, 181, 'every closed minute plus the one forming at now')
  clock.set(ORIGIN + 3 * HOUR + 5 * MINUTE)
  market.advance(clock.now())
  t.equal(market.generatedMinutes, 186)
  t.throws(() => new LocalVenueMarket({ originMs: ORIGIN + 1, clock }), { message: /originMs: must fall on a whole hour/ })
  t.throws(() => new LocalVenueMarket({ originMs: ORIGIN, coins: ['DOGE'] }), { message: /coins\/0/ })
})

t.test('trades reproduce each generated bar exactly and follow the dealing rules', async (t) => {
  const coins = ['BTC', 'ETH', 'SOL']
  const clock = handClock(ORIGIN + 2 * HOUR)
  const market = new LocalVenueMarket({ originMs: ORIGIN, clock })
  const ref = reference(2, coins)
  const tids = new Set<number>()
  let checked = 0
  for (const coin of coins) {
    const sz = SYNTHETIC_MODEL.assets[coin as 'BTC'].szDecimals
    for (let m = ORIGIN; m < ORIGIN + 2 * HOUR; m += MINUTE) {
      const bar = ref.bars.get(`${coin}|${m}`)!
      const trades = market.trades(coin, m - 1, m + MINUTE - 1)
      t.ok(trades.length >= 6 && trades.length <= 12, `${coin} ${isoMs(m)}: ${trades.length} trades`)
      t.equal(trades[0]!.px, bar.open)
      t.equal(trades.at(-1)!.px, bar.close)
      const pxs = trades.map((x) => x.px)
      t.equal(Math.max(...pxs), bar.high)
      t.equal(Math.min(...pxs), bar.low)
      const lowAt = pxs.indexOf(bar.low, 1)
      const highAt = pxs.indexOf(bar.high, 1)
      if (bar.close >= bar.open && lowAt > 0 && highAt > 0 && lowAt < trades.length - 1) t.ok(lowAt < highAt, 'low before high on an up bar')
      const units = trades.reduce((s, x) => s + Math.round(x.sz * 10 ** sz), 0)
      t.equal(units, Math.round(bar.volume * 10 ** sz), 'sizes sum to the bar volume')
      for (let k = 0; k < trades.length; k++) {
        const x = trades[k]!
        t.ok(x.time >= m && x.time < m + MINUTE && (k === 0 || x.time > trades[k - 1]!.time), 'inside the minute, ascending')
        t.ok(x.sz > 0 && Number.isInteger(Math.round(x.sz * 10 ** sz)) && Math.abs(x.sz * 10 ** sz - Math.round(x.sz * 10 ** sz)) < 1e-6)
        t.equal(x.side, x.px >= (k === 0 ? bar.open : trades[k - 1]!.px) ? 'B' : 'A')
        t.ok(Number.isSafeInteger(x.tid) && x.tid < 2 ** 50 && !tids.has(x.tid), 'tid unique below 2^50')
        tids.add(x.tid)
        t.match(x.hash, /^0x[0-9a-f]{64}$/)
      }
      const candle = market.candle(coin, '1m', m, clock.now())!
      t.same([candle.open, candle.high, candle.low, candle.close, candle.volume, candle.trades], [bar.open, bar.high, bar.low, bar.close, bar.volume, trades.length])
      checked++
    }
  }
  t.equal(checked, 360)
  const again = new LocalVenueMarket({ originMs: ORIGIN, clock })
  t.same(again.trades('ETH', ORIGIN, ORIGIN + HOUR), market.trades('ETH', ORIGIN, ORIGIN + HOUR), 'deterministic')
  const bar = ref.bars.get(`BTC|${ORIGIN}`)!
  const direct = minuteTrades(1, { coin: 'BTC', startMs: ORIGIN, open: bar.open, high: bar.high, low: bar.low, close: bar.close, volumeUnits: Math.round(bar.volume * 1e5), szDecimals: 5 })
  t.same(direct, market.trades('BTC', ORIGIN - 1, ORIGIN + MINUTE - 1), 'random access: a minute dealt on its own is the same')
})

t.test('what is served at t is only what has happened by t', async (t) => {
  const clock = handClock(ORIGIN + HOUR + 20_000)
  const market = new LocalVenueMarket({ originMs: ORIGIN, clock, coins: ['BTC'] })
  const m = ORIGIN + HOUR
  const all = market.trades('BTC', m - 1, m + MINUTE - 1)
  const byNow = all.filter((x) => x.time <= clock.now())
  t.same(market.trades('BTC', m - 1, clock.now()), byNow, 'trades up to now only')
  const forming = market.candle('BTC', '1m', m, clock.now())
  if (byNow.length === 0) t.equal(forming, null, 'no candle before the first trade')
  else {
    t.equal(forming!.trades, byNow.length)
    t.equal(forming!.close, byNow.at(-1)!.px)
  }
  const hour = market.candles('BTC', '1h', m, m, clock.now())
  t.equal(hour.length, byNow.length > 0 ? 1 : 0, 'the forming hour exists once it has traded')
  const ctx = market.assetCtx('BTC', clock.now())!
  const barBefore = market.generatedBar('BTC', m - MINUTE)!
  t.equal(ctx.midPx, barBefore.close, 'context from the last closed minute')
  t.equal(market.book('BTC', clock.now())!.time, clock.now())
})

t.test('candles aggregate their minutes; retention keeps the newest', async (t) => {
  const clock = handClock(ORIGIN + 10 * HOUR + 90_000)
  const market = new LocalVenueMarket({ originMs: ORIGIN, clock, coins: ['SOL'], candleRetention: 4 })
  const h = market.candle('SOL', '1h', ORIGIN + 2 * HOUR, clock.now())!
  const minutes = Array.from({ length: 60 }, (_, i) => market.generatedBar('SOL', ORIGIN + 2 * HOUR + i * MINUTE)!)
  t.equal(h.open, minutes[0]!.open)
  t.equal(h.close, minutes[59]!.close)
  t.equal(h.high, Math.max(...minutes.map((b) => b.high)))
  t.equal(h.low, Math.min(...minutes.map((b) => b.low)))
  t.equal(h.trades, minutes.reduce((s, b) => s + b.trades, 0))
  t.equal(h.volume, Math.round(minutes.reduce((s, b) => s + b.volume, 0) * 100) / 100)
  t.equal(h.closeTime, h.openTime + HOUR - 1)
  const served = market.candles('SOL', '1h', ORIGIN, clock.now(), clock.now())
  t.same(served.map((c) => c.openTime), [7, 8, 9, 10].map((k) => ORIGIN + k * HOUR), 'only the newest 4, the forming one included')
  t.equal(market.closedCandles('SOL', '1h', clock.now()).length, 10, 'the venue list keeps every closed candle')
  const daily = market.closedCandles('SOL', '1d', clock.now())
  t.equal(daily.length, 0, 'the day is not over')
})

t.test('funding rows are the generator settlements, published past the hour with jitter', async (t) => {
  const clock = handClock(ORIGIN + 30 * HOUR + 100)
  const market = new LocalVenueMarket({ originMs: ORIGIN, clock, coins: ['BTC', 'ETH'] })
  const ref = reference(31, ['BTC', 'ETH'])
  for (const coin of ['BTC', 'ETH']) {
    const rows = market.fundingRows(coin, clock.now())
    const ticks = ref.funding.filter((f) => f.asset === coin && tickTime(f) <= ORIGIN + 30 * HOUR)
    t.ok(rows.length === ticks.length || rows.length === ticks.length - 1, `${coin}: ${rows.length} published of ${ticks.length}`)
    rows.forEach((r, i) => {
      t.equal(r.hour, tickTime(ticks[i]!))
      t.equal(r.fundingRate, ticks[i]!.rate)
      t.equal(r.premium, ticks[i]!.premium)
      t.ok(r.time - r.hour >= 1 && r.time - r.hour <= 250, 'jitter 1..250 ms')
      t.ok(r.time <= clock.now())
    })
  }
  const last = market.fundingHistory('BTC', ORIGIN + 29 * HOUR + 251, null, ORIGIN + 30 * HOUR + 300, 500)
  t.equal(last.length, 1, 'the 30th hour is out by 250 ms past it')
  t.equal(market.fundingHistory('BTC', ORIGIN, null, clock.now(), 10).length, 10, 'limit')
})

t.test('the book has 20 levels a side around the book top, its notional near the quoted depth', async (t) => {
  const clock = handClock(ORIGIN + 5 * HOUR)
  const market = new LocalVenueMarket({ originMs: ORIGIN, clock })
  const ref = reference(5, ['BTC', 'ETH', 'SOL'])
  for (const coin of ['BTC', 'ETH', 'SOL']) {
    const book = market.book(coin, clock.now())!
    const top = ref.tops.get(`${coin}|${clock.now()}`)!
    t.same([book.bids[0], book.asks[0]].map((l) => [l!.px, l!.sz]), [[top.bid, top.bid_size], [top.ask, top.ask_size]], 'the book top')
    const notional = (levels: Array<{ px: number; sz: number }>) => levels.reduce((s, l) => s + l.px * l.sz, 0)
    for (const [levels, depth] of [[book.bids, top.bid_depth_usd!], [book.asks, top.ask_depth_usd!]] as const) {
      const floor = levels[0]!.px * levels[0]!.sz + 19 * levels[19]!.px * 10 ** -SYNTHETIC_MODEL.assets[coin as 'BTC'].szDecimals
      t.ok(Math.abs(notional(levels) - Math.max(depth, floor)) / depth < 0.05, `${coin}: 20-level notional ${notional(levels).toFixed(0)} near depth ${depth}`)
    }
    t.equal(book.bids.length, 20)
    t.equal(book.asks.length, 20)
    t.ok(book.bids.every((l, i) => i === 0 || l.px < book.bids[i - 1]!.px), 'bids descending')
    t.ok(book.asks.every((l, i) => i === 0 || l.px > book.asks[i - 1]!.px), 'asks ascending')
    t.ok(book.bids[0]!.px < book.asks[0]!.px)
    t.ok([...book.bids, ...book.asks].every((l) => l.sz > 0 && Number.isInteger(l.n) && l.n >= 1))
    const ctx = market.assetCtx(coin, clock.now())!
    t.same(ctx.impactPxs, [book.bids[0]!.px, book.asks[0]!.px])
    t.ok(ctx.dayBaseVlm > 0 && ctx.dayNtlVlm > 0 && ctx.openInterest > 0)
  }
})
