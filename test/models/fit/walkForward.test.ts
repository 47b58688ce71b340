/** Walk-forward folds and selection (models/fit/walkForward.ts). */
import t from 'tap'
import { selectByWalkForward, walkForwardFolds } from '../../../models/fit/walkForward.ts'

const H = 4
// Decisions every 4 time units on two assets (same instant, two rows): 20 instants, 40 rows.
const rows = Array.from({ length: 40 }, (_, i) => ({ at: Math.floor(i / 2) * H, asset: i % 2 ? 'ETH' : 'BTC' }))

t.test('expanding folds after the first half; training windows close before each validation block', async (t) => {
  const folds = walkForwardFolds(rows, (r) => r.at, H)
  t.equal(folds.length, 3)
  t.same(folds.map((f) => f.validate.length), [6, 6, 8], 'the rest after 20 rows in 3 blocks, the last takes the remainder')
  for (const f of folds) {
    const cut = f.validate[0]!.at
    t.ok(f.train.every((r) => r.at + H <= cut), 'every training window has closed at the first validation decision')
    t.ok(f.train.length > 0)
  }
  t.ok(folds[1]!.train.length > folds[0]!.train.length && folds[2]!.train.length > folds[1]!.train.length, 'expanding')
  // A block starting on the second asset of an instant: the first asset's row of that instant is not trained on.
  const odd = walkForwardFolds(rows.slice(0, 39), (r) => r.at, H, { folds: 2, minTrainShare: 0.5 })
  const cut = odd[0]!.validate[0]!.at
  t.notOk(odd[0]!.train.some((r) => r.at === cut), 'no row of the validation block\'s instant in training (embargo)')
  t.same(walkForwardFolds(rows.slice(0, 1), (r) => r.at, H), [], 'too few rows: no folds')
  t.throws(() => walkForwardFolds(rows, (r) => r.at, H, { folds: 0 }), RangeError)
})

t.test('selection: the lowest mean validation loss; ties to the earlier candidate; unscorable folds count against', async (t) => {
  // Constant forecasts of a 30 % event: the candidate 0.3 has the lowest Brier.
  const ys = Array.from({ length: 100 }, (_, i) => ({ at: i * H, y: i % 10 < 3 ? 1 : 0 }))
  const folds = walkForwardFolds(ys, (r) => r.at, H)
  const brier = (c: number, f: (typeof folds)[number]) => f.validate.reduce((a, r) => a + (c - r.y) ** 2, 0) / f.validate.length
  const picked = selectByWalkForward([0.1, 0.3, 0.5], folds, brier)
  t.equal(picked.best, 0.3)
  t.equal(picked.losses.length, 3)
  t.equal(selectByWalkForward([0.3, 0.3], folds, brier).best, 0.3)
  const tie = selectByWalkForward(['simple', 'complex'], folds, () => 1)
  t.equal(tie.best, 'simple', 'a tie goes to the earlier (simpler) candidate')
  const partial = selectByWalkForward(['everywhere', 'sometimes'], folds, (c, f) => (c === 'sometimes' ? (f === folds[0] ? 0 : null) : 0.5))
  t.equal(partial.best, 'everywhere', 'a candidate scored on fewer folds never wins')
  t.throws(() => selectByWalkForward([], folds, () => 0))
})
