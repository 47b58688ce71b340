/**
 * GET /v1/decisions/mine over real parts on one real EmbeddedLog: a real EngineRunner's ledger (decisions and an
 * outcome through its own writer), a real DuelService locking calls and a real DeliveryService recording asks, each in
 * a paid call's unit of work as the paid routes write them, served over real HTTP on 127.0.0.1.
 *
 * What it proves: the caller sees only its own asks and calls, newest first, each with its decision's verdict or its
 * call's grade; paging by cursor lists each row once; another payer's list is refused without that payer's proof (401
 * PAYER_UNPROVEN), and so is a list with no proof at all; a bad cursor is 400 INVALID_CURSOR.
 */
import t from 'tap'
import { EngineRunner } from '../../../engine/EngineRunner.ts'
import { EngineServices } from '../../../engine/EngineServices.ts'
import { UnitOfWork } from '../../../pipeline/journal/UnitOfWork.ts'
import type { PaidCall } from '../../../pipeline/journal/PaidCall.ts'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { topicNames, topicSpecs } from '../../../pipeline/topics.ts'
import { DuelService } from '../../../product/duel/DuelService.ts'
import { PAYER_HISTORY } from '../../../product/history/schemas.ts'
import { TestClock } from '../../helpers/callEvents.ts'
import { testDecision, testOutcome } from '../../helpers/ledgerRecords.ts'
import { withDelivery } from '../../helpers/serving/delivery.ts'
import { jsonCaller, makeAjv, withServer } from '../../helpers/serving/server.ts'
import { sessionFor } from '../../helpers/serving/signIn.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const A = '0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'
const B = '0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'
const validHistory = makeAjv().compile(PAYER_HISTORY)

const log = await EmbeddedLog.open(await makeTempDir(t, 'svc-mine-'))
await log.ensureTopics(topicSpecs(topicNames(), 3))
const runner = await EngineRunner.start({ log, dataDir: null, cadence: false })
const decisions = Array.from({ length: 8 }, (_, i) => testDecision(i + 1))
const clock = new TestClock(Date.parse(decisions.at(-1)!.created_at) + 60_000)
const ledger = runner.engine.ledger
for (const d of decisions) ledger.stageDecision(d)
ledger.stageOutcome(testOutcome(decisions[0]!, { outcome: 'obtains', resolved_at: decisions[1]!.created_at }))
await ledger.flush()
const duel = await DuelService.open({
  log,
  ledger: { decision: (id) => ledger.index.decision(id), clockNow: () => clock.now(), resolutions: ledger.bus.resolutions },
  now: () => clock.now(),
  wallNow: () => clock.now(),
})
const { delivery } = await withDelivery(t, clock, undefined, { log })
t.teardown(async () => {
  await delivery.close()
  await duel.close()
  await runner.close()
  await log.close()
})
const server = await withServer(t, { services: { clock, ledger: new EngineServices(runner), duel, delivery } })
const call = jsonCaller(server)

let payments = 0
const paid = (payer: string): PaidCall => ({ kind: 'paid', payment_id: `pay-${++payments}`, rail: 'credits', payer })
async function ask(payer: string, decisionId: string) {
  const unit = new UnitOfWork()
  delivery.recordAskIn(unit, paid(payer), decisionId)
  await unit.commit()
}
async function lock(payer: string, decisionId: string, side: 'obtains' | 'not') {
  const unit = new UnitOfWork()
  const locked = await duel.lockCall({ payer, decision_id: decisionId, call: side, call_probability: null }, paid(payer), unit)
  if (!locked) throw new Error(`no call on ${decisionId}`)
  await unit.commit()
  return locked.call_id
}

// A asked decisions 1, 3, 5 and 7 and called 2 and 3; B asked 2 and 4 and called 6.
for (const i of [0, 2, 4, 6]) await ask(A, decisions[i]!.decision_id)
for (const i of [1, 3]) await ask(B, decisions[i]!.decision_id)
const aCalls = [await lock(A, decisions[1]!.decision_id, 'obtains'), await lock(A, decisions[2]!.decision_id, 'not')]
await lock(B, decisions[5]!.decision_id, 'not')

t.test("the caller's own asks and calls, newest first, paged once each", async (t) => {
  const whole = await call('GET', `/v1/decisions/mine?payer=${A}`)
  t.equal(whole.status, 200, JSON.stringify(whole.body.error))
  t.ok(validHistory(whole.body.data), JSON.stringify(validHistory.errors))
  const data = whole.body.data
  t.match(data, { payer: A, asks: 4, calls: 2, next_cursor: null })
  t.same(data.items.map((r: any) => r.kind), ['call', 'call', 'ask', 'ask', 'ask', 'ask'], 'calls were locked after every decision was made')
  t.same(data.items.filter((r: any) => r.kind === 'ask').map((r: any) => r.decision_id), [6, 4, 2, 0].map((i) => decisions[i]!.decision_id), 'asks by decision time, newest first')
  t.same(new Set(data.items.filter((r: any) => r.kind === 'call').map((r: any) => r.id)), new Set(aCalls))
  const first = data.items.find((r: any) => r.decision_id === decisions[0]!.decision_id)
  t.match(first, { kind: 'ask', ask: { status: 'resolved', outcome: 'obtains', probability: 0.2, decision: 'vol_expansion:unlikely' }, call: null }, 'an ask shows how it resolved')
  t.match(data.items[0], { kind: 'call', ask: null, call: { status: 'locked' } })
  t.notOk(data.items.some((r: any) => r.decision_id === decisions[3]!.decision_id), "B's asks are not A's")

  const header = await call('GET', '/v1/decisions/mine', undefined, { 'x-svc-payer': A })
  t.same(header.body.data, data, 'the payer may be named in x-svc-payer instead')

  const rows: any[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const r = await call('GET', `/v1/decisions/mine?payer=${A}&limit=4${cursor ? `&cursor=${cursor}` : ''}`)
    rows.push(...r.body.data.items)
    cursor = r.body.data.next_cursor
    pages++
    // A new ask while walking lands ahead of the walk (its decision is the newest): never listed twice.
    if (pages === 1) await ask(A, decisions[7]!.decision_id)
  } while (cursor !== null)
  t.equal(pages, 2)
  t.same(rows.map((r) => r.id), data.items.map((r: any) => r.id), 'pages list the same rows once, in order')
  const after = await call('GET', `/v1/decisions/mine?payer=${A}`)
  t.equal(after.body.data.asks, 5)

  const bad = await call('GET', `/v1/decisions/mine?payer=${A}&cursor=AAAA`)
  t.match([bad.status, bad.body.error.detail], [400, { reason: 'INVALID_CURSOR', field: '/query/cursor' }])
})

t.test("another payer's list is refused", async (t) => {
  const asA = await sessionFor(server, A)
  const other = await fetch(`${server.url}/v1/decisions/mine?payer=${B}`, { headers: asA })
  const body = (await other.json()) as any
  t.equal(other.status, 401, "A's session does not prove B")
  t.equal(body.error.code, 'PAYER_UNPROVEN')
  t.notOk(JSON.stringify(body).includes(decisions[3]!.decision_id), 'nothing of B is shown')
  const bare = await fetch(`${server.url}/v1/decisions/mine?payer=${A}`)
  t.equal(bare.status, 401, 'naming a payer proves nothing')
  const mismatch = await fetch(`${server.url}/v1/decisions/mine?payer=${B}`, { headers: { ...asA, 'x-svc-payer': A } })
  t.match([mismatch.status, ((await mismatch.json()) as any).error.detail], [400, { reason: 'PAYER_MISMATCH' }], 'two different payers named: refused')
  const b = await call('GET', `/v1/decisions/mine?payer=${B}`)
  t.match(b.body.data, { payer: B, asks: 2, calls: 1 }, 'B sees its own')
})
