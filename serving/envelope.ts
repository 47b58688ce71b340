/**
 * The success envelope and the JSON Schemas of both envelopes.
 *
 * Spec (Response envelope): "Every success response is an object {data, meta}. Free routes carry meta.pricing as
 * null (typed, present)." Every meta field below is always present; absent values are null or [] (never omitted).
 */
import { ERROR_CODES } from '../common/errors.ts'
import { slabConcat } from './http/byteSlab.ts'
import type { Freshness } from '../pipeline/features/FeatureSnapshot.ts'
import { ANSWER_SIGNATURE, type AnswerSignature } from '../record/schemas.ts'


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
  /** One per decision record in data (issue 29): the deployment key's signature over it; [] when data holds none. */
  signatures: AnswerSignature[]
}

/** What a handler may set; the rest is filled in by the dispatcher. */
export type MetaOverrides = Partial<Omit<Meta, 'request_id' | 'timestamp' | 'methodology_version' | 'pricing'>>

export interface SuccessEnvelope<T = unknown> {
  data: T
  meta: Meta
}

/**
 * `new Date(ms).toISOString()` for instants in years 0..9999, formatting the date and time once per second and
 * appending the milliseconds (every response carries meta.timestamp).
 */
let isoSecond = Number.NaN
let isoSecondPrefix = ''
export function isoTimestamp(ms: number): string {
  const sec = Math.floor(ms / 1000)
  if (sec !== isoSecond) {
    const full = new Date(sec * 1000).toISOString()
    if (full.length !== 24) return new Date(ms).toISOString()
    isoSecond = sec
    isoSecondPrefix = full.slice(0, 20)
  }
  const milli = ms - sec * 1000
  return isoSecondPrefix + (milli < 10 ? '00' : milli < 100 ? '0' : '') + milli + 'Z'
}

/**
 * JSON of a frozen object is computed once: a service that hands out the same frozen (deeply immutable) value for
 * unchanged state, e.g. a ledger record, is serialized once rather than per request. A small plain wrapper around
 * such values (`{ chips }`) is written around their cached JSON. Anything else is serialized every time; the text
 * is always exactly JSON.stringify's.
 */
const frozenJson = new WeakMap<object, string>()
const WRAPPER_MAX_KEYS = 4

export function jsonOf(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value)
  if (Object.isFrozen(value)) {
    let s = frozenJson.get(value)
    if (s === undefined) {
      s = JSON.stringify(value)
      frozenJson.set(value, s)
    }
    return s
  }
  return wrapperJson(value) ?? JSON.stringify(value)
}

/** A plain object of at most WRAPPER_MAX_KEYS keys holding a frozen value, as text; null when it is not one. */
function wrapperJson(value: object): string | null {
  if (Array.isArray(value) || Object.getPrototypeOf(value) !== Object.prototype || 'toJSON' in value) return null
  const keys = Object.keys(value)
  if (keys.length === 0 || keys.length > WRAPPER_MAX_KEYS) return null
  let anyFrozen = false
  for (const k of keys) {
    const v = (value as Record<string, unknown>)[k]
    if (typeof v === 'object' && v !== null && Object.isFrozen(v)) anyFrozen = true
  }
  if (!anyFrozen) return null
  let out = '{'
  for (const k of keys) {
    const v = (value as Record<string, unknown>)[k]
    if (typeof v === 'object' && v !== null && 'toJSON' in v) return null
    const j = jsonOf(v)
    if (j === undefined) continue
    out += (out.length === 1 ? '' : ',') + JSON.stringify(k) + ':' + j
  }
  return out + '}'
}

const EMPTY_LIST_JSON = '[]'

/**
 * The envelope's opening through frozen data — `{"data":` + (wrapper head) + data JSON + (wrapper tail) — as UTF-8
 * bytes, cached per frozen value: a response copies them instead of re-encoding a string.
 */
const openedBytes = new WeakMap<object, { head: string; bytes: Buffer }>()

/**
 * That opening for `data` when it is frozen, or a one-key plain wrapper around a frozen value (`{ clocks }`); null
 * otherwise. Only frozen values enter the cache, so a hit needs no Object.isFrozen walk.
 */
function openedFrozen(data: unknown): Buffer | null {
  if (typeof data !== 'object' || data === null) return null
  const direct = openedBytes.get(data)
  if (direct !== undefined && direct.head === '') return direct.bytes
  let head = ''
  let value: object = data
  if (!Object.isFrozen(data)) {
    if (Array.isArray(data) || Object.getPrototypeOf(data) !== Object.prototype || 'toJSON' in data) return null
    const keys = Object.keys(data)
    if (keys.length !== 1) return null
    const v = (data as Record<string, unknown>)[keys[0] as string]
    if (typeof v !== 'object' || v === null) return null
    head = '{' + JSON.stringify(keys[0]) + ':'
    value = v
    const wrapped = openedBytes.get(value)
    if (wrapped !== undefined && wrapped.head === head) return wrapped.bytes
    if (!Object.isFrozen(value)) return null
  }
  // Serialized here rather than through jsonOf, whose cache would keep the same text a second time beside the bytes.
  const json = JSON.stringify(value)
  if (json === undefined) return null
  const bytes = Buffer.from('{"data":' + head + json + (head === '' ? '' : '}'), 'utf8')
  openedBytes.set(value, { head, bytes })
  return bytes
}

/**
 * The success envelope, byte for byte `JSON.stringify({ data, meta: buildMeta(...) })`, written without building
 * the meta object: the constant parts are literals, frozen `data` is copied from its cached UTF-8 bytes, and on free
 * routes the meta after request_id and timestamp is cached per frozen overrides object (the envelope is then one
 * Buffer, which uWS sends without converting a string). requestIdJson is the id as JSON text (the caller knows
 * whether its ids need escaping), like methodologyVersionJson.
 */
export function serializeSuccess(
  data: unknown,
  requestIdJson: string,
  nowMs: number,
  methodologyVersionJson: string,
  pricing: MetaPricing | null,
  o: MetaOverrides | undefined,
): string | Buffer {
  const opened = openedFrozen(data)
  if (opened) {
    const rest = pricing === null ? cachedMetaRest(methodologyVersionJson, o) : null
    if (rest !== null) return slabConcat(opened, metaStamp(requestIdJson, nowMs), rest)
    return slabConcat(opened, metaStamp(requestIdJson, nowMs) + metaRest(methodologyVersionJson, pricing, o) + '}', EMPTY_BYTES)
  }
  const dataJson = jsonOf(data)
  if (dataJson === undefined) {
    const meta = buildMeta(JSON.parse(requestIdJson) as string, nowMs, JSON.parse(methodologyVersionJson) as string, pricing, o)
    return JSON.stringify({ data, meta })
  }
  return '{"data":' + dataJson + metaStamp(requestIdJson, nowMs) + metaRest(methodologyVersionJson, pricing, o) + '}'
}

const EMPTY_BYTES = new Uint8Array(0)

/** `,"meta":{"request_id":…,"timestamp":…` — the part of meta that changes per response. */
function metaStamp(requestIdJson: string, nowMs: number): string {
  return ',"meta":{"request_id":' + requestIdJson + ',"timestamp":"' + isoTimestamp(nowMs) + '"'
}

/** `,"state":…,"pricing":…}` — the rest of meta, closing it. */
function metaRest(methodologyVersionJson: string, pricing: MetaPricing | null, o: MetaOverrides | undefined): string {
  const state = o?.state ?? 'ok'
  return (
    ',"state":' + (state === 'ok' ? '"ok"' : JSON.stringify(state)) +
    ',"probabilities":' + (o?.probabilities != null ? jsonOf(o.probabilities) : 'null') +
    ',"confidence":' + (o?.confidence != null ? JSON.stringify(o.confidence) : 'null') +
    ',"freshness":' + (o?.freshness != null ? jsonOf(o.freshness) : EMPTY_LIST_JSON) +
    ',"horizon":' + (o?.horizon != null ? JSON.stringify(o.horizon) : 'null') +
    ',"data_sources":' + (o?.data_sources != null ? jsonOf(o.data_sources) : EMPTY_LIST_JSON) +
    ',"methodology_version":' + methodologyVersionJson +
    ',"pricing":' + (pricing ? JSON.stringify(pricing) : 'null') +
    ',"signatures":' + (o?.signatures != null ? jsonOf(o.signatures) : EMPTY_LIST_JSON) +
    '}'
  )
}

/**
 * metaRest plus the envelope's closing brace, as bytes, for a free response (pricing null) whose overrides are absent
 * or a deeply frozen object (a frozen handler result re-served for the same record); null when it cannot be cached.
 */
const metaRestCache = new WeakMap<object, { mv: string; bytes: Buffer }>()
let noOverridesRest: { mv: string; bytes: Buffer } | null = null

function cachedMetaRest(mv: string, o: MetaOverrides | undefined): Buffer | null {
  if (o === undefined) {
    if (noOverridesRest?.mv !== mv) noOverridesRest = { mv, bytes: Buffer.from(metaRest(mv, null, undefined) + '}', 'utf8') }
    return noOverridesRest.bytes
  }
  const hit = metaRestCache.get(o)
  if (hit !== undefined && hit.mv === mv) return hit.bytes
  if (!isDeepFrozen(o)) return null
  const bytes = Buffer.from(metaRest(mv, null, o) + '}', 'utf8')
  metaRestCache.set(o, { mv, bytes })
  return bytes
}

function isDeepFrozen(value: object): boolean {
  if (!Object.isFrozen(value)) return false
  for (const v of Object.values(value)) if (typeof v === 'object' && v !== null && !isDeepFrozen(v)) return false
  return true
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
    timestamp: isoTimestamp(nowMs),
    state: o?.state ?? 'ok',
    probabilities: o?.probabilities ?? null,
    confidence: o?.confidence ?? null,
    freshness: o?.freshness ?? [],
    horizon: o?.horizon ?? null,
    data_sources: o?.data_sources ?? [],
    methodology_version: methodologyVersion,
    pricing,
    signatures: o?.signatures ?? [],
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
    'methodology_version', 'pricing', 'signatures',
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
    signatures: { type: 'array', items: ANSWER_SIGNATURE },
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
