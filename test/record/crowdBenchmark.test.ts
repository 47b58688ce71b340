/**
 * benchmarks.crowd in the intelligence snapshot (spec: "The crowd benchmark is the mean over graded player calls per
 * question with at least 10 calls, scored on the same resolved pairs; below its floor the line is absent"). The figure
 * comes from the duel (test/product/duel/DuelService.test.ts checks its value and floor) through RecordJobOptions.crowd;
 * here: a snapshot taken while the source has no line has none, one taken with a line stores it, and both read back
 * from the real Parquet and DuckDB with the hash chain still verifying.
 */
import t from 'tap'
import { writeSyntheticLedger } from '../../bench/syntheticLedger.ts'
import type { QuestionModel } from '../../models/QuestionModel.ts'
import { MeasuredRecord } from '../../record/MeasuredRecord.ts'
import { RecordDb } from '../../record/RecordDb.ts'
import { RecordJob, type CrowdLine } from '../../record/RecordJob.ts'
import { makeTempDir } from '../helpers/tmp.ts'

const QUESTIONS = ['S03_synthetic', 'S05_synthetic'].map((id) => ({ id, label: id, answer: 'probability', sold: true, horizonMs: 4 * 3_600_000 }) as unknown as QuestionModel)

t.test('the crowd line: absent below its floor, stored and chained when the duel has one', async (t) => {
  const dataDir = await makeTempDir(t)
  const now = () => Date.parse('2026-11-24T00:00:00Z')
  const db = await RecordDb.open(dataDir)
  t.teardown(() => db.close())
  let crowd: CrowdLine | null = null
  const job = await RecordJob.open(db, { questions: QUESTIONS, now, crowd: () => crowd })
  t.teardown(() => job.close())
  const record = new MeasuredRecord(db, { questions: QUESTIONS, now })

  await writeSyntheticLedger(dataDir, { decisions: 300, perFile: 300 })
  const first = await job.run()
  t.notOk('crowd' in first.snapshot!.benchmarks, 'no crowd line below the floor')

  crowd = { brier: 0.21, n: 12, house_brier: 0.18 }
  await writeSyntheticLedger(dataDir, { decisions: 300, perFile: 300, firstRow: 300 })
  const second = await job.run()
  t.same(second.snapshot!.benchmarks.crowd, { brier: 0.21, n: 12, house_brier: 0.18 })

  record.invalidate()
  const read = await record.intelligence()
  t.same(read.snapshot!.benchmarks, second.snapshot!.benchmarks, 'read back from intelligence_snapshots as taken')
  t.equal(read.chain_verified, true, 'the chain covers the crowd line')
  const curve = await db.query('SELECT seq, crowd_brier, crowd_n FROM intelligence_snapshots ORDER BY seq')
  t.same(curve.map((r) => [Number(r.seq), r.crowd_brier, r.crowd_n === null ? null : Number(r.crowd_n)]), [[1, null, null], [2, 0.21, 12]], 'columns quants can query')
})
