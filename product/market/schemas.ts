/**
 * The market domain's public shapes (spec, Market, liquidation, funding, wallet, universe), each one TypeBox schema
 * with its type inferred from it: the free snapshot, universe, market-cap list and liquidation-hour figure, and the
 * paid surfaces (liquidation surface, funding snapshot, funding per asset, funding opportunities, assumptions block).
 */
import { DECISION_RECORD } from '../../engine/schemas.ts'
import {
  CanonicalAsset, Instant, Nullable, NullableInstant, NullableNumber, NullableString, StringEnum, Type, type Static,
} from '../../common/schema.ts'

const Strict = { additionalProperties: false } as const

/** Spec: "provenance { source, provider, timestamp, received_at, age_ms, quality }". */
export const SNAPSHOT_PROVENANCE = Type.Object(
  { source: Type.String(), provider: Type.String(), timestamp: Instant, received_at: Instant, age_ms: Type.Number({ minimum: 0 }), quality: Type.String() },
  Strict,
)

/** Spec, Market snapshot: quote { price, bid, ask, mark, index, volume_24h }; derived { mid, spread_bps }; provenance. */
export const MARKET_SNAPSHOT = Type.Object(
  {
    asset: Type.String(),
    quote: Type.Object(
      { price: NullableNumber, bid: NullableNumber, ask: NullableNumber, mark: NullableNumber, index: NullableNumber, volume_24h: NullableNumber },
      Strict,
    ),
    derived: Type.Object({ mid: NullableNumber, spread_bps: NullableNumber }, Strict),
    provenance: SNAPSHOT_PROVENANCE,
  },
  Strict,
)
export type MarketSnapshot = Static<typeof MARKET_SNAPSHOT>

/** Spec, Universe row: { symbol, mid, mark, change_24h, volume_24h, oi_usd, funding, max_leverage, delisted }. */
export const UNIVERSE_ASSET = Type.Object(
  {
    symbol: Type.String(),
    mid: NullableNumber,
    mark: NullableNumber,
    change_24h: NullableNumber,
    volume_24h: NullableNumber,
    oi_usd: NullableNumber,
    funding: NullableNumber,
    max_leverage: NullableNumber,
    /** "delisted names are dropped, so every row has delisted false". */
    delisted: Type.Literal(false),
  },
  Strict,
)
export type UniverseAsset = Static<typeof UNIVERSE_ASSET>

export const UNIVERSE = Type.Object(
  {
    venue: Type.String(),
    as_of: Instant,
    // Spec: 'real' or 'degraded'; 'simulated' added for the built-in generator's data (docs/decisions.md).
    quality: StringEnum(['real', 'degraded', 'simulated']),
    assets: Type.Array(UNIVERSE_ASSET),
    count: Type.Integer({ minimum: 0 }),
    total_live: Type.Integer({ minimum: 0 }),
    truncated: Type.Boolean(),
  },
  Strict,
)
export type Universe = Static<typeof UNIVERSE>

/** Spec: "largest coins by market cap, descending; each row has askable true, false or null". */
export const MARKETCAP = Type.Object(
  {
    as_of: Instant,
    source: Type.String(),
    coins: Type.Array(
      Type.Object(
        {
          rank: Type.Integer({ minimum: 1 }),
          symbol: Type.String(),
          name: Type.String(),
          market_cap_usd: Type.Number({ minimum: 0 }),
          askable: Nullable(Type.Boolean()),
        },
        Strict,
      ),
    ),
  },
  Strict,
)
export type MarketCapList = Static<typeof MARKETCAP>

/** GET /v1/liq/hours: "that market's N/24 hourly-observation figure". */
export const LIQ_HOURS = Type.Object(
  {
    asset: Type.String(),
    hours_observed: Type.Integer({ minimum: 0 }),
    hours_required: Type.Integer({ minimum: 1 }),
    /** 'N/24'. */
    figure: Type.String({ pattern: '^[0-9]+/[0-9]+$' }),
    ready: Type.Boolean(),
  },
  Strict,
)
export type LiqHours = Static<typeof LIQ_HOURS>

// ---------------------------------------------------------------- paid surfaces

/** Where a figure came from: the tick's provenance, its age against the state's clock. */
export const MARKET_PROVENANCE = Type.Object(
  {
    source: Type.String({ description: "venue and market type ('hyperliquid:perp', 'okx:swap') or 'simulated'" }),
    provider: Type.String(),
    timestamp: Instant,
    received_at: Instant,
    age_ms: Type.Number({ minimum: 0 }),
    quality: StringEnum(['real', 'degraded', 'simulated']),
  },
  Strict,
)

/** Spec (Assumptions block): "economics_modeled is always the string 'none'; raw context, never a profit claim". */
export const ASSUMPTIONS = Type.Object(
  {
    economics_modeled: Type.Literal('none'),
    content: Type.Literal('raw_context'),
    funding_unit: Type.String(),
    basis_definition: Type.String(),
    neutral_funding_per_hour: Type.Number(),
    not_modeled: Type.Array(Type.String()),
    note: Type.String(),
  },
  Strict,
)

const SurfaceWindow = Type.String({ pattern: '^[0-9]+[mhd]$' })

/**
 * Spec: "available: { asset, venue, window, available: true, surface: { window, total_usd, longs_usd, shorts_usd } };
 * unavailable: { available: false, reason } as a 200".
 */
export const LIQUIDATION_SURFACE = Type.Union([
  Type.Object(
    {
      asset: CanonicalAsset,
      venue: Type.String(),
      window: SurfaceWindow,
      available: Type.Literal(true),
      surface: Type.Object(
        {
          window: SurfaceWindow,
          total_usd: Type.Number({ minimum: 0 }),
          longs_usd: Type.Number({ minimum: 0 }),
          shorts_usd: Type.Number({ minimum: 0 }),
          count: Type.Integer({ minimum: 0 }),
        },
        Strict,
      ),
      hours_observed: Type.Integer({ minimum: 0 }),
      hours_required: Type.Integer({ minimum: 1 }),
      window_start: Instant,
      window_end: Instant,
      provenance: Nullable(MARKET_PROVENANCE),
    },
    Strict,
  ),
  Type.Object(
    {
      asset: CanonicalAsset,
      available: Type.Literal(false),
      reason: Type.String({ description: "e.g. 'liquidation_tape_hours_below_24 (7/24)'" }),
      hours_observed: Type.Integer({ minimum: 0 }),
      hours_required: Type.Integer({ minimum: 1 }),
    },
    Strict,
  ),
])

/** The funding of one asset: the rate accruing now (predicted) or, without a live prediction, the last settled one. */
export const FUNDING_ROW = Type.Object(
  {
    asset: CanonicalAsset,
    venue: NullableString,
    rate: Nullable(Type.Number({ description: 'fraction per hour (an 8-hourly venue rate is divided by 8)' })),
    unit: Type.Literal('fraction_per_hour'),
    rate_kind: Nullable(StringEnum(['predicted', 'settled'])),
    interval_hours: NullableNumber,
    next_funding_at: NullableInstant,
    next_funding_basis: Nullable(StringEnum(['predicted', 'venue_schedule'])),
    last_settlement: Nullable(Type.Object({ rate_per_hour: Type.Number(), settled_at: Instant, premium: NullableNumber }, Strict)),
    provenance: Nullable(MARKET_PROVENANCE),
  },
  Strict,
)

/** Spec: "{ funding: [{ asset, venue, rate, next_funding_at, provenance }] } for each canonical asset". */
export const FUNDING_SNAPSHOT = Type.Object({ funding: Type.Array(FUNDING_ROW) }, Strict)

/**
 * Spec: "{ asset, venue, funding, decisions: { S06_funding_anomaly, S07_funding_persistence }, basis: { basis_bps,
 * perp_mark, index }, execution_risk: { top_of_book_depth_usd, spread_bps }, assumptions }".
 */
export const FUNDING_ASSET = Type.Object(
  {
    asset: CanonicalAsset,
    venue: Type.String(),
    funding: FUNDING_ROW,
    decisions: Type.Object({ S06_funding_anomaly: DECISION_RECORD, S07_funding_persistence: DECISION_RECORD }, Strict),
    basis: Type.Object({ basis_bps: NullableNumber, perp_mark: NullableNumber, index: NullableNumber }, Strict),
    execution_risk: Type.Object({ top_of_book_depth_usd: NullableNumber, spread_bps: NullableNumber }, Strict),
    assumptions: ASSUMPTIONS,
  },
  Strict,
)

/** Spec: "{ opportunities: [{ asset, funding_bps, basis_bps, decision }], assumptions }" (an S06 scan). */
export const FUNDING_OPPORTUNITIES = Type.Object(
  {
    opportunities: Type.Array(
      Type.Object(
        {
          asset: CanonicalAsset,
          funding_bps: Nullable(Type.Number({ description: 'basis points per hour' })),
          basis_bps: NullableNumber,
          decision: DECISION_RECORD,
        },
        Strict,
      ),
    ),
    assumptions: ASSUMPTIONS,
  },
  Strict,
)
