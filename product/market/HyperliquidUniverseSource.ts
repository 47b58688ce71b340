/**
 * The live venue universe: Hyperliquid `metaAndAssetCtxs` behind a cache of at most 15 seconds.
 *
 * Spec (Endpoints): "GET /v1/universe | … cached for at most 15 seconds; read failure with no prior snapshot: 503
 * PROVIDER_DOWN". Universe rules: "degraded quality means a failed refresh served the last good snapshot with its
 * true as_of". The as_of is the instant the venue's answer arrived (metaAndAssetCtxs carries no time of its own).
 */
import type { HyperliquidInfoClient } from '../../ingest/hyperliquid/HyperliquidInfoClient.ts'
import { universeTick } from '../../ingest/hyperliquid/toTicks.ts'
import type { UniverseAsset as TickUniverseAsset } from '../../ingest/Tick.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import { systemClock, type Clock } from '../../common/Clock.ts'
import { CachedRead } from './CachedRead.ts'
import { errorClassOf, type CallRecorder } from '../platform/ProviderHealth.ts'
import type { UniverseSource, VenueUniverse } from './UniverseSource.ts'

/** Spec (Limits): "cache at most 15 seconds". */
export const UNIVERSE_CACHE_MS = 15_000

export interface HyperliquidUniverseSourceOptions {
  client: HyperliquidInfoClient
  /** Clock of the cache age (default: wall clock). */
  clock?: Clock
  /** At most 15 000. */
  ttlMs?: number
  recorder?: CallRecorder
}

export class HyperliquidUniverseSource implements UniverseSource {
  readonly mode = 'hyperliquid' as const
  readonly #cache: CachedRead<TickUniverseAsset[]>
  readonly #clock: Clock

  constructor(options: HyperliquidUniverseSourceOptions) {
    const ttlMs = options.ttlMs ?? UNIVERSE_CACHE_MS
    if (!(ttlMs > 0 && ttlMs <= UNIVERSE_CACHE_MS)) throw new RangeError(`HyperliquidUniverseSource options/ttlMs: must be in (0, ${UNIVERSE_CACHE_MS}]`)
    this.#clock = options.clock ?? systemClock
    const client = options.client
    this.#cache = new CachedRead({
      ttlMs,
      clock: this.#clock,
      recorder: options.recorder,
      fetch: async () => {
        const got = await client.metaAndAssetCtxs()
        const tick = universeTick(got.data, { receivedAt: got.receivedAt, provider: 'hyperliquid-info' })
        return { value: tick.assets, asOf: got.receivedAt }
      },
    })
  }

  async read(): Promise<VenueUniverse> {
    try {
      const v = await this.#cache.read()
      return { venue: 'hyperliquid', asOf: v.asOf, quality: v.fresh ? 'real' : 'degraded', assets: v.value }
    } catch (err) {
      throw new ServiceError('PROVIDER_DOWN', {
        message: 'The venue universe could not be read and no earlier snapshot exists.',
        detail: { reason: 'PROVIDER_DOWN', provider: 'hyperliquid-info', error_class: errorClassOf(err) },
      })
    }
  }

  peek(): VenueUniverse | null {
    const v = this.#cache.peek()
    return v ? { venue: 'hyperliquid', asOf: v.asOf, quality: v.fresh ? 'real' : 'degraded', assets: v.value } : null
  }

  /** Forces a refresh (probes keep the cache warm with it); throws the venue error. */
  async refresh(): Promise<void> {
    await this.#cache.refresh()
  }

  now(): number {
    return this.#clock.now()
  }
}
