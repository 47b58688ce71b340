/**
 * `svc compact` as an operator runs it: a process per call over a synthetic ledger in the sink's layout. Ledger files
 * wait until the record job has counted them; then a closed day's files become one; a second compactor is refused.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { writeSyntheticLedger } from '../../../bench/syntheticLedger.ts'
import { ParquetCompactor } from '../../../pipeline/sinks/ParquetCompactor.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const run = promisify(execFile)
const SVC = new URL('../../../bin/svc.js', import.meta.url).pathname
const env = { ...process.env, CI: 'true', NODE_ENV: 'test' }
const DAY = 86_400_000
const START = Date.parse('2026-01-01T00:00:00Z')

t.test('svc compact: waits for the record job, then merges; refused while another compactor runs', async (t) => {
  const dataDir = await makeTempDir(t)
  // Three files in decisions/date=2026-01-01/asset=BTC (row groups 0, 3, 6 land there with the start shifted back), one
  // on the newest day.
  for (const k of [0, 3, 6]) await writeSyntheticLedger(dataDir, { decisions: 50, perFile: 100, firstRow: 100 * k, startMs: START - (k / 3) * DAY })
  await writeSyntheticLedger(dataDir, { decisions: 50, perFile: 100, firstRow: 900, startMs: START - 2 * DAY })
  const dir = join(dataDir, 'parquet', 'decisions', 'date=2026-01-01', 'asset=BTC')
  t.equal((await readdir(dir)).length, 3)

  const before = JSON.parse((await run('node', [SVC, 'compact', '--data-dir', dataDir, '--json'], { env })).stdout) as { merged: number; held: number }
  t.same([before.merged, before.held], [0, 6], 'nothing the record job has not counted is merged')
  await run('node', [SVC, 'record', 'build', '--data-dir', dataDir], { env })
  const after = await run('node', [SVC, 'compact', '--data-dir', dataDir], { env })
  t.match(after.stdout, /^compact: 6 small files merged into 2 \(300 rows\) in 2 directories/, after.stdout)
  t.same(await readdir(dir), ['p0-000000000000-000000000649.parquet'])

  const holder = await ParquetCompactor.open({ dataDir, dirs: ['decisions'] })
  t.teardown(() => holder.close())
  const locked = await run('node', [SVC, 'compact', '--data-dir', dataDir], { env }).then(() => null, (err: { stderr: string }) => err)
  t.ok(locked, 'refused')
  t.match(locked!.stderr, /SINK_LOCKED/)
  t.match(locked!.stderr, new RegExp(`locked by live process ${process.pid} since .*a running \`svc start\` compacts every SVC_COMPACT_INTERVAL_S`), 'who holds it and what helps')
  t.notMatch(locked!.stderr, /kafka/i, 'no advice that would not help')
  t.notMatch(locked!.stderr, /\n\s+at /, 'no stack trace')
})
