/**
 * The funnel as of one instant, from the aggregates of each source (pure: the same facts give the same snapshot).
 *
 * Spec (Operator funnel): "Step item: { step, count (null when unmeasured, never zero), measurable, derivation or
 * note }"; "A payer activates on the first graded call; an empty window gives a null median." A measured step says
 * how its count is computed (derivation); an unmeasured one has count null and says why (note). A measured count of
 * 0 is a measurement; an unwired source is never reported as 0. The window of a snapshot is everything its sources
 * held at `at` (cumulative; the trend shows the change between snapshots), docs/decisions.md.
 */
import type { DrawRow } from '../../pipeline/records/drawRecord.ts'
import type { FunnelActivation, FunnelStep } from '../../pipeline/records/funnelRecord.ts'
import type { CallFacts, LedgerFacts } from './FunnelTally.ts'

export const FUNNEL_STEPS = [
  'anonymous_read', 'question_open', 'free_credit_claim', 'decision_run', 'player_call_lock', 'decision_resolve',
  'player_call_grade', 'xp_award', 'quest_complete', 'badge_award', 'rank_up', 'credit_purchase_begin',
  'credit_purchase', 'second_paid_run',
] as const
export type FunnelStepName = (typeof FUNNEL_STEPS)[number]

export interface DrawFacts {
  /** Scout (free allowance) grants: credit rows with reason 'scout'. */
  scoutClaims: number
  /** Pack and plan purchases: credit rows with reason pack.<id> or plan.<id>. */
  purchases: number
  /** Payers with at least two unreversed debits drawn from paid lots (not the free allowance). */
  secondPaidRunPayers: number
}

export interface ArenaFacts {
  xpByKind: Record<string, number>
  questCompletions: number
  badgeAwards: number
}

export interface FunnelFacts {
  ledger: LedgerFacts | null
  draws: DrawFacts | null
  calls: CallFacts | null
  arena: ArenaFacts | null
}

export interface ComputedFunnel {
  window_calls: number
  xp_by_kind: Record<string, number> | null
  steps: FunnelStep[]
  activation: FunnelActivation
}

/** The credit rows' aggregates: one pass over the draws journal as the credit ledger holds it. */
export function drawFacts(rows: Iterable<DrawRow>): DrawFacts {
  let scoutClaims = 0
  let purchases = 0
  const lotReason = new Map<string, string>()
  const refunded = new Set<string>()
  const debits: DrawRow[] = []
  for (const r of rows) {
    if (r.kind === 'credit') {
      lotReason.set(r.lot_id, r.reason)
      if (r.reason === 'scout') scoutClaims++
      else if (r.reason.startsWith('pack.') || r.reason.startsWith('plan.')) purchases++
    } else if (r.kind === 'refund') refunded.add(r.ref)
    else if (r.kind === 'debit') debits.push(r)
  }
  // One paid run = one payment (debit ref), whatever the number of lots it drew from; a reversed one never ran.
  const runs = new Map<string, Set<string>>()
  for (const d of debits) {
    if (refunded.has(d.ref) || lotReason.get(d.lot_id) === 'scout') continue
    const payer = d.payer.toLowerCase()
    let refs = runs.get(payer)
    if (!refs) runs.set(payer, (refs = new Set()))
    refs.add(d.ref)
  }
  let secondPaidRunPayers = 0
  for (const refs of runs.values()) if (refs.size >= 2) secondPaidRunPayers++
  return { scoutClaims, purchases, secondPaidRunPayers }
}

/** The median of a list of numbers; null when it is empty (spec: "an empty window gives a null median"). */
export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null
  const s = [...values].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

const NOTES = {
  ledger: 'the decision ledger is not wired on this deployment',
  billing: 'billing (the credit ledger) is not wired on this deployment',
  duel: "the duel's call events are not wired on this deployment",
  arena: 'the Arena is not wired on this deployment',
} as const

function measured(step: FunnelStepName, count: number, derivation: string): FunnelStep {
  return { step, count, measurable: true, derivation }
}

function unmeasured(step: FunnelStepName, note: string): FunnelStep {
  return { step, count: null, measurable: false, note }
}

/** A step whose source may be unwired: measured when it is, else null with the source's note. */
function fromSource<T>(step: FunnelStepName, source: T | null, note: string, count: (s: T) => number, derivation: string): FunnelStep {
  return source === null ? unmeasured(step, note) : measured(step, count(source), derivation)
}

export function computeFunnel(facts: FunnelFacts): ComputedFunnel {
  const { ledger, draws, calls, arena } = facts
  const steps: FunnelStep[] = [
    unmeasured('anonymous_read', 'never measurable: free reads carry no identity, so a reader cannot be followed into the funnel'),
    unmeasured(
      'question_open',
      'defined as a 402 payment challenge served on POST /v1/decisions (a caller reached the paid step); no journal records challenges on this deployment, so it is not counted',
    ),
    fromSource('free_credit_claim', draws, NOTES.billing, (d) => d.scoutClaims, 'credit rows with reason scout in the billing.draws journal (one per payer: the free allowance is granted once)'),
    fromSource('decision_run', ledger, NOTES.ledger, (l) => l.paidDecisions, 'decisions in the ledger whose payment_rail is x402 or credits (free-allowance runs included; the house schedule, rail none, excluded)'),
    fromSource('player_call_lock', calls, NOTES.duel, (c) => c.locks, 'CallLocked events of the duel (one per call_id)'),
    fromSource('decision_resolve', ledger, NOTES.ledger, (l) => l.paidResolutions, 'resolutions on the outcome bus of decisions whose payment_rail is x402 or credits'),
    fromSource('player_call_grade', calls, NOTES.duel, (c) => c.graded, "CallGraded events with status graded (void calls, on an unresolvable outcome, are not graded)"),
    fromSource('xp_award', arena, NOTES.arena, (a) => Object.values(a.xpByKind).reduce((s, n) => s + n, 0), "XP awards in the Arena's experience journal, all kinds (xp_by_kind splits them)"),
    fromSource('quest_complete', arena, NOTES.arena, (a) => a.questCompletions, "quest completions recorded by the Arena"),
    fromSource('badge_award', arena, NOTES.arena, (a) => a.badgeAwards, 'badge awards recorded by the Arena'),
    unmeasured('rank_up', 'ranks are derived from XP at read time and never recorded, so rank changes are not counted'),
    unmeasured(
      'credit_purchase_begin',
      'a 402 challenge on POST /v1/billing/packs or /v1/billing/plans, or a rate-lock quote, would begin a purchase; neither is recorded by any journal, so it is not counted',
    ),
    fromSource('credit_purchase', draws, NOTES.billing, (d) => d.purchases, 'credit rows with reason pack.<id> or plan.<id> in the billing.draws journal (settled pack and plan purchases)'),
    fromSource(
      'second_paid_run',
      draws,
      NOTES.billing,
      (d) => d.secondPaidRunPayers,
      'payers with at least two unreversed debits (distinct payment refs) drawn from paid lots, not the free allowance, in the billing.draws journal; x402 payments carry no payer there and are not counted',
    ),
  ]
  const lockToGrade: number[] = []
  let activated = 0
  if (calls) {
    for (const p of calls.payers.values()) {
      if (p.firstGrade === null) continue
      activated++
      if (p.firstLock !== null) lockToGrade.push(Math.max(0, p.firstGrade - p.firstLock))
    }
  }
  return {
    // window_calls: the paid calls the snapshot covers: paid decision runs plus player calls locked (docs/decisions.md).
    window_calls: (ledger?.paidDecisions ?? 0) + (calls?.locks ?? 0),
    xp_by_kind: arena ? { ...arena.xpByKind } : null,
    steps,
    activation: {
      activated_payers: calls ? activated : null,
      graded_calls: calls ? calls.graded : null,
      first_lock_to_first_grade: {
        median_ms: median(lockToGrade),
        n: calls ? lockToGrade.length : null,
        window_calls: calls ? calls.locks : null,
      },
    },
  }
}
