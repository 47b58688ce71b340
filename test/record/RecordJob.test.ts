/**
 * The measured record's batch job over real Parquet (a synthetic resolved ledger in the sink's layout) and real
 * DuckDB: every figure equals a direct recomputation over the pairs; runs are incremental (a rerun writes nothing, a
 * new run reads only new files); an outcome waits for its decision; a crash mid-run counts nothing; a tampered snapshot
 * breaks the chain; the ladder latches a crossing behind its notice window; the routes serve it over real HTTP.
 */
import t from 'tap'
import { cp, readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api'
import { writeSyntheticLedger } from '../../bench/syntheticLedger.ts'
import { decisionIdOf } from '../../engine/identity.ts'
import { brierScore, murphyDecomposition } from '../../models/verification/brier.ts'
import { calibrationReport } from '../../models/verification/calibrationReport.ts'
import { logLossOf } from '../../models/verification/bucketSums.ts'
import { INDEX_VERSION } from '../../models/verification/dii.ts'
import { wilsonInterval } from '../../models/verification/wilson.ts'
import type { QuestionModel } from '../../models/QuestionModel.ts'
import { sqlString } from '../../pipeline/sinks/parquetFile.ts'
import { LADDER_NOTICE_MS } from '../../record/ladder.ts'
import { MeasuredRecord } from '../../record/MeasuredRecord.ts'
import { RecordDb } from '../../record/RecordDb.ts'
import { RecordJob } from '../../record/RecordJob.ts'
import { RecordError } from '../../record/RecordError.ts'
import { CALIBRATION_INCREMENTS, INTELLIGENCE_SNAPSHOTS, recordFileName, recordTableRoot } from '../../sql/recordTables.ts'
import { withServer } from '../helpers/serving/server.ts'
import { makeTempDir } from '../helpers/tmp.ts'
import type { TapTest } from '../helpers/logs.ts'

const QIDS = ['S03_synthetic', 'S04_synthetic', 'S05_synthetic', 'S06_synthetic', 'S07_synthetic']
const QUESTIONS = QIDS.map((id) => ({ id, label: id, answer: 'probability', sold: true, horizonMs: 4 * 3_600_000 }) as unknown as QuestionModel)

/** The pairs straight from the files with the catalog's own first-record views: an independent path. */
async function directPairs(db: RecordDb, qid?: string): Promise<{ p: number; y: number }[]> {
  const rows = await db.query(`
    SELECT d.probability AS p, (o.outcome = 'obtains')::INTEGER AS y
    FROM outcomes o JOIN decisions d USING (decision_id)
    WHERE d.action <> 'refuse' AND o.outcome <> 'unresolvable' ${qid ? `AND o.question_id = '${qid}'` : ''}
    ORDER BY o.decision_id`)
  return rows.map((r) => ({ p: Number(r.p), y: Number(r.y) }))
}

function close(t: TapTest, got: number | null, want: number, what: string, tol = 1e-12): void {
  t.ok(got !== null && Math.abs(got - want) <= tol * Math.max(1, Math.abs(want)), `${what}: ${got} vs ${want}`)
}

async function withDuck(fn: (conn: DuckDBConnection) => Promise<void>): Promise<void> {
  const duck = await DuckDBInstance.create(':memory:')
  const conn = await duck.connect()
  try {
    await fn(conn)
  } finally {
    conn.closeSync()
    duck.closeSync()
  }
}

async function files(dir: string): Promise<string[]> {
  return (await readdir(dir).catch(() => [])).filter((n) => n.endsWith('.parquet')).sort()
}

t.test('the batch job: figures equal a direct recomputation; incremental; atomic; chained; latched', async (t) => {
  const dataDir = await makeTempDir(t)
  let clock = Date.parse('2026-11-24T00:00:00Z')
  const now = () => clock
  const db = await RecordDb.open(dataDir)
  t.teardown(() => db.close())
  let job = await RecordJob.open(db, { questions: QUESTIONS, now })
  t.teardown(() => job.close())
  const record = new MeasuredRecord(db, { questions: QUESTIONS, now })

  // Empty: nothing to do, nothing written; the snapshot is null before the first one (not an error).
  t.equal((await job.run()).idle, true, 'an empty ledger: idle')
  t.same(await record.intelligence(), { snapshot: null, chain_verified: true, ladder: { rung: 0, effective_at: null, realized_outcomes: 0, gate_values: { published_bands: 0, release_skill_ci_above_zero: 0 }, pending: null } })
  await t.rejects(RecordJob.open(db, { questions: QUESTIONS }), RecordError, 'a second writer is refused (RECORD_LOCKED)')

  // 1. The first batch: 2,400 decisions in 8 files of each table.
  await writeSyntheticLedger(dataDir, { decisions: 2400, perFile: 300 })
  const run1 = await job.run()
  record.invalidate() // as the schedule does when a run commits
  t.equal(run1.run_id, 1)
  t.equal(run1.outcome_files, 8)
  t.equal(run1.decision_files, 8)
  const pairs1 = await directPairs(db)
  t.equal(run1.snapshot!.evidence.n_realized, pairs1.length, `n_realized = ${pairs1.length} realized claims`)
  t.equal(run1.snapshot!.evidence.n_decisions, 2400)
  t.equal(run1.snapshot!.evidence.n_refused, 120, 'every 20th decision refused')
  const m1 = murphyDecomposition(pairs1)!
  const c1 = run1.snapshot!.components
  close(t, c1.brier, brierScore(pairs1)!, 'Brier')
  close(t, c1.reliability, m1.rel, 'REL')
  close(t, c1.resolution, m1.res, 'RES')
  close(t, c1.uncertainty, m1.unc, 'UNC')
  close(t, c1.skill_vs_reference, 1 - m1.brier / m1.unc, 'BSS = 1 − BS/UNC')
  close(t, c1.logloss, pairs1.reduce((s, x) => s + logLossOf(x.p, x.y), 0) / pairs1.length, 'log loss')
  const unresolvable = Number((await db.query(`SELECT count(*) AS n FROM outcomes o JOIN decisions d USING (decision_id) WHERE d.action <> 'refuse' AND o.outcome = 'unresolvable'`))[0]!.n)
  t.equal(run1.snapshot!.evidence.n_unresolvable, unresolvable)
  close(t, c1.resolution_rate, pairs1.length / (pairs1.length + unresolvable), 'resolution_rate')
  t.ok(run1.snapshot!.composite !== null && run1.snapshot!.insufficient_note === null, 'above the floor of 100: a composite')
  t.equal(run1.snapshot!.prev_hash, null, 'the first snapshot starts the chain')

  // Calibration and priors per question, from the tables, against the pairs.
  for (const qid of QIDS.slice(0, 2)) {
    const pairs = await directPairs(db, qid)
    const cal = await record.calibration({ question_id: qid, subject: null })
    const want = calibrationReport(pairs)
    t.same(cal.buckets.map((b) => [b.n, b.published]), want.buckets.map((b) => [b.n, b.published]), `${qid}: band counts and floors`)
    cal.buckets.forEach((b, i) => {
      if (b.published) close(t, b.realized_frequency, want.buckets[i]!.realized_frequency!, `${qid} band ${i} frequency`)
    })
    const prior = (await record.priors()).find((p) => p.question_id === qid)!.prior!
    const k = pairs.filter((x) => x.y === 1).length
    t.equal(prior.n, pairs.length)
    t.equal(prior.successes, k)
    const ci = wilsonInterval(k, pairs.length)!
    t.same(prior.interval, [ci.lower, ci.upper], `${qid}: Wilson interval`)
  }
  const bySubject = await record.calibration({ question_id: QIDS[0]!, subject: 'ETH' })
  t.ok(bySubject.n > 0 && bySubject.n < (await record.calibration({ question_id: QIDS[0]!, subject: null })).n, 'a subject (asset) narrows the report')

  // The ladder: over 1,000 realized outcomes with a published band, rung 1 is crossed and pending for the notice window.
  t.equal(run1.crossing?.rung, 1, 'rung 1 crossed')
  let ladder = (await record.intelligence()).ladder
  t.equal(ladder.rung, 0, 'not effective before the notice window ends')
  t.equal(ladder.pending?.rung, 1)
  t.equal(ladder.pending?.ms_remaining, LADDER_NOTICE_MS)

  // 2. A rerun over the same files writes nothing.
  const before = await files(recordTableRoot(dataDir, CALIBRATION_INCREMENTS))
  t.equal((await job.run()).idle, true, 'rerun: idle')
  t.same(await files(recordTableRoot(dataDir, CALIBRATION_INCREMENTS)), before, 'rerun: no new file')

  // 3. New data: the next run reads only the new files, and the totals cover everything.
  await writeSyntheticLedger(dataDir, { decisions: 900, perFile: 300, firstRow: 2400 })
  clock += LADDER_NOTICE_MS + 1
  const run2 = await job.run()
  t.equal(run2.outcome_files, 3, 'only the three new outcome files were read')
  const pairs2 = await directPairs(db)
  t.equal(run2.snapshot!.evidence.n_realized, pairs2.length)
  close(t, run2.snapshot!.components.brier, brierScore(pairs2)!, 'Brier after the second run')
  t.equal(run2.snapshot!.prev_hash, run1.snapshot!.row_hash, 'the second snapshot links to the first')
  t.equal(run2.snapshot!.rung, 1, 'the rung is effective after the notice window')
  record.invalidate()
  ladder = (await record.intelligence()).ladder
  t.equal(ladder.rung, 1)
  t.equal(ladder.pending, null)

  // 4. An outcome file whose decisions are not sealed yet waits, whole.
  await writeSyntheticLedger(dataDir, { decisions: 300, perFile: 300, firstRow: 3300, only: 'outcomes' })
  const held = await job.run()
  t.equal(held.held_files, 1, 'the outcome file waits for its decisions')
  t.equal(held.idle, true, 'nothing counted while it waits')
  await writeSyntheticLedger(dataDir, { decisions: 300, perFile: 300, firstRow: 3300, only: 'decisions' })
  const run3 = await job.run()
  t.equal(run3.held_files, 0)
  t.equal(run3.snapshot!.evidence.n_realized, (await directPairs(db)).length, 'counted once its decisions are sealed')

  // 5. A crash mid-run: a run's increments written, its record_runs row not. Nothing of it counts, and the next run
  // (same run id) rewrites it.
  await writeSyntheticLedger(dataDir, { decisions: 300, perFile: 300, firstRow: 3600 })
  // A conflicting second record of decision 3650 (a later offset, another probability): the first one counts, as the
  // catalog's `decisions` view keeps it (this takes the job's deduplicating path).
  await withDuck(async (conn) => {
    const [dir] = (await readdir(join(dataDir, 'parquet', 'decisions'), { recursive: true })).filter((f) => f.endsWith('p0-000000003600-000000003899.parquet'))
    const source = join(dataDir, 'parquet', 'decisions', dir!)
    const target = join(dataDir, 'parquet', 'decisions', dir!.replace('p0-000000003600-000000003899', 'p0-000099999999-000099999999'))
    await conn.run(`COPY (SELECT * REPLACE (99999999::BIGINT AS log_offset, 0.999::DOUBLE AS probability) FROM read_parquet(${sqlString(source)}) WHERE log_offset = 3650) TO ${sqlString(target)} (FORMAT parquet)`)
  })
  const orphan = join(recordTableRoot(dataDir, CALIBRATION_INCREMENTS), recordFileName(CALIBRATION_INCREMENTS, 4))
  await withDuck(async (conn) => {
    const run1File = join(recordTableRoot(dataDir, CALIBRATION_INCREMENTS), recordFileName(CALIBRATION_INCREMENTS, 1))
    await conn.run(`COPY (SELECT * REPLACE (4::BIGINT AS run_id) FROM read_parquet(${sqlString(run1File)})) TO ${sqlString(orphan)} (FORMAT parquet)`)
  })
  await job.close()
  job = await RecordJob.open(db, { questions: QUESTIONS, now })
  t.equal(job.snapshot!.seq, 3, 'reopened at the last committed run')
  const run4 = await job.run()
  t.equal(run4.run_id, 4, 'the orphaned run id is reused')
  const pairs4 = await directPairs(db)
  t.equal(run4.snapshot!.evidence.n_realized, pairs4.length, 'the orphan was not counted')
  close(t, run4.snapshot!.components.brier, brierScore(pairs4)!, 'the conflicting record did not replace the first')
  record.invalidate()
  close(t, (await record.intelligence()).snapshot!.components.brier, brierScore(pairs4)!, 'the served snapshot equals the pairs')
  t.equal((await record.intelligence()).chain_verified, true)

  // 6. The curve: one point per snapshot; three distinct n give a fit.
  const curve = await record.curve({ window: 'all', from: null, index_version: INDEX_VERSION })
  t.equal(curve.points.length, 4)
  t.same((await record.curve({ window: 'all', from: null, index_version: '1.0.0' })).points, [], 'series never mix: no 1.0.0 point on a 1.1.0 record')
  t.same(curve.points.map((p) => p.n_cum), [run1, run2, run3, run4].map((r) => r.snapshot!.evidence.n_realized))
  t.ok(curve.fit === null || (Number.isFinite(curve.fit.b) && curve.note.length > 0), 'fit or a note')
  t.equal((await record.curve({ window: 'all', from: '2030-01-01T00:00:00Z', index_version: INDEX_VERSION })).points.length, 0, 'from filters points')

  // 7. A tampered snapshot in a copy of the data breaks the chain; the curve then refuses (route: 503 STALE_DATA).
  const copy = await makeTempDir(t)
  await cp(join(dataDir, 'parquet'), join(copy, 'parquet'), { recursive: true })
  await rm(join(copy, 'parquet', 'record', 'LOCK'), { force: true })
  const snapFile = join(recordTableRoot(copy, INTELLIGENCE_SNAPSHOTS), recordFileName(INTELLIGENCE_SNAPSHOTS, 2))
  await withDuck(async (conn) => {
    await conn.run(`CREATE TABLE s AS SELECT * FROM read_parquet(${sqlString(snapFile)})`)
    await conn.run('UPDATE s SET brier = brier - 0.01')
    await conn.run(`COPY s TO ${sqlString(snapFile)} (FORMAT parquet)`)
  })
  const tamperedDb = await RecordDb.open(copy)
  t.teardown(() => tamperedDb.close())
  const tampered = new MeasuredRecord(tamperedDb, { questions: QUESTIONS, now })
  t.equal((await tampered.intelligence()).chain_verified, false, 'a tampered row: chain_verified false')
  t.equal((await record.intelligence()).chain_verified, true, 'the original still verifies')

  // 8. The routes over real HTTP.
  const server = await withServer(t, { services: { record, ladder: record } })
  const get = async (path: string) => {
    const res = await fetch(server.url + path)
    return { status: res.status, body: (await res.json()) as { data: any; error?: any } }
  }
  const intel = await get('/v1/intelligence')
  t.equal(intel.status, 200)
  t.equal(intel.body.data.snapshot.row_hash, run4.snapshot!.row_hash)
  t.equal(intel.body.data.chain_verified, true)
  const pricing = await get('/v1/pricing')
  t.same(intel.body.data.ladder, pricing.body.data.ladder, 'the ladder object is identical to the price list\'s')
  t.equal(intel.body.data.ladder.rung, 1)
  const curveRes = await get('/v1/intelligence/curve?window=all')
  t.equal(curveRes.status, 200)
  t.equal(curveRes.body.data.points.length, 4)
  t.equal((await get('/v1/intelligence/curve?index_version=9.9.9')).status, 400, 'an unknown index version is a bad pin')
  t.equal((await get('/v1/intelligence/curve?window=lots')).status, 400)
  const tamperedServer = await withServer(t, { services: { record: tampered } })
  const refused = await fetch(tamperedServer.url + '/v1/intelligence/curve')
  const refusedBody = (await refused.json()) as { error: { code: string; detail: { reason: string } } }
  t.equal(refused.status, 503)
  t.same([refusedBody.error.code, refusedBody.error.detail.reason], ['STALE_DATA', 'CURVE_RESTATED'], 'a restated curve refuses loudly')
})

// The signature and ledger checks of a receipt: test/record/answerKeys/receipts.test.ts.
t.test('POST /v1/verify: the claim checker recomputes the id from the receipt body', async (t) => {
  const server = await withServer(t, {})
  const body = { question_id: 'S05_volatility_expansion', asset: 'BTC', subject: null, input_hash: 'ab'.repeat(32), policy_version: 'policy-3.0.0', probability: 0.31 }
  const id = decisionIdOf(body)
  const post = async (receipt: unknown) => {
    const res = await fetch(server.url + '/v1/verify', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(receipt) })
    return { status: res.status, body: (await res.json()) as any }
  }
  const ok = await post({ poj_id: id, body })
  t.equal(ok.status, 200)
  // Internally consistent, but unsigned (and no ledger here): nothing shows the service said it, so not valid.
  t.same([ok.body.data.valid, ok.body.data.id_ok, ok.body.data.recomputed_id, ok.body.data.claimed_id], [false, true, id, id])
  t.same([ok.body.data.signature, ok.body.data.ledger.status], [null, 'unavailable'])
  const altered = await post({ poj_id: id, body: { ...body, asset: 'ETH' } })
  t.same([altered.body.data.valid, altered.body.data.id_ok], [false, false], 'an altered identity field: the id does not follow')
  t.not(altered.body.data.recomputed_id, id)
  const malformed = await post({ poj_id: id, body: { asset: 'BTC' } })
  t.equal(malformed.status, 400, 'a malformed receipt is 400')
  t.equal(malformed.body.error.code, 'VALIDATION')
  t.equal((await post({ poj_id: 'not-an-id', body })).status, 400)
  const surrogate = await post({ poj_id: id, body: { ...body, asset: '\ud800' } })
  t.equal(surrogate.status, 400, 'a lone surrogate has no canonical JSON: 400, not 500')
})
