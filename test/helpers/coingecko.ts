/**
 * A CoinGecko stand-in on 127.0.0.1 serving a CONSTRUCTED /coins/markets response (no recorded CoinGecko payload
 * exists in ../shared): the `bitcoin` row is the example quoted in hyperliquid-api.md §6 verbatim (its
 * atl_change_percentage and last_updated are placeholders there); the other rows are constructed in the same shape
 * with placeholder numbers: ethereum, solana (listed on the venue), tether (absent from the venue universe),
 * loom-network (listed on the venue but delisted), and one row with a null market_cap_rank (nullable per §6).
 */
import { createServer, type IncomingMessage } from 'node:http'

export const BITCOIN_FROM_REFERENCE = {
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

export const CONSTRUCTED_MARKETS = [
  BITCOIN_FROM_REFERENCE,
  constructed('ethereum', 'eth', 'Ethereum', 220_000_000_000, 2),
  constructed('tether', 'usdt', 'Tether', 144_000_000_000, 3),
  constructed('solana', 'sol', 'Solana', 64_000_000_000, 6),
  constructed('loom-network', 'loom', 'Loom Network', 60_000_000, 900),
  constructed('unranked-token', 'unr', 'Unranked', 1_000, null),
]

export async function coingeckoStub(t: { teardown(fn: () => unknown): void }, body: () => { status: number; json: unknown }) {
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

