/**
 * Response schemas of the paid market surfaces (spec, Market, liquidation, funding, wallet, universe): liquidation
 * surface, funding snapshot, funding per asset, funding opportunities and their assumptions block. Shared by the
 * registry, OpenAPI and the route walker, like serving/routes/schemas.ts.
 */
import { CANONICAL_ASSET, DECISION_RECORD, objectOf } from './schemas.ts'

const instant = { type: 'string', format: 'date-time' } as const
const nullableInstant = { type: ['string', 'null'], format: 'date-time' } as const
const nnum = { type: ['number', 'null'] } as const
const usd = { type: 'number', minimum: 0 } as const
const str = { type: 'string' } as const

/** Where a figure came from: the tick's provenance, its age against the state's clock. */
export const MARKET_PROVENANCE = objectOf(
  {
    source: { type: 'string', description: "venue and market type ('hyperliquid:perp', 'okx:swap') or 'simulated'" },
    provider: str,
    timestamp: instant,
    received_at: instant,
    age_ms: { type: 'number', minimum: 0 },
    quality: { enum: ['real', 'degraded', 'simulated'] },
  },
  ['source', 'provider', 'timestamp', 'received_at', 'age_ms', 'quality'],
)

/** Spec (Assumptions block): "economics_modeled is always the string 'none'; raw context, never a profit claim". */
export const ASSUMPTIONS = objectOf(
  {
    economics_modeled: { const: 'none' },
    content: { const: 'raw_context' },
    funding_unit: str,
    basis_definition: str,
    neutral_funding_per_hour: { type: 'number' },
    not_modeled: { type: 'array', items: str },
    note: str,
  },
  ['economics_modeled', 'content', 'funding_unit', 'basis_definition', 'neutral_funding_per_hour', 'not_modeled', 'note'],
)

const SURFACE_WINDOW = { type: 'string', pattern: '^[0-9]+[mhd]$' } as const

/**
 * Spec: "available: { asset, venue, window, available: true, surface: { window, total_usd, longs_usd, shorts_usd } };
 * unavailable: { available: false, reason } as a 200".
 */
export const LIQUIDATION_SURFACE = {
  oneOf: [
    objectOf(
      {
        asset: CANONICAL_ASSET,
        venue: str,
        window: SURFACE_WINDOW,
        available: { const: true },
        surface: objectOf(
          { window: SURFACE_WINDOW, total_usd: usd, longs_usd: usd, shorts_usd: usd, count: { type: 'integer', minimum: 0 } },
          ['window', 'total_usd', 'longs_usd', 'shorts_usd', 'count'],
        ),
        hours_observed: { type: 'integer', minimum: 0 },
        hours_required: { type: 'integer', minimum: 1 },
        window_start: instant,
        window_end: instant,
        provenance: { oneOf: [{ type: 'null' }, MARKET_PROVENANCE] },
      },
      ['asset', 'venue', 'window', 'available', 'surface', 'hours_observed', 'hours_required', 'window_start', 'window_end', 'provenance'],
    ),
    objectOf(
      {
        asset: CANONICAL_ASSET,
        available: { const: false },
        reason: { type: 'string', description: "e.g. 'liquidation_tape_hours_below_24 (7/24)'" },
        hours_observed: { type: 'integer', minimum: 0 },
        hours_required: { type: 'integer', minimum: 1 },
      },
      ['asset', 'available', 'reason', 'hours_observed', 'hours_required'],
    ),
  ],
} as const

/** The funding of one asset: the rate accruing now (predicted) or, without a live prediction, the last settled one. */
export const FUNDING_ROW = objectOf(
  {
    asset: CANONICAL_ASSET,
    venue: { type: ['string', 'null'] },
    rate: { ...nnum, description: 'fraction per hour (an 8-hourly venue rate is divided by 8)' },
    unit: { const: 'fraction_per_hour' },
    rate_kind: { enum: ['predicted', 'settled', null] },
    interval_hours: nnum,
    next_funding_at: nullableInstant,
    next_funding_basis: { enum: ['predicted', 'venue_schedule', null] },
    last_settlement: {
      oneOf: [
        { type: 'null' },
        objectOf({ rate_per_hour: { type: 'number' }, settled_at: instant, premium: nnum }, ['rate_per_hour', 'settled_at', 'premium']),
      ],
    },
    provenance: { oneOf: [{ type: 'null' }, MARKET_PROVENANCE] },
  },
  ['asset', 'venue', 'rate', 'unit', 'rate_kind', 'interval_hours', 'next_funding_at', 'next_funding_basis', 'last_settlement', 'provenance'],
)

/** Spec: "{ funding: [{ asset, venue, rate, next_funding_at, provenance }] } for each canonical asset". */
export const FUNDING_SNAPSHOT = objectOf({ funding: { type: 'array', items: FUNDING_ROW } }, ['funding'])

/**
 * Spec: "{ asset, venue, funding, decisions: { S06_funding_anomaly, S07_funding_persistence }, basis: { basis_bps,
 * perp_mark, index }, execution_risk: { top_of_book_depth_usd, spread_bps }, assumptions }".
 */
export const FUNDING_ASSET = objectOf(
  {
    asset: CANONICAL_ASSET,
    venue: str,
    funding: FUNDING_ROW,
    decisions: objectOf({ S06_funding_anomaly: DECISION_RECORD, S07_funding_persistence: DECISION_RECORD }, ['S06_funding_anomaly', 'S07_funding_persistence']),
    basis: objectOf({ basis_bps: nnum, perp_mark: nnum, index: nnum }, ['basis_bps', 'perp_mark', 'index']),
    execution_risk: objectOf({ top_of_book_depth_usd: nnum, spread_bps: nnum }, ['top_of_book_depth_usd', 'spread_bps']),
    assumptions: ASSUMPTIONS,
  },
  ['asset', 'venue', 'funding', 'decisions', 'basis', 'execution_risk', 'assumptions'],
)

/** Spec: "{ opportunities: [{ asset, funding_bps, basis_bps, decision }], assumptions }" (an S06 scan). */
export const FUNDING_OPPORTUNITIES = objectOf(
  {
    opportunities: {
      type: 'array',
      items: objectOf(
        { asset: CANONICAL_ASSET, funding_bps: { ...nnum, description: 'basis points per hour' }, basis_bps: nnum, decision: DECISION_RECORD },
        ['asset', 'funding_bps', 'basis_bps', 'decision'],
      ),
    },
    assumptions: ASSUMPTIONS,
  },
  ['opportunities', 'assumptions'],
)
