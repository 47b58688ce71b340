/**
 * Where the venue universe comes from: the live venue (HyperliquidUniverseSource) or the ticks a replay carries
 * (ReplayUniverseSource). Both yield the venue's own rows, delisted ones included; MarketServices drops, sorts and
 * limits them for the route.
 */
import type { UniverseAsset as TickUniverseAsset } from '../../ingest/Tick.ts'

export interface VenueUniverse {
  /** Names the single v1 venue ('hyperliquid'), or the tape's source when a replay carries another. */
  venue: string
  /** The true instant the snapshot was observed, epoch ms. */
  asOf: number
  /**
   * 'degraded' when a failed refresh served this last good snapshot; 'simulated' when the rows come from the built-in
   * generator (ingest/SyntheticMarket.ts), so generated data never says 'real'.
   */
  quality: 'real' | 'degraded' | 'simulated'
  /** Every listed market, delisted ones included (the venue's own spelling in `symbol`). */
  assets: TickUniverseAsset[]
}

export interface UniverseSource {
  readonly mode: 'replay' | 'hyperliquid'
  /** The current universe; throws ServiceError PROVIDER_DOWN when none can be had. */
  read(): Promise<VenueUniverse>
  /** The last known universe without I/O (null when none yet). */
  peek(): VenueUniverse | null
  /** The time as_of is measured against (wall clock live, event time in replay). */
  now(): number
}
