/**
 * S09_wallet_state, S10_wallet_flow and S11_risk: recorded wallets (replay server on 127.0.0.1) answer with honest
 * refusals; SIMULATED histories (test/helpers/SyntheticWalletHistory.ts, source 'simulated') exercise the fit and
 * the claims; the four S11 subject kinds go through one pipeline and differ only in the label.
 */
import t from 'tap'
import { HyperliquidInfoClient } from '../../../ingest/hyperliquid/HyperliquidInfoClient.ts'
import { accountWindow, RISK_SUBJECT_KINDS, walletFeatureSnapshot, type RiskCandidate } from '../../../models/account/accountSnapshot.ts'
import { HyperliquidWalletProvider } from '../../../ingest/hyperliquid/HyperliquidWalletProvider.ts'
import { accountResolutionWindow, walletSamples } from '../../../models/account/walletSamples.ts'
import { Policy } from '../../../models/policy/Policy.ts'
import { QUESTIONS } from '../../../models/questions/index.ts'
import { S09_wallet_state } from '../../../models/questions/S09_wallet_state.ts'
import { S10_wallet_flow } from '../../../models/questions/S10_wallet_flow.ts'
import { S11_risk } from '../../../models/questions/S11_risk.ts'
import { withReplayServer } from '../../helpers/HyperliquidReplayServer.ts'
import { syntheticWalletHistory } from '../../helpers/SyntheticWalletHistory.ts'

const DAY = 86_400_000
const FILLS_USER = '0xb7b6f3cea3f66bf525f5d8f965f6dbf6d9b017b2'
const STATE_USER = '0x5e9ee1089755c3435139848e47e6635505d5a13a'
const FILLS_AT = Date.parse('2023-05-05T00:20:00Z')
const END = Date.parse('2026-01-01T00:00:00Z')
const QS = [S09_wallet_state, S10_wallet_flow, S11_risk] as const

const candidate = (usd: number, direction: 'in' | 'out' = 'out'): RiskCandidate => ({
  tx_hash: `0x${'1'.repeat(64)}`, log_index: 0, block_time: new Date(END).toISOString(), direction, asset: 'USDC', amount: usd, usd_value: usd, counterparty: null,
})

t.test('the registry holds the three account-scoped modules, answered (sold) and account-scoped', async (t) => {
  const account = QUESTIONS.filter((q) => q.scope === 'account')
  t.same(account.map((q) => q.id), ['S09_wallet_state', 'S10_wallet_flow', 'S11_risk'])
  t.ok(account.every((q) => q.sold && q.horizon === '1440m'))
  t.same(S09_wallet_state.classes, ['WATCHING', 'ACCUMULATING', 'HIGH_CONVICTION', 'DISTRIBUTING', 'EXITING'])
  t.equal(S10_wallet_flow.answer, 'probability')
  t.same(S11_risk.classes, ['allow', 'review', 'block'])
})

t.test('recorded wallets refuse honestly: the sample is inadequate (insufficient_confidence), through the policy a 0/0 refuse', async (t) => {
  const server = await withReplayServer(t, { unrecordedUsers: 'empty_account' })
  const provider = new HyperliquidWalletProvider(new HyperliquidInfoClient({ baseUrl: server.baseUrl }))
  const policy = Policy.v1()
  for (const [user, at] of [[FILLS_USER, FILLS_AT], [STATE_USER, FILLS_AT]] as const) {
    const h = await provider.history(user, { start: at - 91 * DAY, end: at })
    for (const q of QS) {
      const own = q.fit(walletSamples(q, h))
      t.equal((own.params as { status: string }).status, 'insufficient', `${q.id} ${user}: the recorded history is below the training floor`)
      const snap = walletFeatureSnapshot(h, at, q === S11_risk ? { candidate: candidate(100), subjectKind: 'wallet' } : {})
      const out = q.evaluate(snap, own)
      t.match(out, { kind: 'refusal', refusal: 'insufficient_confidence', reason: 'wallet_sample_inadequate' }, `${q.id} ${user}`)
      t.same(policy.apply(out), { decision: 'insufficient_confidence', action: 'refuse', probability: 0, confidence: 0, matched_rules: ['refusal.insufficient_confidence'] })
    }
  }
})

// Pooled SIMULATED histories: enough rows to pass the floors. Fitting on them says nothing about real wallets.
const histories = Array.from({ length: 6 }, (_, i) => syntheticWalletHistory({ seed: i + 1, days: 150, end: END }))
const pooled = Object.fromEntries(QS.map((q) => [q.id, q.fit(histories.flatMap((h) => walletSamples(q, h)))]))

t.test('fits on simulated histories are deterministic and answer with claims', async (t) => {
  for (const q of QS) {
    const again = q.fit(histories.flatMap((h) => walletSamples(q, h)))
    t.same(again, pooled[q.id], `${q.id}: the same rows fit the same parameters`)
    t.equal((pooled[q.id]!.params as { status: string }).status, 'ok')
  }
  const h = histories[0]!
  const s09 = S09_wallet_state.evaluate(walletFeatureSnapshot(h, END), pooled.S09_wallet_state!)
  t.equal(s09.kind, 'claim')
  if (s09.kind === 'claim') {
    const sum = Object.values(s09.distribution!).reduce((a, b) => a + b, 0)
    t.ok(Math.abs(sum - 1) < 1e-9, 'a distribution over the five states')
    t.equal(s09.probability, Math.max(...Object.values(s09.distribution!)))
    t.ok(s09.confidence > 0 && s09.confidence < 1)
    t.equal(s09.evidence.cell_cal_n as number >= 10, true)
  }
  const s10 = S10_wallet_flow.evaluate(walletFeatureSnapshot(h, END), pooled.S10_wallet_flow!)
  t.equal(s10.kind, 'claim')
  if (s10.kind === 'claim') {
    t.equal(s10.distribution, null)
    t.ok(s10.probability > 0 && s10.probability < 1)
  }
  const sim = walletFeatureSnapshot(h, END)
  t.equal(sim.freshness[0]!.quality, 'simulated', 'simulated inputs say so')
})

t.test('S11: the four subject kinds share one pipeline and differ only in the label', async (t) => {
  const h = histories[1]!
  const outs = RISK_SUBJECT_KINDS.map((kind) => S11_risk.evaluate(walletFeatureSnapshot(h, END, { candidate: candidate(2500), subjectKind: kind }), pooled.S11_risk!))
  t.ok(outs.every((o) => o.kind === 'claim'))
  const strip = (o: (typeof outs)[number]) => ({ ...o, event: o.event.replace(/the \w+ subject/, 'the _ subject'), conditions: { ...o.conditions, subject_kind: '_' } })
  for (let i = 1; i < outs.length; i++) t.same(strip(outs[i]!), strip(outs[0]!), `${RISK_SUBJECT_KINDS[i]} = transaction but for the label`)
  t.same(outs.map((o) => o.conditions.subject_kind), [...RISK_SUBJECT_KINDS])
  const noBaseline = syntheticWalletHistory({ seed: 99, days: 150, end: END })
  noBaseline.transfers = []
  t.match(S11_risk.evaluate(walletFeatureSnapshot(noBaseline, END, { candidate: candidate(10), subjectKind: 'token' }), pooled.S11_risk!), {
    kind: 'refusal', refusal: 'insufficient_confidence', reason: 'no_transfer_baseline',
  })
  t.match(S11_risk.evaluate(walletFeatureSnapshot(h, END), pooled.S11_risk!), { kind: 'refusal', refusal: 'suppress', reason: 'candidate_missing' })
})

t.test('refusal kinds: stale wallet input, no fit, cell below the band floor', async (t) => {
  const h = histories[2]!
  const stale = walletFeatureSnapshot(h, END, { receivedAt: END - 10 * 60_000 })
  t.match(S09_wallet_state.evaluate(stale, pooled.S09_wallet_state!), { kind: 'refusal', refusal: 'stale_input', reason: 'input_stale:wallet' })
  t.match(S10_wallet_flow.evaluate(walletFeatureSnapshot(h, END), null), { kind: 'refusal', refusal: 'insufficient_confidence', reason: 'model_not_fitted' })
  // HIGH_CONVICTION is rare in the simulated pool: its calibration cell is below the floor of 10.
  const p = pooled.S09_wallet_state!.params as { cal_counts: number[] }
  const hc = walletFeatureSnapshot(h, END)
  hc.features.state_index = 2
  if (p.cal_counts[2]! < 10) t.match(S09_wallet_state.evaluate(hc, pooled.S09_wallet_state!), { kind: 'refusal', reason: 'calibration_band_below_floor' })
  else t.equal(S09_wallet_state.evaluate(hc, pooled.S09_wallet_state!).kind, 'claim')
})

t.test('resolution re-derives the event from the wallet window', async (t) => {
  const h = histories[3]!
  const start = END - 3 * DAY
  const w = accountResolutionWindow(h, start, start + DAY)
  const acc = accountWindow(h, start, start + DAY)
  t.same(w.account, acc)
  const s09 = S09_wallet_state.resolve({ predicted_class: acc.state_at_end }, w)
  t.match(s09, { outcome: 'obtains', realized_choice: acc.state_at_end })
  const s10 = S10_wallet_flow.resolve({}, w)
  if (acc.unvalued_transfers > 0) t.match(s10, { outcome: 'unresolvable', reason: 'unvalued_transfers_in_window' })
  else t.equal(s10.outcome, acc.net_flow_usd > 0 ? 'obtains' : 'not')
  // A window with an unvalued transfer cannot be signed: unresolvable, never 'not'.
  const withUnvalued = { ...h, transfers: [...h.transfers, { time: start + 1000, hash: null, type: 'spotTransfer', direction: 'in' as const, token: 'PURR', amount: 5, usd: null, fee_usd: null, counterparty: null }] }
  t.match(S10_wallet_flow.resolve({}, accountResolutionWindow(withUnvalued, start, start + DAY)), { outcome: 'unresolvable', reason: 'unvalued_transfers_in_window' })
  t.match(S11_risk.resolve({ predicted_class: 'allow' }, accountResolutionWindow(h, END - DAY / 2, END + DAY / 2)), { outcome: 'unresolvable', reason: 'account_window_incomplete' })
  const liq = h.liquidations[0]
  if (liq) t.match(S11_risk.resolve({ predicted_class: 'block' }, accountResolutionWindow(h, liq.time - DAY / 2, liq.time + DAY / 2 - 1)), { outcome: 'obtains', realized_choice: 'block' })
  t.match(S09_wallet_state.resolve({}, { ...w, account: undefined }), { outcome: 'unresolvable', reason: 'no_account_window' })
})
