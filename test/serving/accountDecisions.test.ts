/**
 * POST /v1/decisions for the account-scoped questions (S09, S10, S11) through a real Server on 127.0.0.1 with a paying
 * gate (test/helpers/serving/AuthorizingPaymentGate.ts), the engine runner on the embedded log, and the wallet wiring
 * `svc start` uses (app/walletWiring.ts):
 * - recorded venue wallets (HyperliquidReplayServer over the cassettes; unrecorded users answer as empty accounts):
 *   an honest refusal, recorded and charged, with the v2 texts; replay is deterministic; lineage verifies;
 * - SIMULATED wallet histories with a pooled fit (test/helpers/SimulatedWalletProvider.ts): claims reading
 *   wallet_state:<STATE> / risk:<class>;
 * - missing subject / candidate: 400 naming the field, nothing authorized; provider down: 503 PROVIDER_DOWN, nothing
 *   recorded or charged; no provider wired: PROVIDER_DOWN, wallet/risk routes SERVICE_UNWIRED, signals say
 *   'wallet_provider_unwired'; the wallet provider appears in the provider registry when wired.
 */
import t from 'tap'
import { ACTIVE_POLICY_VERSION } from '../../models/policy/rulesets.ts'
import { walletSamples } from '../../models/account/walletSamples.ts'
import { EngineRunner } from '../../engine/EngineRunner.ts'
import { S09_wallet_state } from '../../models/questions/S09_wallet_state.ts'
import { S11_risk } from '../../models/questions/S11_risk.ts'
import { topicNames, topicSpecs } from '../../pipeline/topics.ts'
import { EngineServices } from '../../engine/EngineServices.ts'
import { ProviderHealth } from '../../product/platform/ProviderHealth.ts'
import { openWalletWiring, walletWiringOf } from '../../app/walletWiring.ts'
import { loadConfig } from '../../app/config.ts'
import type { WalletProvider } from '../../ingest/wallet/WalletProvider.ts'
import { DECISION_RECORD } from '../../engine/schemas.ts'
import { withReplayServer } from '../helpers/HyperliquidReplayServer.ts'
import { makeEmbeddedFactory, type TapTest } from '../helpers/logs.ts'
import { makeTempDir } from '../helpers/tmp.ts'
import { openAnswerKeyring } from '../../record/answerKeys/answerKeyFile.ts'
import { AuthorizingPaymentGate } from '../helpers/serving/AuthorizingPaymentGate.ts'
import { makeAjv, withServer } from '../helpers/serving/server.ts'
import { SimulatedWalletProvider } from '../helpers/SimulatedWalletProvider.ts'
import { syntheticWalletHistory } from '../helpers/SyntheticWalletHistory.ts'

const DAY = 86_400_000
const FILLS_USER = '0xb7b6f3cea3f66bf525f5d8f965f6dbf6d9b017b2'
const FILLS_AT = Date.parse('2023-05-05T00:20:00Z')
const END = Date.parse('2026-01-01T00:00:00Z')
const ACCOUNT_QUESTIONS = ['S09_wallet_state', 'S10_wallet_flow', 'S11_risk']
const validRecord = makeAjv().compile(DECISION_RECORD)

const candidate = (at: number, usd: number) => ({ tx_hash: `0x${'ab'.repeat(32)}`, log_index: 1, block_time: new Date(at).toISOString(), direction: 'out', asset: 'USDC', amount: usd, usd_value: usd, counterparty: null })

async function stack(t: TapTest, o: { provider: WalletProvider | null; now: number; wallets?: Record<string, unknown>; providers?: ProviderHealth }) {
  const { makeLog } = await makeEmbeddedFactory(t)
  const log = await makeLog()
  await log.ensureTopics(topicSpecs(topicNames(), 3))
  const runner = await EngineRunner.start({ log, dataDir: null, cadence: false, walletProvider: o.provider, accountClock: { now: () => o.now }, accountResolveIntervalMs: 0 })
  t.teardown(() => runner.close())
  const engine = new EngineServices(runner)
  const gate = new AuthorizingPaymentGate()
  const answerKeys = await openAnswerKeyring({ dataDir: await makeTempDir(t), now: Date.now })
  const server = await withServer(t, { services: { paymentGate: gate, ledger: engine, engine, answerKeys, ...(o.providers ? { providers: o.providers } : {}), ...(o.wallets ?? {}) } })
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, { method, ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }) })
    return { status: res.status, body: (await res.json()) as any }
  }
  return { runner, gate, call, rows: () => runner.engine.ledger.index.size.decisions }
}

t.test('recorded venue wallets: refusals recorded with the v2 texts, replayable; validation and provider down record nothing', async (t) => {
  const replay = await withReplayServer(t, { unrecordedUsers: 'empty_account' })
  const providers = new ProviderHealth()
  t.teardown(() => providers.close())
  const wiring = openWalletWiring(walletWiringOf(loadConfig({ SVC_WALLET_PROVIDER: 'hyperliquid', SVC_HL_BASE_URL: replay.baseUrl })), { providers, clock: { now: () => FILLS_AT } })
  t.match(providers.list(), [{ slug: 'wallet-provider', kind: 'wallet', status: 'degraded', error_class: 'NOT_YET_CHECKED', critical: false }], 'registered when wired')
  const { call, gate, rows } = await stack(t, { provider: wiring.provider, now: FILLS_AT, wallets: wiring.services, providers })

  const asked: Record<string, any> = {}
  for (const question_id of ACCOUNT_QUESTIONS) {
    const res = await call('POST', '/v1/decisions', { asset: 'ETH', question_id, subject: FILLS_USER, ...(question_id === 'S11_risk' ? { candidate: candidate(FILLS_AT - 60_000, 250) } : {}) })
    t.equal(res.status, 200, question_id)
    const d = res.body.data
    t.ok(validRecord(d), `${question_id}: ${JSON.stringify(validRecord.errors)}`)
    t.match(d, { question_id, subject: FILLS_USER, asset: 'ETH', decision: 'insufficient_confidence', action: 'refuse', probability: 0, confidence: 0, policy_version: ACTIVE_POLICY_VERSION, horizon: '1440m' })
    t.equal(d.conditions.subject, FILLS_USER)
    t.same(res.body.meta.freshness.map((f: any) => f.input), ['wallet'])
    t.same(res.body.meta.data_sources, ['hyperliquid:wallet'])
    asked[question_id] = d
  }
  t.equal(rows(), 3, 'three rows')
  t.same(gate.settled.map((s) => s.refusal), [true, true, true], 'settled as refusals')
  t.match(providers.list(), [{ slug: 'wallet-provider', status: 'ok' }], 'the reads were tracked')

  const read = await call('GET', `/v1/decisions/${asked.S09_wallet_state.decision_id}`)
  t.same(read.body.data, asked.S09_wallet_state, 'the stored record is what was served')
  const rep = await call('POST', `/v1/decisions/${asked.S11_risk.decision_id}/replay`, {})
  t.match(rep, { status: 200, body: { data: { original_verdict: 'insufficient_confidence', replayed_verdict: 'insufficient_confidence', policy_version: ACTIVE_POLICY_VERSION, deterministic: true } } })
  const lin = await call('GET', `/v1/lineage/${asked.S10_wallet_flow.decision_id}`)
  t.match(lin.body.data.verify, { input_ok: true, state_ok: true })

  // Missing subject / candidate: 400 naming the field, before payment.
  const authorized = gate.authorized.length
  const noSubject = await call('POST', '/v1/decisions', { asset: 'ETH', question_id: 'S09_wallet_state' })
  t.match(noSubject, { status: 400, body: { error: { code: 'VALIDATION', detail: { reason: 'REQUEST_VALIDATION_FAILED', field: '/body/subject' } } } })
  const noCandidate = await call('POST', '/v1/decisions', { asset: 'ETH', question_id: 'S11_risk', subject: FILLS_USER })
  t.match(noCandidate, { status: 400, body: { error: { code: 'VALIDATION', detail: { field: '/body/candidate' } } } })
  const badSubject = await call('POST', '/v1/decisions', { asset: 'ETH', question_id: 'S10_wallet_flow', subject: 'alice' })
  t.match(badSubject, { status: 400, body: { error: { code: 'VALIDATION', detail: { field: '/body/subject' } } } })
  t.equal(gate.authorized.length, authorized, 'nothing authorized for bad input')

  // Provider down: 503 PROVIDER_DOWN, no row, the reservation released.
  replay.injectFault('status500', 1)
  const down = await call('POST', '/v1/decisions', { asset: 'BTC', question_id: 'S09_wallet_state', subject: FILLS_USER })
  t.match(down, { status: 503, body: { error: { code: 'PROVIDER_DOWN', retryable: true, detail: { reason: 'WALLET_PROVIDER_DOWN', provider: 'hyperliquid', provider_reason: 'http_status' } } } })
  t.notOk('data' in down.body)
  t.equal(rows(), 3, 'no row')
  t.equal(gate.released.length, 1, 'the payment is released, not settled')
  t.match(providers.list(), [{ slug: 'wallet-provider', status: 'degraded', error_class: 'WALLET_HTTP_STATUS' }])

  const signals = await call('GET', '/v1/signals')
  for (const id of ACCOUNT_QUESTIONS) t.match(signals.body.data.questions.find((q: any) => q.question_id === id), { available: true, reason: null }, `${id} available with a provider`)
  t.equal((await call('GET', `/v1/wallet/base/${FILLS_USER}/state`)).status, 200, 'wallet routes wired')
})

t.test('simulated wallet histories with a pooled fit: claims read wallet_state:<STATE> and risk:<class>', async (t) => {
  const pool = Array.from({ length: 6 }, (_, i) => syntheticWalletHistory({ seed: i + 1, days: 150, end: END }))
  const subject = syntheticWalletHistory({ seed: 21, days: 150, end: END })
  const at = END - 3 * DAY
  const { runner, call, gate } = await stack(t, { provider: new SimulatedWalletProvider([...pool, subject]), now: at })
  for (const q of [S09_wallet_state, S11_risk]) await runner.engine.setAccountFit(q.fit(pool.flatMap((h) => walletSamples(q, h))))

  const s09 = await call('POST', '/v1/decisions', { asset: 'SOL', question_id: 'S09_wallet_state', subject: subject.address })
  t.equal(s09.status, 200)
  const d = s09.body.data
  t.not(d.action, 'refuse')
  t.equal(d.decision, `wallet_state:${d.choice.choice_id}`)
  t.same(s09.body.meta.probabilities, d.choice.distribution, 'meta mirrors the distribution')
  t.equal(d.payment_id, gate.settled.at(-1)!.payment_id)
  const again = await call('POST', '/v1/decisions', { asset: 'SOL', question_id: 'S09_wallet_state', subject: subject.address })
  t.equal(again.body.data.decision_id, d.decision_id, 'identical inputs: the recorded decision')
  t.equal(gate.settled.length, 1, 'a repeat is not charged as a new row')
  // Issue 29: the paid answer, its re-served repeat and the read by id each carry a signature that verifies.
  const byId = await call('GET', `/v1/decisions/${d.decision_id}`)
  for (const [what, res] of [['paid answer', s09], ['re-served repeat', again], ['read by id', byId]] as const) {
    const [sig] = res.body.meta.signatures
    t.equal(sig.decision_id, d.decision_id, `${what}: signed`)
    const v = await call('POST', '/v1/verify', { poj_id: d.decision_id, body: res.body.data, signature: sig })
    t.match(v.body.data, { valid: true, id_ok: true, signature: { ok: true }, ledger: { status: 'match' } }, `${what}: its receipt verifies`)
    const forged = await call('POST', '/v1/verify', { poj_id: d.decision_id, body: { ...res.body.data, probability: 0.01 }, signature: sig })
    t.match(forged.body.data, { valid: false, signature: { ok: false }, ledger: { status: 'differs', differences: [{ path: '/probability', claimed: 0.01, recorded: d.probability }] } }, `${what}: altered, it does not`)
  }

  const s11 = await call('POST', '/v1/decisions', { asset: 'SOL', question_id: 'S11_risk', subject: subject.address, candidate: candidate(at, 4000) })
  t.equal(s11.status, 200)
  t.match(s11.body.data.decision, /^risk:(allow|review|block)$/)
  t.equal(s11.body.data.decision, `risk:${s11.body.data.choice.choice_id}`)
  const rep = await call('POST', `/v1/decisions/${s11.body.data.decision_id}/replay`, { ruleset_version: '1.0.0' })
  t.match(rep.body.data, { replayed_verdict: `regime:${s11.body.data.choice.choice_id}`, policy_version: 'policy-1.0.0' }, 'v1 stays replayable as sealed')
  const next = await call('POST', '/v1/decisions/next', { previous_decision_id: s11.body.data.decision_id })
  t.match(next, { status: 400, body: { error: { code: 'VALIDATION' } } }, 'S11 next needs a new candidate')
})

t.test('no wallet provider: PROVIDER_DOWN for account decisions, wallet and risk routes unwired, signals say why', async (t) => {
  const wiring = openWalletWiring(walletWiringOf(loadConfig({})), { providers: new ProviderHealth(), clock: { now: () => END } })
  t.same([wiring.provider, wiring.accountClock, wiring.services], [null, null, {}], 'default none')
  t.throws(() => loadConfig({ SVC_WALLET_PROVIDER: 'etherscan' }), /environment\/SVC_WALLET_PROVIDER/)
  const { call, rows, gate } = await stack(t, { provider: wiring.provider, now: END, wallets: wiring.services })
  const res = await call('POST', '/v1/decisions', { asset: 'BTC', question_id: 'S10_wallet_flow', subject: FILLS_USER })
  t.match(res, { status: 503, body: { error: { code: 'PROVIDER_DOWN', detail: { reason: 'WALLET_PROVIDER_UNWIRED' } } } })
  t.equal(rows(), 0)
  t.equal(gate.settled.length, 0)
  const signals = await call('GET', '/v1/signals')
  for (const id of ACCOUNT_QUESTIONS) t.match(signals.body.data.questions.find((q: any) => q.question_id === id), { available: false, reason: 'wallet_provider_unwired' })
  t.match(await call('GET', `/v1/wallet/base/${FILLS_USER}`), { status: 503, body: { error: { code: 'PROVIDER_DOWN', detail: { reason: 'SERVICE_UNWIRED', missing: 'wallets' } } } })
  t.match(await call('POST', '/v1/risk/wallet', { asset: 'BTC', address: FILLS_USER, candidate: candidate(END, 5) }), { status: 503, body: { error: { detail: { reason: 'SERVICE_UNWIRED', missing: 'risk' } } } })
})
