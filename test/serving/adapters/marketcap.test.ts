/**
 * GET /v1/marketcap over a real CoinGecko client against a local HTTP server on 127.0.0.1, with askable computed
 * against the live universe from the Hyperliquid replay server.
 *
 * CONSTRUCTED response (no recorded CoinGecko payload exists in ../shared): the `bitcoin` row is the example quoted
 * in hyperliquid-api.md §6 verbatim (its atl_change_percentage and last_updated are placeholders there); the other
 * rows are constructed in the same shape with placeholder numbers: ethereum, solana (listed on the venue), tether
 * (absent from the venue universe), loom-network (listed on the venue but delisted), and one row with a null
 * market_cap_rank (nullable per §6).
 */
import t from 'tap'
import { createServer, type IncomingMessage } from 'node:http'
import { CoinGeckoClient, parseMarkets } from '../../../ingest/coingecko/CoinGeckoClient.ts'
import { HyperliquidInfoClient } from '../../../ingest/hyperliquid/HyperliquidInfoClient.ts'
import { CoinGeckoMarketCapSource } from '../../../serving/adapters/CoinGeckoMarketCapSource.ts'
import { HyperliquidUniverseSource } from '../../../serving/adapters/HyperliquidUniverseSource.ts'
import { MarketServices } from '../../../serving/adapters/MarketServices.ts'
import { ProviderHealth } from '../../../serving/adapters/ProviderHealth.ts'
import { withReplayServer } from '../../helpers/HyperliquidReplayServer.ts'
import { marketFixture } from '../../helpers/marketTape.ts'
import { withServer } from '../../helpers/serving/server.ts'

const BITCOIN_FROM_REFERENCE = {
  id: 'bitcoin', symbol: 'btc', name: 'Bitcoin', image: 'https://coin-images.coingecko.com/…',
  current_price: 83476, market_cap: 1656538234098, market_cap_rank: 1, fully_diluted_valuation: 1656538234098,
  total_volume: 21416038166, high_24h: 85504, low_24h: 83288, price_change_24h: -1700.72,
  price_change_percentage_24h: -1.99671, market_cap_change_24h: -33489577891.86,
  market_cap_change_percentage_24h: -1.9816, circulating_supply: 19843590, total_supply: 19843590,
  max_supply: 21000000, ath: 108786, ath_change_percentage: -23.192, ath_date: '2025-01-20T09:11:54.494Z',
  atl: 67.81, atl_change_percentage: 123000.5, atl_date: '2013-07-06T00:00:00.000Z', roi: null,
  last_updated: '2025-03-30T12:00:00.000Z',
}

function constructed(id: string, symbol: string, name: string, cap: number, rank: number | null) {
  return { ...BITCOIN_FROM_REFERENCE, id, symbol, name, market_cap: cap, market_cap_rank: rank, fully_diluted_valuation: null, max_supply: null }
}

const CONSTRUCTED_MARKETS = [
  BITCOIN_FROM_REFERENCE,
  constructed('ethereum', 'eth', 'Ethereum', 220_000_000_000, 2),
  constructed('tether', 'usdt', 'Tether', 144_000_000_000, 3),
  constructed('solana', 'sol', 'Solana', 64_000_000_000, 6),
  constructed('loom-network', 'loom', 'Loom Network', 60_000_000, 900),
  constructed('unranked-token', 'unr', 'Unranked', 1_000, null),
]

async function coingeckoStub(t: { teardown(fn: () => unknown): void }, body: () => { status: number; json: unknown }) {
  const requests: IncomingMessage[] = []
  const srv = createServer((req, res) => {
    requests.push(req)
    const { status, json } = body()
    const text = JSON.stringify(json)
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
    res.end(text)
  })
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', () => resolve()))
  t.teardown(() => new Promise<void>((resolve) => srv.close(() => resolve())))
  const addr = srv.address() as { port: number }
  return { url: `http://127.0.0.1:${addr.port}/api/v3`, requests }
}

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
