/** Platform shapes: provider health rows, /healthz, /readyz and GET /v1/providers (spec, Platform and measured record). */
import { NullableInstant, NullableNumber, NullableString, StringEnum, Type, type Static } from '../../common/schema.ts'
import { VENUE_STATUS, type VenueStatus } from '../../pipeline/venue/VenueStatus.ts'

const Strict = { additionalProperties: false } as const

export const PROVIDER_STATUSES = ['ok', 'degraded', 'down'] as const
export type ProviderStatus = (typeof PROVIDER_STATUSES)[number]

/** Spec (/readyz): "providers: [{ slug, kind, status, last_success_at, latency_ms, error_class }]". */
export const PROVIDER_HEALTH = Type.Object(
  {
    slug: Type.String(),
    kind: Type.String(),
    status: StringEnum(PROVIDER_STATUSES),
    last_success_at: NullableInstant,
    latency_ms: NullableNumber,
    error_class: NullableString,
    /** A critical provider down makes the service down (readyz 503); a non-critical one only degrades it. */
    critical: Type.Boolean(),
  },
  Strict,
)
export type ProviderHealthRow = Static<typeof PROVIDER_HEALTH>

export const DATA_TIME_MODES = ['present', 'replay'] as const
/** simulated: the built-in generator; real: venue data as received; degraded: the live venue's feed is reconnecting, stale or unreachable. */
export const DATA_QUALITIES = ['simulated', 'real', 'degraded'] as const
export type DataQuality = (typeof DATA_QUALITIES)[number]

/**
 * What time the data lives in (docs/decisions.md): `present` serves the wall clock (the simulated venue generated up
 * to now, then live at 1x); `replay` plays a dated tape, so every instant served is that tape's virtual time.
 */
export const DATA_TIME = Type.Object(
  {
    mode: StringEnum(DATA_TIME_MODES),
    /** 'simulated' for the built-in generator, 'hyperliquid' for the live venue, else the tape's file name. */
    source: Type.String(),
    simulated: Type.Boolean(),
    /** What the data is: simulated, real, or real but degraded (the live feed is not current). */
    quality: StringEnum(DATA_QUALITIES),
    /** The newest venue event the service holds: the present (minus lag) or the replay's virtual time. */
    event_time: NullableInstant,
    /** present: wall time minus event_time (how far the feed is behind); replay: null (virtual time has no wall lag). */
    lag_ms: NullableNumber,
    /** Event time per wall time: 1 in the present; the replay speed (0: as fast as possible) on a tape. */
    speed: Type.Number({ minimum: 0 }),
    /** True from a (re)start until the market state has caught up with the venue; market routes answer 503 meanwhile. */
    warming_up: Type.Boolean(),
  },
  Strict,
)
export type DataTime = Static<typeof DATA_TIME>

/**
 * Several instances (issue 32, SVC_CLUSTER=on): which instance answers, whether it feeds the venue, and who owns each
 * payer partition as this instance last read the partition lease (null: none right now, a rebalance; requests for
 * its payers answer 503 PAYER_OWNER_UNREACHABLE meanwhile). A payer's partition: murmur2 of the lower-cased address.
 */
export const CLUSTER_STATUS = Type.Object(
  {
    instance: Type.String(),
    venue_feed_here: Type.Boolean(),
    payer_partitions: Type.Array(Type.Object({ partition: Type.Integer({ minimum: 0 }), owner: NullableString, here: Type.Boolean() }, Strict)),
  },
  Strict,
)
export type ClusterStatus = Static<typeof CLUSTER_STATUS>
export interface ClusterStatusSource {
  status(): ClusterStatus
}

/**
 * Spec: "GET /readyz | { status, uptime_s, providers: [...] }"; /healthz: "liveness plus provider rollup; data.status".
 * data_time (ours) says which time the answers live in; null when no venue feed is wired. cluster (ours): null on one
 * instance.
 */
export const HEALTH = Type.Object(
  {
    status: StringEnum(PROVIDER_STATUSES),
    uptime_s: Type.Number({ minimum: 0 }),
    providers: Type.Array(PROVIDER_HEALTH),
    data_time: Type.Union([DATA_TIME, Type.Null()]),
    /** The live venue connector's state (pipeline/venue/VenueStatus.ts); null when the data is simulated or a tape. */
    venue: Type.Union([VENUE_STATUS, Type.Null()]),
    cluster: Type.Union([CLUSTER_STATUS, Type.Null()]),
  },
  Strict,
)

export const PROVIDERS = Type.Object({ providers: Type.Array(PROVIDER_HEALTH) }, Strict)

/** The time the served data lives in (/readyz data_time, the x-svc-data-time header). */
export interface DataTimeSource {
  status(): DataTime
  /** The header value every response carries, e.g. `replay; virtual_time=2026-01-31T10:00:00.000Z; speed=60; source=simulated`. */
  header(): string
  /** True until the market state has caught up after a (re)start. */
  readonly warmingUp: boolean
  /** The live venue connector's state, or null when the data is simulated or a tape. */
  venue(): VenueStatus | null
}

/** Provider inventory and health (readyz rollup, GET /v1/providers). */
export interface ProviderRegistry {
  list(): ProviderHealthRow[]
}
