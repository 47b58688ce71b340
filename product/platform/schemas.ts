/** Platform shapes: provider health rows, /healthz, /readyz and GET /v1/providers (spec, Platform and measured record). */
import { NullableInstant, NullableNumber, NullableString, StringEnum, Type, type Static } from '../../common/schema.ts'

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

/** Spec: "GET /readyz | { status, uptime_s, providers: [...] }"; /healthz: "liveness plus provider rollup; data.status". */
export const HEALTH = Type.Object(
  { status: StringEnum(PROVIDER_STATUSES), uptime_s: Type.Number({ minimum: 0 }), providers: Type.Array(PROVIDER_HEALTH) },
  Strict,
)

export const PROVIDERS = Type.Object({ providers: Type.Array(PROVIDER_HEALTH) }, Strict)

/** Provider inventory and health (readyz rollup, GET /v1/providers). */
export interface ProviderRegistry {
  list(): ProviderHealthRow[]
}
