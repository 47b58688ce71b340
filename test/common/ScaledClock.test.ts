/** The compressed-session clock (common/ScaledClock.ts): anchored, scaled, shared by two readers with one anchor. */
import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { ScaledClock } from '../../common/ScaledClock.ts'

t.test('runs speed times the wall clock from its anchor', async (t) => {
  const wall = Date.now()
  const clock = new ScaledClock({ anchorMs: Date.parse('2026-03-01T00:00:00Z'), wallAnchorMs: wall, speed: 60 })
  const first = clock.now()
  t.ok(first >= Date.parse('2026-03-01T00:00:00Z'), 'starts at the anchor')
  await sleep(100)
  const moved = clock.now() - first
  t.ok(moved >= 100 * 60 * 0.9, `100 wall ms moved the clock ${moved} ms (about 6 s)`)
  t.ok(Number.isInteger(clock.now()), 'whole milliseconds')
  const twin = new ScaledClock({ anchorMs: clock.anchorMs, wallAnchorMs: clock.wallAnchorMs, speed: 60 })
  t.ok(Math.abs(twin.now() - clock.now()) <= 60, 'a second clock with the same anchor reads the same time')
  t.ok(clock.wallMsUntil(clock.now() + 6_000) <= 100 + 1, 'six clock seconds are a tenth of a wall second away')
  t.equal(clock.wallMsUntil(clock.now() - 1), 0, 'a past instant is no wait')
})

t.test('refuses a speed that is not positive and an anchor that is not finite', async (t) => {
  t.throws(() => new ScaledClock({ anchorMs: 0, speed: 0 }), /speed/)
  t.throws(() => new ScaledClock({ anchorMs: Number.NaN, speed: 1 }), /anchorMs/)
})
