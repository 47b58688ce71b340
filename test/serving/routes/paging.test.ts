/**
 * Cursor paging over real parts, on both event logs (test/helpers/logs.ts): the feed of a real EngineRunner's ledger
 * (its own writer appending decisions and outcomes to the real journals) and the draws journal of a real
 * BillingService, each read page by page over real HTTP on 127.0.0.1 while new rows are appended between pages.
 *
 * What it proves: a walk lists every row present when it began exactly once, in the list's order; rows appended during
 * the walk never repeat a row (a late outcome older than the walk's position is listed once, newer ones are left to
 * the next walk from the top); the first page without a cursor is what it was before paging (plus next_cursor); a
 * cursor that is not one of this list (garbage, another list's, another payer's) is a 400 VALIDATION / INVALID_CURSOR
 * naming /query/cursor, and an over-long one fails the schema.
 */
import t from 'tap'
import { EngineRunner } from '../../../engine/EngineRunner.ts'
import { EngineServices } from '../../../engine/EngineServices.ts'
import { topicNames, topicSpecs } from '../../../pipeline/topics.ts'
import { BillingService } from '../../../product/billing/BillingService.ts'
import { systemClock } from '../../../common/Clock.ts'
import { forEachLog } from '../../helpers/logs.ts'
import { testDecision, testOutcome } from '../../helpers/ledgerRecords.ts'
import { OPS_TOKEN } from '../../helpers/serving/billing.ts'
import { jsonCaller, withServer } from '../../helpers/serving/server.ts'

const A = '0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'
const B = '0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'
const MIN = 60_000

type Call = ReturnType<typeof jsonCaller>

/** Every page of `path` (limit already in it), calling `between` after each page; the rows and the number of pages. */
async function walk(call: Call, path: string, rowsOf: (data: any) => any[], between: (page: number) => Promise<void>): Promise<{ rows: any[]; pages: number }> {
  const rows: any[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const r = await call('GET', cursor === null ? path : `${path}&cursor=${encodeURIComponent(cursor)}`)
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`)
    rows.push(...rowsOf(r.body.data))
    cursor = r.body.data.next_cursor
    pages++
    await between(pages)
  } while (cursor !== null)
  return { rows, pages }
}

async function refusesBadCursors(t: any, call: Call, path: string, foreign: string) {
  for (const [why, cursor] of [['garbage', 'not-a-cursor!'], ['another list', foreign], ['base64 of nonsense', Buffer.from('c1.feed.[true]').toString('base64url')]] as const) {
    const r = await call('GET', `${path}&cursor=${encodeURIComponent(cursor)}`)
    t.equal(r.status, 400, `${path}: ${why} is refused`)
    t.match(r.body.error, { code: 'VALIDATION', detail: { reason: 'INVALID_CURSOR', field: '/query/cursor' } }, `${path}: ${why} names the field`)
  }
  const long = await call('GET', `${path}&cursor=${'a'.repeat(1025)}`)
  t.match([long.status, long.body.error.detail], [400, { reason: 'REQUEST_VALIDATION_FAILED', field: '/query/cursor' }], `${path}: an over-long cursor fails the schema`)
}

t.test('the feed: walked page by page while outcomes arrive, each chip exactly once', async (t) => {
  await forEachLog(t, async (t, makeLog) => {
    const log = await makeLog()
    await log.ensureTopics(topicSpecs(topicNames(), 3))
    const runner = await EngineRunner.start({ log, dataDir: null, cadence: false })
    t.teardown(() => runner.close())
    const engine = new EngineServices(runner)
    const server = await withServer(t, { services: { ledger: engine } })
    const call = jsonCaller(server)
    const ledger = runner.engine.ledger

    // 60 resolved decisions (n = 100..159, resolved a minute apart), and decisions kept unresolved for later outcomes.
    const seeded = Array.from({ length: 60 }, (_, i) => testDecision(100 + i))
    const later = Array.from({ length: 8 }, (_, i) => testDecision(200 + i))
    const late = Array.from({ length: 3 }, (_, i) => testDecision(10 + i))
    for (const d of [...seeded, ...later, ...late]) ledger.stageDecision(d)
    for (const d of seeded) ledger.stageOutcome(testOutcome(d))
    await ledger.flush()

    const first = await call('GET', '/v1/feed')
    t.equal(first.status, 200)
    t.equal(first.body.data.chips.length, 50, 'the default page is still the newest 50')
    t.same(first.body.data.chips.map((c: any) => c.decision_id), seeded.slice(10).reverse().map((d) => d.decision_id), 'newest resolved first')
    t.type(first.body.data.next_cursor, 'string', 'more follow: a cursor')
    const all = await call('GET', '/v1/feed?limit=200')
    t.equal(all.body.data.next_cursor, null, 'a page that holds the end has no cursor')

    // Between pages: newer outcomes (ahead of the walk) and, on page 2, outcomes resolved before every seeded one
    // (behind it: a late arrival the walk has not reached yet).
    let nextLater = 0
    const { rows, pages } = await walk(call, '/v1/feed?limit=7', (d) => d.chips, async (page) => {
      if (nextLater < later.length) ledger.stageOutcome(testOutcome(later[nextLater++]!))
      if (page === 2) for (const d of late) ledger.stageOutcome(testOutcome(d))
      await ledger.flush()
    })
    const ids = rows.map((c) => c.decision_id)
    t.equal(new Set(ids).size, ids.length, 'no chip twice')
    t.same(ids, [...[...seeded].reverse(), ...[...late].reverse()].map((d) => d.decision_id), 'every chip present at the start, then the late ones behind the walk, in order')
    t.ok(pages >= 9, `walked ${pages} pages`)
    t.notOk(ids.some((id) => later.some((d) => d.decision_id === id)), 'outcomes newer than the walk are left to the next walk')
    const again = await walk(call, '/v1/feed?limit=200', (d) => d.chips, async () => {})
    t.equal(again.rows.length, seeded.length + later.length + late.length, 'a new walk from the top lists everything once')

    await refusesBadCursors(t, call, '/v1/feed?limit=5', Buffer.from('c1.draws.[1,"x"]').toString('base64url'))
    const openapi = await call('GET', '/openapi.json')
    t.ok(openapi.body.paths['/v1/feed'].get.parameters.some((p: any) => p.name === 'cursor' && p.in === 'query'), 'the cursor parameter is in the OpenAPI document')
  })
})

t.test('the draws journal: walked page by page while rows are appended, each row exactly once', async (t) => {
  await forEachLog(t, async (t, makeLog) => {
    const log = await makeLog()
    const billing = await BillingService.open({ log, clock: systemClock, opsToken: OPS_TOKEN })
    t.teardown(() => billing.close())
    const server = await withServer(t, { services: { billing } })
    const call = jsonCaller(server)

    for (let i = 0; i < 23; i++) await billing.grant({ payer: A, credits: 1000 + i, ref: `seed-${i}` })
    await billing.grant({ payer: B, credits: 5, ref: 'b-0' })
    const before = (await call('GET', `/v1/billing/draws?payer=${A}&limit=500`)).body.data
    t.equal(before.count, 23)
    t.equal(before.next_cursor, null, 'every row on the page: no cursor')
    const dflt = (await call('GET', `/v1/billing/draws?payer=${A}`)).body.data
    t.same(dflt.draws, before.draws.slice(0, 23), 'the default page is the newest rows, as before')

    let n = 0
    const { rows, pages } = await walk(call, `/v1/billing/draws?payer=${A}&limit=4`, (d) => d.draws, async () => {
      // New rows for A (and for B) land while A's walk goes on.
      await billing.grant({ payer: A, credits: 7, ref: `during-${n++}` })
      await billing.grant({ payer: B, credits: 7, ref: `b-during-${n}` })
    })
    const ids = rows.map((r) => r.id)
    t.equal(new Set(ids).size, ids.length, 'no row twice')
    t.same(ids, before.draws.map((d: any) => d.id), 'exactly the rows present at the start, newest first')
    t.equal(pages, 6)
    t.ok(rows.every((r) => r.ref.startsWith('seed-')), 'only A\'s rows')

    const bPage = (await call('GET', `/v1/billing/draws?payer=${B}&limit=1`)).body.data
    t.type(bPage.next_cursor, 'string')
    const aPage = (await call('GET', `/v1/billing/draws?payer=${A}&limit=1`)).body.data
    const foreign = await call('GET', `/v1/billing/draws?payer=${A}&limit=1&cursor=${bPage.next_cursor}`)
    t.match([foreign.status, foreign.body.error.detail], [400, { reason: 'INVALID_CURSOR', field: '/query/cursor' }], "another payer's cursor is refused")
    await refusesBadCursors(t, call, `/v1/billing/draws?payer=${A}&limit=2`, Buffer.from('c1.feed.["2026-07-01T00:00:00.000Z","x"]').toString('base64url'))
    t.type(aPage.next_cursor, 'string')
  })
})
