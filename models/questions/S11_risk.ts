/**
 * S11_risk (spec, Risk assessment: "All four subject kinds (transaction, token, wallet, protocol) bill risk.assess and
 * share one pipeline; the kind is a label"). A choice over allow / review / block for the subject address after a
 * candidate movement, graded over (t, t + 24 h] (our definition; docs/decisions.md):
 *   block  — the subject account is liquidated in the window;
 *   review — not liquidated, and its state-machine position at the end is DISTRIBUTING or EXITING;
 *   allow  — otherwise.
 *
 * Score (data-derived, documented in docs/methodology.md): the candidate's size against the subject's own transfers,
 * s = ln(1 + |usd_value| / median |usd| of the subject's valued transfers in the 30 days before), binned at the fit
 * slice's terciles, crossed with the subject's position group (steady: WATCHING / HIGH_CONVICTION; building:
 * ACCUMULATING; unwinding: DISTRIBUTING / EXITING) — 9 cells of conditional class frequencies. The subject kind is
 * recorded in the event and conditions and never enters the numbers.
 */
import { RISK_SUBJECT_KINDS } from '../account/accountSnapshot.ts'
import { AccountQuestion } from './AccountQuestion.ts'
import { ACCOUNT_HORIZON_MS, adequacyRefusal } from './S09_wallet_state.ts'
import { feature, isoMinute, num } from './common.ts'

export const S11_CLASSES = ['allow', 'review', 'block'] as const
/** WALLET_STATES index → position group (0 steady, 1 building, 2 unwinding). */
export const STATE_GROUP = [0, 1, 0, 2, 2] as const

export const S11_risk = new AccountQuestion({
  id: 'S11_risk',
  label: 'Risk',
  answer: 'choice',
  horizonMs: ACCOUNT_HORIZON_MS,
  classes: S11_CLASSES,
  dims: [{ kind: 'terciles' }, { kind: 'levels', n: 3 }],
  frame(s, horizonMs) {
    const end = s.at + horizonMs
    const kindIdx = feature(s, 'subject_kind_index')
    const kind = kindIdx === null ? null : (RISK_SUBJECT_KINDS[kindIdx] ?? null)
    const usd = feature(s, 'candidate_usd')
    const dir = feature(s, 'candidate_direction')
    const median = feature(s, 'median_transfer_usd_30d')
    const stateIdx = feature(s, 'state_index')
    const score = usd !== null && median !== null && median > 0 ? Math.log1p(usd / median) : null
    const conditions = {
      subject: s.asset,
      subject_kind: kind,
      window_start: isoMinute(s.at),
      window_end: isoMinute(end),
      candidate_usd: usd,
      candidate_direction: dir === null ? null : dir > 0 ? 'in' : 'out',
      median_transfer_usd_30d: median,
      size_score: score,
      classes: [...S11_CLASSES],
      rules: 'block: liquidated in window; review: state at end DISTRIBUTING or EXITING; else allow',
    }
    const event = `Risk for the ${kind ?? 'unknown'} subject ${s.asset} after a candidate ${dir === null ? '' : dir > 0 ? 'inflow ' : 'outflow '}of ${usd === null ? 'unknown' : num(usd)} USD, from ${isoMinute(s.at)} to ${isoMinute(end)}: block if the account is liquidated, review if its state ends DISTRIBUTING or EXITING, else allow`
    let refusal = adequacyRefusal(s)
    if (!refusal && (kind === null || usd === null || dir === null)) refusal = { refusal: 'suppress', reason: 'candidate_missing' }
    if (!refusal && stateIdx === null) refusal = { refusal: 'insufficient_confidence', reason: 'features_unavailable' }
    if (!refusal && score === null) refusal = { refusal: 'insufficient_confidence', reason: 'no_transfer_baseline' }
    return { event, conditions, x: refusal ? null : [score!, STATE_GROUP[stateIdx!]!], refusal }
  },
  realize(_c, w) {
    const a = w.account!
    if (a.liquidations > 0) return { y: 2, statistic: { liquidations: a.liquidations, state_at_end: a.state_at_end } }
    if (a.state_at_end === null) return { unresolvable: 'state_unknown' }
    const y = a.state_at_end === 'DISTRIBUTING' || a.state_at_end === 'EXITING' ? 1 : 0
    return { y, statistic: { liquidations: 0, state_at_end: a.state_at_end } }
  },
})
