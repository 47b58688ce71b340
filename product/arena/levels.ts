/**
 * The rank ladder contract (GET /v1/arena/levels): Intelligence Levels and ranks, pure and published as data.
 *
 * Spec (Arena endpoints): "the rank ladder contract: each Intelligence Level (credit band, ask XP, correct-call XP) and
 * each rank (XP threshold, discount)". Spec (Arena resources): rank is "derived from XP at read time, never stored";
 * discount is "a share of the premium above the 1,000-credit judgment floor". Rank names seen: Analyst, Forecaster,
 * Oracle (top); Strategist is ours (docs/arena.md).
 */
import { ENDPOINT_PRICES, JUDGMENT_FLOOR_CREDITS } from '../billing/index.ts'

export interface IntelligenceLevel {
  level: number
  name: string
  /** Inclusive band of a question's list price (rung 0) in credits; max null: no upper bound. */
  credit_band: { min: number; max: number | null }
  ask_xp: number
  correct_call_xp: number
}

/**
 * Bands over the base (rung-0) list price of what was asked, so the ladder's +25% per rung never changes what an ask
 * or a call earns. Level 1 is the judgment floor (every catalog question is priced decision.deep, 1,000 credits,
 * today); the higher bands are the contract for questions priced above it.
 */
export const LEVELS: readonly IntelligenceLevel[] = Object.freeze([
  { level: 1, name: 'Signal', credit_band: { min: 0, max: JUDGMENT_FLOOR_CREDITS }, ask_xp: 10, correct_call_xp: 50 },
  { level: 2, name: 'Judgment', credit_band: { min: JUDGMENT_FLOOR_CREDITS + 1, max: 2500 }, ask_xp: 15, correct_call_xp: 75 },
  { level: 3, name: 'Conviction', credit_band: { min: 2501, max: null }, ask_xp: 25, correct_call_xp: 120 },
])

/** The base price of a decision ask or a call (both are priced decision.deep). */
export const DECISION_BASE_CREDITS: number = ENDPOINT_PRICES['decision.deep'].credits

export function levelForCredits(credits: number): IntelligenceLevel {
  for (const l of LEVELS) if (credits >= l.credit_band.min && (l.credit_band.max === null || credits <= l.credit_band.max)) return l
  return LEVELS[0]!
}

/** Ask XP is earned by at most this many asks per payer per UTC day: asking more buys answers, not standing. */
export const ASK_XP_DAILY_CAP = 20

export interface Rank {
  name: string
  /** XP at which the rank begins. */
  xp: number
  /** Share (0..1) of a price's premium above the judgment floor taken off a credits debit. */
  discount: number
}

export const RANKS: readonly Rank[] = Object.freeze([
  { name: 'Analyst', xp: 0, discount: 0 },
  { name: 'Forecaster', xp: 500, discount: 0.05 },
  { name: 'Strategist', xp: 2000, discount: 0.1 },
  { name: 'Oracle', xp: 10_000, discount: 0.2 },
])

export interface RankStanding {
  rank: string
  discount: number
  next_rank: string | null
  /** XP still needed for next_rank (0 at the top). */
  remaining_xp: number
  /** Progress from this rank's threshold to the next one, 0..1 (1 at the top). */
  progress: number
}

export function rankIndexOf(xp: number): number {
  let i = 0
  while (i + 1 < RANKS.length && xp >= RANKS[i + 1]!.xp) i++
  return i
}

export function rankOf(xp: number): RankStanding {
  const i = rankIndexOf(xp)
  const r = RANKS[i]!
  const next = RANKS[i + 1]
  if (!next) return { rank: r.name, discount: r.discount, next_rank: null, remaining_xp: 0, progress: 1 }
  return {
    rank: r.name,
    discount: r.discount,
    next_rank: next.name,
    remaining_xp: next.xp - xp,
    progress: Math.min(1, Math.max(0, (xp - r.xp) / (next.xp - r.xp))),
  }
}

/**
 * The credits a payer of this rank discount is debited: only the premium above the judgment floor is discounted
 * (spec, Limits: "Judgment floor | 1,000 credits (rank discount applies to premium above it)"); a price at or under
 * the floor is unchanged. The discount is rounded down in credits, so the result never drops below the floor.
 */
export function discountedCredits(credits: number, discount: number, floor: number = JUDGMENT_FLOOR_CREDITS): number {
  if (credits <= floor || discount <= 0) return credits
  const premium = credits - floor
  // Basis points in integers: 0.05 × 563 must be exactly 28, not 28.150000000000002 rounded some other way.
  const bps = Math.round(Math.min(1, discount) * 10_000)
  return credits - Math.floor((premium * bps) / 10_000)
}
