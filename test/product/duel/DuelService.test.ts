/**
 * The duel over real parts: the decision ledger, the draws journal and the call journals on one real EmbeddedLog, the
 * outcome bus of that ledger, credits through the real credits rail, and every duel route over real HTTP on 127.0.0.1.
 * Only the present is controlled (the clocks' event time), as a test clock.
 *
 * Spec, States (Player call): none → locked (house probability stored beside it); none → 409 CLOCK_CLOSED; locked →
 * 409 CALL_ALREADY_LOCKED; locked → graded on resolution; an unresolvable outcome voids the call. Limits: boards from
 * 10 graded calls, the crowd benchmark from 10 graded calls per question.
 */
import { withProof } from '../../helpers/serving/signIn.ts'
import t from 'tap'
import { join } from 'node:path'
import { DecisionLedger } from '../../../engine/DecisionLedger.ts'
import type { ResolutionEvent } from '../../../engine/LedgerBus.ts'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { Journal } from '../../../pipeline/journal/Journal.ts'
import { CALLS, callId } from '../../../pipeline/records/callRecord.ts'
import { DRAWS } from '../../../pipeline/records/drawRecord.ts'
import type { LedgerDecision } from '../../../pipeline/records/decisionRecord.ts'
import type { LedgerOutcome } from '../../../pipeline/records/outcomeRecord.ts'
import { BillingService } from '../../../product/billing/BillingService.ts'
import type { CallGraded, CallLocked } from '../../../product/duel/CallEvents.ts'
import { DuelService } from '../../../product/duel/DuelService.ts'
import { handleOf } from '../../../product/duel/index.ts'
import { CreditsPaymentGate } from '../../../serving/payments/CreditsPaymentGate.ts'
import { RailRouter } from '../../../serving/payments/RailRouter.ts'
import { RateLimiter } from '../../../serving/RateLimiter.ts'
import { Server } from '../../../serving/Server.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { MCP_PATH } from '../../../serving/mcp/McpEndpoint.ts'
import { PAY_TO } from '../../helpers/serving/server.ts'

const T0 = Date.UTC(2026, 6, 1)
const HOUR = 3_600_000
const DAY = 24 * HOUR
const A = '0xAaAaaAAaaaAAAAAAaAAAaaaaaaaaAAAaAaAaAaA1'
const B = '0xbBbbbbBBBbbBBbBbbBbbBBbbbBbBBBbbBbBbbbB2'
const C = '0xcccccccccccccccccccccccccccccccccccccc03'
const FRESH = '0xdddddddddddddddddddddddddddddddddddddd04'
const PRICE = 1000

let seq = 0
/** Which of B's two concurrent calls on open1 won (the other was refused). */
let bOpen1Side: 'obtains' | 'not' = 'not'
/** A claim on its own clock: created at `createdAt`, horizon 4 h later. */
function decision(o: { question_id?: string; probability?: number; createdAt: number; action?: string; choice?: LedgerDecision['choice'] }): LedgerDecision {
  const n = ++seq
  return {
    v: 1,
    decision_id: `0198a3c4-5e6f-8a0b-9c1d-${n.toString(16).padStart(12, '0')}`,
    question_id: o.question_id ?? 'S05_volatility_expansion',
    asset: 'BTC',
    subject: null,
    event: `event ${n}`,
    horizon: '240m',
    horizon_end: new Date(o.createdAt + 4 * HOUR).toISOString(),
    created_at: new Date(o.createdAt).toISOString(),
    conditions: { n },
    probability: o.action === 'refuse' ? 0 : (o.probability ?? 0.3),
    confidence: o.action === 'refuse' ? 0 : 0.5,
    decision: 'd',
    action: o.action ?? 'monitor',
    input_hash: 'a'.repeat(64),
    state_hash: 'b'.repeat(64),
    policy_version: 'policy-2.0.0',
    jev_version: 'jev-1.0.0',
    choice: o.choice ?? null,
    payment_id: null,
    payment_rail: 'none',
    matched_rules: [],
    refusal_reason: o.action === 'refuse' ? 'min_confidence' : null,
    model_id: o.question_id ?? 'S05_volatility_expansion',
    fitted_version: null,
    policy_checksum: 'c'.repeat(64),
    journal: null,
  }
}

function outcome(d: LedgerDecision, result: LedgerOutcome['outcome'], realized_choice: string | null = null): LedgerOutcome {
  return {
    v: 1, decision_id: d.decision_id, question_id: d.question_id, asset: d.asset, subject: null, outcome: result,
    resolved_at: new Date(Date.parse(d.horizon_end) + 60_000).toISOString(), horizon_end: d.horizon_end,
    statistic: result === 'unresolvable' ? null : 0.01, statistic_detail: null, realized_choice, reason: result === 'unresolvable' ? 'conditions_incomplete' : null,
  }
}

/** The service parts the duel routes need, over the data folder `dir` (reopened by a restart). */
async function openWorld(dir: string, clock: { now: number }, opts: { twice?: boolean } = {}) {
  const log = await EmbeddedLog.open(join(dir, 'log'))
  const ledger = await DecisionLedger.open({ log })
  const billing = await BillingService.open({ log, clock: { now: () => clock.now }, opsToken: null })
  const bus = ledger.bus.resolutions
  const duel = await DuelService.open({
    log,
    ledger: {
      decision: (id) => ledger.index.decision(id),
      clockNow: () => clock.now,
      // twice: every resolution reaches the duel by two subscriptions, as an at-least-once bus may deliver it.
      resolutions: opts.twice
        ? { subscribe: (name, handler, o) => (bus.subscribe(`${name}-again`, handler, o), bus.subscribe(name, handler, o)) }
        : bus,
    },
    now: () => clock.now,
    wallNow: () => clock.now,
  })
  const server = await Server.start({
    port: 0,
    host: '127.0.0.1',
    config: { payTo: PAY_TO },
    services: {
      clock: { now: () => clock.now },
      billing,
      duel,
      paymentGate: new RailRouter({ payTo: PAY_TO, credits: new CreditsPaymentGate(billing.ledger, PAY_TO) }),
      rateLimiter: new RateLimiter({ ip: { burst: 1e6, refillPerSec: 1e6 }, payer: { burst: 1e6, refillPerSec: 1e6 } }),
    },
  })
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(server.url + path, {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(await withProof(server, path, headers, body)) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    })
    return { status: res.status, headers: res.headers, body: JSON.parse(await res.text()) }
  }
  const lock = (payer: string, d: LedgerDecision, side: 'obtains' | 'not', p?: number) =>
    call('POST', '/v1/calls', { decision_id: d.decision_id, call: side, ...(p === undefined ? {} : { call_probability: p }) }, { 'x-svc-payer': payer })
  const record = async (decisions: LedgerDecision[], outcomes: LedgerOutcome[] = []) => {
    for (const d of decisions) ledger.stageDecision(d)
    for (const o of outcomes) ledger.stageOutcome(o)
    await ledger.flush()
  }
  const close = async () => {
    await server.close()
    await duel.close()
    await billing.close()
    await ledger.close()
    await log.close()
  }
  return { log, ledger, billing, duel, server, call, lock, record, close }
}

type World = Awaited<ReturnType<typeof openWorld>>

async function debits(log: EmbeddedLog, payer: string): Promise<number> {
  const j = await Journal.open({ log, def: DRAWS })
  const rows = await j.readAll()
  await j.close()
  return rows.filter((r) => r.kind === 'debit' && r.payer.toLowerCase() === payer.toLowerCase()).length
}

t.test('player call transitions, grading, boards, the crowd benchmark and a restart', async (t) => {
  const dir = await makeTempDir(t, 'svc-duel-')
  const clock = { now: T0 }
  let w: World = await openWorld(dir, clock)
  t.teardown(() => w.close())
  for (const p of [A, B, C]) await w.billing.grant({ payer: p, credits: 100 * PRICE, ref: `fund-${p}` })
  const lockedEvents: CallLocked[] = []
  const gradedEvents: CallGraded[] = []
  w.duel.events.locked.subscribe('test', (e) => void lockedEvents.push(e))
  w.duel.events.graded.subscribe('test', (e) => void gradedEvents.push(e))

  const open1 = decision({ createdAt: T0 - HOUR, probability: 0.3 })
  const regime = decision({
    question_id: 'S01_market_regime', createdAt: T0 - HOUR, probability: 0.55,
    choice: { choice_id: 'trend_up', distribution: { trend_up: 0.55, range: 0.3, trend_down: 0.15 } },
  })
  const closed = decision({ createdAt: T0 - 5 * HOUR })
  const refusal = decision({ createdAt: T0 - HOUR, action: 'refuse' })
  const voided = decision({ createdAt: T0 - HOUR })
  await w.record([open1, regime, closed, refusal, voided])

  await t.test('none → locked: paid, the house probability stored beside the call', async (t) => {
    const before = w.billing.ledger.balance(A)
    const r = await w.lock(A, open1, 'not', 0.2)
    t.equal(r.status, 201, JSON.stringify(r.body))
    t.equal(r.headers.get('x-svc-credits-charged'), String(PRICE))
    t.equal(w.billing.ledger.balance(A), before - PRICE, 'charged the decision price')
    const c = r.body.data
    t.match(c, { payer: A.toLowerCase(), decision_id: open1.decision_id, call: 'not', call_probability: 0.2, house_probability: 0.3, status: 'locked', choice_id: null })
    t.equal(c.call_id, callId(A, open1.decision_id))
    t.equal(c.locked_at, new Date(T0).toISOString(), 'locked in the clock time')
    const j = await Journal.open({ log: w.log, def: CALLS })
    const rows = await j.readAll()
    await j.close()
    t.equal(rows.length, 1, 'one call record on the log')
    const draws = await Journal.open({ log: w.log, def: DRAWS })
    const debit = (await draws.readAll()).find((d) => d.kind === 'debit' && d.payer.toLowerCase() === A.toLowerCase())
    await draws.close()
    t.equal(rows[0]!.payment_id, debit?.ref, 'the call names the debit that paid for it (one unit of work)')
    t.same(lockedEvents.map((e) => e.call_id), [c.call_id], 'CallLocked published once durable')
    t.equal(lockedEvents[0]!.house_probability, 0.3)
  })

  await t.test('locked → 409 CALL_ALREADY_LOCKED, nothing charged', async (t) => {
    const before = w.billing.ledger.balance(A)
    const n = await debits(w.log, A)
    t.equal(n, 1, 'the first call was debited once')
    const r = await w.lock(A.toLowerCase(), open1, 'obtains')
    t.equal(r.status, 409)
    t.equal(r.body.error.code, 'CALL_ALREADY_LOCKED')
    t.equal(r.body.error.detail.call, 'not', 'names the call that stands')
    t.equal(w.billing.ledger.balance(A), before, 'balance unchanged')
    t.equal(await debits(w.log, A), n, 'no debit written')
    // Whether A has called this clock is A's business: a caller naming A without A's proof gets the sign-in challenge,
    // never the 409 (the precheck answers only what is about the clock; issue 29).
    const stranger = await fetch(w.server.url + '/v1/calls', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-svc-payer': A },
      body: JSON.stringify({ decision_id: open1.decision_id, call: 'obtains' }),
    })
    const strangerBody = JSON.parse(await stranger.text())
    t.equal(stranger.status, 402, 'unproven: the challenge, not CALL_ALREADY_LOCKED')
    t.notOk(JSON.stringify(strangerBody).includes(callId(A, open1.decision_id)), "the answer does not name A's call")
    t.equal(w.billing.ledger.balance(A), before, 'balance unchanged by the stranger')
    // Two concurrent first calls of one payer: one locks, the other is refused, one charge.
    const both = await Promise.all([w.lock(B, open1, 'obtains'), w.lock(B, open1, 'not')])
    t.same(both.map((x) => x.status).sort(), [201, 409])
    bOpen1Side = both.find((x) => x.status === 201)!.body.data.call
    t.equal(w.billing.ledger.balance(B), 99 * PRICE, 'charged once')
  })

  await t.test('none → 409 CLOCK_CLOSED after horizon_end, nothing charged', async (t) => {
    const before = w.billing.ledger.balance(C)
    const r = await w.lock(C, closed, 'obtains')
    t.equal(r.status, 409)
    t.equal(r.body.error.code, 'CLOCK_CLOSED')
    t.equal(r.body.error.detail.horizon_end, closed.horizon_end)
    t.equal(w.billing.ledger.balance(C), before)
    t.equal(await debits(w.log, C), 0, 'no debit written')
  })

  await t.test('refusals that are not a call: unknown decision 404, refusal decision 400, bad input 400', async (t) => {
    const unknown = await w.call('POST', '/v1/calls', { decision_id: '0198a3c4-5e6f-8a0b-9c1d-ffffffffffff', call: 'obtains' }, { 'x-svc-payer': C })
    t.equal(unknown.status, 404)
    t.equal(unknown.body.error.code, 'DECISION_NOT_FOUND')
    const refused = await w.lock(C, refusal, 'obtains')
    t.equal(refused.status, 400)
    t.equal(refused.body.error.detail.reason, 'NOT_A_CLAIM')
    for (const [body, headers] of [
      [{ decision_id: open1.decision_id, call: 'maybe' }, { 'x-svc-payer': C }],
      [{ decision_id: open1.decision_id, call: 'obtains', call_probability: 1.5 }, { 'x-svc-payer': C }],
      [{ decision_id: 'not-a-uuid', call: 'obtains' }, { 'x-svc-payer': C }],
      [{ decision_id: open1.decision_id, call: 'obtains' }, {}],
    ] as const) {
      const r = await w.call('POST', '/v1/calls', body, headers)
      t.equal(r.status, 400, JSON.stringify(body))
      t.equal(r.body.error.code, 'VALIDATION')
    }
    t.equal((await w.call('GET', '/v1/scoreboard?window=1d')).status, 400, 'another window is refused')
    const noPayer = await w.call('GET', '/v1/calls')
    t.equal(noPayer.status, 400)
    t.equal(noPayer.body.error.detail.field, '/query/payer')
    const mismatch = await w.call('GET', `/v1/calls?payer=${B}`, undefined, { 'x-svc-payer': C })
    t.equal(mismatch.body.error.detail.reason, 'PAYER_MISMATCH')
    t.equal((await w.call('POST', '/v1/calls/opt-in', { opt_in: 'yes' }, { 'x-svc-payer': C })).status, 400)
    t.equal(w.billing.ledger.balance(C), 100 * PRICE, 'no refusal charged anything')
  })

  await t.test('an empty record: accuracies and Brier null, never zero', async (t) => {
    const r = await w.call('GET', `/v1/calls?payer=${FRESH}`)
    t.equal(r.status, 200)
    t.same(r.body.data, {
      payer: FRESH, opt_in: false, calls: 0, graded: 0, open: 0, void: 0, correct: 0, house_correct: 0,
      player_accuracy: null, house_accuracy: null, player_brier: null, house_brier: null, recent: [],
    })
    const locked = (await w.call('GET', '/v1/calls', undefined, { 'x-svc-payer': A })).body.data
    t.match(locked, { calls: 1, graded: 0, open: 1, player_accuracy: null, house_accuracy: null }, 'locked, not graded: still null')
  })

  await t.test('locked → graded on resolution; a distribution call is about the chosen class; unresolvable voids', async (t) => {
    t.equal((await w.lock(A, regime, 'obtains', 0.7)).status, 201)
    t.equal((await w.lock(A, voided, 'obtains')).status, 201)
    await w.record([], [outcome(open1, 'not'), outcome(regime, 'obtains', 'trend_up'), outcome(voided, 'unresolvable')])
    const s = (await w.call('GET', `/v1/calls?payer=${A}`)).body.data
    t.match(s, { calls: 3, graded: 2, open: 0, void: 1, correct: 2, player_accuracy: 1 })
    const byDecision = new Map(s.recent.map((c: { decision_id: string }) => [c.decision_id, c]))
    t.match(byDecision.get(open1.decision_id), { status: 'graded', outcome: 'not', correct: true, player_brier: 0.04, house_brier: 0.09, house_correct: true })
    t.match(byDecision.get(regime.decision_id), { status: 'graded', outcome: 'obtains', choice_id: 'trend_up', correct: true, house_correct: true })
    const graded = byDecision.get(regime.decision_id) as { player_brier: number; house_brier: number }
    t.ok(Math.abs(graded.player_brier - 0.09) < 1e-12)
    t.ok(Math.abs(graded.house_brier - 0.2025) < 1e-12)
    t.match(byDecision.get(voided.decision_id), { status: 'void', outcome: 'unresolvable', correct: null, player_brier: null, house_brier: null })
    t.ok(Math.abs(s.player_brier - (0.04 + 0.09) / 2) < 1e-9, 'player Brier over graded calls only')
    t.ok(Math.abs(s.house_brier - (0.09 + 0.2025) / 2) < 1e-9, 'house Brier on the same calls')
    t.equal(gradedEvents.filter((g) => g.payer === A.toLowerCase()).length, 3, 'CallGraded for each call, void included')
    t.equal(gradedEvents.find((g) => g.decision_id === voided.decision_id)!.status, 'void')
    // Immutable after the resolution: the clock is closed.
    t.equal((await w.lock(C, regime, 'not')).body.error.code, 'CLOCK_CLOSED')
  })

  await t.test('boards: opt-in, the 10-graded floor, handles, privacy, windows; the crowd benchmark floor', async (t) => {
    t.same((await w.call('GET', '/v1/scoreboard')).body.data.entries, [], 'nobody qualifies: entries []')
    t.equal(w.duel.crowdBenchmark(), null, 'no question has 10 graded calls: no crowd line')
    // 12 clocks: A calls every one right with 0.8; B (never opted in) calls them all; C (opted in) only 5.
    const clocks = Array.from({ length: 12 }, (_, i) => decision({ createdAt: T0 - HOUR + i * 60_000, probability: 0.4 }))
    await w.record(clocks)
    for (const d of clocks) {
      t.equal((await w.lock(A, d, 'obtains', 0.8)).status, 201)
      t.equal((await w.lock(B, d, 'not')).status, 201)
    }
    for (const d of clocks.slice(0, 5)) t.equal((await w.lock(C, d, 'obtains')).status, 201)
    t.equal((await w.call('POST', '/v1/calls/opt-in', { opt_in: true }, { 'x-svc-payer': A })).status, 200)
    t.equal((await w.call('POST', '/v1/calls/opt-in', { payer: C, opt_in: true })).status, 200)
    t.equal((await w.call('POST', '/v1/calls/opt-in', { payer: B, opt_in: true })).body.data.opt_in, true)
    t.equal((await w.call('POST', '/v1/calls/opt-in', { opt_in: false }, { 'x-svc-payer': B })).body.data.opt_in, false, 'the last record wins')
    t.same((await w.call('GET', '/v1/scoreboard')).body.data.entries, [], 'calls locked, none graded yet')
    clock.now = T0 + 6 * HOUR
    await w.record([], clocks.map((d) => outcome(d, 'obtains')))

    const pub = (await w.call('GET', '/v1/scoreboard?window=all')).body.data
    t.same(pub.entries, [{ rank: 1, handle: handleOf(A), accuracy: 1, calls_graded: 14, calls_correct: 14 }], 'A only: B never opted in, C below the floor')
    const text = JSON.stringify(pub)
    t.notMatch(text, /0x[0-9a-fA-F]{40}/, 'no full address on the public board')
    t.notMatch(text, /balance|spend|payment|credit|price/i, 'no balance, spend or payment field')
    const agg = (await w.call('GET', `/v1/calls/scoreboard?payer=${C}`)).body.data
    t.same(agg.entries.map((e: Record<string, unknown>) => Object.keys(e).sort()), [['accuracy', 'calls_correct', 'calls_graded', 'handle', 'payer', 'rank']], 'identifiers and counts only')
    t.notMatch(JSON.stringify(agg), /balance|spend|payment|credit|price/i)
    t.same(agg.you, { payer: C.toLowerCase(), opt_in: true, calls_graded: 5, rank: null })
    t.equal((await w.call('GET', '/v1/calls/scoreboard', undefined, { 'x-svc-payer': A })).body.data.you.rank, 1)
    t.same((await w.call('GET', '/v1/scoreboard?window=7d')).body.data.entries.length, 1, 'graded today: inside 7d')
    clock.now = T0 + 8 * DAY
    const week = (await w.call('GET', '/v1/scoreboard?window=7d')).body.data
    t.same(week.entries, [], 'graded 8 days ago: outside 7d')
    t.equal(week.since, new Date(T0 + DAY).toISOString())
    t.equal((await w.call('GET', '/v1/scoreboard?window=30d')).body.data.entries.length, 1)

    const crowd = w.duel.crowdBenchmark()
    // S05: A 13 graded (open1 + 12), B 13, C 5 → 31 calls; S01 has 1 graded call (A's): below its floor, left out.
    t.equal(crowd?.n, 31)
    const expected = (13 * 0.04 + (bOpen1Side === 'obtains' ? 1 : 0) + 12 * 1 + 5 * 0) / 31
    t.ok(Math.abs(crowd!.brier - expected) < 1e-9, `crowd Brier ${crowd!.brier} = ${expected}`)
    t.ok(Math.abs(crowd!.house_brier - (2 * 0.09 + 29 * 0.36) / 31) < 1e-9, 'house Brier on the same resolved pairs')
  })

  await t.test('a restart rebuilds identical boards, grades and events from the log', async (t) => {
    const read = async () => ({
      a: (await w.call('GET', `/v1/calls?payer=${A}`)).body.data,
      b: (await w.call('GET', `/v1/calls?payer=${B}`)).body.data,
      c: (await w.call('GET', `/v1/calls?payer=${C}`)).body.data,
      agg: (await w.call('GET', `/v1/calls/scoreboard?payer=${A}`)).body.data,
      pub: (await w.call('GET', '/v1/scoreboard?window=30d')).body.data,
      crowd: w.duel.crowdBenchmark(),
    })
    const before = await read()
    const events = { locked: lockedEvents.map((e) => e.call_id).sort(), graded: gradedEvents.map((e) => JSON.stringify(e)).sort() }
    await w.close()
    w = await openWorld(dir, clock, { twice: true })
    t.same(await read(), before, 'same scoreboards, boards and crowd line')
    const locked: string[] = []
    const graded: string[] = []
    w.duel.events.locked.subscribe('again', (e) => void locked.push(e.call_id))
    w.duel.events.graded.subscribe('again', (e) => void graded.push(JSON.stringify(e)))
    t.same(locked.sort(), events.locked, 'every CallLocked replayed on subscribe')
    t.same(graded.sort(), events.graded, 'every CallGraded replayed, identical')
    t.equal(w.billing.ledger.balance(B), 100 * PRICE - 13 * PRICE, 'the restart charged nothing')
  })

  await t.test('a resolution delivered twice grades once', async (t) => {
    // This world subscribed the duel twice to the bus: every resolution reaches it two times.
    const d = decision({ createdAt: clock.now - HOUR, probability: 0.6 })
    await w.record([d])
    t.equal((await w.lock(FRESH, d, 'obtains')).status, 402, 'an unfunded payer is challenged')
    await w.billing.grant({ payer: FRESH, credits: PRICE, ref: 'fund-fresh' })
    t.equal((await w.lock(FRESH, d, 'obtains')).status, 201)
    const graded: CallGraded[] = []
    w.duel.events.graded.subscribe('twice', (e) => void graded.push(e))
    await w.record([], [outcome(d, 'obtains')])
    const s = (await w.call('GET', `/v1/calls?payer=${FRESH}`)).body.data
    t.match(s, { calls: 1, graded: 1, correct: 1, player_accuracy: 1, house_accuracy: 1, player_brier: 0, open: 0 })
    t.ok(Math.abs(s.house_brier - 0.16) < 1e-9)
    t.equal(graded.filter((g) => g.payer === FRESH).length, 1, 'one CallGraded')
  })

  await t.test('the MCP tools svc_calls and svc_call are the REST routes', async (t) => {
    const rpc = async (id: number, name: string, args: Record<string, unknown>, headers: Record<string, string> = {}) => {
      const res = await fetch(w.server.url + MCP_PATH, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(await withProof(w.server, MCP_PATH, headers, args)) },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }),
      })
      return ((await res.json()) as { result: { isError?: boolean; structuredContent: { data?: unknown; code?: string } } }).result
    }
    const board = await rpc(1, 'svc_calls', { payer: A })
    t.notOk(board.isError)
    t.same(board.structuredContent.data, (await w.call('GET', `/v1/calls?payer=${A}`)).body.data, 'same record as GET /v1/calls')
    const d = decision({ createdAt: clock.now - HOUR })
    await w.record([d])
    const locked = await rpc(2, 'svc_call', { decision_id: d.decision_id, call: 'not' }, { 'x-svc-payer': A })
    t.notOk(locked.isError, JSON.stringify(locked))
    t.match(locked.structuredContent.data, { decision_id: d.decision_id, call: 'not', status: 'locked' })
    const again = await rpc(3, 'svc_call', { decision_id: d.decision_id, call: 'obtains' }, { 'x-svc-payer': A })
    t.equal(again.isError, true)
    t.equal((again.structuredContent as { code?: string; error?: { code: string } }).error?.code ?? again.structuredContent.code, 'CALL_ALREADY_LOCKED')
  })
})

t.test('the resolution events of the bus drive grading: a call locked after its outcome is known is refused', async (t) => {
  const dir = await makeTempDir(t, 'svc-duel-')
  const clock = { now: T0 }
  const w = await openWorld(dir, clock)
  t.teardown(() => w.close())
  await w.billing.grant({ payer: A, credits: 10 * PRICE, ref: 'fund' })
  // A clock resolved early in event time (the engine's clock lags the outcome): closed all the same.
  const d = decision({ createdAt: T0 - HOUR })
  await w.record([d], [outcome(d, 'not')])
  const seen: ResolutionEvent[] = []
  w.ledger.bus.resolutions.subscribe('probe', (e) => void seen.push(e))
  t.equal(seen.length, 1)
  const r = await w.lock(A, d, 'obtains')
  t.equal(r.status, 409)
  t.equal(r.body.error.code, 'CLOCK_CLOSED')
  t.equal(r.body.error.detail.resolved, true)
  t.equal(w.billing.ledger.balance(A), 10 * PRICE)
})
