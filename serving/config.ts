/**
 * Serving configuration: one options object, validated once by JSON Schema (errors name the field path).
 */
import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'

export interface ServingConfig {
  /** Public base URL used in discovery documents and x402 resource URLs; default http://<host>:<port>. */
  baseUrl: string | null
  /** Recipient of x402 payments on Base (eip155:8453); null when none is configured (no x402 requirement is advertised). */
  payTo: string | null
  /** Human documentation deployment; /docs redirects there when set, else to /openapi.json. */
  docsUrl: string | null
  /** Version reported in meta.methodology_version. */
  methodologyVersion: string
  /** Service version reported by the agent card. */
  serviceVersion: string
  /** Request body limit in bytes. */
  maxBodyBytes: number
  /** Trust x-forwarded-for for the client address (only behind a proxy you run). */
  trustProxy: boolean
  /** Graceful-shutdown drain timeout. */
  drainTimeoutMs: number
}

export const SERVING_CONFIG_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['payTo'],
  properties: {
    baseUrl: { type: ['string', 'null'], format: 'uri', pattern: '^https?://[^/]+$' },
    payTo: { type: ['string', 'null'], pattern: '^0x[0-9a-fA-F]{40}$' },
    docsUrl: { type: ['string', 'null'], format: 'uri' },
    methodologyVersion: { type: 'string', minLength: 1 },
    serviceVersion: { type: 'string', minLength: 1 },
    maxBodyBytes: { type: 'integer', minimum: 1024, maximum: 16 * 1024 * 1024 },
    trustProxy: { type: 'boolean' },
    drainTimeoutMs: { type: 'integer', minimum: 0 },
  },
} as const

export const CONFIG_DEFAULTS: Omit<ServingConfig, 'payTo'> = {
  baseUrl: null,
  docsUrl: null,
  methodologyVersion: '1.0.0',
  serviceVersion: '0.1.0',
  maxBodyBytes: 64 * 1024,
  trustProxy: false,
  drainTimeoutMs: 10_000,
}

const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true })
addFormats.default(ajv)
const validate = ajv.compile(SERVING_CONFIG_SCHEMA)

/** Validates and completes a partial config; throws naming every bad field path. */
export function resolveServingConfig(input: Partial<ServingConfig> & { payTo: string | null }): ServingConfig {
  if (!validate(input)) {
    const msgs = (validate.errors ?? []).map((e) =>
      `config${e.instancePath || ''}${e.keyword === 'required' ? `/${String(e.params.missingProperty)}` : ''} ${e.message ?? 'is invalid'}`,
    )
    throw new Error(`invalid serving config: ${msgs.join('; ')}`)
  }
  return { ...CONFIG_DEFAULTS, ...input }
}

/** Reads the deployment environment (SVC_PAY_TO, SVC_BASE_URL, SVC_DOCS_URL, SVC_MAX_BODY_BYTES, SVC_TRUST_PROXY). */
export function servingConfigFromEnv(env: NodeJS.ProcessEnv = process.env): ServingConfig {
  const input: Partial<ServingConfig> & { payTo: string | null } = { payTo: env.SVC_PAY_TO || null }
  if (env.SVC_BASE_URL) input.baseUrl = env.SVC_BASE_URL.replace(/\/+$/, '')
  if (env.SVC_DOCS_URL) input.docsUrl = env.SVC_DOCS_URL
  if (env.SVC_MAX_BODY_BYTES) input.maxBodyBytes = Number(env.SVC_MAX_BODY_BYTES)
  if (env.SVC_TRUST_PROXY) input.trustProxy = env.SVC_TRUST_PROXY === '1' || env.SVC_TRUST_PROXY === 'true'
  return resolveServingConfig(input)
}
