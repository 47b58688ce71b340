/**
 * L2-penalised multinomial (softmax) logistic regression on standardised features, and temperature scaling.
 *
 * Model: P(y = k | x) = exp(η_k) / Σ_j exp(η_j), η_k = β_k0 + Σ_j β_kj z_j, z = (x − mean) / sd (the training mean and
 * sample sd, an sd of 0 becomes 1: models/fit/logistic.ts standardise). One class, `reference` (default 0), is pinned
 * at β = 0, so the free parameters are the (K − 1)(p + 1) coefficients of the other classes: each class's log-odds
 * against the reference. The objective is the log-likelihood summed over rows minus λ/2 · Σ_{k≠ref} Σ_{j≥1} β_kj²
 * (intercepts unpenalised), so K = 2 with reference 0 is exactly models/fit/logistic.ts fitLogistic on y = 1[class 1].
 * The penalty pulls every class's slopes toward the reference's (zero), so the reference is a modelling choice: pin
 * the "nothing happens" class.
 *
 * Algorithm: Newton–Raphson on the full (K − 1)(p + 1) Hessian (Σ_i (diag(p_i) − p_i p_iᵀ) ⊗ z_i z_iᵀ over the free
 * classes, plus λ on the slope diagonal), solved by Cholesky; started at the class-frequency intercepts with zero
 * slopes, or at a given start. A Newton step that does not decrease the penalised objective is halved (at most 30
 * times). Once a Newton step is below 1e−1 the Hessian's factor is kept and reused (chord steps: gradient and objective
 * only, about a sixth of a Newton step's cost for K = 4) while each step is at most a quarter of the one before and
 * descends; otherwise the Hessian is recomputed. Near the optimum the chord steps contract by orders of magnitude, so
 * this converges to the same point as pure Newton. A fit at a neighbouring λ on the same rows can start from the
 * previous fit's coefficients and curvature (options.init, options.curvature). Stops when max |Δ| < tol (default
 * 1e−10) or after 100 steps. The penalised objective is strictly concave for λ > 0 when every class occurs, so the
 * optimum is unique; a class absent from y has no finite unpenalised intercept and is rejected (RangeError).
 * Cost of a Newton step ≈ n · (p + 1)(p + 2)/2 · K(K − 1)/2 multiply-adds (the Hessian); 4–6 of them from the cold
 * start. Deterministic: same rows in the same order (and the same start) give bit-identical coefficients.
 *
 * Calibration: temperature scaling (Guo et al. 2017), P_T(y = k | x) = softmax(η / T)_k with one scalar T > 0 fitted
 * on a calibration slice by minimising the mean multiclass log loss. The loss is convex in s = 1/T, so its derivative
 * mean_i(E_{p(s)}[η_i] − η_{i,y_i}) is increasing in s: T is found by bisection on that derivative over s ∈ [1/T_MAX,
 * 1/T_MIN] (a fixed number of halvings, deterministic). T never changes the ordering of the classes (the modal class
 * stays the modal class): it only sharpens (T < 1) or flattens (T > 1) the distribution.
 */
import { standardise } from './logistic.ts'

const MAX_ITER = 100
const TOL = 1e-10
/** Once a step is this small, later steps reuse the last Hessian (a chord step) until one fails to descend. */
const REUSE_BELOW = 1e-1
/** A reused Hessian is kept while each step is at most this share of the one before (else it is recomputed). */
const CHORD_CONTRACTION = 0.25
const MAX_HALVINGS = 30
/** Temperature bounds: T in [T_MIN, T_MAX]. */
export const T_MIN = 0.05
export const T_MAX = 20
const BISECTIONS = 64

export interface MultinomialFit {
  /** Feature standardisation. */
  mean: number[]
  sd: number[]
  /** K rows of [intercept, slopes...] on standardised features; the row of `reference` is all zeros. */
  beta: number[][]
  reference: number
  lambda: number
  /** Newton steps taken, and how many of them computed a fresh Hessian. */
  iterations: number
  hessians: number
  /**
   * The log-likelihood's Hessian (without the penalty; (K − 1)(p + 1) square, free classes in order, row-major) of the
   * last fresh Newton step: the starting curvature of a fit at a neighbouring λ on the same rows (options.curvature).
   */
  curvature: Float64Array
}

export interface MultinomialOptions {
  /** The pinned class (default 0). */
  reference?: number
  /**
   * A starting point (K rows of [intercept, slopes...]; the reference row is ignored; a short row's missing slopes start
   * at 0, so a fit on fewer, leading features can start a fit on more), e.g. the fit at a neighbouring λ.
   */
  init?: readonly (readonly number[])[]
  /** Stop when max |Δ| falls below this (default 1e−10); a looser value suits fits that only rank candidates. */
  tol?: number
  /** A starting curvature (MultinomialFit.curvature of a fit on the same rows and features): the first steps reuse it. */
  curvature?: Float64Array
}

/** Cholesky factor L (row-major, lower) of a symmetric positive definite A (n × n); throws when A is not. */
function cholesky(a: Float64Array, n: number): Float64Array {
  const l = new Float64Array(n * n)
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      let s = a[i * n + j]!
      for (let k = 0; k < j; k++) s -= l[i * n + k]! * l[j * n + k]!
      if (i === j) {
        if (!(s > 0)) throw new RangeError('multinomial Hessian is not positive definite (collinear features with λ = 0?)')
        l[i * n + i] = Math.sqrt(s)
      } else {
        l[i * n + j] = s / l[j * n + j]!
      }
    }
  }
  return l
}

/** Solves L Lᵀ x = b. */
function choleskySolve(l: Float64Array, b: Float64Array, n: number): Float64Array {
  const y = new Float64Array(n)
  for (let i = 0; i < n; i++) {
    let s = b[i]!
    for (let k = 0; k < i; k++) s -= l[i * n + k]! * y[k]!
    y[i] = s / l[i * n + i]!
  }
  const x = new Float64Array(n)
  for (let i = n - 1; i >= 0; i--) {
    let s = y[i]!
    for (let k = i + 1; k < n; k++) s -= l[k * n + i]! * x[k]!
    x[i] = s / l[i * n + i]!
  }
  return x
}

/**
 * The penalised negative log-likelihood at `theta` (free classes × d, row-major) and, into `prob` (n × K), each row's
 * class probabilities.
 */
function objective(z: Float64Array, n: number, d: number, y: Int32Array, free: Int32Array, K: number, theta: Float64Array, lambda: number, prob: Float64Array): number {
  const F = free.length
  const eta = new Float64Array(K)
  let nll = 0
  for (let i = 0; i < n; i++) {
    const o = i * d
    let max = 0 // the reference's η
    eta.fill(0)
    for (let a = 0; a < F; a++) {
      let e = 0
      const t = a * d
      for (let j = 0; j < d; j++) e += z[o + j]! * theta[t + j]!
      eta[free[a]!] = e
      if (e > max) max = e
    }
    let sum = 0
    for (let k = 0; k < K; k++) {
      const e = Math.exp(eta[k]! - max)
      prob[i * K + k] = e
      sum += e
    }
    for (let k = 0; k < K; k++) prob[i * K + k]! /= sum
    nll -= eta[y[i]!]! - max - Math.log(sum)
  }
  let pen = 0
  for (let a = 0; a < F; a++) for (let j = 1; j < d; j++) pen += theta[a * d + j]! ** 2
  return nll + (lambda / 2) * pen
}

/**
 * The log-likelihood's gradient over the free classes into `grad` and, when `withWeights`, each row's Hessian weights
 * p_a(δ_ab − p_b) for the class pairs (a ≤ b) into `weights` (n × pairs).
 */
function gradientAndWeights(
  z: Float64Array,
  n: number,
  d: number,
  y: Int32Array,
  free: Int32Array,
  K: number,
  prob: Float64Array,
  withWeights: boolean,
  pairA: Int32Array,
  pairB: Int32Array,
  grad: Float64Array,
  weights: Float64Array,
): void {
  const F = free.length
  const P = pairA.length
  const pa = new Float64Array(F)
  grad.fill(0)
  for (let i = 0; i < n; i++) {
    const o = i * d
    const po = i * K
    const yi = y[i]!
    for (let a = 0; a < F; a++) {
      const c = free[a]!
      const pc = prob[po + c]!
      pa[a] = pc
      const r = (yi === c ? 1 : 0) - pc
      const g = a * d
      for (let j = 0; j < d; j++) grad[g + j]! += r * z[o + j]!
    }
    if (!withWeights) continue
    const wo = i * P
    for (let q = 0; q < P; q++) {
      const a = pairA[q]!
      const b = pairB[q]!
      weights[wo + q] = a === b ? pa[a]! * (1 - pa[a]!) : -pa[a]! * pa[b]!
    }
  }
}

/**
 * acc[q·tri + t] = Σ_i w_iq · (z_i z_iᵀ)_t over the upper triangle t of each row's outer product, rows in order. The
 * K = 4 path (6 weight pairs) keeps six running sums per product and gives the same bits as the general loop (each sum
 * adds the same terms in the same order); it is the hot loop of the fit.
 */
function accumulateHessian(z: Float64Array, n: number, d: number, w: Float64Array, P: number, acc: Float64Array): void {
  const tri = (d * (d + 1)) / 2
  acc.fill(0)
  if (P === 6) {
    const a0 = acc.subarray(0, tri)
    const a1 = acc.subarray(tri, 2 * tri)
    const a2 = acc.subarray(2 * tri, 3 * tri)
    const a3 = acc.subarray(3 * tri, 4 * tri)
    const a4 = acc.subarray(4 * tri, 5 * tri)
    const a5 = acc.subarray(5 * tri, 6 * tri)
    for (let i = 0; i < n; i++) {
      const o = i * d
      const wo = i * 6
      const w0 = w[wo]!
      const w1 = w[wo + 1]!
      const w2 = w[wo + 2]!
      const w3 = w[wo + 3]!
      const w4 = w[wo + 4]!
      const w5 = w[wo + 5]!
      let t = 0
      for (let j = 0; j < d; j++) {
        const zj = z[o + j]!
        for (let l = j; l < d; l++) {
          const v = zj * z[o + l]!
          a0[t]! += w0 * v
          a1[t]! += w1 * v
          a2[t]! += w2 * v
          a3[t]! += w3 * v
          a4[t]! += w4 * v
          a5[t]! += w5 * v
          t++
        }
      }
    }
    return
  }
  const zz = new Float64Array(tri)
  for (let i = 0; i < n; i++) {
    const o = i * d
    let t = 0
    for (let j = 0; j < d; j++) {
      const zj = z[o + j]!
      for (let l = j; l < d; l++) zz[t++] = zj * z[o + l]!
    }
    for (let q = 0; q < P; q++) {
      const wq = w[i * P + q]!
      const base = q * tri
      for (let s = 0; s < tri; s++) acc[base + s]! += wq * zz[s]!
    }
  }
}

/**
 * Fits the L2-penalised multinomial regression of class indices y ∈ {0..classes−1} on the rows of x (see the file
 * header). Every class must occur in y.
 */
export function fitMultinomial(x: readonly (readonly number[])[], y: readonly number[], classes: number, lambda = 1, options: MultinomialOptions = {}): MultinomialFit {
  const K = classes
  const reference = options.reference ?? 0
  if (!Number.isInteger(K) || K < 2) throw new RangeError('fitMultinomial needs at least 2 classes')
  if (!Number.isInteger(reference) || reference < 0 || reference >= K) throw new RangeError('reference must be a class index')
  if (x.length !== y.length || x.length === 0) throw new RangeError('fitMultinomial needs equal, non-empty x and y')
  if (!(lambda >= 0)) throw new RangeError('lambda must be ≥ 0')
  const tol = options.tol ?? TOL
  if (!(tol > 0)) throw new RangeError('tol must be > 0')
  const n = x.length
  const yy = Int32Array.from(y)
  const counts = new Array<number>(K).fill(0)
  for (const c of y) {
    if (!Number.isInteger(c) || c < 0 || c >= K) throw new RangeError(`class index ${c} outside 0..${K - 1}`)
    counts[c]!++
  }
  if (counts.some((c) => c === 0)) throw new RangeError(`every class must occur (counts ${counts.join(',')})`)
  const { mean, sd } = standardise(x as number[][])
  const p = mean.length
  const d = p + 1
  const z = new Float64Array(n * d)
  for (let i = 0; i < n; i++) {
    const r = x[i]!
    if (r.length !== p) throw new RangeError('rows of x differ in length')
    z[i * d] = 1
    for (let j = 0; j < p; j++) z[i * d + 1 + j] = (r[j]! - mean[j]!) / sd[j]!
  }
  const F = K - 1
  const free = new Int32Array(F)
  for (let k = 0, a = 0; k < K; k++) if (k !== reference) free[a++] = k
  const m = F * d
  const theta = new Float64Array(m)
  if (options.init) {
    for (let a = 0; a < F; a++) for (let j = 0; j < d; j++) theta[a * d + j] = options.init[free[a]!]?.[j] ?? 0
  } else {
    for (let a = 0; a < F; a++) theta[a * d] = Math.log(counts[free[a]!]! / counts[reference]!)
  }

  const prob = new Float64Array(n * K)
  const trialProb = new Float64Array(n * K)
  let obj = objective(z, n, d, yy, free, K, theta, lambda, prob)
  const tri = (d * (d + 1)) / 2
  const P = (F * (F + 1)) / 2
  const pairA = new Int32Array(P)
  const pairB = new Int32Array(P)
  for (let a = 0, q = 0; a < F; a++) {
    for (let b = a; b < F; b++, q++) {
      pairA[q] = a
      pairB[q] = b
    }
  }
  const acc = new Float64Array(P * tri)
  const weights = new Float64Array(n * P)
  const grad = new Float64Array(m)
  const hess = new Float64Array(m * m)
  const trial = new Float64Array(m)
  /** The log-likelihood's Hessian (no penalty) behind `factor`. */
  const curvature = new Float64Array(m * m)
  let factor: Float64Array | null = null
  const addPenaltyAndFactor = () => {
    hess.set(curvature)
    for (let a = 0; a < F; a++) for (let j = 1; j < d; j++) hess[(a * d + j) * m + a * d + j]! += lambda
    factor = cholesky(hess, m)
  }
  /** Whether the next step may reuse `factor`; the size of the last step. */
  let reuse = false
  let lastStep = Infinity
  if (options.curvature) {
    if (options.curvature.length !== m * m) throw new RangeError('curvature does not match the parameter count')
    curvature.set(options.curvature)
    addPenaltyAndFactor()
    reuse = true
  }
  let iterations = 0
  let hessians = 0
  for (; iterations < MAX_ITER; iterations++) {
    const fresh: boolean = factor === null || !reuse
    gradientAndWeights(z, n, d, yy, free, K, prob, fresh, pairA, pairB, grad, weights)
    for (let a = 0; a < F; a++) for (let j = 1; j < d; j++) grad[a * d + j]! -= lambda * theta[a * d + j]!
    if (fresh) {
      accumulateHessian(z, n, d, weights, P, acc)
      // Assemble the symmetric Hessian of the negative log-likelihood (the penalty is added with the factor).
      for (let q = 0; q < P; q++) {
        const a = pairA[q]!
        const b = pairB[q]!
        let t = 0
        for (let j = 0; j < d; j++) {
          for (let l = j; l < d; l++) {
            const v = acc[q * tri + t++]!
            const r1 = a * d + j
            const c1 = b * d + l
            const r2 = a * d + l
            const c2 = b * d + j
            hess[r1 * m + c1] = v
            hess[c1 * m + r1] = v
            hess[r2 * m + c2] = v
            hess[c2 * m + r2] = v
          }
        }
      }
      curvature.set(hess)
      addPenaltyAndFactor()
      hessians++
    }
    const step = choleskySolve(factor!, grad, m)
    let scale = 1
    let accepted = false
    for (let h = 0; h <= (fresh ? MAX_HALVINGS : 0); h++) {
      for (let k = 0; k < m; k++) trial[k] = theta[k]! + scale * step[k]!
      const next = objective(z, n, d, yy, free, K, trial, lambda, trialProb)
      // Accept a decrease, or a change within rounding of the objective (at the optimum the step is below resolution).
      if (next <= obj + 1e-12 * Math.max(1, Math.abs(obj))) {
        obj = next
        accepted = true
        break
      }
      scale /= 2
    }
    if (!accepted) {
      if (!fresh) {
        // The reused Hessian's step did not descend: recompute it and step again.
        reuse = false
        continue
      }
      iterations++
      break
    }
    theta.set(trial)
    prob.set(trialProb)
    let maxStep = 0
    for (let k = 0; k < m; k++) maxStep = Math.max(maxStep, Math.abs(scale * step[k]!))
    // After a fresh Hessian, reuse it once the steps are small; keep reusing while the chord steps contract fast.
    reuse = fresh ? maxStep < REUSE_BELOW : maxStep <= CHORD_CONTRACTION * lastStep
    lastStep = maxStep
    if (maxStep < tol) {
      iterations++
      break
    }
  }
  const beta: number[][] = Array.from({ length: K }, () => new Array<number>(d).fill(0))
  for (let a = 0; a < F; a++) for (let j = 0; j < d; j++) beta[free[a]!]![j] = theta[a * d + j]!
  return { mean, sd, beta, reference, lambda, iterations, hessians, curvature }
}

/** The linear predictors η (one per class; the reference's is 0) of one row. */
export function multinomialLogits(fit: Pick<MultinomialFit, 'mean' | 'sd' | 'beta'>, x: readonly number[]): number[] {
  const out = new Array<number>(fit.beta.length)
  for (let k = 0; k < fit.beta.length; k++) {
    const b = fit.beta[k]!
    let e = b[0]!
    for (let j = 0; j < x.length; j++) e += b[j + 1]! * ((x[j]! - fit.mean[j]!) / fit.sd[j]!)
    out[k] = e
  }
  return out
}

/** softmax(η / T), computed stably. */
export function softmax(eta: readonly number[], temperature = 1): number[] {
  let max = -Infinity
  for (const e of eta) if (e / temperature > max) max = e / temperature
  const out = eta.map((e) => Math.exp(e / temperature - max))
  let sum = 0
  for (const v of out) sum += v
  return out.map((v) => v / sum)
}

/** Class probabilities of one row, optionally temperature-scaled. */
export function predictMultinomial(fit: Pick<MultinomialFit, 'mean' | 'sd' | 'beta'>, x: readonly number[], temperature = 1): number[] {
  return softmax(multinomialLogits(fit, x), temperature)
}

/** Mean multiclass log loss −mean log softmax(η_i / T)_{y_i}. */
export function multiclassLogLoss(logits: readonly (readonly number[])[], y: readonly number[], temperature = 1): number {
  if (logits.length !== y.length || logits.length === 0) throw new RangeError('multiclassLogLoss needs equal, non-empty inputs')
  let s = 0
  for (let i = 0; i < logits.length; i++) {
    const eta = logits[i]!
    let max = -Infinity
    for (const e of eta) if (e / temperature > max) max = e / temperature
    let sum = 0
    for (const e of eta) sum += Math.exp(e / temperature - max)
    s -= eta[y[i]!]! / temperature - max - Math.log(sum)
  }
  return s / logits.length
}

/** d/ds of the mean log loss of softmax(s η) at s: mean_i (Σ_k p_k η_ik − η_{i,y_i}), increasing in s. */
function logLossSlope(logits: readonly (readonly number[])[], y: readonly number[], s: number): number {
  let g = 0
  for (let i = 0; i < logits.length; i++) {
    const eta = logits[i]!
    let max = -Infinity
    for (const e of eta) if (s * e > max) max = s * e
    let sum = 0
    let weighted = 0
    for (const e of eta) {
      const v = Math.exp(s * e - max)
      sum += v
      weighted += v * e
    }
    g += weighted / sum - eta[y[i]!]!
  }
  return g / logits.length
}

export interface TemperatureFit {
  temperature: number
  /** Mean log loss on the calibration rows at T = 1 and at the fitted T. */
  log_loss_before: number
  log_loss_after: number
}

/**
 * Temperature scaling: the T ∈ [T_MIN, T_MAX] minimising the mean multiclass log loss of softmax(η / T) on the given
 * rows (logits η from the model, y the realized class). Bisection on the loss's derivative in s = 1/T.
 */
export function fitTemperature(logits: readonly (readonly number[])[], y: readonly number[]): TemperatureFit {
  if (logits.length !== y.length || logits.length === 0) throw new RangeError('fitTemperature needs equal, non-empty inputs')
  let lo = 1 / T_MAX
  let hi = 1 / T_MIN
  let s: number
  if (logLossSlope(logits, y, lo) >= 0) s = lo
  else if (logLossSlope(logits, y, hi) <= 0) s = hi
  else {
    for (let i = 0; i < BISECTIONS; i++) {
      const mid = (lo + hi) / 2
      if (mid <= lo || mid >= hi) break
      if (logLossSlope(logits, y, mid) > 0) hi = mid
      else lo = mid
    }
    s = (lo + hi) / 2
  }
  const temperature = 1 / s
  return { temperature, log_loss_before: multiclassLogLoss(logits, y, 1), log_loss_after: multiclassLogLoss(logits, y, temperature) }
}
