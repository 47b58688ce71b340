/**
 * Account-scoped decisions (S09, S10, S11) through the engine runner on both logs, over SIMULATED wallet histories
 * (test/helpers/SyntheticWalletHistory.ts via SimulatedWalletProvider, every input labelled 'simulated'): the recorded
 * venue wallets are far below the fitting floors, so claims need these.
 * - decisions carry the v2 texts (wallet_state:<STATE>, risk:<class>), the subject, the journaled snapshot; identical
 *   inputs re-serve the row; replay is deterministic under the recorded ruleset and pinned to v1; lineage verifies;
 * - subject and S11 candidate are required (VALIDATION naming the field); provider down or unwired is PROVIDER_DOWN
 *   with no row;
 * - account clocks resolve from the provider's read of the window (independently re-derived here), an unvalued
 *   transfer makes S10 unresolvable, and a provider down past the deadline gives unresolvable 'provider_down' — never
 *   not; the market resolver never touches them.
 */
import t from 'tap'
import { ACTIVE_POLICY_VERSION } from '../../models/policy/rulesets.ts'
import { accountResolutionWindow, walletSamples } from '../../models/account/walletSamples.ts'
import { DAY_MS } from '../../common/time.ts'
import type { WalletHistory } from '../../ingest/wallet/WalletProvider.ts'
import { ACCOUNT_RESOLUTION_DEADLINE_MS, ACCOUNT_RESOLUTION_GRACE_MS } from '../../engine/AccountResolver.ts'
import { EngineError } from '../../engine/EngineError.ts'
import { EngineRunner } from '../../engine/EngineRunner.ts'
import type { AccountQuestion } from '../../models/questions/AccountQuestion.ts'
import { S09_wallet_state } from '../../models/questions/S09_wallet_state.ts'
import { S10_wallet_flow } from '../../models/questions/S10_wallet_flow.ts'
import { S11_risk } from '../../models/questions/S11_risk.ts'
import { topicNames, topicSpecs } from '../../pipeline/topics.ts'
import { forEachLog } from '../helpers/logs.ts'
import { SimulatedWalletProvider } from '../helpers/SimulatedWalletProvider.ts'
import { syntheticWalletHistory } from '../helpers/SyntheticWalletHistory.ts'
import { makeTempDir } from '../helpers/tmp.ts'
import { decideNow } from '../helpers/engine.ts'

const END = Date.parse('2026-01-01T00:00:00Z')
const QS: readonly AccountQuestion[] = [S09_wallet_state, S10_wallet_flow, S11_risk]
/** Pool: six simulated wallets (seeds 1..6) fit the pooled parameters; the subjects asked about are seeds 11..13. */
const pool = Array.from({ length: 6 }, (_, i) => syntheticWalletHistory({ seed: i + 1, days: 150, end: END }))
const subjects = [11, 12, 13].map((seed) => syntheticWalletHistory({ seed, days: 150, end: END }))

/** The engine error a promise rejects with (null when it resolves). */
async function engineError(p: Promise<unknown>): Promise<EngineError | null> {
  try {
    await p
    return null
  } catch (err) {
    if (err instanceof EngineError) return err
    throw err
  }
}

function candidateAt(at: number, usd: number) {
  return { tx_hash: `0x${'2'.repeat(64)}`, log_index: 0, block_time: new Date(at).toISOString(), direction: 'out' as const, asset: 'USDC', amount: usd, usd_value: usd, counterparty: null }
}

/** A decision instant (a minute grid point) whose S10 window (at, at + 24 h] holds an unvalued transfer, if any. */
function unvaluedWindowAt(h: WalletHistory): number | null {
  const tr = h.transfers.find((x) => x.usd === null && x.time > END - 60 * DAY_MS && x.time < END - 2 * DAY_MS)
  return tr ? Math.floor((tr.time - 3_600_000) / 60_000) * 60_000 : null
}

t.test('account decisions and their clocks through the engine runner', async (t) => {
  await forEachLog(t, async (t, makeLog) => {
    const log = await makeLog()
    await log.ensureTopics(topicSpecs(topicNames(), 3))
    const dataDir = await makeTempDir(t)
    const provider = new SimulatedWalletProvider([...pool, ...subjects])
    let now = END - 5 * DAY_MS
    const runner = await EngineRunner.start({ log, dataDir, cadence: false, walletProvider: provider, accountClock: { now: () => now }, accountResolveIntervalMs: 0 })
    t.teardown(() => runner.close())
    const engine = runner.engine
    for (const q of QS) await engine.setAccountFit(q.fit(pool.flatMap((h) => walletSamples(q, h))))
    const [a, b, c] = subjects as [WalletHistory, WalletHistory, WalletHistory]

    // ---- S09: a claim with the v2 text
    const at0 = now
    const s09 = await decideNow(engine, { question_id: 'S09_wallet_state', asset: 'ETH', subject: a.address.toUpperCase().replace('0X', '0x') })
    const r09 = s09.record
    t.equal(s09.reserved, false)
    t.equal(r09.subject, a.address, 'the subject is recorded lower-cased')
    t.equal(r09.policy_version, ACTIVE_POLICY_VERSION)
    t.equal(r09.created_at, new Date(at0).toISOString(), 'decided at the account clock')
    t.equal(r09.horizon, '1440m')
    t.not(r09.action, 'refuse', `S09 on the pooled fit is a claim (${r09.refusal_reason})`)
    t.equal(r09.decision, `wallet_state:${r09.choice!.choice_id}`)
    t.equal(r09.fitted_version, engine.fits.get('S09_wallet_state', r09.fitted_version!)!.version, 'the fit is in the store')
    const journal = JSON.parse(r09.journal!)
    t.equal(journal.asset, a.address)
    t.equal(journal.freshness[0].quality, 'simulated', 'simulated inputs say so in the journal')
    t.same(provider.reads.at(-1), { address: a.address, window: { start: at0 - 91 * DAY_MS, end: at0 } })

    const again = await decideNow(engine, { question_id: 'S09_wallet_state', asset: 'ETH', subject: a.address })
    t.same([again.reserved, again.record.decision_id], [true, r09.decision_id], 'identical inputs re-serve the recorded decision')

    const replay = runner.replayer.replay(r09.decision_id, { ruleset_version: null })!
    t.same(replay, { decision_id: r09.decision_id, original_verdict: r09.decision, replayed_verdict: r09.decision, matched_rules: r09.matched_rules, policy_version: ACTIVE_POLICY_VERSION, deterministic: true })
    t.equal(runner.replayer.replay(r09.decision_id, { ruleset_version: '1.0.0' })!.replayed_verdict, `regime:${r09.choice!.choice_id}`, 'pinned to v1, the sealed v1 text')
    t.match(runner.reads.lineage(r09.decision_id)!.verify, { input_ok: true, state_ok: true })

    // ---- S10 (binary) and S11 (choice over allow/review/block)
    const s10 = (await decideNow(engine, { question_id: 'S10_wallet_flow', asset: 'ETH', subject: a.address })).record
    t.not(s10.action, 'refuse', `S10 is a claim (${s10.refusal_reason})`)
    t.ok(['unlikely', 'lean_unlikely', 'no_edge', 'lean_likely', 'likely'].includes(s10.decision), s10.decision)
    t.equal(s10.choice, null)
    const s11 = (await decideNow(engine, { question_id: 'S11_risk', asset: 'ETH', subject: a.address, candidate: candidateAt(at0, 2500) })).record
    t.not(s11.action, 'refuse', `S11 is a claim (${s11.refusal_reason})`)
    t.match(s11.decision, /^risk:(allow|review|block)$/)
    t.equal(s11.conditions.subject_kind, 'wallet')
    t.equal(JSON.parse(s11.journal!).features.candidate_usd, 2500, 'the candidate is a journaled input')

    // ---- required inputs, and provider failures: errors, no row
    const rows = () => engine.ledger.index.size.decisions
    const before = rows()
    t.match(await engineError(decideNow(engine, { question_id: 'S09_wallet_state', asset: 'ETH' })), { code: 'VALIDATION', detail: { field: '/body/subject' } })
    t.match(await engineError(decideNow(engine, { question_id: 'S11_risk', asset: 'ETH', subject: a.address })), { code: 'VALIDATION', detail: { field: '/body/candidate' } })
    provider.down = true
    t.match(await engineError(decideNow(engine, { question_id: 'S10_wallet_flow', asset: 'ETH', subject: b.address })), {
      code: 'PROVIDER_DOWN',
      detail: { reason: 'WALLET_PROVIDER_DOWN', provider: 'simulated', provider_reason: 'unreachable' },
    })
    provider.down = false
    await engine.ledger.flush()
    t.equal(rows(), before, 'no row for a validation error or a provider outage')

    // ---- a subject decided over an unvalued transfer window (S10 unresolvable) and one whose provider fails later
    const atU = unvaluedWindowAt(b)
    t.ok(atU !== null, 'the simulated subject has an unvalued transfer to test with')
    now = atU!
    const s10u = (await decideNow(engine, { question_id: 'S10_wallet_flow', asset: 'ETH', subject: b.address })).record
    now = at0
    const s09c = (await decideNow(engine, { question_id: 'S09_wallet_state', asset: 'SOL', subject: c.address })).record
    const claims = [r09, s10, s11, s10u, s09c].filter((d) => d.action !== 'refuse')
    t.equal(claims.length, 5, 'all five are claims, so all five clocks are open')
    t.equal(runner.resolver.openCount(), 0, 'the tick resolver owns no account clock')
    t.equal(runner.accountResolver.openCount(), 5)

    // ---- resolution passes in the account clock's time
    now = at0 + DAY_MS + ACCOUNT_RESOLUTION_GRACE_MS
    t.same(await runner.accountResolver.resolveDue(), { resolved: 1, retrying: 0 }, 'only the earlier S10 clock is due; the others wait out the grace')
    t.ok(engine.ledger.index.outcome(s10u.decision_id), 'the earlier clock resolved first')
    now += 1
    // c's provider goes down: its clock waits, the others resolve.
    provider.downFor.add(c.address)
    const pass1 = await runner.accountResolver.resolveDue()
    t.same(pass1, { resolved: 3, retrying: 1 })
    for (const [d, q, h] of [[r09, S09_wallet_state, a], [s10, S10_wallet_flow, a], [s11, S11_risk, a], [s10u, S10_wallet_flow, b]] as const) {
      const o = engine.ledger.index.outcome(d.decision_id)!
      const start = Date.parse(d.created_at)
      const expected = q.resolve(d.conditions, accountResolutionWindow(h, start, start + DAY_MS))
      t.same([o.outcome, o.realized_choice, o.reason], [expected.outcome, expected.realized_choice, expected.reason], `${d.question_id}: the outcome re-derived from the whole history`)
      t.equal(o.subject, h.address)
      t.equal(o.resolved_at, new Date(d === s10u ? now - 1 : now).toISOString(), 'resolved_at: the pass instant')
      t.same(runner.reads.resolution(d.decision_id), { status: 'resolved', decision_id: d.decision_id, outcome: o.outcome, resolved_at: o.resolved_at, statistic: o.statistic })
    }
    t.match(engine.ledger.index.outcome(s10u.decision_id), { outcome: 'unresolvable', reason: 'unvalued_transfers_in_window' }, 'an unvalued transfer: unresolvable, never not')
    // S09 / S11 over a complete window always grade (S10 depends on whether the window held an unvalued transfer).
    const graded = [r09, s11].map((d) => engine.ledger.index.outcome(d.decision_id)!)
    t.ok(graded.every((o) => (o.outcome === 'obtains' || o.outcome === 'not') && o.realized_choice !== null), `complete windows grade obtains/not (${graded.map((o) => o.outcome)})`)
    t.equal(engine.ledger.index.outcome(s09c.decision_id), null, 'provider down: still pending')
    t.equal(runner.reads.resolution(s09c.decision_id)!.status, 'pending')

    now = Date.parse(s09c.horizon_end) + ACCOUNT_RESOLUTION_DEADLINE_MS
    t.same(await runner.accountResolver.resolveDue(), { resolved: 0, retrying: 1 }, 'retried up to the deadline')
    now += 1
    t.same(await runner.accountResolver.resolveDue(), { resolved: 1, retrying: 0 })
    t.match(engine.ledger.index.outcome(s09c.decision_id), { outcome: 'unresolvable', reason: 'provider_down', statistic: null, statistic_detail: { provider_error: 'unreachable' } })
    t.same(await runner.accountResolver.resolveDue(), { resolved: 0, retrying: 0 }, 'each clock is resolved once')
    t.equal(runner.accountResolver.openCount(), 0)
    // Closed here, before forEachLog's teardown closes the log: a runner outliving its Kafka client reconnects forever.
    await runner.close()
  })
})

t.test('no wallet provider: account questions are PROVIDER_DOWN, never a row', async (t) => {
  await forEachLog(t, async (t, makeLog) => {
    const log = await makeLog()
    await log.ensureTopics(topicSpecs(topicNames(), 3))
    const runner = await EngineRunner.start({ log, dataDir: null, cadence: false, accountClock: { now: () => END }, accountResolveIntervalMs: 0 })
    t.teardown(() => runner.close())
    const subject = subjects[0]!.address
    for (const q of QS) {
      const e = await engineError(decideNow(runner.engine, { question_id: q.id, asset: 'BTC', subject, candidate: candidateAt(END, 10) }))
      t.match(e, { code: 'PROVIDER_DOWN', detail: { reason: 'WALLET_PROVIDER_UNWIRED' } }, q.id)
    }
    t.equal(runner.engine.ledger.index.size.decisions, 0)
    await runner.close()
  })
})
