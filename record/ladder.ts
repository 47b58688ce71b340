/**
 * The price ladder's rungs as the measured record latches them.
 *
 * Spec, States: "Ladder rung | rung n | both the evidence milestone and the matching intelligence gate met | rung n+1
 * after a notice window (ladder.pending) | latched; never reverts; price +25% per rung", with the gates per rung in
 * "Ladder gates (latched artifacts)". The batch job (RecordJob) checks the next rung after each snapshot; a crossing is
 * written once (ladder_crossings) and takes effect after the notice window, so a payer sees a price rise coming before
 * it applies. Nothing ever removes a crossing: a later dip in the measures leaves the rung where it is.
 */
import { canonicalJson } from '../common/jcs.ts'

/** Rungs and their gates (spec, States). Evidence is realized outcomes; the rest are intelligence gates. */
export const LADDER_RUNGS = [
  { rung: 1, evidence: 1_000, gates: [{ kind: 'published_bands', threshold: 1 }] },
  { rung: 2, evidence: 10_000, gates: [{ kind: 'release_skill_ci_above_zero', threshold: 1 }] },
  { rung: 3, evidence: 100_000, gates: [{ kind: 'published_bands', threshold: 30 }, { kind: 'active_release_major', threshold: 2 }] },
  { rung: 4, evidence: 1_000_000, gates: [{ kind: 'published_bands', threshold: 100 }, { kind: 'active_release_major', threshold: 3 }] },
] as const

/** Notice before a crossed rung's prices apply: a week (decisions.md). */
export const LADDER_NOTICE_MS = 7 * 86_400_000

export interface LadderCrossing {
  rung: number
  crossed_at: string
  effective_at: string
  /** Canonical JSON of the gate values measured at the crossing. */
  measured: string
}

/** What the release domain tells the record (record/releases). */
export interface ReleaseFacts {
  activeRelease(): Promise<{ version: string; activated_at: string; delta_brier: number | null; delta_brier_ci: [number, number] | null } | null>
  ladderFacts(): Promise<{ active_release_major: number | null; release_skill_ci_above_zero: number }>
}

export interface LadderInputs {
  crossings: readonly LadderCrossing[]
  realized: number
  publishedBands: number
  releases: { active_release_major: number | null; release_skill_ci_above_zero: number } | null
  now: number
  noticeMs: number
}

export function gateValues(i: Pick<LadderInputs, 'publishedBands' | 'releases'>): Record<string, number> {
  const values: Record<string, number> = { published_bands: i.publishedBands, release_skill_ci_above_zero: i.releases?.release_skill_ci_above_zero ?? 0 }
  if (i.releases?.active_release_major !== null && i.releases?.active_release_major !== undefined) values.active_release_major = i.releases.active_release_major
  return values
}

/**
 * The crossing to latch now, if any: the rung above the highest latched one, when its evidence and every gate are met.
 * One rung per call (a run), so each rung gets its own notice window.
 */
export function nextCrossing(i: LadderInputs): LadderCrossing | null {
  const top = i.crossings.reduce((m, c) => Math.max(m, c.rung), 0)
  const next = LADDER_RUNGS.find((r) => r.rung === top + 1)
  if (!next || i.realized < next.evidence) return null
  const values = gateValues(i)
  if (!next.gates.every((g) => (values[g.kind] ?? -Infinity) >= g.threshold)) return null
  return {
    rung: next.rung,
    crossed_at: new Date(i.now).toISOString(),
    effective_at: new Date(i.now + i.noticeMs).toISOString(),
    measured: canonicalJson({ realized_outcomes: i.realized, ...values }),
  }
}

/** The ladder measures the price list and /v1/intelligence publish (product/billing/pricing.ts LadderMeasures). */
export interface LadderState {
  rung: number
  effective_at: string | null
  realized_outcomes: number | null
  gate_values: Partial<Record<string, number>>
  pending: { rung: number; crossed_at: string; effective_at: string; ms_remaining: number } | null
}

export function ladderStateOf(i: Omit<LadderInputs, 'noticeMs'>): LadderState {
  const effective = i.crossings.filter((c) => Date.parse(c.effective_at) <= i.now)
  const current = effective.reduce<LadderCrossing | null>((m, c) => (m === null || c.rung > m.rung ? c : m), null)
  const waiting = i.crossings.filter((c) => Date.parse(c.effective_at) > i.now).sort((a, b) => a.rung - b.rung)[0] ?? null
  return {
    rung: current?.rung ?? 0,
    effective_at: current?.effective_at ?? null,
    realized_outcomes: i.realized,
    gate_values: gateValues(i),
    pending: waiting
      ? { rung: waiting.rung, crossed_at: waiting.crossed_at, effective_at: waiting.effective_at, ms_remaining: Math.max(0, Date.parse(waiting.effective_at) - i.now) }
      : null,
  }
}
