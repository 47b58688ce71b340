/**
 * The tick model: one record schema for every venue event the service consumes.
 *
 * A tape is a file of these records, one JSON object per line (NDJSON, optionally gzip), in event-time order.
 * Every record carries its schema version `v` and its provenance. The full field reference is docs/tape-format.md.
 */
import type { ErrorObject } from 'ajv'
import { codedError } from '../common/CodedError.ts'
import { compile } from '../common/validation.ts'
import { CANONICAL_ASSETS } from '../common/schema.ts'

export const TICK_SCHEMA_VERSION = 1 as const

/** Canonical assets sold on paid surfaces (spec: Shared conventions, asset): the one list is common/schema.ts's. */
export { CANONICAL_ASSETS }
export type CanonicalAsset = (typeof CANONICAL_ASSETS)[number]

export const TICK_KINDS = [
  'bar',
  'mid',
  'mark',
  'index',
  'funding',
  'predicted_funding',
  'open_interest',
  'book_top',
  'liquidation',
  'trade',
  'universe',
] as const
export type TickKind = (typeof TICK_KINDS)[number]

/**
 * source: the true venue and market type the number describes, e.g. 'binance:spot', 'bybit:linear_perp',
 * 'okx:swap', 'hyperliquid:perp', or 'simulated' for generator output. Spot is never relabelled as perp.
 * provider: the adapter that produced the record (e.g. 'binance-kline-csv', 'hyperliquid-info', 'svc-generator').
 * timestamp: event time (ISO-8601 UTC, ms). For bars it is the bar close, the instant the bar became knowable.
 * received_at: when the record reached us; for recorded files, the instant a live recorder would have had it.
 * quality: 'real' (venue data as received), 'degraded' (known defect, e.g. a possibly unfinished last bar),
 * 'simulated' (generator output).
 */
export interface Provenance {
  source: string
  provider: string
  timestamp: string
  received_at: string
  quality: 'real' | 'degraded' | 'simulated'
}

interface TickBase<K extends TickKind> {
  v: typeof TICK_SCHEMA_VERSION
  kind: K
  /** Upper-case symbol ('BTC'); '*' for venue-wide records such as universe snapshots. */
  asset: string
  /** The venue's own instrument name ('BTCUSDT', 'BTC-USDT-SWAP', 'BTC'). */
  instrument: string
  provenance: Provenance
}

export type VolumeUnit = 'base' | 'contracts' | 'quote'

export interface BarTick extends TickBase<'bar'> {
  interval: string
  open_time: string
  open: number
  high: number
  low: number
  close: number
  volume: number
  volume_unit: VolumeUnit
}
export interface PriceTick<K extends 'mid' | 'mark' | 'index'> extends TickBase<K> {
  price: number
}
export interface FundingTick extends TickBase<'funding'> {
  /** Settled rate as a fraction per interval_hours. */
  rate: number
  interval_hours: number
  premium: number | null
}
export interface PredictedFundingTick extends TickBase<'predicted_funding'> {
  rate: number
  interval_hours: number
  next_funding_at: string
}
export interface OpenInterestTick extends TickBase<'open_interest'> {
  value: number
  unit: 'base' | 'usd' | 'contracts'
}
export interface BookTopTick extends TickBase<'book_top'> {
  bid: number
  ask: number
  bid_size: number
  ask_size: number
  /** Notional within the top levels on each side, when the source had depth. */
  bid_depth_usd: number | null
  ask_depth_usd: number | null
}
export interface LiquidationTick extends TickBase<'liquidation'> {
  /** Side of the position that was liquidated. */
  side: 'long' | 'short'
  price: number
  size: number
  notional_usd: number
}
export interface TradeTick extends TickBase<'trade'> {
  side: 'buy' | 'sell'
  price: number
  size: number
  trade_id: string | null
}
export interface UniverseAsset {
  symbol: string
  mark: number | null
  mid: number | null
  oracle: number | null
  funding: number | null
  open_interest: number | null
  day_volume_usd: number | null
  prev_day_price: number | null
  max_leverage: number | null
  delisted: boolean
}
export interface UniverseTick extends TickBase<'universe'> {
  assets: UniverseAsset[]
}

export type Tick =
  | BarTick
  | PriceTick<'mid'>
  | PriceTick<'mark'>
  | PriceTick<'index'>
  | FundingTick
  | PredictedFundingTick
  | OpenInterestTick
  | BookTopTick
  | LiquidationTick
  | TradeTick
  | UniverseTick

const num = { type: 'number' } as const
const nullableNum = { type: ['number', 'null'] } as const
const iso = { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,6})?Z$' } as const

const provenanceSchema = {
  type: 'object',
  required: ['source', 'provider', 'timestamp', 'received_at', 'quality'],
  additionalProperties: false,
  properties: {
    source: { type: 'string', minLength: 1 },
    provider: { type: 'string', minLength: 1 },
    timestamp: iso,
    received_at: iso,
    quality: { enum: ['real', 'degraded', 'simulated'] },
  },
} as const

function kindSchema(kind: TickKind, props: Record<string, unknown>, required: string[]) {
  return {
    if: { properties: { kind: { const: kind } } },
    then: { required, properties: props },
  }
}

/** JSON Schema (draft 2020-12 subset) of one tape record; published in docs/tape-format.md. */
export const TICK_JSON_SCHEMA = {
  $id: 'svc/tick/v1',
  type: 'object',
  required: ['v', 'kind', 'asset', 'instrument', 'provenance'],
  properties: {
    v: { const: TICK_SCHEMA_VERSION },
    kind: { enum: [...TICK_KINDS] },
    asset: { type: 'string', pattern: '^([A-Z0-9]{1,20}|\\*)$' },
    instrument: { type: 'string', minLength: 1 },
    provenance: provenanceSchema,
  },
  allOf: [
    kindSchema(
      'bar',
      {
        interval: { type: 'string', pattern: '^\\d+[mhdw]$' },
        open_time: iso,
        open: num,
        high: num,
        low: num,
        close: num,
        volume: num,
        volume_unit: { enum: ['base', 'contracts', 'quote'] },
      },
      ['interval', 'open_time', 'open', 'high', 'low', 'close', 'volume', 'volume_unit'],
    ),
    kindSchema('mid', { price: num }, ['price']),
    kindSchema('mark', { price: num }, ['price']),
    kindSchema('index', { price: num }, ['price']),
    kindSchema('funding', { rate: num, interval_hours: num, premium: nullableNum }, ['rate', 'interval_hours', 'premium']),
    kindSchema(
      'predicted_funding',
      { rate: num, interval_hours: num, next_funding_at: iso },
      ['rate', 'interval_hours', 'next_funding_at'],
    ),
    kindSchema('open_interest', { value: num, unit: { enum: ['base', 'usd', 'contracts'] } }, ['value', 'unit']),
    kindSchema(
      'book_top',
      { bid: num, ask: num, bid_size: num, ask_size: num, bid_depth_usd: nullableNum, ask_depth_usd: nullableNum },
      ['bid', 'ask', 'bid_size', 'ask_size', 'bid_depth_usd', 'ask_depth_usd'],
    ),
    kindSchema(
      'liquidation',
      { side: { enum: ['long', 'short'] }, price: num, size: num, notional_usd: num },
      ['side', 'price', 'size', 'notional_usd'],
    ),
    kindSchema(
      'trade',
      { side: { enum: ['buy', 'sell'] }, price: num, size: num, trade_id: { type: ['string', 'null'] } },
      ['side', 'price', 'size', 'trade_id'],
    ),
    kindSchema(
      'universe',
      {
        assets: {
          type: 'array',
          items: {
            type: 'object',
            required: ['symbol', 'mark', 'mid', 'oracle', 'funding', 'open_interest', 'day_volume_usd', 'prev_day_price', 'max_leverage', 'delisted'],
            properties: {
              symbol: { type: 'string', minLength: 1 },
              mark: nullableNum,
              mid: nullableNum,
              oracle: nullableNum,
              funding: nullableNum,
              open_interest: nullableNum,
              day_volume_usd: nullableNum,
              prev_day_price: nullableNum,
              max_leverage: nullableNum,
              delisted: { type: 'boolean' },
            },
          },
        },
      },
      ['assets'],
    ),
  ],
} as const

const validateCompiled = compile(TICK_JSON_SCHEMA)

/** A record that does not match the tick schema; `path` is a JSON pointer to the offending field. */
export class TickValidationError extends codedError({
  TICK_INVALID: { retryable: false, meaning: 'a record does not match the tick schema (docs/tape-format.md); path names the field' },
}) {
  readonly path: string
  /** The reason without the path, for callers that print the path themselves. */
  readonly reason: string
  constructor(path: string, reason: string) {
    super('TICK_INVALID', `${path || '/'}: ${reason}`)
    this.path = path
    this.reason = reason
  }
}

function describe(err: ErrorObject | undefined): TickValidationError {
  if (!err) return new TickValidationError('', 'invalid record')
  const missing = err.keyword === 'required' ? `/${String(err.params.missingProperty)}` : ''
  return new TickValidationError(`${err.instancePath}${missing}`, err.message ?? 'invalid')
}

/** Validates one parsed record; returns it typed, or throws TickValidationError naming the field path. */
export function validateTick(value: unknown): Tick {
  if (!validateCompiled(value)) throw describe(validateCompiled.errors?.[0])
  const tick = value as Tick
  if (Number.isNaN(parseInstant(tick.provenance.timestamp))) {
    throw new TickValidationError('/provenance/timestamp', 'not a valid instant')
  }
  return tick
}

// Ticks come in runs that share one instant (every kind of an asset at each minute), and each consumer parses the
// timestamp more than once (validation, event time), so the last instant parsed is remembered.
let lastInstant = ''
let lastInstantMs = Number.NaN

/** Date.parse, memoized on the last string: ISO-8601 instant → epoch ms (NaN when not a valid date). */
export function parseInstant(iso: string): number {
  if (iso === lastInstant) return lastInstantMs
  const ms = Date.parse(iso)
  lastInstant = iso
  lastInstantMs = ms
  return ms
}

/** Event time in epoch milliseconds. */
export function tickTime(tick: Tick): number {
  return parseInstant(tick.provenance.timestamp)
}

// A small direct-mapped memo: reads format the same few instants over and over (last observation per input, e.g.
// for every health check), ingestion formats each instant once; a slot holds the last instant that hashed to it.
const ISO_BITS = 6
const ISO_SLOTS = 1 << ISO_BITS
const isoKeys = new Float64Array(ISO_SLOTS).fill(Number.NaN)
const isoValues: string[] = new Array<string>(ISO_SLOTS).fill('')

/** Formats epoch ms as the ISO-8601 UTC instant used throughout tapes. */
export function isoMs(ms: number): string {
  // Fibonacci hashing of the whole second: instants on an hourly grid all share their low bits, so `ms & 63` sent
  // every one of them to one slot.
  const slot = Math.imul(Math.floor(ms / 1000) | 0, 0x9e3779b1) >>> (32 - ISO_BITS)
  if (isoKeys[slot] === ms) return isoValues[slot] as string
  const s = new Date(ms).toISOString()
  isoKeys[slot] = ms
  isoValues[slot] = s
  return s
}

/**
 * Serializes a tick as one tape line. JSON.stringify keeps insertion order, and every producer builds records
 * in schema order, so the same tick always yields the same bytes.
 */
export function tickLine(tick: Tick): string {
  return JSON.stringify(tick)
}

/** The log key that gives per-asset order downstream. */
export function tickKey(tick: Pick<Tick, 'asset'>): string {
  return tick.asset
}
