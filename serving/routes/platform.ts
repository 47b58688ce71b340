/**
 * Platform routes (spec, Platform and measured record): liveness and readiness, the price list, the provider
 * inventory and the live question set. Transport only: readiness is product/platform/readiness.ts, the price list
 * product/billing/PriceList.ts, the question set the engine's.
 */
import { ServiceError } from '../../common/ServiceError.ts'
import { andThen } from '../../common/MaybePromise.ts'
import { SIGNALS } from '../../engine/schemas.ts'
import { PriceList } from '../../product/billing/PriceList.ts'
import { PRICING } from '../../product/billing/schemas.ts'
import { UNMEASURED_LADDER, type LadderMeasures } from '../../product/billing/pricing.ts'
import { health } from '../../product/platform/readiness.ts'
import { HEALTH, PROVIDERS } from '../../product/platform/schemas.ts'
import { BASE_NETWORK, USDC_BASE } from '../payments/x402.ts'
import type { Services } from '../Services.ts'
import { FREE, env } from './define.ts'
import type { HandlerContext, RouteDef } from './types.ts'

const healthOf = (ctx: HandlerContext) => health(ctx.services.providers, ctx.documents.startedAtMs, ctx.now, ctx.services.dataTime, ctx.services.cluster)

const healthRoute = (id: string, path: string, summary: string): RouteDef => ({
  id,
  method: 'GET',
  path,
  summary,
  tags: ['platform'],
  pay: FREE,
  unlimited: true,
  request: {},
  response: env(HEALTH),
  errors: [],
  handler: (ctx) => {
    const h = healthOf(ctx)
    return { data: h, meta: { state: h.status } }
  },
})

/** One price list per wired service set (the deployment's rails and limits are fixed at start). */
const priceLists = new WeakMap<Services, PriceList>()

function priceListOf(ctx: HandlerContext, routes: readonly RouteDef[]): PriceList {
  let list = priceLists.get(ctx.services)
  if (!list) {
    const routesByKey = new Map<string, string[]>()
    for (const r of routes) {
      if (r.pay.kind !== 'paid') continue
      const keyRoutes = routesByKey.get(r.pay.pricingKey) ?? []
      keyRoutes.push(`${r.method} ${r.path}`)
      routesByKey.set(r.pay.pricingKey, keyRoutes)
    }
    const payTo = ctx.services.config.payTo
    list = new PriceList({
      rails: payTo === null ? ['credits'] : ['x402', 'credits'],
      network: BASE_NETWORK,
      asset: USDC_BASE,
      payTo,
      rateLimits: ctx.services.rateLimiter.describe(),
      routesByKey,
    })
    priceLists.set(ctx.services, list)
  }
  return list
}

/** Synchronous when no ladder is wired (the unmeasured rung 0), so the route then answers without a promise. */
export function ladderMeasuresOf(ctx: HandlerContext): LadderMeasures | Promise<LadderMeasures> {
  return ctx.services.ladder ? ctx.services.ladder.measures() : UNMEASURED_LADDER
}

/** The platform routes; the price list names the routes billed under each key, so it is given the whole registry. */
export function platformRoutes(registry: () => readonly RouteDef[]): RouteDef[] {
  return [
    healthRoute('healthz', '/healthz', 'Liveness plus provider rollup'),
    healthRoute('health', '/health', 'Alias of /healthz'),
    {
      id: 'readyz',
      method: 'GET',
      path: '/readyz',
      summary: 'Readiness: provider rollup and data time; 503 PROVIDER_DOWN when a critical provider is down or the venue feed is still warming up',
      tags: ['platform'],
      pay: FREE,
      unlimited: true,
      request: {},
      response: env(HEALTH),
      errors: ['PROVIDER_DOWN'],
      handler: (ctx) => {
        const h = healthOf(ctx)
        // Not ready while the venue feed warms up after a (re)start: the market routes refuse until it has caught up.
        if (h.status === 'down' || h.data_time?.warming_up === true) {
          throw new ServiceError('PROVIDER_DOWN', { detail: { reason: 'NOT_READY', status: h.status, uptime_s: h.uptime_s, providers: h.providers } })
        }
        return { data: h, meta: { state: h.status } }
      },
    },
    {
      id: 'pricing',
      method: 'GET',
      path: '/v1/pricing',
      summary: 'Price list: per-endpoint prices, plans, packs, credit_to_usd anchor, rate limits and the ladder',
      tags: ['platform'],
      pay: FREE,
      mcp: {
        name: 'svc_pricing',
        description:
          'The current price of every paid tool and route in credits and USD, the credit packs and plans, the free allowance and the price ladder. Free. Call it before a paid call to know what it will cost.',
      },
      request: {},
      response: env(PRICING),
      errors: [],
      handler: (ctx) => andThen(ladderMeasuresOf(ctx), (m) => ({ data: priceListOf(ctx, registry()).at(m) })),
    },
    {
      id: 'providers',
      method: 'GET',
      path: '/v1/providers',
      summary: 'Provider inventory and health',
      tags: ['platform'],
      pay: FREE,
      request: {},
      response: env(PROVIDERS),
      errors: [],
      handler: (ctx) => ({ data: { providers: ctx.services.providers?.list() ?? [] } }),
    },
    {
      id: 'signals',
      method: 'GET',
      path: '/v1/signals',
      summary: "The question catalog, each available or blocked with its exact reason and, per asset, the sale gate's measured verdict",
      tags: ['platform'],
      pay: FREE,
      needs: ['engine'],
      request: {},
      response: env(SIGNALS),
      errors: [],
      handler: async (ctx) => ({ data: await ctx.need('engine').signals() }),
    },
  ]
}
