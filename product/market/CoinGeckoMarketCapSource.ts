/**
 * The market-cap list from CoinGecko `/coins/markets` behind a 60-second cache (CoinGecko refreshes about every
 * 45 s, reference §6). A failed refresh serves the last good list with its true as_of; none → 503 PROVIDER_DOWN.
 */
import type { CoinGeckoClient } from '../../ingest/coingecko/CoinGeckoClient.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import { systemClock, type Clock } from '../../common/Clock.ts'
import { CachedRead } from './CachedRead.ts'
import { errorClassOf, type CallRecorder } from '../platform/ProviderHealth.ts'

export interface MarketCapCoin {
  rank: number
  /** Upper-case ticker (CoinGecko symbols are lower-case and not unique). */
  symbol: string
  name: string
  market_cap_usd: number
}

export interface MarketCapSnapshot {
  source: string
  asOf: number
  coins: MarketCapCoin[]
}

/** What MarketServices reads the market-cap list from. */
export interface MarketCapSource {
  read(): Promise<MarketCapSnapshot>
}

export const MARKETCAP_CACHE_MS = 60_000

export class CoinGeckoMarketCapSource implements MarketCapSource {
  readonly #cache: CachedRead<MarketCapCoin[]>

  constructor(options: { client: CoinGeckoClient; clock?: Clock; ttlMs?: number; perPage?: number; recorder?: CallRecorder }) {
    const client = options.client
    this.#cache = new CachedRead({
      ttlMs: options.ttlMs ?? MARKETCAP_CACHE_MS,
      clock: options.clock ?? systemClock,
      recorder: options.recorder,
      fetch: async () => {
        const got = await client.markets({ perPage: options.perPage ?? 100 })
        const coins = got.data
          .filter((c) => c.market_cap_rank !== null && c.market_cap_rank >= 1 && c.market_cap !== null && c.market_cap >= 0)
          .map((c) => ({ rank: Math.round(c.market_cap_rank!), symbol: c.symbol.toUpperCase(), name: c.name, market_cap_usd: c.market_cap! }))
          .sort((a, b) => b.market_cap_usd - a.market_cap_usd || a.rank - b.rank)
        return { value: coins, asOf: got.receivedAt }
      },
    })
  }

  async read(): Promise<MarketCapSnapshot> {
    try {
      const v = await this.#cache.read()
      return { source: 'coingecko', asOf: v.asOf, coins: v.value }
    } catch (err) {
      throw new ServiceError('PROVIDER_DOWN', {
        message: 'The market-cap provider could not be read and no earlier list exists.',
        detail: { reason: 'PROVIDER_DOWN', provider: 'coingecko', error_class: errorClassOf(err) },
      })
    }
  }

  /** Forces a refresh (health probe); throws the provider error. */
  async refresh(): Promise<void> {
    await this.#cache.refresh()
  }
}
