/**
 * The billing domain's public shapes (spec, Billing resources; GET /v1/pricing and its ladder object), each one
 * TypeBox schema with its type inferred from it.
 */
import { Address, Instant, JsonObject, Nullable, NullableInstant, NullableNumber, NullableString, QuestionId, StringEnum, Type } from '../../common/schema.ts'
import { ENDPOINT_PRICES, PACKS, PLANS } from './pricing.ts'

const Strict = { additionalProperties: false } as const
const Int = Type.Integer()
const Usd = Type.String({ pattern: '^[0-9]+\\.[0-9]{2,6}$' })

/** Spec: "Scout grant | { granted: boolean, balance_credits }". */
export const SCOUT_GRANT = Type.Object({ granted: Type.Boolean(), balance_credits: Int })

/** Spec: "Scout status | { payer, available, balance_credits, credits_per_grant }". */
export const SCOUT_STATUS = Type.Object({
  payer: Address,
  available: Type.Boolean(),
  balance_credits: Int,
  credits_per_grant: Int,
  questions_left: Type.Optional(Nullable(Type.Integer())),
})

export const LOT = Type.Object(
  {
    lot_id: Type.String(),
    source: Type.String(),
    granted: Int,
    remaining: Int,
    created_at: Instant,
    expires_at: NullableInstant,
    expired: Type.Boolean(),
    usable_on: StringEnum(['entry', 'any']),
  },
  Strict,
)

/** Spec: "Credits | { balance_credits, lots: [...] } (expiring lots)". */
export const CREDITS = Type.Object({ payer: Type.Optional(Address), balance_credits: Int, lots: Type.Array(LOT) })

/**
 * Spec: "Draws journal | { payer, count, draws: [{ id, kind (debit, credit or refund), amount (negative for a debit),
 * reason, ref, lot_id, created_at, reversed_at (null unless reversed) }] }".
 */
export const DRAW = Type.Object({
  id: Type.String(),
  kind: StringEnum(['debit', 'credit', 'refund']),
  amount: Int,
  reason: Type.String(),
  ref: Type.String(),
  lot_id: Type.String(),
  created_at: Instant,
  expires_at: Type.Optional(NullableInstant),
  reversed_at: NullableInstant,
})

/** next_cursor: pass it as `cursor` for the older rows after this page; null at the end. count: all the payer's rows. */
export const DRAWS = Type.Object({ payer: Address, count: Int, draws: Type.Array(DRAW), next_cursor: NullableString }, Strict)

/**
 * Spec: "Pack purchase result | base_price_usd (alias price_usd) = rung-0 list price; current_price_usd = amount quoted
 * at the current rung; rung; currency; settlement_note; credits_added; balance_credits".
 */
export const PURCHASE = Type.Object({
  base_price_usd: Usd,
  price_usd: Usd,
  current_price_usd: Usd,
  rung: Int,
  currency: Type.Literal('USD'),
  settlement_note: Type.String(),
  credits_added: Int,
  balance_credits: Int,
})

export const GRANT_RESULT = Type.Object({
  action: StringEnum(['grant', 'reverse']),
  payer: Address,
  ref: Type.String(),
  credits: Int,
  replayed: Type.Boolean(),
  balance_credits: Int,
})

const LOCK = Type.Object(
  {
    sku: Type.String(),
    premium: Type.Number(),
    months: Int,
    purchase_usd_per_credit: Type.Number(),
    break_even: Type.Object({ claim: Type.String(), turns_to_pay_off: Int, note: Type.String() }, Strict),
  },
  Strict,
)

/** Spec: "Rate-lock quote | { quote, spot_usd_per_credit, lock: { sku, premium, months, purchase_usd_per_credit, break_even } }". */
export const RATE_LOCK_QUOTE = Type.Object({ quote: JsonObject, spot_usd_per_credit: Type.Number(), lock: LOCK }, Strict)

/** Spec: "Rate-lock purchase | { credits, rung, fee_usd, locked_usd_per_credit, status: 'settling' }". */
export const RATE_LOCK_PURCHASE = Type.Object({
  credits: Int,
  rung: Int,
  fee_usd: Usd,
  locked_usd_per_credit: Type.Number(),
  status: Type.Literal('settling'),
  granted: Type.Optional(Type.Boolean()),
  lock: Type.Optional(LOCK),
})

/** Spec: "Surge meter | { before_usd, after_usd, ratio }; ratio is null when the after-window has no settled revenue". */
export const SURGE = Type.Object({ before_usd: Type.Number(), after_usd: Type.Number(), ratio: NullableNumber })

/** Spec: "{ action: 'grant', payer, credits, ref } or { action: 'reverse', payer, ref }": a grant needs credits, a reversal must not carry them. */
export const GRANT_BODY = Type.Object(
  {
    action: StringEnum(['grant', 'reverse']),
    payer: Address,
    credits: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000_000 })),
    ref: Type.String({ minLength: 1, maxLength: 128 }),
  },
  {
    additionalProperties: false,
    allOf: [
      { if: { properties: { action: { const: 'grant' } }, required: ['action'] }, then: { required: ['credits'] } },
      { if: { properties: { action: { const: 'reverse' } }, required: ['action'] }, then: { properties: { credits: false } } },
    ],
  },
)

// ---------------------------------------------------------------- the price list and its ladder

const LADDER_GATE = Type.Object(
  { kind: Type.String(), threshold: Type.Number(), current: NullableNumber, met: Type.Boolean(), remaining: Type.Optional(Type.Number({ minimum: 0 })) },
  Strict,
)

/** The ladder object shared by GET /v1/pricing and GET /v1/intelligence (spec: "identical to the ladder object published by the price list"). */
export const LADDER = Type.Object(
  {
    rung: Type.Integer({ minimum: 0 }),
    multiplier: Type.Number({ minimum: 1 }),
    effective_at: NullableInstant,
    gates: Type.Array(LADDER_GATE),
    pending: Nullable(
      Type.Object({ rung: Type.Integer(), crossed_at: Instant, effective_at: Instant, ms_remaining: Type.Number({ minimum: 0 }) }, Strict),
    ),
    next: Nullable(
      Type.Object(
        {
          rung: Type.Integer(),
          evidence: Type.Object({ threshold: Type.Number(), remaining: NullableNumber }, Strict),
          gates: Type.Array(LADDER_GATE),
        },
        Strict,
      ),
    ),
  },
  Strict,
)

const PriceFields = { credits: Type.Integer({ minimum: 0 }), usd: Type.String(), amount_atomic: Type.String({ pattern: '^[0-9]+$' }) }
const Bucket = Type.Object({ burst: Type.Integer(), refill_per_sec: Type.Number() }, Strict)

/** Spec: "per-endpoint price list, credit plans, booster packs, the credit_to_usd anchor, and the ladder object". */
export const PRICING = Type.Object(
  {
    currency: Type.Literal('USD'),
    credit_to_usd: Type.Number({ exclusiveMinimum: 0 }),
    judgment_floor_credits: Type.Integer(),
    rung: Type.Integer({ minimum: 0 }),
    multiplier: Type.Number({ minimum: 1 }),
    endpoints: Type.Object(
      Object.fromEntries(
        Object.keys(ENDPOINT_PRICES).map((k) => [
          k,
          Type.Object({ ...PriceFields, base_credits: Type.Integer(), summary: Type.String(), routes: Type.Array(Type.String()) }, Strict),
        ]),
      ),
      Strict,
    ),
    packs: Type.Array(
      Type.Object(
        { ...PriceFields, pack_id: StringEnum(Object.keys(PACKS)), pricing_key: Type.String(), base_price_usd: Type.String(), lot_days: Type.Integer() },
        Strict,
      ),
    ),
    plans: Type.Array(
      Type.Object(
        {
          ...PriceFields,
          plan_id: StringEnum(Object.keys(PLANS)),
          name: Type.String(),
          pricing_key: Type.String(),
          base_price_usd: Type.String(),
          cycle_days: Type.Integer(),
          auto_renew: Type.Literal(false),
        },
        Strict,
      ),
    ),
    planned_addons: Type.Array(Type.Object({ key: Type.String(), usd: Type.String(), on_sale: Type.Literal(false) }, Strict)),
    free_allowance: Type.Object(
      {
        questions: Type.Integer(),
        credits_per_question: Type.Integer(),
        credits: Type.Integer(),
        eligible: Type.Array(QuestionId),
        recharges: Type.Literal(false),
      },
      Strict,
    ),
    payment: Type.Object(
      {
        rails: Type.Array(StringEnum(['x402', 'credits'])),
        scheme: Type.Literal('exact'),
        network: Type.String(),
        asset: Address,
        pay_to: Nullable(Address),
      },
      Strict,
    ),
    rate_limits: Type.Object({ per_ip: Bucket, per_payer: Bucket }, Strict),
    ladder: LADDER,
  },
  Strict,
)
