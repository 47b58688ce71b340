/**
 * The success envelope and the JSON Schemas of both envelopes.
 *
 * Spec (Response envelope): "Every success response is an object {data, meta}. Free routes carry meta.pricing as
 * null (typed, present)." Every meta field below is always present; absent values are null or [] (never omitted).
 */
import { ERROR_CODES } from './errors.ts'

export interface Freshness {
  /** Input name, e.g. 'hyperliquid:perp'. */
  input: string
  ok: boolean
  staleness_budget_ms: number
  age_ms: number | null
  last_success_at: string | null
}

export interface MetaPricing {
  key: string
  credits: number
  usd: string
  rung: number
  rail: 'x402' | 'credits'
  payment_id: string
}

export interface Meta {
  request_id: string
  timestamp: string
  state: string
  probabilities: Record<string, number> | null
  confidence: { value: number; basis: 'jev' } | null
  freshness: Freshness[]
  horizon: string | null
  data_sources: string[]
  methodology_version: string
  pricing: MetaPricing | null
}

/** What a handler may set; the rest is filled in by the dispatcher. */
export type MetaOverrides = Partial<Omit<Meta, 'request_id' | 'timestamp' | 'methodology_version' | 'pricing'>>

export interface SuccessEnvelope<T = unknown> {
  data: T
  meta: Meta
}

export function buildMeta(
  requestId: string,
  nowMs: number,
  methodologyVersion: string,
  pricing: MetaPricing | null,
  o: MetaOverrides | undefined,
): Meta {
  return {
    request_id: requestId,
    timestamp: new Date(nowMs).toISOString(),
    state: o?.state ?? 'ok',
    probabilities: o?.probabilities ?? null,
    confidence: o?.confidence ?? null,
    freshness: o?.freshness ?? [],
    horizon: o?.horizon ?? null,
    data_sources: o?.data_sources ?? [],
    methodology_version: methodologyVersion,
    pricing,
  }
}

const isoInstant = { type: 'string', format: 'date-time' } as const

export const FRESHNESS_SCHEMA = {
  type: 'object',
  required: ['input', 'ok', 'staleness_budget_ms', 'age_ms', 'last_success_at'],
  properties: {
    input: { type: 'string' },
    ok: { type: 'boolean' },
    staleness_budget_ms: { type: 'number', minimum: 0 },
    age_ms: { type: ['number', 'null'] },
    last_success_at: { type: ['string', 'null'], format: 'date-time' },
  },
} as const

export const META_PRICING_SCHEMA = {
  type: 'object',
  required: ['key', 'credits', 'usd', 'rung', 'rail', 'payment_id'],
  properties: {
    key: { type: 'string' },
    credits: { type: 'integer', minimum: 0 },
    usd: { type: 'string', description: 'decimal USD string at the current rung' },
    rung: { type: 'integer', minimum: 0 },
    rail: { enum: ['x402', 'credits'] },
    payment_id: { type: 'string' },
  },
} as const

export const META_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: [
    'request_id', 'timestamp', 'state', 'probabilities', 'confidence', 'freshness', 'horizon', 'data_sources',
    'methodology_version', 'pricing',
  ],
  properties: {
    request_id: { type: 'string' },
    timestamp: isoInstant,
    state: { type: 'string' },
    probabilities: { type: ['object', 'null'], additionalProperties: { type: 'number', minimum: 0, maximum: 1 } },
    confidence: {
      oneOf: [
        { type: 'null' },
        {
          type: 'object',
          required: ['value', 'basis'],
          properties: { value: { type: 'number', minimum: 0, maximum: 1 }, basis: { const: 'jev' } },
        },
      ],
    },
    freshness: { type: 'array', items: FRESHNESS_SCHEMA },
    horizon: { type: ['string', 'null'] },
    data_sources: { type: 'array', items: { type: 'string' } },
    methodology_version: { type: 'string' },
    pricing: { oneOf: [{ type: 'null' }, META_PRICING_SCHEMA] },
  },
} as const

export const ERROR_ENVELOPE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      additionalProperties: false,
      required: ['code', 'message', 'retryable', 'retry_after_ms', 'request_id', 'detail'],
      properties: {
        code: { enum: ERROR_CODES },
        message: { type: 'string' },
        retryable: { type: 'boolean' },
        retry_after_ms: { type: ['number', 'null'] },
        request_id: { type: 'string' },
        detail: { type: 'object', required: ['reason'], properties: { reason: { type: 'string' } } },
      },
    },
  },
} as const

/** Wraps a data schema in the success envelope (the meta schema is referenced, or inlined when no ref is given). */
export function envelopeSchema(data: object, metaRef?: string): object {
  return {
    type: 'object',
    additionalProperties: false,
    required: ['data', 'meta'],
    properties: { data, meta: metaRef ? { $ref: metaRef } : META_SCHEMA },
  }
}
