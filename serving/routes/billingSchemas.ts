/**
 * Response schemas of the billing routes (spec, Billing resources). Shared by the registry, OpenAPI and the route
 * walker, like serving/routes/schemas.ts.
 */
import { ADDRESS, objectOf } from './schemas.ts'

const instant = { type: 'string', format: 'date-time' } as const
const nullableInstant = { type: ['string', 'null'], format: 'date-time' } as const
const int = { type: 'integer' } as const
const num = { type: 'number' } as const
const str = { type: 'string' } as const
const usd = { type: 'string', pattern: '^[0-9]+\\.[0-9]{2,6}$' } as const

export const SCOUT_GRANT = objectOf({ granted: { type: 'boolean' }, balance_credits: int }, ['granted', 'balance_credits'], true)

export const SCOUT_STATUS = objectOf(
  { payer: ADDRESS, available: { type: 'boolean' }, balance_credits: int, credits_per_grant: int, questions_left: { type: ['integer', 'null'] } },
  ['payer', 'available', 'balance_credits', 'credits_per_grant'],
  true,
)

export const LOT = objectOf(
  {
    lot_id: str, source: str, granted: int, remaining: int, created_at: instant, expires_at: nullableInstant,
    expired: { type: 'boolean' }, usable_on: { enum: ['entry', 'any'] },
  },
  ['lot_id', 'source', 'granted', 'remaining', 'created_at', 'expires_at', 'expired', 'usable_on'],
)

export const CREDITS = objectOf({ payer: ADDRESS, balance_credits: int, lots: { type: 'array', items: LOT } }, ['balance_credits', 'lots'], true)

export const DRAW = objectOf(
  {
    id: str, kind: { enum: ['debit', 'credit', 'refund'] }, amount: int, reason: str, ref: str, lot_id: str, created_at: instant,
    expires_at: nullableInstant, reversed_at: nullableInstant,
  },
  ['id', 'kind', 'amount', 'reason', 'ref', 'lot_id', 'created_at', 'reversed_at'],
  true,
)

export const DRAWS = objectOf({ payer: ADDRESS, count: int, draws: { type: 'array', items: DRAW } }, ['payer', 'count', 'draws'])

export const PURCHASE = objectOf(
  {
    base_price_usd: usd, price_usd: usd, current_price_usd: usd, rung: int, currency: { const: 'USD' }, settlement_note: str,
    credits_added: int, balance_credits: int,
  },
  ['base_price_usd', 'price_usd', 'current_price_usd', 'rung', 'currency', 'settlement_note', 'credits_added', 'balance_credits'],
  true,
)

export const GRANT_RESULT = objectOf(
  { action: { enum: ['grant', 'reverse'] }, payer: ADDRESS, ref: str, credits: int, replayed: { type: 'boolean' }, balance_credits: int },
  ['action', 'payer', 'ref', 'credits', 'replayed', 'balance_credits'],
  true,
)

const LOCK = objectOf(
  {
    sku: str, premium: num, months: int, purchase_usd_per_credit: num,
    break_even: objectOf({ claim: str, turns_to_pay_off: int, note: str }, ['claim', 'turns_to_pay_off', 'note']),
  },
  ['sku', 'premium', 'months', 'purchase_usd_per_credit', 'break_even'],
)

export const RATE_LOCK_QUOTE = objectOf({ quote: { type: 'object' }, spot_usd_per_credit: num, lock: LOCK }, ['quote', 'spot_usd_per_credit', 'lock'])

export const RATE_LOCK_PURCHASE = objectOf(
  { credits: int, rung: int, fee_usd: usd, locked_usd_per_credit: num, status: { const: 'settling' }, granted: { type: 'boolean' }, lock: LOCK },
  ['credits', 'rung', 'fee_usd', 'locked_usd_per_credit', 'status'],
  true,
)

export const SURGE = objectOf({ before_usd: num, after_usd: num, ratio: { type: ['number', 'null'] } }, ['before_usd', 'after_usd', 'ratio'], true)

// ---------------------------------------------------------------- requests

/** grant needs credits; reverse must not carry it (checked by the handler, naming /body/credits). */
export const GRANT_BODY = objectOf(
  {
    action: { enum: ['grant', 'reverse'] },
    payer: ADDRESS,
    credits: { type: 'integer', minimum: 1, maximum: 100_000_000 },
    ref: { type: 'string', minLength: 1, maxLength: 128 },
  },
  ['action', 'payer', 'ref'],
)
