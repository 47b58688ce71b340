import t, { type Test } from 'tap'
import { FeatureState } from '../../../pipeline/features/FeatureState.ts'
import { S05_volatility_expansion } from '../../../models/questions/S05_volatility_expansion.ts'
import { S07_funding_persistence } from '../../../models/questions/S07_funding_persistence.ts'
import { S02_liquidation_risk } from '../../../models/questions/S02_liquidation_risk.ts'
import { S08_basis_dislocation } from '../../../models/questions/S08_basis_dislocation.ts'
import { S11_risk } from '../../../models/questions/S11_risk.ts'
import { QUESTIONS } from '../../../models/questions/index.ts'
import { Policy } from '../../../models/policy/Policy.ts'
import { buildDataset } from '../../../models/Dataset.ts'
import type { ModelOutput } from '../../../models/QuestionModel.ts'
import { H, T0, bar, funding, liquidation, syntheticBars } from '../../helpers/ticks.ts'

const policy = Policy.v1()

function assertRefusal(t: Test, out: ModelOutput, kind: string, reason: string): void {
  t.equal(out.kind, 'refusal', `${kind}: a refusal`)
  if (out.kind !== 'refusal') return
  t.equal(out.refusal, kind)
  t.equal(out.reason, reason)
  const d = policy.apply(out)
  t.equal(d.decision, kind, 'policy decision is the refusal kind')
  t.equal(d.action, 'refuse')
  t.equal(d.probability, 0, 'probability 0 on the record')
  t.equal(d.confidence, 0, 'confidence 0 on the record')
  t.same(d.matched_rules, [`refusal.${kind}`])
}


/** Eight days of hourly bars so the 7-day baseline exists. */
function eightDays(): FeatureState {
  const fs = new FeatureState()
  for (const tick of syntheticBars('BTC', 8 * 24)) fs.ingest(tick)
  return fs
}

t.test('stale_input: bars older than 2 × interval + 60 s', async (t) => {
  const fs = eightDays()
  const last = T0 + 8 * 24 * H
  t.equal(S05_volatility_expansion.evaluate(fs.snapshot('BTC', last), null).kind, 'refusal')
  assertRefusal(t, S05_volatility_expansion.evaluate(fs.snapshot('BTC', last + 2 * H + 61_000), null), 'stale_input', 'input_stale:bars')
})

t.test('stale_input: a degraded input', async (t) => {
  const fs = eightDays()
  fs.ingest(bar('BTC', T0 + (8 * 24 + 1) * H, 100, 101, 99, 100, { quality: 'degraded' }))
  assertRefusal(t, S05_volatility_expansion.evaluate(fs.snapshot('BTC', T0 + (8 * 24 + 1) * H), null), 'stale_input', 'input_degraded:bars')
})

t.test('insufficient_confidence: no fitted model, a tiny training set, a degenerate or missing baseline', async (t) => {
  const fs = eightDays()
  const snap = fs.snapshot('BTC', T0 + 8 * 24 * H)
  assertRefusal(t, S05_volatility_expansion.evaluate(snap, null), 'insufficient_confidence', 'model_not_fitted')

  const { samples } = buildDataset(syntheticBars('BTC', 10 * 24), [S05_volatility_expansion])
  const tiny = samples.get('S05_volatility_expansion')!
  t.ok(tiny.length < 80, `only ${tiny.length} samples`)
  const fitted = S05_volatility_expansion.fit(tiny)
  t.equal((fitted.params as { status: string }).status, 'insufficient')
  assertRefusal(t, S05_volatility_expansion.evaluate(snap, fitted), 'insufficient_confidence', 'sample_below_floor')

  const flat = new FeatureState()
  for (let i = 1; i <= 8 * 24; i++) flat.ingest(bar('BTC', T0 + i * H, 100, 100, 100, 100))
  assertRefusal(t, S05_volatility_expansion.evaluate(flat.snapshot('BTC', T0 + 8 * 24 * H), fitted), 'insufficient_confidence', 'baseline_degenerate')

  const young = new FeatureState()
  for (const tick of syntheticBars('BTC', 3 * 24)) young.ingest(tick)
  assertRefusal(t, S05_volatility_expansion.evaluate(young.snapshot('BTC', T0 + 3 * 24 * H), fitted), 'insufficient_confidence', 'baseline_unavailable')
})

t.test('insufficient_confidence: the policy refuses a claim below its minimum confidence', async (t) => {
  const claim: ModelOutput = { kind: 'claim', event: 'e', horizon: '240m', conditions: {}, probability: 0.8, distribution: null, confidence: 0.01, evidence: {} }
  const d = policy.apply(claim)
  t.same(d, { decision: 'insufficient_confidence', action: 'refuse', probability: 0, confidence: 0, matched_rules: ['refusal.min_confidence'] })
  const ok = policy.apply({ ...claim, confidence: 0.5 })
  t.same(ok, { decision: 'likely', action: 'alert', probability: 0.8, confidence: 0.5, matched_rules: ['binary.likely'] })
})

t.test('suppress: S07 with current funding on neutral (1.25e-05/h), and funding missing on the market', async (t) => {
  const fs = new FeatureState()
  for (let i = 1; i <= 40; i++) fs.ingest(funding('SOL', T0 + i * H, i % 2 ? 3e-5 : -1e-5, 1, 'hyperliquid:perp'))
  fs.ingest(funding('SOL', T0 + 41 * H, 0.0000125, 1, 'hyperliquid:perp'))
  const out = S07_funding_persistence.evaluate(fs.snapshot('SOL', T0 + 41 * H), null)
  assertRefusal(t, out, 'suppress', 'neutral_funding_out_of_scope')
  t.equal(out.conditions.side, 'neutral')

  const spot = new FeatureState()
  spot.ingest(bar('BTC', T0 + H, 1, 1, 1, 1))
  assertRefusal(t, S07_funding_persistence.evaluate(spot.snapshot('BTC', T0 + H), null), 'suppress', 'input_unavailable:funding')
})

t.test('suppress: S02 names its readiness N/24; S08 is not answered; account-scoped questions need a wallet input', async (t) => {
  const fs = new FeatureState()
  for (let h = 0; h < 10; h++) fs.ingest(liquidation('BTC', T0 + h * H + 1, 1000))
  const out = S02_liquidation_risk.evaluate(fs.snapshot('BTC', T0 + 10 * H), null)
  assertRefusal(t, out, 'suppress', 'liquidation_tape_hours_below_24')
  t.equal(out.conditions.liquidation_tape_hours_24h, 10)
  for (let h = 10; h < 24; h++) fs.ingest(liquidation('BTC', T0 + h * H + 1, 1000))
  assertRefusal(t, S02_liquidation_risk.evaluate(fs.snapshot('BTC', T0 + 24 * H), null), 'suppress', 'not_sold_on_deployment')
  t.equal(S02_liquidation_risk.sold, false)
  assertRefusal(t, S08_basis_dislocation.evaluate(fs.snapshot('BTC', T0 + 24 * H), null), 'suppress', 'not_offered_in_v1')
  // A market snapshot carries no wallet input: the account-scoped question refuses it as an unavailable surface.
  assertRefusal(t, S11_risk.evaluate(fs.snapshot('BTC', T0 + 24 * H), null), 'suppress', 'input_unavailable:wallet')
  t.same(
    QUESTIONS.filter((q) => q.scope === 'account').map((q) => q.id),
    ['S09_wallet_state', 'S10_wallet_flow', 'S11_risk'],
  )
})
