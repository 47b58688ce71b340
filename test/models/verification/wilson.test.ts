import t from 'tap'
import { wilsonInterval, Z95 } from '../../../models/verification/wilson.ts'
import { close } from '../../helpers/verificationVectors.ts'

// forecast-verification.md §7.2 "Wilson 95 %" table (z = 1.959963984540054; agrees with scipy 1.17
// BinomTestResult.proportion_ci(method="wilson") to 6 d.p.).
const WILSON_TABLE: Array<[number, number, number, number]> = [
  [0, 10, 0, 0.277533],
  [5, 10, 0.236593, 0.763407],
  [81, 263, 0.255289, 0.36621],
  [10, 10, 0.722467, 1],
  [1, 1, 0.206549, 1],
  [0, 1, 0, 0.793451],
]

t.test('Wilson table', async (t) => {
  t.equal(Z95, 1.959963984540054)
  for (const [x, n, lo, hi] of WILSON_TABLE) {
    const w = wilsonInterval(x, n)!
    close(t, w.lower, lo, 5e-7, `${x}/${n} lower`)
    close(t, w.upper, hi, 5e-7, `${x}/${n} upper`)
    t.equal(w.method, 'wilson')
  }
})

t.test('edges are exact, n = 0 is null, bounds stay in [0,1]', async (t) => {
  t.equal(wilsonInterval(0, 0), null, 'x / 0 → null')
  for (const n of [1, 2, 7, 30, 1000, 1e6]) {
    t.equal(wilsonInterval(0, n)!.lower, 0, `0/${n} lower exactly 0`)
    t.equal(wilsonInterval(n, n)!.upper, 1, `${n}/${n} upper exactly 1`)
    for (const x of [0, 1, Math.floor(n / 2), n]) {
      const w = wilsonInterval(x, n)!
      if (!(w.lower >= 0 && w.lower <= x / n && x / n <= w.upper && w.upper <= 1)) t.fail(`${x}/${n} out of order`)
    }
  }
  // Not the Wald interval: non-zero width at x = 0.
  t.ok(wilsonInterval(0, 10)!.upper > 0)
  t.throws(() => wilsonInterval(3, 2), /successes/)
  t.throws(() => wilsonInterval(1.5, 2), /successes/)
  t.throws(() => wilsonInterval(0, -1), /n must/)
})
