/**
 * S10_wallet_flow — "Wallet net inflow" (the catalog does not show S10's name; ours: docs/decisions.md). Binary:
 * the wallet's valued net transfer flow over (t, t + 24 h] is strictly positive (valued inflows exceed valued
 * outflows; internal perp ↔ spot moves are not flow). A window holding an unvalued transfer cannot be signed and
 * resolves unresolvable, never 'not'.
 *
 * Method (docs/methodology.md "Account-scoped questions"): conditional frequency of the event per sign of the
 * trailing 7-day valued net flow (outflow / none / inflow: 3 cells), Dirichlet-smoothed and shrunk on a later
 * calibration slice. Refuses insufficient_confidence when the wallet's own 30-day sample is inadequate.
 */
import { AccountQuestion } from './AccountQuestion.ts'
import { ACCOUNT_HORIZON_MS, adequacyRefusal } from './S09_wallet_state.ts'
import { feature, isoMinute, num } from './common.ts'

export const S10_wallet_flow = new AccountQuestion({
  id: 'S10_wallet_flow',
  label: 'Wallet net inflow',
  answer: 'probability',
  horizonMs: ACCOUNT_HORIZON_MS,
  classes: ['not', 'obtains'],
  dims: [{ kind: 'levels', n: 3 }],
  frame(s, horizonMs) {
    const end = s.at + horizonMs
    const flow7 = feature(s, 'net_flow_7d_usd')
    const conditions = {
      subject: s.asset,
      window_start: isoMinute(s.at),
      window_end: isoMinute(end),
      threshold_usd: 0,
      trailing_net_flow_7d_usd: flow7,
      valuation: 'valued transfers only; an unvalued transfer in the window makes it unresolvable',
    }
    const event = `Wallet ${s.asset} valued net transfer flow from ${isoMinute(s.at)} to ${isoMinute(end)} is positive (inflows exceed outflows; trailing 7-day net ${flow7 === null ? 'unknown' : num(flow7)} USD)`
    const refusal = adequacyRefusal(s) ?? (flow7 === null ? { refusal: 'insufficient_confidence' as const, reason: 'features_unavailable' } : null)
    return { event, conditions, x: refusal ? null : [Math.sign(flow7!) + 1], refusal }
  },
  realize(_c, w) {
    const a = w.account!
    if (a.unvalued_transfers > 0) return { unresolvable: 'unvalued_transfers_in_window' }
    return { y: a.net_flow_usd > 0 ? 1 : 0, statistic: { net_flow_usd: a.net_flow_usd, valued_transfers: a.valued_transfers } }
  },
})
