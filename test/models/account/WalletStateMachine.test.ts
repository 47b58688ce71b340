/** The wallet state machine on hand-built daily sequences (rules: models/account/WalletStateMachine.ts). */
import t from 'tap'
import { STATE_RULES, WalletStateMachine, type StateObservation } from '../../../models/account/WalletStateMachine.ts'

const DAY = STATE_RULES.STEP_MS
const T0 = Date.parse('2025-01-01T00:00:00Z')

function seq(exposures: number[], flows: number[] = []): StateObservation[] {
  return exposures.map((e, i) => ({ at: T0 + i * DAY, gross_exposure_usd: e, net_flow_usd: flows[i] ?? 0 }))
}

const states = (xs: StateObservation[]) => WalletStateMachine.run(xs).steps.map((s) => s.state)

t.test('a wallet with no exposure and no flow stays WATCHING from its first step', async (t) => {
  const run = WalletStateMachine.run(seq([0, 0, 0, 0, 0]))
  t.same(run.steps.map((s) => s.state), ['WATCHING', 'WATCHING', 'WATCHING', 'WATCHING', 'WATCHING'])
  t.equal(run.since, T0)
})

t.test('build-up → held → reduce → exit → settle back to WATCHING', async (t) => {
  const xs = seq([0, 5000, 5000, 5000, 5000, 5000, 3000, 0, 0, 0, 0])
  const run = WalletStateMachine.run(xs)
  t.same(run.steps.map((s) => [s.state, s.rule]), [
    ['WATCHING', 'negligible'],
    ['ACCUMULATING', 'exposure_rise'],
    ['ACCUMULATING', 'exposure_rise'], // prev (3 steps back, clamped to the first) is still 0
    ['ACCUMULATING', 'exposure_rise'],
    ['HIGH_CONVICTION', 'large_and_held'],
    ['HIGH_CONVICTION', 'large_and_held'],
    ['DISTRIBUTING', 'exposure_fall'], // 3000 ≤ 0.75 × 5000
    ['EXITING', 'negligible_after_large'],
    ['EXITING', 'exit_settling'],
    ['EXITING', 'exit_settling'],
    ['WATCHING', 'negligible'], // EXIT_SETTLE_STEPS = 3 steps in EXITING
  ])
  t.equal(run.state, 'WATCHING')
  t.equal(run.since, T0 + 10 * DAY, 'since = the step the current state was entered')
  const upToHc = WalletStateMachine.run(xs.slice(0, 6))
  t.equal(upToHc.state, 'HIGH_CONVICTION')
  t.equal(upToHc.since, T0 + 4 * DAY)
})

t.test('exposure falling to near zero straight from HIGH_CONVICTION is EXITING', async (t) => {
  t.same(states(seq([20000, 20000, 20000, 20000, 20000, 500])).slice(-2), ['HIGH_CONVICTION', 'EXITING'])
})

t.test('a large position from the first observation is not HIGH_CONVICTION until it has been seen held', async (t) => {
  t.same(states(seq([8000, 8000, 8000, 8000])), ['WATCHING', 'WATCHING', 'WATCHING', 'HIGH_CONVICTION'])
})

t.test('flows move a wallet whose exposure holds: net inflow accumulates, net outflow distributes', async (t) => {
  const base = [10000, 10000, 10000, 10000, 10000, 10000, 10000]
  t.same(states(seq(base, [0, 0, 0, 0, 1000, 600, 0])).slice(-3), ['ACCUMULATING', 'ACCUMULATING', 'ACCUMULATING'], 'Σ3 ≥ 10 % of exposure')
  t.same(states(seq(base, [0, 0, 0, 0, -1500, 0, 0])).slice(-3), ['DISTRIBUTING', 'DISTRIBUTING', 'DISTRIBUTING'])
  t.same(states(seq(base, [0, 0, 0, 0, 300, 0, 0])).slice(-1), ['HIGH_CONVICTION'], 'a small flow does not move it')
})

t.test('a held position well below its 30-step peak is WATCHING, not HIGH_CONVICTION', async (t) => {
  const xs = seq([10000, 10000, 10000, 10000, 7000, 5000, 4000, 4000, 4000, 4000])
  t.equal(WalletStateMachine.run(xs).state, 'WATCHING')
})

t.test('dust never counts as a position', async (t) => {
  t.same(states(seq([0, 400, 900, 900, 900])), ['WATCHING', 'WATCHING', 'WATCHING', 'WATCHING', 'WATCHING'])
})

t.test('deterministic, and bad input is a RangeError', async (t) => {
  const xs = seq([0, 2000, 4000, 4000, 4000, 4000, 1000, 0], [0, 500, 0, 0, -200, 0, 0, 0])
  t.same(WalletStateMachine.run(xs), WalletStateMachine.run(xs.map((o) => ({ ...o }))))
  t.throws(() => WalletStateMachine.run([]), RangeError)
  t.throws(() => WalletStateMachine.run([xs[1]!, xs[0]!]), RangeError)
})
