/**
 * S09_wallet_state (spec catalog: account-scoped, "the subject is a wallet"; States: "Wallet state machine positions,
 * in order: WATCHING, ACCUMULATING, HIGH_CONVICTION, DISTRIBUTING, EXITING"). A choice question: the distribution of
 * the wallet's state-machine position at the horizon end (t + 24 h), given its position at t.
 *
 * Method (docs/methodology.md "Account-scoped questions"): conditional class frequencies of the position at t + 24 h
 * per position at t (5 cells), Dirichlet-smoothed and shrunk on a later calibration slice (models/account/
 * cellFrequencies.ts). Refuses insufficient_confidence when the wallet's own 30-day sample is inadequate.
 */
import type { FeatureSnapshot } from '../../pipeline/features/FeatureSnapshot.ts'
import { WALLET_STATES } from '../account/WalletStateMachine.ts'
import { AccountQuestion, type AccountFrame } from './AccountQuestion.ts'
import { feature, isoMinute } from './common.ts'

export const ACCOUNT_HORIZON_MS = 86_400_000

export function adequacyRefusal(s: FeatureSnapshot): AccountFrame['refusal'] {
  const ok = feature(s, 'sample_adequate')
  if (ok === null) return { refusal: 'insufficient_confidence', reason: 'features_unavailable' }
  return ok === 1 ? null : { refusal: 'insufficient_confidence', reason: 'wallet_sample_inadequate' }
}

export const S09_wallet_state = new AccountQuestion({
  id: 'S09_wallet_state',
  label: 'Wallet state',
  answer: 'choice',
  horizonMs: ACCOUNT_HORIZON_MS,
  classes: WALLET_STATES,
  dims: [{ kind: 'levels', n: WALLET_STATES.length }],
  frame(s, horizonMs) {
    const end = s.at + horizonMs
    const idx = feature(s, 'state_index')
    const now = idx === null ? null : (WALLET_STATES[idx] ?? null)
    const conditions = {
      subject: s.asset,
      window_start: isoMinute(s.at),
      window_end: isoMinute(end),
      state_at_start: now,
      classes: [...WALLET_STATES],
      rules: 'wallet-state-machine-v1',
    }
    const event = `Wallet ${s.asset} state-machine position at ${isoMinute(end)} (WATCHING, ACCUMULATING, HIGH_CONVICTION, DISTRIBUTING or EXITING; position at ${isoMinute(s.at)}: ${now ?? 'unknown'})`
    const refusal = adequacyRefusal(s) ?? (now === null ? { refusal: 'insufficient_confidence' as const, reason: 'features_unavailable' } : null)
    return { event, conditions, x: refusal ? null : [idx!], refusal }
  },
  realize(_c, w) {
    const y = WALLET_STATES.indexOf((w.account!.state_at_end ?? '') as (typeof WALLET_STATES)[number])
    if (y < 0) return { unresolvable: 'state_unknown' }
    return { y, statistic: { state_at_end: w.account!.state_at_end } }
  },
})
