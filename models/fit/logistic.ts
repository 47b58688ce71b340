/**
 * L2-penalised logistic regression fitted by IRLS (Newton–Raphson) on standardised features.
 *
 * Method (documented in docs/methodology.md): features are standardised with the training mean and sample sd (an sd
 * of 0 becomes 1, so a constant feature contributes nothing); the intercept is unpenalised; the penalty is
 * λ/2 · ‖β‖² on the slopes. Newton steps solve (XᵀWX + λI′) Δ = Xᵀ(y − p) − λβ′ by Gaussian elimination with partial
 * pivoting; iteration stops when max |Δ| < 1e−10 or after 100 steps. Deterministic: same rows in the same order give
 * bit-identical coefficients.
 */

export const DEFAULT_L2 = 1
const MAX_ITER = 100
const TOL = 1e-10

export interface LogisticFit {
  /** Feature standardisation. */
  mean: number[]
  sd: number[]
  /** [intercept, slopes...] on standardised features. */
  beta: number[]
  lambda: number
  iterations: number
}

export function sigmoid(z: number): number {
  if (z >= 0) return 1 / (1 + Math.exp(-z))
  const e = Math.exp(z)
  return e / (1 + e)
}

function solve(a: number[][], b: number[]): number[] {
  const n = b.length
  const m = a.map((row, i) => [...row, b[i]!])
  for (let c = 0; c < n; c++) {
    let piv = c
    for (let r = c + 1; r < n; r++) if (Math.abs(m[r]![c]!) > Math.abs(m[piv]![c]!)) piv = r
    if (piv !== c) [m[c], m[piv]] = [m[piv]!, m[c]!]
    const d = m[c]![c]!
    if (Math.abs(d) < 1e-300) throw new RangeError('singular system in logistic IRLS')
    for (let r = c + 1; r < n; r++) {
      const f = m[r]![c]! / d
      if (f === 0) continue
      for (let k = c; k <= n; k++) m[r]![k]! -= f * m[c]![k]!
    }
  }
  const x = new Array<number>(n).fill(0)
  for (let r = n - 1; r >= 0; r--) {
    let s = m[r]![n]!
    for (let k = r + 1; k < n; k++) s -= m[r]![k]! * x[k]!
    x[r] = s / m[r]![r]!
  }
  return x
}

export function standardise(rows: readonly number[][]): { mean: number[]; sd: number[] } {
  const d = rows[0]?.length ?? 0
  const mean = new Array<number>(d).fill(0)
  const sd = new Array<number>(d).fill(0)
  for (const r of rows) for (let j = 0; j < d; j++) mean[j]! += r[j]!
  for (let j = 0; j < d; j++) mean[j]! /= rows.length
  for (const r of rows) for (let j = 0; j < d; j++) sd[j]! += (r[j]! - mean[j]!) ** 2
  for (let j = 0; j < d; j++) {
    const s = rows.length > 1 ? Math.sqrt(sd[j]! / (rows.length - 1)) : 0
    sd[j] = s > 0 && Number.isFinite(s) ? s : 1
  }
  return { mean, sd }
}

export function fitLogistic(x: readonly number[][], y: readonly number[], lambda = DEFAULT_L2): LogisticFit {
  if (x.length !== y.length || x.length === 0) throw new RangeError('fitLogistic needs equal, non-empty x and y')
  const { mean, sd } = standardise(x)
  const d = mean.length + 1
  const n = x.length
  // One flat row-major design matrix [1, standardised features…]: the same arithmetic in the same order as a
  // row-of-arrays walk (so the same bits), without an allocation per row; walk-forward selection fits this many times.
  const z = new Float64Array(n * d)
  for (let i = 0; i < n; i++) {
    const r = x[i]!
    z[i * d] = 1
    for (let j = 1; j < d; j++) z[i * d + j] = (r[j - 1]! - mean[j - 1]!) / sd[j - 1]!
  }
  const beta = new Array<number>(d).fill(0)
  const hFlat = new Float64Array(d * d)
  const g = new Float64Array(d)
  let iterations = 0
  for (; iterations < MAX_ITER; iterations++) {
    hFlat.fill(0)
    g.fill(0)
    for (let i = 0; i < n; i++) {
      const o = i * d
      let eta = 0
      for (let j = 0; j < d; j++) eta += z[o + j]! * beta[j]!
      const p = sigmoid(eta)
      const w = Math.max(p * (1 - p), 1e-12)
      const resid = y[i]! - p
      for (let j = 0; j < d; j++) {
        const zj = z[o + j]!
        g[j]! += zj * resid
        const wz = w * zj
        const hj = j * d
        for (let k = 0; k <= j; k++) hFlat[hj + k]! += wz * z[o + k]!
      }
    }
    const h = Array.from({ length: d }, (_, j) => Array.from(hFlat.subarray(j * d, j * d + d)))
    for (let j = 0; j < d; j++) for (let k = j + 1; k < d; k++) h[j]![k] = h[k]![j]!
    const grad = Array.from(g)
    for (let j = 1; j < d; j++) {
      h[j]![j]! += lambda
      grad[j]! -= lambda * beta[j]!
    }
    const step = solve(h, grad)
    let maxStep = 0
    for (let j = 0; j < d; j++) {
      beta[j]! += step[j]!
      maxStep = Math.max(maxStep, Math.abs(step[j]!))
    }
    if (maxStep < TOL) {
      iterations++
      break
    }
  }
  return { mean, sd, beta, lambda, iterations }
}

export function predictLogistic(fit: Pick<LogisticFit, 'mean' | 'sd' | 'beta'>, x: readonly number[]): number {
  let eta = fit.beta[0]!
  for (let j = 0; j < x.length; j++) eta += fit.beta[j + 1]! * ((x[j]! - fit.mean[j]!) / fit.sd[j]!)
  return sigmoid(eta)
}
