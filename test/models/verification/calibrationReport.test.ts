import t from 'tap'
import { murphyDecomposition } from '../../../models/verification/brier.ts'
import { calibrationReport } from '../../../models/verification/calibrationReport.ts'
import type { ForecastPair } from '../../../models/verification/pairs.ts'
import { close, VECTOR_A } from '../../helpers/verificationVectors.ts'

/** `count` pairs at forecast p with `hits` outcomes 1. */
function at(p: number, count: number, hits: number): ForecastPair[] {
  return Array.from({ length: count }, (_, i) => ({ p, y: i < hits ? 1 : 0 }))
}

// Spec limits: "Question calibration floor | 30 realized outcomes; below it counts only with published false";
// "Calibration band floor | 10 realized in the band".
t.test('below the question floor: every band reports counts only', async (t) => {
  const r = calibrationReport(VECTOR_A)
  t.equal(r.published, false)
  t.equal(r.n, 6)
  t.equal(r.n_floor, 30)
  t.equal(r.buckets.length, 10)
  t.same(r.buckets.map((b) => b.n), [1, 1, 1, 1, 1, 0, 0, 0, 1, 0], 'vector A decile counts, (a,b]')
  for (const b of r.buckets) {
    t.equal(b.published, false)
    t.equal(b.mean_predicted, null)
    t.equal(b.realized_frequency, null)
  }
  t.match(r.note, /below the floor of 30/)
  // 29 realized outcomes, all in one band: still unpublished.
  t.equal(calibrationReport(at(0.55, 29, 10)).published, false)
})

t.test('at the floor: bands with ≥ 10 realized show frequency; thinner bands show counts only', async (t) => {
  // 0.25 ×12 (3 hits), 0.3 ×10 (on the edge: (a,b] puts it in [0.2,0.3]) → band 2 has 22; 0.75 ×9 → band 7 has 9.
  const pairs = [...at(0.25, 12, 3), ...at(0.3, 10, 4), ...at(0.75, 9, 6)]
  const r = calibrationReport(pairs)
  t.equal(r.published, true)
  t.equal(r.n, 31)
  t.equal(r.convention, '(a,b]')
  const band2 = r.buckets[2]!
  t.same(band2.band, [0.2, 0.3])
  t.equal(band2.n, 22)
  t.equal(band2.published, true)
  close(t, band2.mean_predicted!, (12 * 0.25 + 10 * 0.3) / 22, 1e-15, 'mean predicted')
  t.equal(band2.realized_frequency, 7 / 22)
  const band7 = r.buckets[7]!
  t.same({ n: band7.n, published: band7.published, f: band7.realized_frequency }, { n: 9, published: false, f: null })
  t.equal(r.buckets[0]!.n, 0)
  t.match(r.note, /1 of 10 bands/)
})

t.test('bands are the deciles shared with the Murphy decomposition (spec rule 1)', async (t) => {
  const pairs = [...at(0, 15, 1), ...at(0.1, 15, 2), ...at(0.55, 20, 11), ...at(1, 12, 12)]
  const r = calibrationReport(pairs)
  const m = murphyDecomposition(pairs, 10, '(a,b]')!
  t.same(m.bins.edges, [0, ...r.buckets.map((b) => b.band[1])])
  // p = 0 and p = 0.1 both in band 0 ([0, 0.1]); p = 1 in band 9.
  t.same(r.buckets.map((b) => b.n), [30, 0, 0, 0, 0, 20, 0, 0, 0, 12])
  // REL from the published buckets equals the decomposition's REL when every bucket is published.
  let rel = 0
  for (const b of r.buckets) if (b.n > 0) rel += (b.n / r.n) * (b.mean_predicted! - b.realized_frequency!) ** 2
  close(t, rel, m.rel, 1e-15, 'REL')
  t.throws(() => calibrationReport(pairs, { questionFloor: 0 }), /questionFloor/)
})
