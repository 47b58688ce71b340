/**
 * GET /v1/pricing: "per-endpoint price list, credit plans, booster packs, the credit_to_usd anchor, and the ladder
 * object". The list is a pure function of the ladder measures and the deployment (payment rails, rate limits, which
 * routes bill each key), so it is built once per distinct measures and frozen, and serving serializes it once.
 */
import { deepFreeze } from '../../common/deepFreeze.ts'
import type { Static } from '../../common/schema.ts'
import { QUESTIONS } from '../../models/questions/index.ts'
import { SCOUT_CREDITS, SCOUT_CREDITS_PER_QUESTION, SCOUT_QUESTIONS } from './CreditLedger.ts'
import {
  CREDIT_TO_USD, ENDPOINT_PRICES, JUDGMENT_FLOOR_CREDITS, PACKS, PLANNED_ADDONS, PLANS, buildLadder, ladderMultiplier, priceOf,
  type EndpointPricingKey, type LadderMeasures, type PackId, type PlanId,
} from './pricing.ts'
import type { PRICING } from './schemas.ts'

export type PriceListData = Static<typeof PRICING>

/** What the price list states about this deployment besides prices. */
export interface PriceListDeployment {
  /** 'x402' only when a recipient is configured; credits always. */
  rails: Array<'x402' | 'credits'>
  network: string
  asset: string
  payTo: string | null
  rateLimits: PriceListData['rate_limits']
  /** 'METHOD /path' of every route billed under each endpoint key. */
  routesByKey: ReadonlyMap<string, readonly string[]>
}

export class PriceList {
  private cached: { measures: LadderMeasures; key: string; data: PriceListData } | null = null

  constructor(private readonly deployment: PriceListDeployment) {}

  /** The list at these measures; the same frozen object for the same (or an equal) measures. */
  at(measures: LadderMeasures): PriceListData {
    const hit = this.cached
    // The same frozen measures object (always, with no ladder wired) needs no serialization to compare.
    if (hit && hit.measures === measures && Object.isFrozen(measures)) return hit.data
    const key = JSON.stringify(measures)
    if (hit && hit.key === key) return hit.data
    const data = deepFreeze(this.build(measures))
    this.cached = { measures, key, data }
    return data
  }

  private build(measures: LadderMeasures): PriceListData {
    const rung = measures.rung
    const d = this.deployment
    const endpoints = Object.fromEntries(
      (Object.keys(ENDPOINT_PRICES) as EndpointPricingKey[]).map((key) => {
        const p = priceOf(key, rung)
        return [key, {
          credits: p.credits, usd: p.usd, amount_atomic: p.amount_atomic, base_credits: ENDPOINT_PRICES[key].credits,
          summary: ENDPOINT_PRICES[key].summary, routes: [...(d.routesByKey.get(key) ?? [])],
        }]
      }),
    )
    const packs = (Object.keys(PACKS) as PackId[]).map((id) => {
      const p = priceOf(`billing.pack.${id}`, rung)
      return {
        pack_id: id, pricing_key: p.key, credits: p.credits, usd: p.usd, amount_atomic: p.amount_atomic,
        base_price_usd: priceOf(p.key, 0).usd, lot_days: PACKS[id].lot_days,
      }
    })
    const plans = (Object.keys(PLANS) as PlanId[]).map((id) => {
      const p = priceOf(`billing.plan.${id}`, rung)
      return {
        plan_id: id, name: PLANS[id].name, pricing_key: p.key, credits: p.credits, usd: p.usd, amount_atomic: p.amount_atomic,
        base_price_usd: priceOf(p.key, 0).usd, cycle_days: PLANS[id].cycle_days, auto_renew: false as const,
      }
    })
    return {
      currency: 'USD',
      credit_to_usd: CREDIT_TO_USD,
      judgment_floor_credits: JUDGMENT_FLOOR_CREDITS,
      rung,
      multiplier: ladderMultiplier(rung),
      endpoints,
      packs,
      plans,
      planned_addons: Object.entries(PLANNED_ADDONS).map(([key, a]) => ({ key, usd: `${a.usd}.00`, on_sale: false as const })),
      // Spec (Limits): "Free allowance | 3 entry-tier questions per payer address, 1,000 credits each (3000 credits
      // total), one time, never recharges | S01, S05, S06".
      free_allowance: {
        questions: SCOUT_QUESTIONS,
        credits_per_question: SCOUT_CREDITS_PER_QUESTION,
        credits: SCOUT_CREDITS,
        eligible: QUESTIONS.filter((q) => q.entryTier).map((q) => q.id),
        recharges: false as const,
      },
      payment: { rails: d.rails, scheme: 'exact' as const, network: d.network, asset: d.asset, pay_to: d.payTo },
      rate_limits: d.rateLimits,
      ladder: buildLadder(measures),
    }
  }
}
