/**
 * Billing routes (spec, Endpoints → Billing): the free allowance, balances, lots and draws, credit purchases (packs,
 * plans), operator grants and reversals, the rate lock and the surge meter. Transport only: every rule is the billing
 * domain's (product/billing/BillingService.ts).
 */
import { ServiceError } from '../../common/ServiceError.ts'
import { Address, Open, Strict, StringEnum, Type } from '../../common/schema.ts'
import { PACKS, PLANS, UNMEASURED_LADDER, type PackId, type PlanId } from '../../product/billing/pricing.ts'
import {
  CREDITS, DRAWS, GRANT_BODY, GRANT_RESULT, PURCHASE, RATE_LOCK_PURCHASE, RATE_LOCK_QUOTE, SCOUT_GRANT, SCOUT_STATUS, SURGE,
} from '../../product/billing/schemas.ts'
import {
  BASE_NETWORK, MAX_TIMEOUT_SECONDS, USDC_BASE, USDC_BASE_EXTRA, X402_VERSION, encodeHeader, type PaymentRequired,
} from '../payments/x402.ts'
import { NO_TOP_UP_RAIL } from '../payments/RailRouter.ts'
import { CURSOR_PARAM, FREE, PAYER_HEADER, PAYER_IN_HEADER, cursorOf, env, paid, fee } from './define.ts'
import type { HandlerContext, RouteDef } from './types.ts'
import { RESPONSE_HEADER } from '../http/apiHeaders.ts'

const PAYER_QUERY = Open({ payer: Address })
const PAYER_BODY = Strict({ payer: Address })
const OPS_HEADER = Open({ 'x-svc-ops': Type.Optional(Type.String({ maxLength: 512 })) })

async function rungOf(ctx: HandlerContext): Promise<number> {
  return (ctx.services.ladder ? await ctx.services.ladder.measures() : UNMEASURED_LADDER).rung
}

export const BILLING_ROUTES: readonly RouteDef[] = [
  {
    id: 'billing.scout.grant',
    method: 'POST',
    path: '/v1/billing/scout',
    summary: 'Claim the one-time free allowance: 3 entry-tier questions (S01, S05, S06) of 1,000 credits; idempotent, never recharges',
    tags: ['billing'],
    pay: FREE,
    payer: { header: 'x-svc-payer', field: 'body' },
    needs: ['billing'],
    request: { body: PAYER_BODY },
    response: env(SCOUT_GRANT),
    errors: [],
    handler: async (ctx) => ({ data: await ctx.need('billing').scoutGrant(String(ctx.body.payer)) }),
  },
  {
    id: 'billing.scout.status',
    method: 'GET',
    path: '/v1/billing/scout',
    summary: 'Free-allowance status of a payer; never grants',
    tags: ['billing'],
    pay: FREE,
    payer: { header: 'x-svc-payer', field: 'query' },
    needs: ['billing'],
    request: { query: PAYER_QUERY },
    response: env(SCOUT_STATUS),
    errors: [],
    handler: (ctx) => ({ data: ctx.need('billing').scoutStatus(String(ctx.query.payer)) }),
  },
  {
    id: 'billing.credits',
    method: 'GET',
    path: '/v1/billing/credits',
    summary: 'Credit balance and expiring lots of a payer',
    tags: ['billing'],
    pay: FREE,
    payer: { header: 'x-svc-payer', field: 'query' },
    needs: ['billing'],
    request: { query: PAYER_QUERY },
    response: env(CREDITS),
    errors: [],
    handler: (ctx) => ({ data: ctx.need('billing').credits(String(ctx.query.payer)) }),
  },
  {
    id: 'billing.draws',
    method: 'GET',
    path: '/v1/billing/draws',
    summary: 'Draws journal of a payer (debits, credits, refunds), newest first',
    tags: ['billing'],
    pay: FREE,
    payer: { header: 'x-svc-payer', field: 'query' },
    needs: ['billing'],
    request: { query: Open({ payer: Address, limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })), cursor: CURSOR_PARAM }) },
    response: env(DRAWS),
    errors: [],
    handler: (ctx) => ({ data: ctx.need('billing').draws(String(ctx.query.payer), Number(ctx.query.limit), cursorOf(ctx)) }),
  },
  {
    id: 'billing.grants',
    method: 'POST',
    path: '/v1/billing/grants',
    summary: 'Operator: grant credits (idempotent by ref) or reverse a debit by its ref (idempotent, never a second credit)',
    tags: ['billing'],
    pay: FREE,
    operator: true,
    creditsOf: 'body',
    needs: ['billing'],
    request: { headers: OPS_HEADER, body: GRANT_BODY },
    response: env(GRANT_RESULT),
    errors: ['OPS_FORBIDDEN', 'DEBIT_NOT_FOUND', 'OPS_UNSET'],
    handler: async (ctx) => {
      const billing = ctx.need('billing')
      billing.requireOperator(ctx.headers['x-svc-ops'])
      const payer = String(ctx.body.payer)
      const ref = String(ctx.body.ref)
      if (ctx.body.action === 'grant') return { data: await billing.grant({ payer, credits: Number(ctx.body.credits), ref }), status: 200 }
      return { data: await billing.reverse({ payer, ref }) }
    },
  },
  {
    id: 'billing.rate_lock.quote',
    method: 'GET',
    path: '/v1/billing/rate-lock',
    summary: 'Rate-lock quote: spot USD per credit at the current rung, the 12-month lock at a 20% premium and its break-even',
    tags: ['billing'],
    pay: FREE,
    payer: PAYER_IN_HEADER,
    needs: ['billing'],
    request: { headers: PAYER_HEADER },
    response: env(RATE_LOCK_QUOTE),
    errors: [],
    handler: async (ctx) => ({ data: ctx.need('billing').rateLockQuote(String(ctx.headers['x-svc-payer']), await rungOf(ctx)) }),
  },
  {
    id: 'billing.rate_lock.purchase',
    method: 'POST',
    path: '/v1/billing/rate-lock',
    summary: 'Buy a 12-month rate lock: the fee (credits × spot × 1.2) is the payment (402 challenge); operators issue it fee-free with x-svc-ops',
    description:
      'The fee depends on the body, so it is challenged by this handler rather than priced by a registry key; this deployment advertises the x402 challenge for the fee and cannot settle it yet (no top-up rail wired).',
    tags: ['billing'],
    pay: fee('the rate-lock fee: credits × spot price × 1.2, challenged by the route (402)'),
    payer: PAYER_IN_HEADER,
    needs: ['billing'],
    request: {
      headers: Open({ 'x-svc-payer': Address, 'x-svc-ops': Type.Optional(Type.String({ maxLength: 512 })) }),
      body: Strict({ credits: Type.Integer({ minimum: 1000, maximum: 100_000_000 }), ref: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })) }),
    },
    response: env(RATE_LOCK_PURCHASE, 201),
    errors: ['PAYMENT_REQUIRED', 'OPS_FORBIDDEN', 'OPS_UNSET'],
    handler: async (ctx) => {
      const billing = ctx.need('billing')
      const payer = String(ctx.headers['x-svc-payer'])
      const credits = Number(ctx.body.credits)
      const rung = await rungOf(ctx)
      if (ctx.headers['x-svc-ops'] !== undefined) {
        billing.requireOperator(ctx.headers['x-svc-ops'])
        const ref = typeof ctx.body.ref === 'string' ? ctx.body.ref : ctx.request_id
        return { data: await billing.rateLockIssue(payer, credits, rung, ref), status: 201 }
      }
      const fee = billing.rateLockFee(credits, rung)
      const amount = fee.atomic.toString()
      const required: PaymentRequired = {
        x402Version: X402_VERSION,
        error: 'PAYMENT-SIGNATURE header is required',
        resource: { url: `${ctx.documents.baseUrl}${ctx.path}`, description: 'Rate-lock fee', mimeType: 'application/json' },
        accepts: ctx.services.config.payTo === null ? [] : [{
          scheme: 'exact', network: BASE_NETWORK, amount, asset: USDC_BASE, payTo: ctx.services.config.payTo,
          maxTimeoutSeconds: MAX_TIMEOUT_SECONDS, extra: { ...USDC_BASE_EXTRA },
        }],
        extensions: {},
      }
      throw new ServiceError('PAYMENT_REQUIRED', {
        headers: { [RESPONSE_HEADER.paymentRequired]: encodeHeader(required), 'Cache-Control': 'no-store' },
        detail: { pricing_key: 'billing.rate_lock', fee_usd: fee.usd, amount, credits, rung, settlement_note: NO_TOP_UP_RAIL },
      })
    },
  },
  {
    id: 'ops.surge',
    method: 'GET',
    path: '/v1/ops/surge',
    summary: 'Operator: settled revenue in the 7 days before and after turn_at, and their ratio (null without after-window revenue)',
    tags: ['billing'],
    pay: FREE,
    operator: true,
    needs: ['billing'],
    request: { headers: OPS_HEADER, query: Open({ turn_at: Type.Optional(Type.String({ format: 'date-time' })) }) },
    response: env(SURGE),
    errors: ['OPS_FORBIDDEN', 'OPS_UNSET'],
    handler: (ctx) => {
      const billing = ctx.need('billing')
      billing.requireOperator(ctx.headers['x-svc-ops'])
      const turnAt = typeof ctx.query.turn_at === 'string' ? Date.parse(ctx.query.turn_at) : ctx.now
      return { data: billing.surge(turnAt) }
    },
  },
  {
    id: 'billing.pack',
    method: 'POST',
    path: '/v1/billing/packs/{pack_id}',
    summary: 'Buy a booster pack (credits land as a 60-day lot)',
    tags: ['billing'],
    pay: paid('billing.pack.{pack_id}'),
    needs: ['billing'],
    request: { params: Strict({ pack_id: StringEnum(Object.keys(PACKS)) }), body: PAYER_BODY },
    response: env(PURCHASE),
    errors: ['PLAN_NOT_RECHARGEABLE'],
    handler: async (ctx) => ({ data: await ctx.need('billing').purchasePack(ctx.params.pack_id as PackId, String(ctx.body.payer), ctx.payment!, ctx.unit!, ctx.price!) }),
  },
  {
    id: 'billing.plan',
    method: 'POST',
    path: '/v1/billing/plans/{plan_id}',
    summary: 'Buy a 30-day credit plan (no automatic renewal)',
    tags: ['billing'],
    pay: paid('billing.plan.{plan_id}'),
    needs: ['billing'],
    request: { params: Strict({ plan_id: StringEnum(Object.keys(PLANS)) }), body: PAYER_BODY },
    response: env(PURCHASE),
    errors: ['PLAN_NOT_RECHARGEABLE'],
    handler: async (ctx) => ({ data: await ctx.need('billing').purchasePlan(ctx.params.plan_id as PlanId, String(ctx.body.payer), ctx.payment!, ctx.unit!, ctx.price!) }),
  },
]
