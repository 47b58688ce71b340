/**
 * The free and operator billing routes (spec, Endpoints → Billing), declared here and spread into THE registry
 * (serving/routes/registry.ts ROUTES), which stays the single list routing, OpenAPI and discovery derive from.
 * The paid purchase routes (packs, plans) stay in registry.ts beside the other paid routes.
 */
import { ServiceError } from '../ServiceError.ts'
import { UNMEASURED_LADDER } from '../pricing.ts'
import {
  CREDITS, DRAWS, GRANT_BODY, GRANT_RESULT, RATE_LOCK_PURCHASE, RATE_LOCK_QUOTE, SCOUT_GRANT, SCOUT_STATUS, SURGE,
} from './billingSchemas.ts'
import { ADDRESS, objectOf } from './schemas.ts'
import type { HandlerContext, RouteDef } from './types.ts'
import {
  BASE_NETWORK, MAX_TIMEOUT_SECONDS, USDC_BASE, USDC_BASE_EXTRA, X402_VERSION, encodeHeader, type PaymentRequired,
} from '../payments/x402.ts'
import { NO_TOP_UP_RAIL } from '../payments/RailRouter.ts'

const FREE = { kind: 'free' } as const
const env = (schema: Record<string, unknown>) => ({ kind: 'envelope', schema }) as const
const PAYER_QUERY = objectOf({ payer: ADDRESS }, ['payer'], true)
const PAYER_BODY = objectOf({ payer: ADDRESS }, ['payer'])
const PAYER_HEADER = objectOf({ 'x-svc-payer': ADDRESS }, ['x-svc-payer'], true)
const OPS_HEADER = objectOf({ 'x-svc-ops': { type: 'string', maxLength: 512 } }, [], true)

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
    needs: ['billing'],
    request: { query: objectOf({ payer: ADDRESS, limit: { type: 'integer', minimum: 1, maximum: 500, default: 50 } }, ['payer'], true) },
    response: env(DRAWS),
    errors: [],
    handler: (ctx) => ({ data: ctx.need('billing').draws(String(ctx.query.payer), Number(ctx.query.limit)) }),
  },
  {
    id: 'billing.grants',
    method: 'POST',
    path: '/v1/billing/grants',
    summary: 'Operator: grant credits (idempotent by ref) or reverse a debit by its ref (idempotent, never a second credit)',
    tags: ['billing'],
    pay: FREE,
    operator: true,
    needs: ['billing'],
    request: { headers: OPS_HEADER, body: GRANT_BODY },
    response: env(GRANT_RESULT),
    errors: ['OPS_FORBIDDEN', 'DEBIT_NOT_FOUND', 'OPS_UNSET'],
    handler: async (ctx) => {
      const billing = ctx.need('billing')
      billing.requireOperator(ctx.headers['x-svc-ops'])
      const payer = String(ctx.body.payer)
      const ref = String(ctx.body.ref)
      if (ctx.body.action === 'grant') {
        if (typeof ctx.body.credits !== 'number') {
          throw new ServiceError('VALIDATION', { detail: { reason: 'REQUEST_VALIDATION_FAILED', field: '/body/credits', rule: 'required' } })
        }
        return { data: await billing.grant({ payer, credits: ctx.body.credits, ref }), status: 200 }
      }
      if (ctx.body.credits !== undefined) {
        throw new ServiceError('VALIDATION', { detail: { reason: 'REQUEST_VALIDATION_FAILED', field: '/body/credits', rule: 'not allowed on reverse' } })
      }
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
    pay: FREE,
    needs: ['billing'],
    request: {
      headers: objectOf({ 'x-svc-payer': ADDRESS, 'x-svc-ops': { type: 'string', maxLength: 512 } }, ['x-svc-payer'], true),
      body: objectOf({ credits: { type: 'integer', minimum: 1000, maximum: 100_000_000 }, ref: { type: 'string', minLength: 1, maxLength: 128 } }, ['credits']),
    },
    response: { kind: 'envelope', schema: RATE_LOCK_PURCHASE, status: 201 },
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
        headers: { 'PAYMENT-REQUIRED': encodeHeader(required), 'Cache-Control': 'no-store' },
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
    request: { headers: OPS_HEADER, query: objectOf({ turn_at: { type: 'string', format: 'date-time' } }, [], true) },
    response: env(SURGE),
    errors: ['OPS_FORBIDDEN', 'OPS_UNSET'],
    handler: (ctx) => {
      const billing = ctx.need('billing')
      billing.requireOperator(ctx.headers['x-svc-ops'])
      const turnAt = typeof ctx.query.turn_at === 'string' ? Date.parse(ctx.query.turn_at) : ctx.now
      return { data: billing.surge(turnAt) }
    },
  },
]
