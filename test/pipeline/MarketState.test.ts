/**
 * MarketState as a stream processor: a generated tape replayed through a real EmbeddedLog, consumed by its own
 * group. Expectations are computed independently from the generated ticks in memory.
 */
import t from 'tap'
import { isoMs, tickTime, TICK_SCHEMA_VERSION, type Tick, type UniverseTick } from '../../ingest/Tick.ts'
import { stalenessBudgetMs } from '../../pipeline/features/stalenessBudgets.ts'
import { MarketState } from '../../pipeline/MarketState.ts'
import { lastTick, marketFixture, TICKS_TOPIC } from '../helpers/marketTape.ts'

const HOUR = 3_600_000
const DAY = 24 * HOUR

t.test('latest values per asset equal the last ticks of the tape', async (t) => {
  const fx = await marketFixture(t, { seed: 7, hours: 26, assets: ['BTC', 'ETH', 'SOL'] })
  t.equal(fx.state.now(), fx.endMs, 'now() is the newest event time consumed (the replay clock)')
  t.same(fx.state.assets(), ['BTC', 'ETH', 'SOL'])
  t.equal(fx.state.health().consumed, fx.ticks.length, 'every record folded in')
  t.equal(fx.state.health().rejected, 0)
  for (const asset of ['BTC', 'ETH', 'SOL']) {
    const m = fx.state.asset(asset)!
    for (const kind of ['mid', 'mark', 'index'] as const) {
      const tk = lastTick(fx.ticks, asset, kind)!
      t.equal(m[kind]!.value, tk.price, `${asset} ${kind}`)
      t.equal(m[kind]!.time, tickTime(tk))
      t.same(m[kind]!.provenance, tk.provenance)
    }
    const book = lastTick(fx.ticks, asset, 'book_top')!
    t.same(m.book!.value, { bid: book.bid, ask: book.ask, bid_size: book.bid_size, ask_size: book.ask_size, bid_depth_usd: book.bid_depth_usd, ask_depth_usd: book.ask_depth_usd })
    const fu = lastTick(fx.ticks, asset, 'funding')!
    t.same(m.funding!.value, { rate: fu.rate, interval_hours: fu.interval_hours, premium: fu.premium }, `${asset} funding`)
    const pf = lastTick(fx.ticks, asset, 'predicted_funding')!
    t.same(m.predicted_funding!.value, { rate: pf.rate, interval_hours: pf.interval_hours, next_funding_at: pf.next_funding_at })
    const oi = lastTick(fx.ticks, asset, 'open_interest')!
    t.same(m.open_interest!.value, { value: oi.value, unit: oi.unit })

    // 24 h volume from bars, computed here from the raw ticks: Σ volume × close over bars closing in (end − 24 h, end].
    const bars = fx.ticks.filter((tk): tk is Extract<Tick, { kind: 'bar' }> => tk.kind === 'bar' && tk.asset === asset)
    const lastBar = bars[bars.length - 1]!
    const end = tickTime(lastBar)
    const expected = bars.filter((b) => tickTime(b) > end - DAY).reduce((s, b) => s + b.volume * b.close, 0)
    t.equal(m.bar!.value.close, lastBar.close)
    t.ok(Math.abs(m.bar!.value.volume_24h_usd! - expected) <= 1e-6 * expected, `${asset} 24h volume ${m.bar!.value.volume_24h_usd} ≈ ${expected}`)

    // Every input within its budget at the replay clock.
    const fresh = fx.state.freshness(asset, ['mid', 'mark', 'index', 'bars', 'book', 'funding', 'open_interest'])
    t.equal(fresh.length, 7)
    for (const f of fresh) t.ok(f.ok, `${asset} ${f.input} fresh (age ${f.age_ms} ms, budget ${f.staleness_budget_ms} ms)`)
    t.same(fresh.find((f) => f.input === 'bars'), {
      input: 'bars', ok: true, staleness_budget_ms: stalenessBudgetMs('bars', 60_000), age_ms: fx.endMs - end, last_success_at: isoMs(end), quality: 'simulated',
    })

    // Liquidation hours: distinct clock hours in (now − 24 h, now] with liquidation records.
    const hours = new Set(
      fx.ticks.filter((tk) => tk.kind === 'liquidation' && tk.asset === asset && tickTime(tk) > fx.endMs - DAY).map((tk) => Math.floor(tickTime(tk) / HOUR)),
    )
    t.equal(fx.state.liqHours(asset), hours.size, `${asset} liquidation hours ${hours.size}`)
  }
  t.equal(fx.state.asset('DOGE'), null, 'an asset the stream never carried')
  t.equal(fx.state.liqHours('DOGE'), null)
})

t.test('24 h volume is null until the bar series covers 24 h', async (t) => {
  const fx = await marketFixture(t, { seed: 3, hours: 2, assets: ['BTC'] })
  t.equal(fx.state.asset('BTC')!.bar!.value.volume_24h_usd, null)
})

t.test('freshness is measured against event time: an input that stopped arriving breaches its budget', async (t) => {
  const start = Date.parse('2026-01-01T00:00:00Z')
  const cut = start + 2 * HOUR - 5 * 60_000
  // ETH's feed stops 5 minutes before the tape ends; BTC keeps going.
  const fx = await marketFixture(t, { seed: 11, hours: 2, assets: ['BTC', 'ETH'] }, (tk) => tk.asset === 'ETH' && tickTime(tk) > cut)
  const eth = fx.state.freshness('ETH', ['mid', 'book', 'mark'])
  for (const f of eth) {
    t.equal(f.ok, false, `ETH ${f.input} stale`)
    t.equal(f.age_ms, fx.endMs - cut)
    t.equal(f.last_success_at, isoMs(cut))
  }
  t.ok(fx.state.freshness('BTC', ['mid', 'book', 'mark']).every((f) => f.ok), 'BTC fresh')
})

t.test('an injected clock (live operation) ages inputs against it', async (t) => {
  let wall = 0
  const s = new MarketState({ clock: { now: () => wall } })
  const tk: Tick = {
    v: TICK_SCHEMA_VERSION, kind: 'mid', asset: 'BTC', instrument: 'BTC', price: 100,
    provenance: { source: 'hyperliquid:perp', provider: 'hyperliquid-ws', timestamp: '2026-01-01T00:00:00.000Z', received_at: '2026-01-01T00:00:00.050Z', quality: 'degraded' },
  }
  s.ingest(tk)
  wall = tickTime(tk) + 1000
  t.same(s.freshness('BTC', ['mid']), [{ input: 'mid', ok: false, staleness_budget_ms: 120_000, age_ms: 1000, last_success_at: '2026-01-01T00:00:00.000Z', quality: 'degraded' }], 'degraded arrival is not ok even when young')
  wall = tickTime(tk) + 121_000
  t.equal(s.freshness('BTC', ['mid'])[0]!.age_ms, 121_000)
})

t.test('universe records are kept (newest) and undecodable records are skipped and counted', async (t) => {
  const fx = await marketFixture(t, { seed: 5, hours: 1, assets: ['SOL'] })
  t.equal(fx.state.universe(), null)
  const at = isoMs(fx.endMs)
  const uni: UniverseTick = {
    v: TICK_SCHEMA_VERSION, kind: 'universe', asset: '*', instrument: '*',
    provenance: { source: 'hyperliquid:perp', provider: 'hyperliquid-info', timestamp: at, received_at: at, quality: 'real' },
    assets: [{ symbol: 'SOL', mark: 1, mid: 1, oracle: 1, funding: 0.0000125, open_interest: 10, day_volume_usd: 5, prev_day_price: 1, max_leverage: 20, delisted: false }],
  }
  await fx.append([uni])
  t.same(fx.state.universe()?.value, uni)
  const producer = await fx.log.createProducer()
  await producer.send(TICKS_TOPIC, [{ key: 'SOL', value: Buffer.from('{"not":"a tick"}'), timestamp: fx.endMs }])
  await producer.close()
  await fx.state.caughtUp()
  t.equal(fx.state.health().rejected, 1)
  t.same(fx.state.universe()?.value, uni, 'state unchanged by the bad record')
})

t.test('liquidations(): records in (now − window, now] summed by the liquidated side', async (t) => {
  const state = new MarketState()
  const start = Date.parse('2026-01-01T00:00:00Z')
  const liq = (time: number, side: 'long' | 'short', notional: number): Tick => {
    const at = isoMs(time)
    return {
      v: TICK_SCHEMA_VERSION, kind: 'liquidation', asset: 'BTC', instrument: 'BTC', side, price: 100, size: notional / 100, notional_usd: notional,
      provenance: { source: 'simulated', provider: 'svc-generator', timestamp: at, received_at: at, quality: 'simulated' },
    }
  }
  t.equal(state.liquidations('BTC', DAY), null, 'an asset the stream never carried')
  const now = start + 30 * HOUR
  // Exactly 24 h before now is outside the window; arrival out of event-time order is allowed.
  for (const tk of [liq(now - DAY, 'long', 1), liq(now - 2 * HOUR, 'short', 20), liq(now - DAY + 1, 'long', 300), liq(now, 'long', 4000)]) state.ingest(tk)
  const w = state.liquidations('BTC', DAY)!
  t.same(
    { from: w.from, to: w.to, count: w.count, total: w.total_usd, longs: w.longs_usd, shorts: w.shorts_usd, newest: w.newest?.time, sources: w.sources },
    { from: now - DAY, to: now, count: 3, total: 4320, longs: 4300, shorts: 20, newest: now, sources: ['simulated'] },
  )
  t.equal(state.liquidations('BTC', HOUR)!.total_usd, 4000, 'a shorter window')
  t.throws(() => state.liquidations('BTC', 3 * DAY), RangeError, 'at most 48 h are kept')
})
