/**
 * The wallet state machine. Spec, States: "Wallet state machine positions, in order: WATCHING, ACCUMULATING,
 * HIGH_CONVICTION, DISTRIBUTING, EXITING." The transitions are a spec gap; these rules are ours
 * (docs/methodology.md "Wallet state machine", docs/decisions.md).
 *
 * Input: one observation per step (daily, ending at the evaluation instant): gross position exposure E (USD) and the
 * valued net transfer flow F over the step. Deterministic rules, first match wins, with
 *   prev  = E three steps earlier (the first observation while fewer exist),
 *   peak  = max E over the 30 steps before this one,
 *   flow3 = Σ F over the last three steps (this one included):
 *   1. negligible (E < max(MIN_EXPOSURE_USD, NEAR_ZERO_SHARE × peak)):
 *        from ACCUMULATING / HIGH_CONVICTION / DISTRIBUTING with peak ≥ MIN_EXPOSURE_USD → EXITING;
 *        EXITING stays EXITING for EXIT_SETTLE_STEPS steps, then → WATCHING; otherwise → WATCHING.
 *   2. E ≥ (1 + CHANGE) × prev, or prev < MIN_EXPOSURE_USD ≤ E        → ACCUMULATING
 *   3. E ≤ (1 − CHANGE) × prev                                          → DISTRIBUTING
 *   4. flow3 ≥ FLOW_SHARE × E (capital arriving while exposure holds)   → ACCUMULATING
 *   5. flow3 ≤ −FLOW_SHARE × E (capital leaving while exposure holds)   → DISTRIBUTING
 *   6. held: E ≥ LARGE_SHARE × max(peak, E), after ≥ LOOKBACK_STEPS steps → HIGH_CONVICTION
 *   7. otherwise                                                        → WATCHING
 * `since` is the time of the step at which the current state was entered (the first step for a wallet that never
 * moved). The machine starts in WATCHING.
 */

export const WALLET_STATES = ['WATCHING', 'ACCUMULATING', 'HIGH_CONVICTION', 'DISTRIBUTING', 'EXITING'] as const
export type WalletState = (typeof WALLET_STATES)[number]

export const STATE_RULES = {
  STEP_MS: 86_400_000,
  LOOKBACK_STEPS: 3,
  PEAK_STEPS: 30,
  CHANGE: 0.25,
  NEAR_ZERO_SHARE: 0.1,
  LARGE_SHARE: 0.5,
  FLOW_SHARE: 0.1,
  MIN_EXPOSURE_USD: 1_000,
  EXIT_SETTLE_STEPS: 3,
} as const

export interface StateObservation {
  /** End of the step, epoch ms. */
  at: number
  gross_exposure_usd: number
  /** Valued net transfer flow over the step (in − out), USD. */
  net_flow_usd: number
}

export interface StateStep {
  at: number
  state: WalletState
  /** The rule that fired (for lineage and tests). */
  rule: string
}

export interface StateRun {
  state: WalletState
  since: number
  steps: StateStep[]
}

export class WalletStateMachine {
  /** Runs the rules over observations in time order; throws RangeError for an empty or unordered sequence. */
  static run(observations: readonly StateObservation[]): StateRun {
    if (observations.length === 0) throw new RangeError('WalletStateMachine.run needs at least one observation')
    const R = STATE_RULES
    const steps: StateStep[] = []
    let state: WalletState = 'WATCHING'
    let since = observations[0]!.at
    let stepsInState = 0
    for (let i = 0; i < observations.length; i++) {
      const o = observations[i]!
      if (i > 0 && !(o.at > observations[i - 1]!.at)) throw new RangeError(`observation ${i} is not after observation ${i - 1}`)
      const E = o.gross_exposure_usd
      const prev = observations[Math.max(0, i - R.LOOKBACK_STEPS)]!.gross_exposure_usd
      let peak = 0
      for (let j = Math.max(0, i - R.PEAK_STEPS); j < i; j++) peak = Math.max(peak, observations[j]!.gross_exposure_usd)
      let flow3 = 0
      for (let j = Math.max(0, i - R.LOOKBACK_STEPS + 1); j <= i; j++) flow3 += observations[j]!.net_flow_usd
      let next: WalletState
      let rule: string
      if (E < Math.max(R.MIN_EXPOSURE_USD, R.NEAR_ZERO_SHARE * peak)) {
        if (peak >= R.MIN_EXPOSURE_USD && (state === 'ACCUMULATING' || state === 'HIGH_CONVICTION' || state === 'DISTRIBUTING')) {
          ;[next, rule] = ['EXITING', 'negligible_after_large']
        } else if (state === 'EXITING' && stepsInState < R.EXIT_SETTLE_STEPS) {
          ;[next, rule] = ['EXITING', 'exit_settling']
        } else {
          ;[next, rule] = ['WATCHING', 'negligible']
        }
      } else if (E >= (1 + R.CHANGE) * prev || (prev < R.MIN_EXPOSURE_USD && E >= R.MIN_EXPOSURE_USD)) {
        ;[next, rule] = ['ACCUMULATING', 'exposure_rise']
      } else if (E <= (1 - R.CHANGE) * prev) {
        ;[next, rule] = ['DISTRIBUTING', 'exposure_fall']
      } else if (flow3 >= R.FLOW_SHARE * E) {
        ;[next, rule] = ['ACCUMULATING', 'net_inflow']
      } else if (flow3 <= -R.FLOW_SHARE * E) {
        ;[next, rule] = ['DISTRIBUTING', 'net_outflow']
      } else if (i >= R.LOOKBACK_STEPS && E >= R.LARGE_SHARE * Math.max(peak, E)) {
        ;[next, rule] = ['HIGH_CONVICTION', 'large_and_held']
      } else {
        ;[next, rule] = ['WATCHING', 'held_small']
      }
      if (next !== state) {
        state = next
        since = o.at
        stepsInState = 1
      } else {
        stepsInState++
      }
      steps.push({ at: o.at, state, rule })
    }
    return { state, since, steps }
  }
}
