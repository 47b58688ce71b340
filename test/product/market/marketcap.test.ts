/**
 * GET /v1/marketcap over a real CoinGecko client against a local HTTP server on 127.0.0.1 serving a CONSTRUCTED
 * response (test/helpers/coingecko.ts: the §6 bitcoin example plus constructed rows), with askable computed against
 * the live universe from the Hyperliquid replay server.
 */
import t from 'tap'
import { CoinGeckoClient, parseMarkets } from '../../../ingest/coingecko/CoinGeckoClient.ts'
import { HyperliquidInfoClient } from '../../../ingest/hyperliquid/HyperliquidInfoClient.ts'
import { CoinGeckoMarketCapSource } from '../../../product/market/CoinGeckoMarketCapSource.ts'
import { HyperliquidUniverseSource } from '../../../product/market/HyperliquidUniverseSource.ts'
import { MarketServices } from '../../../product/market/MarketServices.ts'
import { ProviderHealth } from '../../../product/platform/ProviderHealth.ts'
import { withReplayServer } from '../../helpers/HyperliquidReplayServer.ts'
import { marketFixture } from '../../helpers/marketTape.ts'
import { withServer } from '../../helpers/serving/server.ts'
import { coingeckoStub, CONSTRUCTED_MARKETS } from '../../helpers/coingecko.ts'

async function getJson(url: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url)
  return { status: res.status, body: await res.json() }
}

t.test('the client parses the §6 shape and sends the demo key header', async (t) => {
  const cg = await coingeckoStub(t, () => ({ status: 200, json: CONSTRUCTED_MARKETS }))
  const client = new CoinGeckoClient({ baseUrl: cg.url, apiKey: 'demo-key-123' })
  const got = await client.markets({ perPage: 10 })
  t.equal(got.data.length, 6)
  t.same(got.data[0], { id: 'bitcoin', symbol: 'btc', name: 'Bitcoin', market_cap: 1656538234098, market_cap_rank: 1, current_price: 83476, last_updated: '2025-03-30T12:00:00.000Z' })
  const req = cg.requests[0]!
  t.equal(req.headers['x-cg-demo-api-key'], 'demo-key-123')
  t.match(req.url, /^\/api\/v3\/coins\/markets\?vs_currency=usd&order=market_cap_desc&per_page=10&page=1$/)
  t.equal(new CoinGeckoClient({ baseUrl: 'https://pro-api.coingecko.com/api/v3', apiKey: 'k' }).baseUrl, 'https://pro-api.coingecko.com/api/v3')
  t.throws(() => parseMarkets([{ id: 'x', symbol: 'x', name: 'X', market_cap: '12' }]), /\/0\/market_cap must be a number or null/)
  t.throws(() => new CoinGeckoClient({ baseUrl: 'ftp://nope' }), /CoinGeckoClient options\/baseUrl/)
})

t.test('GET /v1/marketcap: askable true / false / null against the universe', async (t) => {
  const cg = await coingeckoStub(t, () => ({ status: 200, json: CONSTRUCTED_MARKETS }))
  const hl = await withReplayServer(t)
  const fx = await marketFixture(t, { seed: 4, hours: 1, assets: ['BTC'] })
  const providers = new ProviderHealth()
  const recorder = providers.track('coingecko', 'marketcap')
  const marketcap = new CoinGeckoMarketCapSource({ client: new CoinGeckoClient({ baseUrl: cg.url }), recorder })
  const universe = new HyperliquidUniverseSource({ client: new HyperliquidInfoClient({ baseUrl: hl.baseUrl }) })
  const server = await withServer(t, { services: { market: new MarketServices({ state: fx.state, universe, marketcap }), providers } })

  const { status, body } = await getJson(`${server.url}/v1/marketcap`)
  t.equal(status, 200)
  t.equal(body.data.source, 'coingecko')
  t.equal(body.meta.pricing, null)
  t.same(body.data.coins, [
    { rank: 1, symbol: 'BTC', name: 'Bitcoin', market_cap_usd: 1656538234098, askable: true },
    { rank: 2, symbol: 'ETH', name: 'Ethereum', market_cap_usd: 220_000_000_000, askable: true },
    { rank: 3, symbol: 'USDT', name: 'Tether', market_cap_usd: 144_000_000_000, askable: false },
    { rank: 6, symbol: 'SOL', name: 'Solana', market_cap_usd: 64_000_000_000, askable: true },
    { rank: 900, symbol: 'LOOM', name: 'Loom Network', market_cap_usd: 60_000_000, askable: false },
  ], 'descending by market cap; unranked row left out; delisted LOOM and absent USDT not askable')
  t.equal(providers.list()[0]!.status, 'ok')
  await getJson(`${server.url}/v1/marketcap`)
  t.equal(cg.requests.length, 1, 'cached')
})

t.test('askable is null when the universe is unknown; 503 when the provider never answered', async (t) => {
  let fail = false
  const cg = await coingeckoStub(t, () => (fail ? { status: 429, json: { status: { error_code: 429 } } } : { status: 200, json: CONSTRUCTED_MARKETS }))
  const hl = await withReplayServer(t)
  hl.injectFault('status500', 100, (b) => b.type === 'metaAndAssetCtxs')
  const fx = await marketFixture(t, { seed: 4, hours: 1, assets: ['BTC'] })
  let now = Date.parse('2026-02-01T00:00:00Z')
  const clock = { now: () => now }
  const providers = new ProviderHealth({ clock })
  const recorder = providers.track('coingecko', 'marketcap')
  const marketcap = new CoinGeckoMarketCapSource({ client: new CoinGeckoClient({ baseUrl: cg.url }), clock, recorder })
  const universe = new HyperliquidUniverseSource({ client: new HyperliquidInfoClient({ baseUrl: hl.baseUrl }), clock })
  const server = await withServer(t, { services: { market: new MarketServices({ state: fx.state, universe, marketcap }), providers } })

  const { status, body } = await getJson(`${server.url}/v1/marketcap`)
  t.equal(status, 200)
  t.ok(body.data.coins.every((c: { askable: unknown }) => c.askable === null), 'universe unknown → askable null')
  const asOf = body.data.as_of

  fail = true
  now += 61_000
  const stale = await getJson(`${server.url}/v1/marketcap`)
  t.equal(stale.status, 200, 'last good list served when a refresh fails')
  t.equal(stale.body.data.as_of, asOf, 'with its true as_of')
  t.equal(providers.list()[0]!.status, 'degraded')
  t.equal(providers.list()[0]!.error_class, 'CG_HTTP_STATUS')

  const cg2 = await coingeckoStub(t, () => ({ status: 500, json: {} }))
  const never = new CoinGeckoMarketCapSource({ client: new CoinGeckoClient({ baseUrl: cg2.url }) })
  const server2 = await withServer(t, { services: { market: new MarketServices({ state: fx.state, universe, marketcap: never }) } })
  const down = await getJson(`${server2.url}/v1/marketcap`)
  t.equal(down.status, 503)
  t.equal(down.body.error.code, 'PROVIDER_DOWN')
  t.equal(down.body.error.detail.provider, 'coingecko')
})
