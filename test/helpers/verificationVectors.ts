/** Shared test fixtures: the known-answer vectors of forecast-verification.md §7 and a seeded data generator. */
import type { Test } from 'tap'
import type { ForecastPair } from '../../models/verification/pairs.ts'
import { Prng } from '../../ingest/Prng.ts'

export function pairsOf(p: readonly number[], y: readonly number[]): ForecastPair[] {
  return p.map((pi, i) => ({ p: pi, y: y[i]! }))
}

// forecast-verification.md §7.1 P1 (lorentzenchr/model-diagnostics @ d0d8eec, test_scoring.py::test_decompose_with_numbers)
// = §7.2 vector A.
export const VECTOR_A = pairsOf([0.4, 0.3, 0.2, 0.1, 0.5, 0.9], [0, 0, 0, 1, 1, 1])
// forecast-verification.md §7.1 P3 (scikit-learn sklearn/calibration.py calibration_curve docstring) = §7.2 vector B.
export const VECTOR_B = pairsOf([0.1, 0.2, 0.3, 0.4, 0.65, 0.7, 0.8, 0.9, 1.0], [0, 0, 0, 0, 1, 1, 1, 1, 1])
// forecast-verification.md §7.2 vector C, the constant forecaster.
export const VECTOR_C = pairsOf(Array(10).fill(0.7), [1, 0, 1, 1, 0, 0, 0, 0, 0, 0])
// forecast-verification.md §7.2 vector D, ties.
export const VECTOR_D = pairsOf([0.3, 0.3, 0.6, 0.6], [0, 1, 0, 1])

/** Random calibrated-ish data: p uniform (optionally rounded to `grid` steps to force ties), y ~ Bernoulli(p). */
export function randomPairs(seed: number, n: number, grid = 0): ForecastPair[] {
  const rng = new Prng(seed)
  const out: ForecastPair[] = []
  for (let i = 0; i < n; i++) {
    let p = rng.float()
    if (grid > 0) p = Math.round(p * grid) / grid
    out.push({ p, y: rng.float() < p ? 1 : 0 })
  }
  return out
}

export function close(t: Pick<Test, 'ok'>, actual: number, expected: number, tol: number, msg: string): void {
  t.ok(Math.abs(actual - expected) <= tol, `${msg}: ${actual} ≈ ${expected} (±${tol})`)
}
