/**
 * The free market routes over real parts: a generated tape replayed through a real EmbeddedLog into a real
 * MarketState, served by the real server on 127.0.0.1 (replay universe). Expectations come from the generated ticks.
 */
import t from 'tap'
import { isoMs, tickTime, TICK_SCHEMA_VERSION, type UniverseTick } from '../../../ingest/Tick.ts'
import { MarketState } from '../../../pipeline/MarketState.ts'
import { stalenessBudgetMs } from '../../../pipeline/features/stalenessBudgets.ts'
import { MarketServices } from '../../../product/market/MarketServices.ts'
import { ReplayUniverseSource } from '../../../product/market/ReplayUniverseSource.ts'
import { lastTick, marketFixture } from '../../helpers/marketTape.ts'
import { withServer } from '../../helpers/serving/server.ts'

const HOUR = 3_600_000
const START = Date.parse('2026-01-01T00:00:00Z')

async function getJson(url: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url)
  return { status: res.status, body: await res.json() }
}

t.test('free market routes on a replayed tape', async (t) => {
  const cut = START + 26 * HOUR - 5 * 60_000
  // SOL's feed stops 5 minutes before the end: its snapshot must be served, degraded, with the breach stated.
  const fx = await marketFixture(t, { seed: 21, hours: 26, assets: ['BTC', 'ETH', 'SOL'] }, (tk) => tk.asset === 'SOL' && tickTime(tk) > cut)
  const market = new MarketServices({ state: fx.state, universe: new ReplayUniverseSource(fx.state) })
  const server = await withServer(t, { services: { market } })

  t.test('GET /v1/market/BTC equals the last ticks', async (t) => {
    const { status, body } = await getJson(`${server.url}/v1/market/BTC`)
    t.equal(status, 200)
    const mid = lastTick(fx.ticks, 'BTC', 'mid')!
    const book = lastTick(fx.ticks, 'BTC', 'book_top')!
    const mark = lastTick(fx.ticks, 'BTC', 'mark')!
    const index = lastTick(fx.ticks, 'BTC', 'index')!
    const d = body.data
    t.equal(d.asset, 'BTC')
    t.equal(d.quote.price, mid.price)
    t.equal(d.quote.bid, book.bid)
    t.equal(d.quote.ask, book.ask)
    t.equal(d.quote.mark, mark.price)
    t.equal(d.quote.index, index.price)
    t.same(d.quote.volume_24h, fx.state.asset('BTC')!.bar!.value.volume_24h_usd)
    t.ok(d.quote.volume_24h > 0)
    const bookMid = (book.bid + book.ask) / 2
    t.equal(d.derived.mid, bookMid)
    t.ok(Math.abs(d.derived.spread_bps - ((book.ask - book.bid) / bookMid) * 1e4) < 1e-9)
    t.same(d.provenance, {
      source: 'simulated', provider: mid.provenance.provider, timestamp: mid.provenance.timestamp, received_at: mid.provenance.received_at,
      age_ms: fx.endMs - tickTime(mid), quality: 'simulated',
    })
    t.equal(body.meta.state, 'ok')
    t.equal(body.meta.probabilities, null, 'no probability claim')
    t.equal(body.meta.confidence, null)
    t.equal(body.meta.pricing, null)
    t.same(body.meta.freshness.map((f: { input: string }) => f.input).sort(), ['bars', 'book', 'index', 'mark', 'mid'])
    t.ok(body.meta.freshness.every((f: { ok: boolean }) => f.ok))
  })

  t.test('a degraded snapshot is still served with its degraded freshness stated', async (t) => {
    const { status, body } = await getJson(`${server.url}/v1/market/SOL`)
    t.equal(status, 200)
    t.equal(body.data.provenance.quality, 'degraded')
    t.equal(body.data.provenance.age_ms, fx.endMs - cut)
    t.equal(body.meta.state, 'degraded')
    const mid = body.meta.freshness.find((f: { input: string }) => f.input === 'mid')
    t.same(mid, { input: 'mid', ok: false, staleness_budget_ms: stalenessBudgetMs('mid'), age_ms: fx.endMs - cut, last_success_at: isoMs(cut) })
    t.equal(body.data.quote.price, lastTick(fx.ticks, 'SOL', 'mid')!.price)
  })

  t.test('symbols are upper-case tickers: lower-case is a 400', async (t) => {
    const { status, body } = await getJson(`${server.url}/v1/market/eth`)
    t.equal(status, 400)
    t.equal(body.error.code, 'VALIDATION')
  })

  t.test('unknown symbol → 404 ASSET_NOT_FOUND envelope', async (t) => {
    const { status, body } = await getJson(`${server.url}/v1/market/DOGE`)
    t.equal(status, 404)
    t.equal(body.error.code, 'ASSET_NOT_FOUND')
    t.equal(body.error.detail.reason, 'ASSET_NOT_FOUND')
    t.equal(body.error.retryable, false)
    t.type(body.error.request_id, 'string')
  })

  t.test('universe derived from the tape (no universe record): sorted by volume, count/total_live/truncated', async (t) => {
    const { status, body } = await getJson(`${server.url}/v1/universe?limit=2`)
    t.equal(status, 200)
    const vols = ['BTC', 'ETH', 'SOL'].map((s) => ({ s, v: fx.state.asset(s)!.bar!.value.volume_24h_usd! })).sort((a, b) => b.v - a.v)
    t.same(body.data.assets.map((a: { symbol: string }) => a.symbol), vols.slice(0, 2).map((x) => x.s))
    t.equal(body.data.count, 2)
    t.equal(body.data.total_live, 3)
    t.equal(body.data.truncated, true)
    t.equal(body.data.venue, 'simulated')
    t.equal(body.data.quality, 'simulated', 'generated data says simulated, not real (issue 14)')
    t.equal(body.meta.state, 'ok', 'fresh simulated data is not degraded')
    t.equal(body.data.as_of, isoMs(fx.endMs))
    const q = await getJson(`${server.url}/v1/universe?q=et`)
    t.same(q.body.data.assets.map((a: { symbol: string }) => a.symbol), ['ETH'], 'q filters symbols case-insensitively')
    t.equal(q.body.data.truncated, false)
  })

  t.test('liq/hours reports the N/24 figure', async (t) => {
    const { status, body } = await getJson(`${server.url}/v1/liq/hours?asset=BTC`)
    t.equal(status, 200)
    const hours = new Set(
      fx.ticks.filter((tk) => tk.kind === 'liquidation' && tk.asset === 'BTC' && tickTime(tk) > fx.endMs - 24 * HOUR).map((tk) => Math.floor(tickTime(tk) / HOUR)),
    )
    t.same(body.data, { asset: 'BTC', hours_observed: hours.size, hours_required: 24, figure: `${hours.size}/24`, ready: hours.size >= 24 })
    const unknown = await getJson(`${server.url}/v1/liq/hours?asset=DOGE`)
    t.equal(unknown.status, 404)
    t.equal(unknown.body.error.code, 'ASSET_NOT_FOUND')
  })

  t.test('a universe record on the tape: delisted → 404, listed without ticks → snapshot from its row', async (t) => {
    const at = isoMs(fx.endMs)
    const row = (symbol: string, over: Partial<UniverseTick['assets'][number]> = {}) => ({
      symbol, mark: 10, mid: 10, oracle: 10, funding: 0.0000125, open_interest: 100, day_volume_usd: 1000, prev_day_price: 8, max_leverage: 10, delisted: false, ...over,
    })
    const uni: UniverseTick = {
      v: TICK_SCHEMA_VERSION, kind: 'universe', asset: '*', instrument: '*',
      provenance: { source: 'hyperliquid:perp', provider: 'hyperliquid-info', timestamp: at, received_at: at, quality: 'real' },
      assets: [
        row('BTC', { day_volume_usd: 5e9 }), row('ETH', { day_volume_usd: 2e9 }), row('SOL', { day_volume_usd: 1e9 }),
        row('kPEPE', { mid: 0.01, mark: 0.011, day_volume_usd: 3e6 }), row('LOOM', { delisted: true, mid: null, day_volume_usd: 0 }),
      ],
    }
    await fx.append([uni])
    const loom = await getJson(`${server.url}/v1/market/LOOM`)
    t.equal(loom.status, 404, 'delisted → 404')
    t.equal(loom.body.error.code, 'ASSET_NOT_FOUND')
    const pepe = await getJson(`${server.url}/v1/market/KPEPE`)
    t.equal(pepe.status, 200)
    t.equal(pepe.body.data.asset, 'KPEPE')
    t.same(pepe.body.data.quote, { price: 0.01, bid: null, ask: null, mark: 0.011, index: 10, volume_24h: 3e6 })
    t.same(pepe.body.data.derived, { mid: 0.01, spread_bps: null })
    t.equal(pepe.body.data.provenance.timestamp, at)
    t.equal(pepe.body.data.provenance.quality, 'real')
    const u = await getJson(`${server.url}/v1/universe`)
    t.same(u.body.data.assets.map((a: { symbol: string }) => a.symbol), ['BTC', 'ETH', 'SOL', 'KPEPE'], 'delisted dropped, volume desc, upper-case tickers')
    t.equal(u.body.data.total_live, 4)
    t.equal(u.body.data.venue, 'hyperliquid')
    t.equal(u.body.data.quality, 'real', 'a venue record keeps its own quality')
    const pepeRow = u.body.data.assets[3]
    t.ok(Math.abs(pepeRow.change_24h - (0.01 / 8 - 1)) < 1e-12)
    t.equal(pepeRow.oi_usd, 100 * 0.011)
    t.equal(pepeRow.delisted, false)
    const doge = await getJson(`${server.url}/v1/market/DOGE`)
    t.equal(doge.status, 404, 'absent from the known universe → 404')
  })

  t.test('a snapshot is built once between ticks and rebuilt by the next one', async (t) => {
    const first = await market.snapshot('BTC')
    const again = await market.snapshot('BTC')
    t.equal(again, first, 'nothing consumed since: the same answer object')
    t.ok(Object.isFrozen(first) && Object.isFrozen(first!.snapshot.quote), 'kept answers are deeply frozen')
    const mid = lastTick(fx.ticks, 'BTC', 'mid')!
    const at = fx.endMs + 60_000
    await fx.append([{ ...mid, price: mid.price * 1.01, provenance: { ...mid.provenance, timestamp: isoMs(at), received_at: isoMs(at) } }])
    const after = await market.snapshot('BTC')
    t.not(after, first, 'a consumed tick invalidates the kept answer')
    t.equal(after!.snapshot.quote.price, mid.price * 1.01)
    t.equal(after!.snapshot.provenance.timestamp, isoMs(at))
    const served = await getJson(`${server.url}/v1/market/BTC`)
    t.equal(served.body.data.quote.price, mid.price * 1.01, 'and the route serves the new one')
    t.equal(served.body.data.provenance.age_ms, 0)
  })

  t.test('marketcap with no provider configured → 503 PROVIDER_DOWN SERVICE_UNWIRED', async (t) => {
    const { status, body } = await getJson(`${server.url}/v1/marketcap`)
    t.equal(status, 503)
    t.equal(body.error.code, 'PROVIDER_DOWN')
    t.equal(body.error.detail.reason, 'SERVICE_UNWIRED')
    t.equal(body.error.detail.missing, 'coingecko')
  })
})

t.test('against a wall clock (live) a kept snapshot lasts only while the clock reads the same', async (t) => {
  const fx = await marketFixture(t, { seed: 22, hours: 2, assets: ['BTC'] })
  let wall = fx.endMs + 5_000
  const state = new MarketState({ clock: { now: () => wall } })
  for (const tk of fx.ticks) state.ingest(tk)
  const at = isoMs(fx.endMs)
  // Answers are kept only once a universe is known (the synthetic tape carries none).
  state.ingest({
    v: TICK_SCHEMA_VERSION, kind: 'universe', asset: '*', instrument: '*',
    provenance: { source: 'hyperliquid:perp', provider: 'hyperliquid-info', timestamp: at, received_at: at, quality: 'real' },
    assets: [{ symbol: 'BTC', mark: 10, mid: 10, oracle: 10, funding: 0, open_interest: 1, day_volume_usd: 1, prev_day_price: 9, max_leverage: 40, delisted: false }],
  })
  const market = new MarketServices({ state, universe: new ReplayUniverseSource(state) })
  const first = await market.snapshot('BTC')
  t.equal(await market.snapshot('BTC'), first, 'same millisecond: the same answer')
  const age = first!.snapshot.provenance.age_ms
  wall += 1_000
  const later = await market.snapshot('BTC')
  t.not(later, first)
  t.equal(later!.snapshot.provenance.age_ms, age + 1_000, 'the age moves with the clock')
})

t.test('nothing consumed yet: universe 503 PROVIDER_DOWN, canonical snapshot 503 STALE_DATA', async (t) => {
  const fx = await marketFixture(t, { seed: 1, hours: 1, assets: ['BTC'] }, () => true)
  const market = new MarketServices({ state: fx.state, universe: new ReplayUniverseSource(fx.state) })
  const server = await withServer(t, { services: { market } })
  const u = await getJson(`${server.url}/v1/universe`)
  t.equal(u.status, 503)
  t.equal(u.body.error.code, 'PROVIDER_DOWN')
  const s = await getJson(`${server.url}/v1/market/BTC`)
  t.equal(s.status, 503)
  t.equal(s.body.error.code, 'STALE_DATA')
  t.equal(s.body.error.detail.reason, 'NO_MARKET_DATA')
  const other = await getJson(`${server.url}/v1/market/DOGE`)
  t.equal(other.status, 503, 'a non-canonical symbol cannot be checked against an unknown universe')
  t.equal(fx.ticks.length, 0)
})
