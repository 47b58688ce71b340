/**
 * `svc record build` / `svc record show` as an operator runs them: a process per call, a synthetic resolved ledger in
 * the sink's Parquet layout, the job's lock against a second writer.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { writeSyntheticLedger } from '../../../bench/syntheticLedger.ts'
import { RecordDb } from '../../../record/RecordDb.ts'
import { RecordJob } from '../../../record/RecordJob.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const run = promisify(execFile)
const SVC = new URL('../../../bin/svc.js', import.meta.url).pathname
const env = { ...process.env, CI: 'true', NODE_ENV: 'test' }

t.test('svc record build: one incremental run; a rerun writes nothing; show prints the verified snapshot', async (t) => {
  const dataDir = await makeTempDir(t)
  await writeSyntheticLedger(dataDir, { decisions: 600, perFile: 200 })
  const first = await run('node', [SVC, 'record', 'build', '--data-dir', dataDir, '--json'], { env })
  const summary = JSON.parse(first.stdout) as { run_id: number; outcome_files: number; snapshot: { evidence: { n_decisions: number; n_realized: number } } }
  t.equal(summary.run_id, 1)
  t.equal(summary.outcome_files, 3)
  t.equal(summary.snapshot.evidence.n_decisions, 600)
  const again = await run('node', [SVC, 'record', 'build', '--data-dir', dataDir], { env })
  t.match(again.stdout, /record: nothing new/, 'a rerun over the same data writes nothing')
  const shown = JSON.parse((await run('node', [SVC, 'record', 'show', '--data-dir', dataDir], { env })).stdout) as { snapshot: { seq: number }; chain_verified: boolean }
  t.equal(shown.snapshot.seq, 1)
  t.equal(shown.chain_verified, true)

  // While another process holds the record tables (a running service), build refuses with a one-line RECORD_LOCKED.
  const db = await RecordDb.open(dataDir)
  const job = await RecordJob.open(db)
  t.teardown(async () => {
    await job.close()
    db.close()
  })
  const locked = await run('node', [SVC, 'record', 'build', '--data-dir', dataDir], { env }).then(
    () => null,
    (err: { code: number; stderr: string }) => err,
  )
  t.ok(locked, 'refused')
  t.match(locked!.stderr, /RECORD_LOCKED/)
  // A hint that helps (issue 33 item 7): who holds it, and what to do; Kafka shares an event log, never these files.
  t.match(locked!.stderr, new RegExp(`locked by live process ${process.pid} since \\d{4}-`), 'names the holding process and since when')
  t.match(locked!.stderr, /a running `svc start` runs this job every SVC_RECORD_INTERVAL_S.*reading needs no lock: `svc record show`/)
  t.notMatch(locked!.stderr, /kafka/i, 'no advice that would not help')
  t.notMatch(locked!.stderr, /\n\s+at /, 'no stack trace')
})
