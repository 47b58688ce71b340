/**
 * Release rows for tests: a body, an evaluation with a given delta-Brier interval, and four gate verdicts (one failing
 * or none), so the release store's tests and the Parquet type checks seal the same shapes.
 */
import type { ReleaseBody } from '../../record/releases/body.ts'
import { GATES, type Evaluation, type GateName, type GateVerdict } from '../../record/releases/evaluate.ts'

export const HASH = 'a'.repeat(64)

export function body(version: string, parent: string | null): ReleaseBody {
  return {
    version,
    parent,
    method: { name: 'v2', jev_version: 'jev-2.0.0' },
    families: {},
    dataset: { window_start: '2025-01-01T00:00:00.000Z', window_end: '2025-02-01T00:00:00.000Z', n_realized: 500, dataset_hash: HASH },
    code: { jev_version: 'jev-2.0.0', policy_version: 'policy-3.0.0', policy_checksum: 'b'.repeat(64), fit_code: 'c'.repeat(64) },
  }
}

export function evaluation(deltaCi: [number, number]): Evaluation {
  return {
    folds: [],
    incumbent: { version: null, kind: 'base_rate' },
    delta_brier: (deltaCi[0] + deltaCi[1]) / 2,
    delta_brier_ci: deltaCi,
    delta_logloss: null,
    delta_logloss_ci: null,
    per_family: {},
    holdout: { window_start: '2025-02-01T00:00:00.000Z', window_end: null, n_decisions: 200, n_realized: 200 },
    bootstrap: { method: 'percentile, whole UTC days', seed: 1, resamples: 2000, level: 0.95 },
    candidate_checksum: HASH,
  }
}

export function gates(failing: GateName | null): Record<GateName, GateVerdict> {
  return Object.fromEntries(GATES.map((g) => [g, g === failing ? { met: false, measured: { x: 1 }, reason: `${g} failed` } : { met: true, measured: { x: 1 } }])) as unknown as Record<GateName, GateVerdict>
}
