/**
 * Serving configuration: one options object, validated once by its schema (errors name the field path). The
 * composition root fills it from the environment (app/config.ts).
 */
import { Address, Nullable, Type, type Static } from '../common/schema.ts'
import { optionsValidator } from '../common/validation.ts'
import { DEFAULT_SESSION_TTL_S } from '../product/identity/PayerProof.ts'
import { DEFAULT_RATE_LIMITS } from './RateLimiter.ts'

const BUCKET = Type.Object(
  { burst: Type.Integer({ minimum: 1, maximum: 1_000_000 }), refillPerSec: Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000 }) },
  { additionalProperties: false },
)

export const SERVING_CONFIG_SCHEMA = Type.Object(
  {
    /** Public base URL used in discovery documents and x402 resource URLs; default http://<host>:<port>. */
    baseUrl: Type.Optional(Nullable(Type.String({ format: 'uri', pattern: '^https?://[^/]+$' }))),
    /** Recipient of x402 payments on Base (eip155:8453); null when none is configured (no x402 requirement is advertised). */
    payTo: Nullable(Address),
    /** Human documentation deployment; /docs redirects there when set, else to /openapi.json. */
    docsUrl: Type.Optional(Nullable(Type.String({ format: 'uri' }))),
    /** Version reported in meta.methodology_version. */
    methodologyVersion: Type.Optional(Type.String({ minLength: 1 })),
    /** Service version reported by the agent card. */
    serviceVersion: Type.Optional(Type.String({ minLength: 1 })),
    /** Request body limit in bytes. */
    maxBodyBytes: Type.Optional(Type.Integer({ minimum: 1024, maximum: 16 * 1024 * 1024 })),
    /** Trust x-forwarded-for for the client address (only behind a proxy you run). */
    trustProxy: Type.Optional(Type.Boolean()),
    /** Graceful-shutdown drain timeout. */
    drainTimeoutMs: Type.Optional(Type.Integer({ minimum: 0 })),
    /** Share of answered requests written to the access log: 0 none, 1 every one (metrics/AccessLog.ts). */
    accessLog: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    /** Browser origins (scheme://host[:port]) allowed to call the MCP endpoint besides its own and the base URL's. */
    mcpOrigins: Type.Optional(Type.Array(Type.String({ pattern: '^https?://[^/]+$' }))),
    /** Browser origins (scheme://host[:port]) whose pages may call the API cross-origin (CORS); none: no CORS header at all. */
    corsOrigins: Type.Optional(Type.Array(Type.String({ pattern: '^https?://[^/]+$' }))),
    /** Lifetime of a bearer session opened with a sign-in (POST /v1/auth/session), in seconds. */
    sessionTtlS: Type.Optional(Type.Integer({ minimum: 60, maximum: 30 * 24 * 3600 })),
    /** Live streams (issue 33): unsent bytes a stream connection may hold before it is dropped as a slow reader. */
    streamMaxBufferedBytes: Type.Optional(Type.Integer({ minimum: 16 * 1024, maximum: 256 * 1024 * 1024 })),
    /** Live streams open at once per client IP (SSE and WebSocket together); one more is refused with 429. */
    streamMaxPerIp: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
    /** Token buckets: per client IP (unproven callers) and per proven payer (spec, Limits: "per IP and per verified payer"). */
    rateLimits: Type.Optional(
      Type.Object(
        { ip: BUCKET, payer: BUCKET },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
)

export type ServingConfig = Required<Static<typeof SERVING_CONFIG_SCHEMA>>

export const CONFIG_DEFAULTS: Omit<ServingConfig, 'payTo'> = {
  baseUrl: null,
  docsUrl: null,
  methodologyVersion: '1.0.0',
  serviceVersion: '0.1.0',
  maxBodyBytes: 64 * 1024,
  trustProxy: false,
  drainTimeoutMs: 10_000,
  accessLog: 1,
  mcpOrigins: [],
  corsOrigins: [],
  sessionTtlS: DEFAULT_SESSION_TTL_S,
  rateLimits: DEFAULT_RATE_LIMITS,
  streamMaxBufferedBytes: 1024 * 1024,
  streamMaxPerIp: 16,
}

const validate = optionsValidator<Static<typeof SERVING_CONFIG_SCHEMA>>(SERVING_CONFIG_SCHEMA, 'serving config')

/** Validates and completes a partial config; throws naming every bad field path. */
export function resolveServingConfig(input: Partial<ServingConfig> & { payTo: string | null }): ServingConfig {
  return { ...CONFIG_DEFAULTS, ...validate(input) } as ServingConfig
}
