/**
 * Consistency bars: known answers from exact binomial quantiles (R's qbinom, checked with exact fractions), the
 * degenerate bands, and coverage of at least the level on the exact distribution.
 */
import t from 'tap'
import { binomialQuantiles, consistencyInterval } from '../../../models/verification/consistency.ts'

t.test('known answers: qbinom(c(0.025, 0.975), n, p)', async (t) => {
  t.same(consistencyInterval(10, 0.5)?.k, [2, 8], 'Binomial(10, 0.5)')
  t.same(consistencyInterval(100, 0.1)?.k, [5, 16], 'Binomial(100, 0.1)')
  t.same(consistencyInterval(30, 0.05)?.k, [0, 4], 'Binomial(30, 0.05)')
  t.same(consistencyInterval(1, 0.5)?.k, [0, 1], 'Binomial(1, 0.5)')
  const i = consistencyInterval(10, 0.5)!
  t.same([i.lower, i.upper, i.level, i.method], [0.2, 0.8, 0.95, 'binomial-central'], 'frequencies k/n')
})

t.test('degenerate and empty bands', async (t) => {
  t.equal(consistencyInterval(0, 0.3), null, 'no forecasts, no bar')
  t.same(consistencyInterval(50, 0)?.k, [0, 0])
  t.same(consistencyInterval(50, 1)?.k, [50, 50])
  t.throws(() => consistencyInterval(-1, 0.5))
  t.throws(() => consistencyInterval(5, 1.5))
  t.throws(() => consistencyInterval(5, 0.5, 1))
})

t.test('coverage is at least the level, and the tails outside are each at most alpha/2', async (t) => {
  for (const [n, p] of [[37, 0.23], [500, 0.71], [1000, 0.004]] as const) {
    const [a, b] = binomialQuantiles(n, p, [0.025, 0.975]) as [number, number]
    // Exact pmf by the log-space formula, an independent path.
    const lg = (x: number): number => { let s = 0; for (let i = 2; i <= x; i++) s += Math.log(i); return s }
    const pmf = (k: number) => Math.exp(lg(n) - lg(k) - lg(n - k) + k * Math.log(p) + (n - k) * Math.log(1 - p))
    let below = 0
    for (let k = 0; k < a; k++) below += pmf(k)
    let upTo = 0
    for (let k = 0; k <= b; k++) upTo += pmf(k)
    t.ok(below < 0.025 && below + pmf(a) >= 0.025 - 1e-9, `n=${n} p=${p}: lower ${a} is the 2.5 % quantile`)
    t.ok(upTo >= 0.975 - 1e-9 && upTo - pmf(b) < 0.975, `n=${n} p=${p}: upper ${b} is the 97.5 % quantile`)
  }
})

// (Its cost, O(sqrt n), is a benchmark's business, not a timed test's: this machine is shared.)
t.test('a band of ten million is near the normal approximation', async (t) => {
  const i = consistencyInterval(10_000_000, 0.37)!
  const half = 1.959963984540054 * Math.sqrt((0.37 * 0.63) / 10_000_000)
  t.ok(Math.abs(i.upper - (0.37 + half)) < 1e-6 && Math.abs(i.lower - (0.37 - half)) < 1e-6, `${i.lower}..${i.upper}`)
})
