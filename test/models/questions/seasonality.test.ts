/** Calendar features (models/questions/seasonality.ts): known answers at hand-checked instants. */
import t from 'tap'
import { dailyHarmonics, fundingPhase, hourOfDay, weekendShare } from '../../../models/questions/seasonality.ts'

const H = 3_600_000
// 2025-01-04 was a Saturday.
const SAT = Date.UTC(2025, 0, 4)

t.test('hour of day and its harmonics', async (t) => {
  t.equal(hourOfDay(SAT + 6 * H + 30 * 60_000), 6.5)
  const [s1, c1, s2, c2] = dailyHarmonics(SAT + 6 * H)
  t.ok(Math.abs(s1 - 1) < 1e-12 && Math.abs(c1) < 1e-12, '06:00 is a quarter of the day: sin 1, cos 0')
  t.ok(Math.abs(s2) < 1e-12 && Math.abs(c2 + 1) < 1e-12, 'the second harmonic: half a turn')
  t.same(dailyHarmonics(SAT), dailyHarmonics(SAT + 24 * H), 'periodic by the day')
})

t.test('weekend share of a window', async (t) => {
  t.equal(weekendShare(SAT - 2 * H, 4 * H), 0.5, 'Friday 22:00 → Saturday 02:00: half on the weekend')
  t.equal(weekendShare(SAT + 47 * H, 2 * H), 0.5, 'Sunday 23:00 → Monday 01:00')
  t.equal(weekendShare(SAT + 48 * H, 4 * H), 0, 'Monday')
  t.equal(weekendShare(SAT + 10 * H, 4 * H), 1, 'Saturday')
})

t.test('funding phase: 8-hourly settlements at 00/08/16 UTC', async (t) => {
  const [s0, c0] = fundingPhase(SAT + 8 * H, 8)
  t.ok(Math.abs(s0) < 1e-12 && Math.abs(c0 - 1) < 1e-12, 'at a settlement')
  const [s4, c4] = fundingPhase(SAT + 12 * H, 8)
  t.ok(Math.abs(s4) < 1e-12 && Math.abs(c4 + 1) < 1e-12, 'half way to the next one')
})
