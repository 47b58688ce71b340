/**
 * Provider health as /readyz and /healthz roll it up, over the real wiring of `svc start` (openMarketServices on a
 * real EmbeddedLog): the event log is critical (down → readyz 503), the tick feed degrades with stale inputs.
 */
import t from 'tap'
import { tickTime } from '../../../ingest/Tick.ts'
import { marketWiringOf, openMarketServices } from '../../../app/openMarketServices.ts'
import { loadConfig } from '../../../app/config.ts'
import { errorClassOf, ProviderHealth } from '../../../product/platform/ProviderHealth.ts'
import { HyperliquidError } from '../../../ingest/hyperliquid/HyperliquidError.ts'
import { marketFixture, TICKS_TOPIC } from '../../helpers/marketTape.ts'
import { withServer } from '../../helpers/serving/server.ts'

async function getJson(url: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url)
  return { status: res.status, body: await res.json() }
}

t.test('readyz: ok, degraded on a stale feed, 503 when the critical event log is down', async (t) => {
  const fx = await marketFixture(t, { seed: 9, hours: 2, assets: ['BTC', 'ETH'] })
  let now = Date.parse('2026-03-01T00:00:00Z')
  const clock = { now: () => now }
  const wiring = await openMarketServices({ log: fx.log, ticksTopic: TICKS_TOPIC, options: { universe: 'replay' }, clock, probes: false })
  t.teardown(() => wiring.close())
  await wiring.state.caughtUp()
  const server = await withServer(t, { services: { market: wiring.market, providers: wiring.providers } })

  const ok = await getJson(`${server.url}/readyz`)
  t.equal(ok.status, 200)
  t.equal(ok.body.data.status, 'ok')
  const bySlug = Object.fromEntries(ok.body.data.providers.map((p: { slug: string }) => [p.slug, p]))
  t.same(Object.keys(bySlug).sort(), ['event-log', 'tick-feed'], 'replay mode, no CoinGecko configured')
  t.equal(bySlug['event-log'].critical, true)
  t.equal(bySlug['event-log'].status, 'ok')
  t.type(bySlug['event-log'].latency_ms, 'number')
  t.equal(bySlug['tick-feed'].status, 'ok')
  t.equal(bySlug['tick-feed'].last_success_at, new Date(fx.endMs).toISOString(), 'last tick event time')

  // A later record for BTC only: ETH's inputs are now 10+ minutes behind the replay clock.
  const lateBtc = fx.ticks.filter((tk) => tk.asset === 'BTC' && tickTime(tk) === fx.endMs).map((tk) => ({
    ...tk, provenance: { ...tk.provenance, timestamp: new Date(fx.endMs + 10 * 60_000).toISOString() },
  }))
  await fx.append(lateBtc)
  await wiring.state.caughtUp()
  const degraded = await getJson(`${server.url}/readyz`)
  t.equal(degraded.status, 200)
  t.equal(degraded.body.data.status, 'degraded')
  const feed = degraded.body.data.providers.find((p: { slug: string }) => p.slug === 'tick-feed')
  t.equal(feed.status, 'degraded')
  t.equal(feed.error_class, 'STALE_INPUT')
  t.equal((await getJson(`${server.url}/healthz`)).body.data.status, 'degraded', '/healthz rolls up the same way')

  // The event log fails: down at the next probe (no grace window: a write now would hang or fail), critical → 503.
  await fx.state.close()
  await fx.log.close()
  await wiring.eventLog.probe()
  const down = await getJson(`${server.url}/readyz`)
  t.equal(down.status, 503)
  t.equal(down.body.error.code, 'PROVIDER_DOWN')
  t.equal(down.body.error.detail.reason, 'NOT_READY')
  const log1 = down.body.error.detail.providers.find((p: { slug: string }) => p.slug === 'event-log')
  t.equal(log1.status, 'down')
  t.match(log1.error_class, /^(LOG_[A-Z_]+|E[A-Z]+)$/, 'a typed log error or the OS error code')
  const hz = await getJson(`${server.url}/healthz`)
  t.equal(hz.status, 200, 'liveness still answers')
  t.equal(hz.body.data.status, 'down')
})

t.test('call-tracked status rules and error classes', async (t) => {
  let now = 1_000_000
  const h = new ProviderHealth({ clock: { now: () => now }, downAfterMs: 1000 })
  const r = h.track('x', 'venue')
  t.match(h.list()[0], { status: 'degraded', error_class: 'NOT_YET_CHECKED', last_success_at: null })
  r.success(12.34)
  t.match(h.list()[0], { status: 'ok', latency_ms: 12.3, error_class: null, last_success_at: new Date(now).toISOString() })
  r.failure(new HyperliquidError('HL_TIMEOUT', 'slow'), 5000)
  t.match(h.list()[0], { status: 'degraded', error_class: 'HL_TIMEOUT' })
  now += 1001
  t.match(h.list()[0], { status: 'down', error_class: 'HL_TIMEOUT' })
  t.throws(() => h.track('x', 'venue'), /already registered/)
  t.equal(errorClassOf(new TypeError('x')), 'TypeError')
  t.equal(errorClassOf('boom'), 'UnknownError')
})

t.test('environment: SVC_UNIVERSE and provider URLs are validated naming the field', async (t) => {
  t.same(marketWiringOf(loadConfig({})), { universe: 'replay' })
  t.same(marketWiringOf(loadConfig({ SVC_UNIVERSE: 'hyperliquid', SVC_HL_BASE_URL: 'http://127.0.0.1:1', SVC_COINGECKO_URL: 'https://api.coingecko.com/api/v3', SVC_COINGECKO_KEY: 'k' })), {
    universe: 'hyperliquid', hlBaseUrl: 'http://127.0.0.1:1', coingeckoUrl: 'https://api.coingecko.com/api/v3', coingeckoKey: 'k',
  })
  t.throws(() => loadConfig({ SVC_UNIVERSE: 'live' }), /environment\/SVC_UNIVERSE/)
  t.throws(() => loadConfig({ SVC_COINGECKO_URL: 'nope' }), /environment\/SVC_COINGECKO_URL/)
})
