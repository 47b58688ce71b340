/**
 * Learning-curve fit BS(n) = a·n^(−b) + c.
 *
 * Spec, Intelligence measures: "fit: { a, b, c, b_ci } or null, note. Fit law: BS(n) = a * n^(-b) + c; b is the
 * learning velocity with a 95% bootstrap interval; fit is null with a note below three anchor points."
 * forecast-verification.md §6: bounds a > 0, b > 0, 0 ≤ c ≤ 0.25; weight larger-n points more; bootstrap interval for
 * b; "If the fit hits a bound (e.g. BS rising with n → b → 0), report it as at-bound, not as a learning rate."
 *
 * Method (no starting values, no local-minimum traps): for a fixed b the model is linear in (a, c), so the weighted
 * least-squares (a, c) under a ≥ 0, 0 ≤ c ≤ 0.25 has a closed form (interior solution, else the best of the clamped
 * edge solutions — the problem is a convex quadratic over a box). The profile SSE(b) is scanned on a log grid over
 * [B_MIN, B_MAX] and refined by golden-section search around the best grid point.
 * Weights w_i ∝ n_i: a Brier score over n outcomes has variance ∝ 1/n, so these are inverse-variance weights.
 * Interval for b: residual bootstrap (standardised residuals √w_i·r_i, centred, inflated for the 3 fitted parameters,
 * resampled with replacement, added back to the fit), percentile interval; seeded, so a rebuild reproduces it. Points
 * are few (one per anchor), so resampling the points themselves would often leave fewer than three distinct n.
 */
import { DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED, quantileSorted } from './bootstrap.ts'
import { Prng } from '../../ingest/Prng.ts'

export const MIN_ANCHOR_POINTS = 3
export const B_MIN = 1e-3
export const B_MAX = 3
export const C_MAX = 0.25
const GRID_POINTS = 120
const GOLDEN_TOLERANCE = 1e-13

export type CurveWeighting = 'n' | 'sqrt_n' | 'none'
export type CurveBound = 'a_min' | 'b_min' | 'b_max' | 'c_min' | 'c_max'

export interface CurvePoint {
  /** Cumulative realized outcomes at the anchor. */
  readonly n: number
  readonly brier: number
}

export interface LearningCurveOptions {
  readonly weighting?: CurveWeighting
  readonly seed?: number | string
  readonly resamples?: number
  readonly level?: number
}

export interface LearningCurveFit {
  readonly a: number
  readonly b: number
  readonly c: number
  /** Percentile bootstrap interval for b; null when no bootstrap refit succeeded. */
  readonly b_ci: readonly [number, number] | null
  readonly at_bound: boolean
  readonly bounds_hit: readonly CurveBound[]
  readonly weighting: CurveWeighting
  /** Weighted root-mean-square residual. */
  readonly rmse: number
  readonly n_points: number
  readonly level: number
  readonly resamples: number
  readonly seed: number | string
}

export interface LearningCurveResult {
  readonly fit: LearningCurveFit | null
  readonly note: string
}

interface Params {
  a: number
  b: number
  c: number
  sse: number
}

/** Weighted LS of y ≈ a·x + c with a ≥ 0 and 0 ≤ c ≤ C_MAX, for fixed x (= n^−b). */
function solveLinear(x: Float64Array, y: Float64Array, w: Float64Array): { a: number; c: number; sse: number } {
  const m = x.length
  let sw = 0
  let swx = 0
  let swy = 0
  for (let i = 0; i < m; i++) {
    sw += w[i]!
    swx += w[i]! * x[i]!
    swy += w[i]! * y[i]!
  }
  const xbar = swx / sw
  const ybar = swy / sw
  let cxx = 0
  let cxy = 0
  let sxx = 0
  for (let i = 0; i < m; i++) {
    const dx = x[i]! - xbar
    cxx += w[i]! * dx * dx
    cxy += w[i]! * dx * (y[i]! - ybar)
    sxx += w[i]! * x[i]! * x[i]!
  }
  const sse = (a: number, c: number): number => {
    let s = 0
    for (let i = 0; i < m; i++) {
      const r = y[i]! - a * x[i]! - c
      s += w[i]! * r * r
    }
    return s
  }
  if (cxx > 0) {
    const a = cxy / cxx
    const c = ybar - a * xbar
    if (a >= 0 && c >= 0 && c <= C_MAX) return { a, c, sse: sse(a, c) }
  }
  // On the boundary: best of the edges c = 0, c = C_MAX (a clamped to ≥ 0) and a = 0 (c clamped to the box).
  const candidates: Array<[number, number]> = []
  for (const c of [0, C_MAX]) {
    let sxr = 0
    for (let i = 0; i < m; i++) sxr += w[i]! * x[i]! * (y[i]! - c)
    candidates.push([sxx > 0 ? Math.max(0, sxr / sxx) : 0, c])
  }
  candidates.push([0, Math.min(C_MAX, Math.max(0, ybar))])
  let best = { a: 0, c: 0, sse: Infinity }
  for (const [a, c] of candidates) {
    const s = sse(a, c)
    if (s < best.sse) best = { a, c, sse: s }
  }
  return best
}

function fitParams(logN: Float64Array, y: Float64Array, w: Float64Array): Params {
  const m = logN.length
  const x = new Float64Array(m)
  const at = (b: number): Params => {
    for (let i = 0; i < m; i++) x[i] = Math.exp(-b * logN[i]!)
    const { a, c, sse } = solveLinear(x, y, w)
    return { a, b, c, sse }
  }
  const ratio = Math.log(B_MAX / B_MIN) / (GRID_POINTS - 1)
  const grid: number[] = []
  for (let g = 0; g < GRID_POINTS; g++) grid.push(g === GRID_POINTS - 1 ? B_MAX : B_MIN * Math.exp(ratio * g))
  let bestIdx = 0
  let best = at(grid[0]!)
  for (let g = 1; g < GRID_POINTS; g++) {
    const p = at(grid[g]!)
    if (p.sse < best.sse) {
      best = p
      bestIdx = g
    }
  }
  // Golden-section refinement on the bracket around the best grid point.
  let lo = grid[Math.max(0, bestIdx - 1)]!
  let hi = grid[Math.min(GRID_POINTS - 1, bestIdx + 1)]!
  const invPhi = (Math.sqrt(5) - 1) / 2
  let x1 = hi - invPhi * (hi - lo)
  let x2 = lo + invPhi * (hi - lo)
  let f1 = at(x1)
  let f2 = at(x2)
  for (let iter = 0; iter < 200 && hi - lo > GOLDEN_TOLERANCE * Math.max(1, Math.abs(lo)); iter++) {
    if (f1.sse <= f2.sse) {
      hi = x2
      x2 = x1
      f2 = f1
      x1 = hi - invPhi * (hi - lo)
      f1 = at(x1)
    } else {
      lo = x1
      x1 = x2
      f1 = f2
      x2 = lo + invPhi * (hi - lo)
      f2 = at(x2)
    }
  }
  for (const p of [f1, f2, at(lo), at(hi)]) if (p.sse < best.sse) best = p
  return best
}

function boundsHit(p: Params): CurveBound[] {
  const hit: CurveBound[] = []
  if (p.a <= 0) hit.push('a_min')
  if (p.b <= B_MIN * (1 + 1e-9)) hit.push('b_min')
  if (p.b >= B_MAX * (1 - 1e-9)) hit.push('b_max')
  if (p.c <= 0) hit.push('c_min')
  if (p.c >= C_MAX) hit.push('c_max')
  return hit
}

function weightOf(n: number, weighting: CurveWeighting): number {
  return weighting === 'n' ? n : weighting === 'sqrt_n' ? Math.sqrt(n) : 1
}

export function fitLearningCurve(points: readonly CurvePoint[], options: LearningCurveOptions = {}): LearningCurveResult {
  const { weighting = 'n', seed = DEFAULT_SEED, resamples = DEFAULT_RESAMPLES, level = DEFAULT_LEVEL } = options
  if (!Array.isArray(points)) throw new RangeError('points must be an array')
  if (weighting !== 'n' && weighting !== 'sqrt_n' && weighting !== 'none') throw new RangeError('weighting must be n, sqrt_n or none')
  if (!Number.isInteger(resamples) || resamples < 0 || resamples > 100_000) throw new RangeError('resamples must be an integer in [0, 100000]')
  if (!(level > 0 && level < 1)) throw new RangeError('level must be in (0, 1)')
  new Prng(seed) // validates the seed
  points.forEach((pt, i) => {
    if (!Number.isFinite(pt?.n) || pt.n < 1) throw new RangeError(`points[${i}].n must be a finite number >= 1`)
    if (!Number.isFinite(pt.brier) || pt.brier < 0 || pt.brier > 1) throw new RangeError(`points[${i}].brier must be in [0, 1]`)
  })
  const distinct = new Set(points.map((pt) => pt.n)).size
  if (distinct < MIN_ANCHOR_POINTS) {
    return {
      fit: null,
      note: `${distinct} anchor point${distinct === 1 ? '' : 's'} with distinct n; at least ${MIN_ANCHOR_POINTS} are needed to fit BS(n) = a·n^(−b) + c.`,
    }
  }
  const m = points.length
  const logN = Float64Array.from(points, (pt) => Math.log(pt.n))
  const y = Float64Array.from(points, (pt) => pt.brier)
  const maxW = Math.max(...points.map((pt) => weightOf(pt.n, weighting)))
  const w = Float64Array.from(points, (pt) => weightOf(pt.n, weighting) / maxW)
  const best = fitParams(logN, y, w)
  const fitted = Float64Array.from(logN, (ln) => best.a * Math.exp(-best.b * ln) + best.c)
  let wsum = 0
  for (let i = 0; i < m; i++) wsum += w[i]!
  const rmse = Math.sqrt(best.sse / wsum)

  // Residual bootstrap for b.
  const std = Float64Array.from(y, (yi, i) => (yi - fitted[i]!) * Math.sqrt(w[i]!))
  const mean = std.reduce((s, v) => s + v, 0) / m
  // Fitted residuals are smaller than the errors (3 parameters were fitted): inflate by √(m/(m−3)) (Davison & Hinkley
  // 1997, §6.2.3, "modified residuals"); with exactly 3 points the residuals are zero and the interval is degenerate.
  const inflate = m > 3 ? Math.sqrt(m / (m - 3)) : 1
  for (let i = 0; i < m; i++) std[i] = (std[i]! - mean) * inflate
  const rng = new Prng(seed)
  const bs = new Float64Array(resamples)
  const yStar = new Float64Array(m)
  for (let r = 0; r < resamples; r++) {
    for (let i = 0; i < m; i++) {
      yStar[i] = Math.min(1, Math.max(0, fitted[i]! + std[rng.int(0, m - 1)]! / Math.sqrt(w[i]!)))
    }
    bs[r] = fitParams(logN, yStar, w).b
  }
  bs.sort()
  const alpha = 1 - level
  const b_ci: readonly [number, number] | null =
    resamples > 0 ? [quantileSorted(bs, alpha / 2), quantileSorted(bs, 1 - alpha / 2)] : null

  const hit = boundsHit(best)
  const weightText = weighting === 'n' ? 'weights ∝ n' : weighting === 'sqrt_n' ? 'weights ∝ √n' : 'equal weights'
  const note = hit.length
    ? `Fit at bound (${hit.join(', ')}): ${hit.includes('b_min') || hit.includes('a_min') ? 'no learning is measurable on these points; b is not a learning rate.' : 'read the parameters with care.'} Weighted least squares, ${weightText}, ${m} points.`
    : `Weighted least squares, ${weightText}, ${m} points; b interval: ${Math.round(level * 100)}% residual bootstrap (${resamples} resamples, seed ${seed}).`
  return {
    fit: {
      a: best.a,
      b: best.b,
      c: best.c,
      b_ci,
      at_bound: hit.length > 0,
      bounds_hit: hit,
      weighting,
      rmse,
      n_points: m,
      level,
      resamples,
      seed,
    },
    note,
  }
}
