/** Helpers shared by the question modules: input checks, refusals, dated sentences, number formatting. */
import type { FeatureSnapshot } from '../../pipeline/features/FeatureSnapshot.ts'
import type { LabelledSample, ModelRefusal, QuestionId, RefusalKind } from '../QuestionModel.ts'
import type { FeatureInput } from '../../pipeline/features/stalenessBudgets.ts'
import { isoMs } from '../../ingest/Tick.ts'

/** Fewer usable labelled samples than this and a question refuses with insufficient_confidence. */
export const TRAIN_FLOOR = 80
/** Share of the (time-ordered) training samples used to fit; the later rest calibrates. */
export const FIT_SHARE = 0.7

export interface Refusal {
  refusal: RefusalKind
  reason: string
}

/**
 * Spec, Decision record: "stale_input = an input breached its staleness budget or arrived degraded … suppress = the
 * model refused as out of scope or unresolvable, or the surface is unavailable." An input this market never had
 * (e.g. funding on a spot venue) is an unavailable surface: suppress. One it had but is late or degraded: stale_input.
 */
export function inputRefusal(snapshot: FeatureSnapshot, inputs: readonly FeatureInput[]): Refusal | null {
  for (const input of inputs) {
    const f = snapshot.freshness.find((x) => x.input === input)
    if (!f) return { refusal: 'suppress', reason: `input_unavailable:${input}` }
    if (f.quality === 'degraded') return { refusal: 'stale_input', reason: `input_degraded:${input}` }
    if (!f.ok) return { refusal: 'stale_input', reason: `input_stale:${input}` }
  }
  return null
}

export function refusal(r: Refusal, event: string, horizon: string, conditions: Record<string, unknown>): ModelRefusal {
  return { kind: 'refusal', refusal: r.refusal, reason: r.reason, event, horizon, conditions }
}

/** '2025-01-01T04:00Z' — minute precision for event sentences. */
export function isoMinute(ms: number): string {
  return isoMs(ms).slice(0, 16) + 'Z'
}

/** Short, stable number text for sentences (6 significant digits). */
export function num(x: number): string {
  return Number(x.toPrecision(6)).toString()
}

export function horizonString(ms: number): string {
  return `${ms / 60_000}m`
}

/** Samples in decision-time order (asset breaks ties), the order every fit uses. */
export function timeOrdered(samples: readonly LabelledSample[]): LabelledSample[] {
  return [...samples].sort((a, b) => a.snapshot.at - b.snapshot.at || (a.snapshot.asset < b.snapshot.asset ? -1 : a.snapshot.asset > b.snapshot.asset ? 1 : 0))
}

/** The samples a fit can use, in time order: those `row` turns into a training row, with their rows. */
export function usableRows<R>(samples: readonly LabelledSample[], row: (s: LabelledSample) => R | null): { used: LabelledSample[]; rows: R[] } {
  const used: LabelledSample[] = []
  const rows: R[] = []
  for (const s of timeOrdered(samples)) {
    const r = row(s)
    if (r) {
      used.push(s)
      rows.push(r)
    }
  }
  return { used, rows }
}

export function trainedOn(samples: readonly LabelledSample[], horizonMs: number, positives: number | null) {
  const first = samples[0]
  const last = samples[samples.length - 1]
  return {
    window_start: first ? isoMs(first.snapshot.at) : '',
    window_end: last ? isoMs(last.snapshot.at + horizonMs) : '',
    n: samples.length,
    positives,
  }
}

export function feature(snapshot: FeatureSnapshot, name: string): number | null {
  const v = snapshot.features[name]
  return v === undefined || v === null || !Number.isFinite(v) ? null : v
}

export type { QuestionId }
