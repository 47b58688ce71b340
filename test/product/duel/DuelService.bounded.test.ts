/**
 * The duel's bounded memory (issue 31) over real parts on one EmbeddedLog: a real EngineRunner's ledger resolving
 * clocks, the real Parquet sink sealing the call and outcome journals, the record's DuckDB over the catalog's views,
 * and a DuelService whose hot window is two hours of event time, served over real HTTP on 127.0.0.1.
 *
 * What it proves: once a newer resolution pushes a payer's graded calls out of the window they leave memory, and the
 * same routes (GET /v1/calls, GET /v1/decisions/mine, every page) answer the same bodies as before, read back from
 * the sealed Parquet; a call by id too; an Arena rebuilt from nothing still folds every call (CallEvents.history); the totals (counts, Brier means, boards) do not move; nothing leaves memory
 * while the sink is not sealing. Prints a cold page read's latency beside a hot one (figures in README, Measured).
 */
import t from 'tap'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { EngineRunner } from '../../../engine/EngineRunner.ts'
import { EngineServices } from '../../../engine/EngineServices.ts'
import { UnitOfWork } from '../../../pipeline/journal/UnitOfWork.ts'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { Pipeline } from '../../../pipeline/Pipeline.ts'
import { topicNames, topicSpecs } from '../../../pipeline/topics.ts'
import { Arena } from '../../../product/arena/Arena.ts'
import { DuelService } from '../../../product/duel/DuelService.ts'
import { RecordDb } from '../../../record/RecordDb.ts'
import { Catalog } from '../../../sql/Catalog.ts'
import { TestClock } from '../../helpers/callEvents.ts'
import { testDecision, testOutcome } from '../../helpers/ledgerRecords.ts'
import { withDelivery } from '../../helpers/serving/delivery.ts'
import { jsonCaller, withServer } from '../../helpers/serving/server.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const A = '0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'
const B = '0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'
const HOUR = 3_600_000
const T0 = Date.UTC(2026, 6, 1)

const dataDir = await makeTempDir(t, 'svc-bounded-duel-')
await Catalog.apply(dataDir)
const names = topicNames()
const log = await EmbeddedLog.open(join(dataDir, 'log'))
await log.ensureTopics(topicSpecs(names, 3))
const runner = await EngineRunner.start({ log, dataDir: null, cadence: false })
// Thirty clocks an hour apart for A, one a day later for B (its resolution is what pushes A's grades out).
const decisions = Array.from({ length: 30 }, (_, i) => testDecision(i + 1, { created_at: new Date(T0 + i * 60_000).toISOString(), horizon_end: new Date(T0 + (i + 1) * HOUR).toISOString() }))
const late = testDecision(99, { created_at: new Date(T0).toISOString(), horizon_end: new Date(T0 + 30 * HOUR + 24 * HOUR).toISOString() })
const clock = new TestClock(T0 + 30 * 60_000)
const ledger = runner.engine.ledger
for (const d of [...decisions, late]) ledger.stageDecision(d)
await ledger.flush()
const pipeline = await Pipeline.start({ dataDir, log, names, partitions: 3, startSink: false, sink: { maxAgeMs: 0, checkIntervalMs: 0 } })
const db = await RecordDb.open(dataDir)
const duel = await DuelService.open({
  log,
  ledger: { decision: (id) => ledger.index.decision(id), clockNow: () => clock.now(), resolutions: ledger.bus.resolutions },
  now: () => clock.now(),
  wallNow: () => clock.now(),
  hotWindowMs: 2 * HOUR,
  cold: db,
  evictable: () => pipeline.sealing,
})
const { delivery } = await withDelivery(t, clock, undefined, { log })
t.teardown(async () => {
  await delivery.close()
  await duel.close()
  await pipeline.close()
  db.close()
  await runner.close()
  await log.close()
})
const server = await withServer(t, { services: { clock, ledger: new EngineServices(runner), duel, delivery } })
const call = jsonCaller(server)

let payments = 0
async function lock(payer: string, decisionId: string, side: 'obtains' | 'not', p: number | null) {
  const unit = new UnitOfWork()
  const locked = await duel.lockCall({ payer, decision_id: decisionId, call: side, call_probability: p }, { kind: 'paid', payment_id: `pay-${++payments}`, rail: 'credits', payer }, unit)
  if (!locked) throw new Error(`no call on ${decisionId}`)
  await unit.commit()
  return locked.call_id
}
async function resolve(d: (typeof decisions)[number], outcome: 'obtains' | 'not' | 'unresolvable') {
  ledger.stageOutcome(testOutcome(d, { outcome }))
  await ledger.flush()
}
/** Every page of A's history (limit 7), and A's scoreboard, as served. */
async function bodies() {
  const pages: unknown[] = []
  let cursor: string | null = null
  do {
    const r = await call('GET', `/v1/decisions/mine?payer=${A}&limit=7${cursor ? `&cursor=${cursor}` : ''}`)
    if (r.status !== 200) throw new Error(JSON.stringify(r.body))
    pages.push(r.body.data)
    cursor = r.body.data.next_cursor
  } while (cursor !== null)
  const board = await call('GET', `/v1/calls?payer=${A}`)
  const boards = await call('GET', '/v1/scoreboard?window=30d')
  return { pages, board: board.body.data, boards: boards.body.data }
}

t.test('graded calls past the window leave memory; the routes answer the same bodies from Parquet', async (t) => {
  const ids: string[] = []
  for (const [i, d] of decisions.entries()) ids.push(await lock(A, d.decision_id, i % 3 ? 'obtains' : 'not', i % 2 ? 0.7 : null))
  await lock(B, late.decision_id, 'obtains', null)
  // Every clock of A resolves at its horizon (one unresolvable: a void call), all inside a 30-hour span.
  for (const [i, d] of decisions.entries()) await resolve(d, i === 4 ? 'unresolvable' : i % 2 ? 'obtains' : 'not')
  t.equal(duel.book.size.graded + duel.book.size.void, 31 - 1, "A's calls graded (B's clock is open)")
  const hot = await bodies()
  const hotCall = await duel.callById(ids[0]!)
  t.equal(hot.board.recent.length, 20, 'the recent calls are the newest 20')
  t.equal(hot.pages.length, 5, '30 calls in pages of 7')

  // B's clock resolves a day later: A's grades are now past the two-hour window. The sink has not started yet.
  await resolve(late, 'obtains')
  duel.book.sweep()
  t.equal(duel.book.size.hot, 31, 'nothing leaves memory while the sink is not sealing')
  pipeline.startSink()
  await pipeline.drain(names.calls)
  await pipeline.drain(names.outcomes)
  duel.book.sweep()
  t.equal(duel.book.size.hot, 1, "A's 30 graded calls left memory; B's newest stays (inside the window)")
  t.same(duel.book.size, { calls: 31, graded: 30, void: 1, hot: 1 }, 'the totals count every call')

  const reads = duel.cold!.reads
  const cold = await bodies()
  t.ok(duel.cold!.reads > reads, 'the pages were read from Parquet')
  t.same(cold, hot, 'the same bodies: every history page, the scoreboard (recent calls included), the public board')
  t.same(await duel.callById(ids[0]!), hotCall, 'a call by id, read back from Parquet')
  t.equal(await duel.callById('call_' + '0'.repeat(32)), null, 'an unknown id is null')

  // An Arena rebuilding from nothing folds every call and grade, not only the hot ones the channels replay.
  const arena = await Arena.open({ log, clock, partitions: 3, events: duel.events })
  const stats = arena.profile(A).stats
  await arena.idle()
  await arena.close()
  t.match(stats, { calls: hot.board.calls, graded: hot.board.graded, correct: hot.board.correct }, "the rebuilt Arena counts A's evicted calls")

  // A cold read beside a hot one (the same route, the same page size): figures for README, Measured.
  const time = async (payer: string, n: number) => {
    const start = performance.now()
    for (let i = 0; i < n; i++) await call('GET', `/v1/decisions/mine?payer=${payer}&limit=20`)
    return (performance.now() - start) / n
  }
  await time(B, 5)
  await time(A, 5)
  t.comment(`GET /v1/decisions/mine limit 20: hot ${(await time(B, 50)).toFixed(2)} ms, cold ${(await time(A, 50)).toFixed(2)} ms per read`)
})
