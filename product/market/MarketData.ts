/**
 * What the routes read of the market domain: the free snapshot, universe, market-cap list and liquidation-hour figure,
 * and the paid surfaces (liquidation surface, funding). MarketServices implements it; tests use in-memory doubles.
 */
import { deepFreeze } from '../../common/deepFreeze.ts'
import type { MaybePromise } from '../../common/MaybePromise.ts'
import type { CanonicalAsset } from '../../common/schema.ts'
import type { PaidCall } from '../../pipeline/journal/PaidCall.ts'
import type { UnitOfWork } from '../../pipeline/journal/UnitOfWork.ts'
import type { Freshness } from '../../pipeline/features/FeatureSnapshot.ts'
import type { LiqHours, MarketCapList, MarketSnapshot, Universe } from './schemas.ts'

/** A market snapshot with its inputs' freshness (GET /v1/market/{asset}). */
export interface SnapshotRead {
  snapshot: MarketSnapshot
  freshness: Freshness[]
}

/**
 * A paid market surface (liquidation surface, funding): the data plus what meta needs. `reserved` is true when every
 * decision in the answer re-served an already recorded one (no new row, so no charge); `refusal` when the answer
 * carries decisions and every one is a refusal.
 */
export interface MarketRead<T = unknown> {
  data: T
  /** meta.state: 'ok', 'degraded' (an input breached its budget) or 'unavailable' (surface not available). */
  state: string
  freshness: Freshness[]
  data_sources: string[]
  reserved?: boolean
  refusal?: boolean
}

export interface MarketData {
  /** Unknown or delisted symbol → null (404 ASSET_NOT_FOUND). */
  snapshot(symbol: string): MaybePromise<SnapshotRead | null>
  /** Read failure with no prior snapshot → ServiceError PROVIDER_DOWN. */
  universe(q: { limit: number; q: string | null }): Promise<Universe>
  marketcap(): Promise<MarketCapList>
  liqHours(asset: string): Promise<LiqHours | null>
  liquidationSurface(asset: CanonicalAsset, payment: PaidCall): Promise<MarketRead>
  fundingSnapshot(payment: PaidCall): Promise<MarketRead>
  fundingAsset(asset: CanonicalAsset, payment: PaidCall, unit: UnitOfWork): Promise<MarketRead>
  fundingOpportunities(payment: PaidCall, unit: UnitOfWork): Promise<MarketRead>
}

/** An answer of the market domain: its data and the meta it implies (state, freshness, sources). */
export interface MarketAnswer {
  data: unknown
  meta: { state: string; freshness: Freshness[]; data_sources: string[] }
  refusal?: true
  charge?: false
}

/** Built once per frozen snapshot read (MarketServices keeps one per symbol between ticks) and frozen with it. */
const snapshotAnswers = new WeakMap<SnapshotRead, MarketAnswer>()

/** A free snapshot: degraded when any input breached its staleness budget ("A degraded snapshot is still served"). */
export function snapshotAnswer(r: SnapshotRead): MarketAnswer {
  const known = snapshotAnswers.get(r)
  if (known) return known
  const degraded = r.freshness.some((f) => !f.ok)
  const answer: MarketAnswer = {
    data: r.snapshot,
    meta: { state: degraded ? 'degraded' : 'ok', freshness: r.freshness, data_sources: [r.snapshot.provenance.source] },
  }
  if (Object.isFrozen(r)) snapshotAnswers.set(r, deepFreeze(answer))
  return answer
}

/** A paid market surface; decisions in it follow decisionAnswer (a refusal, a re-served repeat). */
export function marketAnswer(read: MarketRead): MarketAnswer {
  return {
    ...(read.refusal ? { refusal: true as const } : {}),
    ...(read.reserved ? { charge: false as const } : {}),
    data: read.data,
    meta: { state: read.state, freshness: read.freshness, data_sources: read.data_sources },
  }
}
