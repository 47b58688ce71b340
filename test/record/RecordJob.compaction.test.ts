/**
 * The measured record's batch job across compactions of the ledger files it reads (pipeline/sinks/ParquetCompactor.ts):
 * the compactor merges only runs of files the job has counted (an outcome file waiting for its decision splits the
 * run), the job treats a merged file of counted files as counted, skips small files a merged one covers (a crash
 * between rename and delete), and counts every decision and pair exactly once, as the catalog's views do.
 */
import t from 'tap'
import { cp, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { writeSyntheticLedger } from '../../bench/syntheticLedger.ts'
import type { QuestionModel } from '../../models/QuestionModel.ts'
import { ParquetCompactor } from '../../pipeline/sinks/ParquetCompactor.ts'
import { parseSealedFileName } from '../../pipeline/sinks/parquetLayout.ts'
import { RecordDb } from '../../record/RecordDb.ts'
import { RecordJob } from '../../record/RecordJob.ts'
import { makeTempDir } from '../helpers/tmp.ts'

const DAY = 86_400_000
const START = Date.parse('2026-01-01T00:00:00Z')
const QUESTIONS = ['S03_synthetic', 'S04_synthetic', 'S05_synthetic', 'S06_synthetic', 'S07_synthetic'].map(
  (id) => ({ id, label: id, answer: 'probability', sold: true, horizonMs: 4 * 3_600_000 }) as unknown as QuestionModel,
)

/**
 * 100 rows (offsets 100k .. 100k+99) into asset=BTC of the day `day` days after START: the synthetic writer puts
 * row group g (of 100) under asset g mod 3 and day START + floor(g / 3), so the start is shifted to land there.
 */
function block(dataDir: string, k: number, day: number, only?: 'decisions' | 'outcomes') {
  return writeSyntheticLedger(dataDir, { decisions: 100, perFile: 100, firstRow: 100 * k, startMs: START + (day - Math.floor(k / 3)) * DAY, ...(only ? { only } : {}) })
}

async function sealed(dataDir: string, table: string, date: string): Promise<string[]> {
  return (await readdir(join(dataDir, 'parquet', table, `date=${date}`, 'asset=BTC'))).filter((n) => parseSealedFileName(n)).sort()
}

/** Decisions and realized claim pairs straight from the catalog views (which skip covered files): the independent count. */
async function viewCounts(db: RecordDb): Promise<{ decisions: number; realized: number }> {
  const [d] = await db.query('SELECT count(*) AS n FROM decisions')
  const [p] = await db.query(`SELECT count(*) AS n FROM outcomes o JOIN decisions d USING (decision_id) WHERE d.action <> 'refuse' AND o.outcome <> 'unresolvable'`)
  return { decisions: Number(d!.n), realized: Number(p!.n) }
}

t.test('the record job counts each row once across compactions', async (t) => {
  const dataDir = await makeTempDir(t)
  const now = () => Date.parse('2026-11-24T00:00:00Z')
  // Closed day 2026-01-01: blocks 0, 6, 9 (k multiples of 3 land on asset BTC) with decisions and outcomes, block 3 with
  // outcomes only (its decisions are sealed later, elsewhere); the newest day 2026-01-02: block 12.
  for (const k of [0, 6, 9]) await block(dataDir, k, 0)
  await block(dataDir, 3, 0, 'outcomes')
  await block(dataDir, 12, 1)
  const db = await RecordDb.open(dataDir)
  t.teardown(() => db.close())
  const job = await RecordJob.open(db, { questions: QUESTIONS, now })
  t.teardown(() => job.close())
  const run1 = await job.run()
  t.equal(run1.held_files, 1, 'the outcome file without sealed decisions waits')

  const compactor = await ParquetCompactor.open({ dataDir, dirs: ['decisions', 'outcomes'], now, consumed: () => RecordJob.consumedFiles(db) })
  t.teardown(() => compactor.close())
  const c1 = await compactor.compact()
  t.equal(c1.held, 1, 'the held outcome file is not merged')
  t.same(await sealed(dataDir, 'decisions', '2026-01-01'), ['p0-000000000000-000000000999.parquet'], 'decisions of the closed day: one file named by its offsets')
  t.same(
    await sealed(dataDir, 'outcomes', '2026-01-01'),
    ['p0-000000000000-000000000099.parquet', 'p0-000000000300-000000000399.parquet', 'p0-000000000600-000000000999.parquet'],
    'outcomes: the held file splits the run; the counted run after it is merged, the single file before it stays',
  )
  t.equal((await sealed(dataDir, 'decisions', '2026-01-02')).length, 1, 'the newest day is left alone')
  t.equal((await job.run()).idle, true, 'merged files of counted files are counted: nothing new')

  // The held outcomes' decisions arrive on another day: the next run pairs them, and only them.
  await block(dataDir, 3, 2, 'decisions')
  const run2 = await job.run()
  t.equal(run2.decision_files, 1)
  t.equal(run2.outcome_files, 1)
  const counts = await viewCounts(db)
  t.equal(counts.decisions, 500, 'the views: 500 decisions')
  t.equal(run2.snapshot!.evidence.n_decisions, counts.decisions, 'the job counted each decision once')
  t.equal(run2.snapshot!.evidence.n_realized, counts.realized, `and each realized pair once (${counts.realized})`)

  // Now every outcome file of the closed day is counted: one file. A crash between its rename and the deletions leaves
  // the small files beside it; the job skips them.
  const outcomesDir = join(dataDir, 'parquet', 'outcomes', 'date=2026-01-01', 'asset=BTC')
  const backup = join(dataDir, 'backup')
  await cp(outcomesDir, backup, { recursive: true })
  const c2 = await compactor.compact()
  t.equal(c2.replaced, 3)
  t.same(await sealed(dataDir, 'outcomes', '2026-01-01'), ['p0-000000000000-000000000999.parquet'])
  await cp(backup, outcomesDir, { recursive: true })
  t.equal((await job.run()).idle, true, 'covered small files beside the merged one: nothing new')
  t.same(await viewCounts(db), counts, 'and the views count each row once')

  // A fresh job loads its totals from the record's tables and sees nothing new either.
  await job.close()
  const reopened = await RecordJob.open(db, { questions: QUESTIONS, now })
  t.teardown(() => reopened.close())
  t.equal((await reopened.run()).idle, true)
  t.equal(reopened.snapshot!.evidence.n_realized, counts.realized)
})
