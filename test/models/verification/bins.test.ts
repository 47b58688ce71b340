import t from 'tap'
import { binIndex, groupByBins, uniformEdges } from '../../../models/verification/bins.ts'

// forecast-verification.md §2: "Do not use floor(p·K) / ceil(p·K): e.g. 0.29 · 100 = 28.999999999999996 in IEEE-754
// double → wrong bin for K = 100 (also 0.57, 0.58; and 0.58 · 50 = 28.999999999999996 for K = 50)."
t.test('floating-point edge traps: the naive products really are off', async (t) => {
  t.equal(0.29 * 100, 28.999999999999996)
  t.equal(0.58 * 50, 28.999999999999996)
  t.equal(Math.floor(0.29 * 100), 28, 'floor(p·K) would put 0.29 in [0.28,0.29) under [a,b)')
})

t.test('edge values land on the documented side (K=100: 0.29, 0.57, 0.58; K=50: 0.58)', async (t) => {
  const cases: Array<[number, number, number]> = [
    [0.29, 100, 29],
    [0.57, 100, 57],
    [0.58, 100, 58],
    [0.58, 50, 29],
  ]
  for (const [p, k, edge] of cases) {
    t.equal(binIndex(p, k, '[a,b)'), edge, `${p} with K=${k}, [a,b) → upper bin ${edge}`)
    t.equal(binIndex(p, k, '(a,b]'), edge - 1, `${p} with K=${k}, (a,b] → lower bin ${edge - 1}`)
  }
  // A value just above the edge goes up under both conventions; just below goes down.
  t.equal(binIndex(0.29 + 1e-12, 100, '(a,b]'), 29)
  t.equal(binIndex(0.29 - 1e-12, 100, '[a,b)'), 28)
})

t.test('every decimal edge literal equals j/K and lands on its side, for many K', async (t) => {
  // K dividing 100: the two-decimal literal of each interior edge parses to the same double as j/K.
  for (const k of [2, 4, 5, 10, 20, 25, 50, 100]) {
    for (let j = 1; j < k; j++) {
      const literal = Number(`0.${String((100 / k) * j).padStart(2, '0')}`)
      if (literal !== j / k) t.fail(`literal of ${j}/${k} differs from j/K`)
    }
  }
  for (const k of [2, 3, 4, 5, 7, 8, 10, 20, 25, 50, 100]) {
    for (let j = 1; j < k; j++) {
      if (binIndex(j / k, k, '(a,b]') !== j - 1 || binIndex(j / k, k, '[a,b)') !== j) t.fail(`edge ${j}/${k} misbinned`)
    }
  }
  t.pass('all interior edges binned per convention')
})

t.test('p = 0 and p = 1 fall inside the first / last bin under both conventions', async (t) => {
  for (const k of [1, 3, 5, 10, 100]) {
    for (const c of ['(a,b]', '[a,b)'] as const) {
      t.equal(binIndex(0, k, c), 0, `p=0, K=${k}, ${c}`)
      t.equal(binIndex(1, k, c), k - 1, `p=1, K=${k}, ${c}`)
    }
  }
})

t.test('edges are correctly rounded j/K; empty bins are dropped', async (t) => {
  t.same(uniformEdges(5), [0, 0.2, 0.4, 0.6, 0.8, 1])
  t.equal(uniformEdges(10)[3], 0.3, '3/10 is the double nearest 0.3 (not 3·0.1 = 0.30000000000000004)')
  const groups = groupByBins([{ p: 0.05, y: 1 }, { p: 0.95, y: 0 }], 10)
  t.same(groups.map((g) => g.bin), [0, 9])
})

t.test('rejects bad input with a field path', async (t) => {
  t.throws(() => groupByBins([{ p: 1.5, y: 1 }], 10), /pairs\[0\]\.p/)
  t.throws(() => groupByBins([{ p: 0.5, y: 2 }], 10), /pairs\[0\]\.y/)
  t.throws(() => groupByBins([{ p: Number.NaN, y: 0 }], 10), /pairs\[0\]\.p/)
  t.throws(() => binIndex(0.5, 0), /bins/)
  t.throws(() => binIndex(0.5, 2.5), /bins/)
})
