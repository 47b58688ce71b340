/**
 * Live universe against the Hyperliquid replay server on 127.0.0.1 (its metaAndAssetCtxs answer is CONSTRUCTED from
 * the recorded meta cassette plus the real BTC context quoted in hyperliquid-api.md §2; see the server's header):
 * cache of at most 15 s (injected clock), degraded with the true as_of once the venue fails, 503 PROVIDER_DOWN with
 * no prior snapshot, and the provider status that /readyz rolls up.
 */
import t from 'tap'
import { HyperliquidInfoClient } from '../../../ingest/hyperliquid/HyperliquidInfoClient.ts'
import { HyperliquidUniverseSource } from '../../../product/market/HyperliquidUniverseSource.ts'
import { MarketServices } from '../../../product/market/MarketServices.ts'
import { ProviderHealth } from '../../../product/platform/ProviderHealth.ts'
import { withReplayServer } from '../../helpers/HyperliquidReplayServer.ts'
import { marketFixture } from '../../helpers/marketTape.ts'
import { withServer } from '../../helpers/serving/server.ts'

async function getJson(url: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url)
  return { status: res.status, body: await res.json() }
}

function manualClock(start = Date.parse('2026-02-01T00:00:00Z')) {
  let now = start
  return { now: () => now, advance: (ms: number) => void (now += ms) }
}

t.test('live universe: cache ≤ 15 s, degraded with the true as_of, readyz rollup', async (t) => {
  const hl = await withReplayServer(t)
  const fx = await marketFixture(t, { seed: 2, hours: 1, assets: ['BTC'] })
  const clock = manualClock()
  const providers = new ProviderHealth({ clock })
  t.teardown(() => providers.close())
  const recorder = providers.track('hyperliquid-info', 'venue')
  const universe = new HyperliquidUniverseSource({ client: new HyperliquidInfoClient({ baseUrl: hl.baseUrl, timeoutMs: 2000 }), clock, recorder })
  const market = new MarketServices({ state: fx.state, universe })
  const server = await withServer(t, { services: { market, providers } })
  const calls = () => hl.requests.filter((r) => r.type === 'metaAndAssetCtxs').length

  const h0 = await getJson(`${server.url}/readyz`)
  t.equal(h0.body.data.providers[0].status, 'degraded', 'never checked yet')
  t.equal(h0.body.data.providers[0].error_class, 'NOT_YET_CHECKED')

  const first = await getJson(`${server.url}/v1/universe?limit=500`)
  t.equal(first.status, 200)
  t.equal(calls(), 1)
  const u = first.body.data
  t.equal(u.venue, 'hyperliquid')
  t.equal(u.quality, 'real')
  t.equal(u.total_live, 28, '28 recorded perps; the delisted LOOM dropped')
  t.notOk(u.assets.some((a: { symbol: string }) => a.symbol === 'LOOM'))
  // BTC is the real recorded context (hyperliquid-api.md §2), the only one with volume, so it sorts first.
  t.same(u.assets[0], {
    symbol: 'BTC', mid: 77558.5, mark: 77562, change_24h: 77558.5 / 76317 - 1, volume_24h: 1516669192.1953897476,
    oi_usd: 27353.17682 * 77562, funding: -0.0000015186, max_leverage: 50, delisted: false, // maxLeverage from the recorded meta cassette
  })
  t.ok(u.assets.some((a: { symbol: string }) => a.symbol === 'KPEPE'), 'the venue\'s kPEPE listed as the upper-case ticker KPEPE')

  clock.advance(14_999)
  const cached = await getJson(`${server.url}/v1/universe`)
  t.equal(calls(), 1, 'served from cache before 15 s')
  t.equal(cached.body.data.as_of, u.as_of)
  t.equal(cached.body.data.count, 28, "default limit 50 covers all 28")

  clock.advance(1)
  const refreshed = await getJson(`${server.url}/v1/universe`)
  t.equal(calls(), 2, 'refreshed at 15 s')
  t.ok(Date.parse(refreshed.body.data.as_of) >= Date.parse(u.as_of))
  const goodAsOf = refreshed.body.data.as_of

  const ready = await getJson(`${server.url}/readyz`)
  t.equal(ready.status, 200)
  t.equal(ready.body.data.status, 'ok')
  const hlRow = ready.body.data.providers.find((p: { slug: string }) => p.slug === 'hyperliquid-info')
  t.equal(hlRow.status, 'ok')
  t.equal(hlRow.last_success_at, new Date(clock.now()).toISOString())
  t.type(hlRow.latency_ms, 'number')

  // The venue starts failing: the last good snapshot is served, degraded, with its true as_of.
  hl.injectFault('status500', 50, (b) => b.type === 'metaAndAssetCtxs')
  clock.advance(15_000)
  const degraded = await getJson(`${server.url}/v1/universe`)
  t.equal(degraded.status, 200)
  t.equal(degraded.body.data.quality, 'degraded')
  t.equal(degraded.body.data.as_of, goodAsOf, 'true as_of of the last good snapshot')
  t.equal(degraded.body.meta.state, 'degraded')
  t.equal(calls(), 3)
  const again = await getJson(`${server.url}/v1/universe`)
  t.equal(again.body.data.quality, 'degraded')
  t.equal(calls(), 3, 'a failing venue is not asked again on every request')

  const r2 = await getJson(`${server.url}/readyz`)
  t.equal(r2.status, 200)
  t.equal(r2.body.data.status, 'degraded', 'readyz degraded while a provider is degraded')
  const hlRow2 = r2.body.data.providers.find((p: { slug: string }) => p.slug === 'hyperliquid-info')
  t.equal(hlRow2.status, 'degraded')
  t.equal(hlRow2.error_class, 'HL_HTTP_STATUS')

  // Past the down window with no success: down; non-critical, so the service is degraded, not down.
  clock.advance(6 * 60_000)
  await getJson(`${server.url}/v1/universe`)
  const r3 = await getJson(`${server.url}/readyz`)
  t.equal(r3.body.data.providers.find((p: { slug: string }) => p.slug === 'hyperliquid-info').status, 'down')
  t.equal(r3.status, 200)
  t.equal(r3.body.data.status, 'degraded')
  const hz = await getJson(`${server.url}/healthz`)
  t.equal(hz.body.data.status, 'degraded')
})

t.test('live universe with no prior snapshot: 503 PROVIDER_DOWN; marketcap askable null', async (t) => {
  const hl = await withReplayServer(t)
  hl.injectFault('status500', 50, (b) => b.type === 'metaAndAssetCtxs')
  const fx = await marketFixture(t, { seed: 2, hours: 1, assets: ['BTC'] })
  const clock = manualClock()
  const universe = new HyperliquidUniverseSource({ client: new HyperliquidInfoClient({ baseUrl: hl.baseUrl, timeoutMs: 2000 }), clock })
  const market = new MarketServices({ state: fx.state, universe })
  const server = await withServer(t, { services: { market } })
  const { status, body } = await getJson(`${server.url}/v1/universe`)
  t.equal(status, 503)
  t.equal(body.error.code, 'PROVIDER_DOWN')
  t.equal(body.error.retryable, true)
  t.equal(body.error.detail.error_class, 'HL_HTTP_STATUS')
  const btc = await getJson(`${server.url}/v1/market/BTC`)
  t.equal(btc.status, 200, 'canonical assets are served from the tick stream while the universe is unknown')
})

t.test('ttl above 15 s is refused', async (t) => {
  t.throws(() => new HyperliquidUniverseSource({ client: new HyperliquidInfoClient(), ttlMs: 15_001 }), /ttlMs/)
})
