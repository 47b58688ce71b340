/** L2-penalised multinomial regression and temperature scaling (models/fit/multinomial.ts): known answers, determinism. */
import t from 'tap'
import { fitMultinomial, fitTemperature, multiclassLogLoss, multinomialLogits, predictMultinomial, softmax, T_MIN } from '../../../models/fit/multinomial.ts'
import { fitLogistic, sigmoid } from '../../../models/fit/logistic.ts'

/** A small deterministic generator (LCG), so every test row is reproducible. */
function lcg(seed: number): () => number {
  let s = seed
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648
    return s / 2147483648
  }
}

/** Draws a class from probabilities with the uniform u. */
function draw(p: readonly number[], u: number): number {
  let c = 0
  let acc = p[0]!
  while (u > acc && c < p.length - 1) acc += p[++c]!
  return c
}

/** n rows of 3 features, classes drawn from a known softmax (class 2 the reference). */
function fourClassRows(n: number, seed: number): { x: number[][]; y: number[] } {
  const rnd = lcg(seed)
  const x: number[][] = []
  const y: number[] = []
  for (let i = 0; i < n; i++) {
    const r = [rnd() * 2 - 1, rnd() * 4, rnd() < 0.3 ? 1 : 0]
    const eta = [-1 + 1.5 * r[0]!, -1 - 1.5 * r[0]! + 0.2 * r[1]!, 0, -0.5 + 0.4 * r[1]! - r[2]!]
    x.push(r)
    y.push(draw(softmax(eta), rnd()))
  }
  return { x, y }
}

t.test('K = 2 with reference 0 is binary logistic regression (models/fit/logistic.ts): same coefficients', async (t) => {
  const rnd = lcg(7)
  const x: number[][] = []
  const y: number[] = []
  for (let i = 0; i < 400; i++) {
    const a = rnd() * 4 - 2
    const b = rnd() * 10
    x.push([a, b, a * b])
    y.push(rnd() < sigmoid(0.5 + 1.5 * a - 0.1 * b) ? 1 : 0)
  }
  for (const lambda of [0, 0.1, 1, 10, 100]) {
    const lr = fitLogistic(x, y, lambda)
    const mn = fitMultinomial(x, y, 2, lambda)
    t.same(mn.mean, lr.mean)
    t.same(mn.sd, lr.sd)
    t.same(mn.beta[0], [0, 0, 0, 0], 'the reference row is pinned at 0')
    const diff = Math.max(...lr.beta.map((b, j) => Math.abs(b - mn.beta[1]![j]!)))
    t.ok(diff < 1e-8, `λ ${lambda}: max |Δβ| ${diff.toExponential(2)} against fitLogistic`)
    const p = predictMultinomial(mn, x[3]!)
    t.ok(Math.abs(p[0]! + p[1]! - 1) < 1e-15)
  }
})

t.test('hand-checkable answers: intercepts only, and a saturated binary feature', async (t) => {
  // No features: the MLE is the class frequencies, β_k0 = ln(n_k / n_ref).
  const y = [0, 0, 1, 1, 1, 2, 2, 2, 2, 2]
  const none = fitMultinomial(y.map(() => []), y, 3, 1)
  t.same(none.beta[0], [0])
  t.ok(Math.abs(none.beta[1]![0]! - Math.log(3 / 2)) < 1e-12)
  t.ok(Math.abs(none.beta[2]![0]! - Math.log(5 / 2)) < 1e-12)
  t.same(predictMultinomial(none, []).map((p) => Math.round(p * 1e12) / 1e12), [0.2, 0.3, 0.5])

  // One binary feature, λ = 0: the model is saturated, so each group's fitted distribution is its class frequencies.
  const x: number[][] = []
  const yy: number[] = []
  const groups = { 0: [4, 3, 1], 1: [1, 2, 5] } as const
  for (const g of [0, 1] as const) groups[g].forEach((n, k) => {
    for (let i = 0; i < n; i++) {
      x.push([g])
      yy.push(k)
    }
  })
  const sat = fitMultinomial(x, yy, 3, 0)
  const at0 = predictMultinomial(sat, [0])
  const at1 = predictMultinomial(sat, [1])
  ;[4 / 8, 3 / 8, 1 / 8].forEach((p, k) => t.ok(Math.abs(at0[k]! - p) < 1e-9, `group 0 class ${k}: ${at0[k]} vs ${p}`))
  ;[1 / 8, 2 / 8, 5 / 8].forEach((p, k) => t.ok(Math.abs(at1[k]! - p) < 1e-9, `group 1 class ${k}: ${at1[k]} vs ${p}`))
  // Unpenalised, the reference class is only a parametrisation: the same probabilities with another one pinned.
  const other = fitMultinomial(x, yy, 3, 0, { reference: 2 })
  t.same(other.beta[2], [0, 0])
  const o1 = predictMultinomial(other, [1])
  t.ok(at1.every((p, k) => Math.abs(p - o1[k]!) < 1e-9))
})

t.test('K = 4 with a penalty: the solution is the stationary point of the penalised likelihood', async (t) => {
  const { x, y } = fourClassRows(3000, 11)
  const lambda = 5
  const fit = fitMultinomial(x, y, 4, lambda, { reference: 2 })
  t.same(fit.beta[2], [0, 0, 0, 0], 'reference row pinned')
  // Gradient of Σ log p_{y_i} − λ/2 Σ slopes² with respect to every free coefficient.
  for (const k of [0, 1, 3]) {
    for (let j = 0; j <= 3; j++) {
      let g = 0
      for (let i = 0; i < x.length; i++) {
        const zj = j === 0 ? 1 : (x[i]![j - 1]! - fit.mean[j - 1]!) / fit.sd[j - 1]!
        g += ((y[i] === k ? 1 : 0) - predictMultinomial(fit, x[i]!)[k]!) * zj
      }
      if (j > 0) g -= lambda * fit.beta[k]![j]!
      t.ok(Math.abs(g) < 1e-7, `∂/∂β[${k}][${j}] = ${g.toExponential(2)}`)
    }
  }
  // The generating coefficients are recovered roughly (3000 rows): class 0 rises with feature 0, class 1 falls.
  t.ok(fit.beta[0]![1]! > 0 && fit.beta[1]![1]! < 0)
})

t.test('deterministic: the same rows give bit-identical coefficients; a warm start converges to the same point', async (t) => {
  const { x, y } = fourClassRows(2000, 5)
  const a = fitMultinomial(x, y, 4, 1, { reference: 2 })
  const b = fitMultinomial(x.map((r) => [...r]), [...y], 4, 1, { reference: 2 })
  t.strictSame(a.beta, b.beta)
  t.strictSame(a.mean, b.mean)
  t.equal(JSON.stringify(a.beta), JSON.stringify(b.beta))
  // From the λ = 10 fit's coefficients and curvature (the walk-forward λ path): the same optimum to ~1e−10.
  const ten = fitMultinomial(x, y, 4, 10, { reference: 2 })
  const warm = fitMultinomial(x, y, 4, 1, { reference: 2, init: ten.beta, curvature: ten.curvature })
  t.equal(warm.hessians, 0, 'the λ path reused the neighbour curvature (chord steps only)')
  const diff = Math.max(...a.beta.flatMap((row, k) => row.map((v, j) => Math.abs(v - warm.beta[k]![j]!))))
  t.ok(diff < 1e-8, `warm vs cold max |Δβ| ${diff.toExponential(2)}`)
  // A smaller nested set's fit starts a larger one (missing slopes start at 0).
  const two = fitMultinomial(x.map((r) => r.slice(0, 2)), y, 4, 1, { reference: 2 })
  const grown = fitMultinomial(x, y, 4, 1, { reference: 2, init: two.beta })
  const d2 = Math.max(...a.beta.flatMap((row, k) => row.map((v, j) => Math.abs(v - grown.beta[k]![j]!))))
  t.ok(d2 < 1e-8, `nested start max |Δβ| ${d2.toExponential(2)}`)
})

t.test('input checks: an absent class, mismatched lengths, a bad reference', async (t) => {
  t.throws(() => fitMultinomial([[1], [2], [3]], [0, 0, 2], 3), RangeError, 'class 1 never occurs: no finite intercept')
  t.throws(() => fitMultinomial([[1], [2]], [0], 2), RangeError)
  t.throws(() => fitMultinomial([[1], [2]], [0, 1], 2, 1, { reference: 2 }), RangeError)
  t.throws(() => fitMultinomial([[1], [2]], [0, 3], 2), RangeError)
})

t.test('temperature scaling: known answers', async (t) => {
  // Logits (0, 2 ln 3) on every row and 3 of 4 rows in class 1: softmax(η/T)_1 = 3/4 ⇔ 2 ln 3 / T = ln 3 ⇔ T = 2.
  const eta = [0, 2 * Math.log(3)]
  const fitted = fitTemperature([eta, eta, eta, eta], [1, 1, 1, 0])
  t.ok(Math.abs(fitted.temperature - 2) < 1e-12, `T ${fitted.temperature}`)
  t.ok(fitted.log_loss_after < fitted.log_loss_before)
  t.ok(Math.abs(fitted.log_loss_after - multiclassLogLoss([eta, eta, eta, eta], [1, 1, 1, 0], 2)) < 1e-15)
  t.ok(Math.abs(softmax(eta, fitted.temperature)[1]! - 0.75) < 1e-12)

  // Labels drawn from softmax(η / 1.7): T is recovered.
  const rnd = lcg(3)
  const logits: number[][] = []
  const y: number[] = []
  for (let i = 0; i < 20000; i++) {
    const e = [0, rnd() * 6 - 3, rnd() * 6 - 3, rnd() * 4 - 3]
    logits.push(e)
    y.push(draw(softmax(e, 1.7), rnd()))
  }
  const t17 = fitTemperature(logits, y)
  t.ok(Math.abs(t17.temperature - 1.7) < 0.1, `T ${t17.temperature} for a true 1.7`)
  t.equal(fitTemperature(logits, y).temperature, t17.temperature, 'deterministic')

  // Always right with a margin: sharper is always better, so T stops at its lower bound; the modal class never moves.
  const sharp = fitTemperature([[0, 1], [1, 0]], [1, 0])
  t.equal(sharp.temperature, 1 / (1 / T_MIN))
  const p = softmax([0.3, 1.2, -0.4], 2.5)
  t.equal(p.indexOf(Math.max(...p)), 1)
})

t.test('logits and probabilities of a fit', async (t) => {
  const fit = { mean: [1, 2], sd: [2, 4], beta: [[0, 0, 0], [0.5, 1, -1], [-0.2, 0, 2]] }
  const eta = multinomialLogits(fit, [3, 2]) // z = [1, 0]
  t.same(eta, [0, 1.5, -0.2])
  const p = predictMultinomial(fit, [3, 2])
  const s = 1 + Math.exp(1.5) + Math.exp(-0.2)
  t.ok(Math.abs(p[1]! - Math.exp(1.5) / s) < 1e-15)
  t.ok(Math.abs(p.reduce((a, b) => a + b, 0) - 1) < 1e-15)
})
