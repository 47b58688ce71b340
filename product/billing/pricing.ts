/**
 * The price table: one list of pricing keys, in credits, with the credit_to_usd anchor, packs, plans, planned add-ons
 * and the ladder. Paid routes name a pricing key; the x402 amount, discovery documents and GET /v1/pricing all derive
 * from this file.
 *
 * Spec (Billing resources): "Packs: booster_150k = 150,000 credits at a price of 150 USD; booster_650k = 650,000
 * credits at 600 USD; booster_2m4 = 2,400,000 credits at 2,000 USD. Packs are priced at a deliberate premium over
 * plans. Plans (30-day cycle, no automatic renewal): Operator 99 USD for 150,000 credits (plan_id operator); Desk 249
 * USD for 400,000; Desk Pro 499 USD for 1,000,000. Planned add-ons, not on sale: billing.addon.priority 99 USD,
 * billing.addon.slot 19 USD, billing.addon.hook 49 USD, billing.export.asset_period 29 USD."
 * Spec (Limits): "Ladder | price rises 25% per rung"; "Judgment floor | 1,000 credits".
 */
import { LADDER_RUNGS } from '../../record/ladder.ts'

/** 1 credit = 0.001 USD: the list price of the smallest pack; plans and larger packs are volume discounts off it. */
export const CREDIT_TO_USD = 0.001
/** USDC on Base has 6 decimals: atomic units per credit at rung 0 = 0.001 * 10^6. */
export const ATOMIC_PER_CREDIT = 1000n
export const USDC_DECIMALS = 6
export const LADDER_STEP = 1.25
/** The judgment floor: one entry-tier question. */
export const JUDGMENT_FLOOR_CREDITS = 1000

export const ENDPOINT_PRICES = {
  'decision.deep': { credits: 1000, summary: 'one recorded decision (POST /v1/decisions, next decision, hooks, calls)' },
  'signals.evaluate': { credits: 1000, summary: 'market regime, S02 risk, funding decisions and opportunities' },
  'perp.funding': { credits: 100, summary: 'funding snapshot for the canonical assets' },
  'perp.liquidations': { credits: 250, summary: 'liquidation surface of one market' },
  'wallet.profile': { credits: 500, summary: 'wallet profile' },
  'wallet.state': { credits: 250, summary: 'wallet state machine position and balances' },
  'wallet.events': { credits: 250, summary: 'one page of wallet transfer events' },
  'risk.assess': { credits: 1000, summary: 'S11 risk assessment of a transaction, token, wallet or protocol subject' },
  'delivery.hook_endpoint': { credits: 49_000, summary: 'one outcome hook endpoint for its 30-day window (the hook add-on: one debit, ref = the endpoint id)' },
} as const

export const PACKS = {
  booster_150k: { credits: 150_000, usd: 150, lot_days: 60 },
  booster_650k: { credits: 650_000, usd: 600, lot_days: 60 },
  booster_2m4: { credits: 2_400_000, usd: 2000, lot_days: 60 },
} as const

export const PLANS = {
  operator: { name: 'Operator', credits: 150_000, usd: 99, cycle_days: 30, auto_renew: false },
  desk: { name: 'Desk', credits: 400_000, usd: 249, cycle_days: 30, auto_renew: false },
  desk_pro: { name: 'Desk Pro', credits: 1_000_000, usd: 499, cycle_days: 30, auto_renew: false },
} as const

export const PLANNED_ADDONS = {
  'billing.addon.priority': { usd: 99, on_sale: false },
  'billing.addon.slot': { usd: 19, on_sale: false },
  'billing.addon.hook': { usd: 49, on_sale: false },
  'billing.export.asset_period': { usd: 29, on_sale: false },
} as const

export type EndpointPricingKey = keyof typeof ENDPOINT_PRICES
export type PackId = keyof typeof PACKS
export type PlanId = keyof typeof PLANS
export type PricingKey = EndpointPricingKey | `billing.pack.${PackId}` | `billing.plan.${PlanId}`

export const PRICING_KEYS: PricingKey[] = [
  ...(Object.keys(ENDPOINT_PRICES) as EndpointPricingKey[]),
  ...(Object.keys(PACKS) as PackId[]).map((id) => `billing.pack.${id}` as const),
  ...(Object.keys(PLANS) as PlanId[]).map((id) => `billing.plan.${id}` as const),
]

/** A price at one rung: credits (for credit debits) and atomic USDC (for x402). 64-bit money as strings in JSON. */
export interface Price {
  key: PricingKey
  credits: number
  /** Atomic USDC units (6 decimals), decimal string. */
  amount_atomic: string
  /** Decimal USD string. */
  usd: string
  rung: number
}

export function ladderMultiplier(rung: number): number {
  return LADDER_STEP ** rung
}

/** Formats atomic USDC as a decimal USD string ('1000000' → '1.00'; keeps sub-cent digits when present). */
export function atomicToUsd(atomic: bigint): string {
  const whole = atomic / 1_000_000n
  const frac = (atomic % 1_000_000n).toString().padStart(USDC_DECIMALS, '0').replace(/0+$/, '')
  return `${whole}.${frac.padEnd(2, '0')}`
}

/** Base (rung-0) price of a key in atomic USDC. */
function baseAtomic(key: PricingKey): { credits: number; atomic: bigint } {
  if (key.startsWith('billing.pack.')) {
    const p = PACKS[key.slice('billing.pack.'.length) as PackId]
    return { credits: p.credits, atomic: BigInt(p.usd) * 1_000_000n }
  }
  if (key.startsWith('billing.plan.')) {
    const p = PLANS[key.slice('billing.plan.'.length) as PlanId]
    return { credits: p.credits, atomic: BigInt(p.usd) * 1_000_000n }
  }
  const credits = ENDPOINT_PRICES[key as EndpointPricingKey].credits
  return { credits, atomic: BigInt(credits) * ATOMIC_PER_CREDIT }
}

/**
 * Price of a key at a rung: the rung-0 price times 1.25^rung. The multiplication is exact in integers
 * (5^rung / 4^rung); atomic units round half up, credits round up so the ladder never lowers a price.
 */
export function priceOf(key: PricingKey, rung = 0): Price {
  const base = baseAtomic(key)
  const num = 5n ** BigInt(rung)
  const den = 4n ** BigInt(rung)
  const atomic = (base.atomic * num * 2n + den) / (den * 2n)
  const endpoint = !key.startsWith('billing.')
  const credits = endpoint ? Number((BigInt(base.credits) * num + den - 1n) / den) : base.credits
  return { key, credits, amount_atomic: atomic.toString(), usd: atomicToUsd(atomic), rung }
}

export function isPricingKey(key: string): key is PricingKey {
  return (PRICING_KEYS as string[]).includes(key)
}

/** Ladder gates per rung: defined with the record that latches them (record/ladder.ts). */
export { LADDER_RUNGS }

/** Measured inputs of the ladder; null means not measured on this deployment (never reported as zero). */
export interface LadderMeasures {
  rung: number
  effective_at: string | null
  realized_outcomes: number | null
  /** Measured value per intelligence gate kind. */
  gate_values: Partial<Record<string, number>>
  pending: { rung: number; crossed_at: string; effective_at: string; ms_remaining: number } | null
}

export interface LadderGate {
  kind: string
  threshold: number
  current: number | null
  met: boolean
  remaining?: number
}

export interface Ladder {
  rung: number
  multiplier: number
  effective_at: string | null
  gates: LadderGate[]
  pending: LadderMeasures['pending']
  next: { rung: number; evidence: { threshold: number; remaining: number | null }; gates: LadderGate[] } | null
}

function gate(kind: string, threshold: number, current: number | null): LadderGate {
  const g: LadderGate = { kind, threshold, current, met: current !== null && current >= threshold }
  if (current !== null) g.remaining = Math.max(0, threshold - current)
  return g
}

/**
 * The ladder object shared by GET /v1/pricing and GET /v1/intelligence. gates = every gate toward the next rung
 * (evidence as realized_outcomes, then the intelligence gates); next = the next rung's evidence and intelligence gates.
 */
export function buildLadder(m: LadderMeasures): Ladder {
  const nextRung = LADDER_RUNGS.find((r) => r.rung === m.rung + 1)
  const intel = nextRung ? nextRung.gates.map((g) => gate(g.kind, g.threshold, m.gate_values[g.kind] ?? null)) : []
  return {
    rung: m.rung,
    multiplier: ladderMultiplier(m.rung),
    effective_at: m.effective_at,
    gates: nextRung ? [gate('realized_outcomes', nextRung.evidence, m.realized_outcomes), ...intel] : [],
    pending: m.pending,
    next: nextRung
      ? {
          rung: nextRung.rung,
          evidence: {
            threshold: nextRung.evidence,
            remaining: m.realized_outcomes === null ? null : Math.max(0, nextRung.evidence - m.realized_outcomes),
          },
          gates: intel,
        }
      : null,
  }
}

/** Ladder measures when no ladder source is wired: rung 0, nothing measured. */
export const UNMEASURED_LADDER: LadderMeasures = Object.freeze({
  rung: 0,
  effective_at: null,
  realized_outcomes: null,
  gate_values: Object.freeze({}),
  pending: null,
})
