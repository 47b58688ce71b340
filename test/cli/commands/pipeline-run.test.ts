/**
 * `svc pipeline run` runs the engine over the replay (issue 14: it wrote no decisions or outcomes): after a run on a
 * small tape (the recorded OKX SOL-USDT-SWAP 1 h bars and 8 h funding, 2026-03-01 → 2026-07-15, 3,560 records,
 * trained up to 2026-06-20 as test/engine/EngineRunner.test.ts does), the catalog's decisions and outcomes views hold
 * rows, some decisions are claims (not only refusals), and every outcome names a decision of the run.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { withCatalog } from '../../../sql/Catalog.ts'
import { solTicksBetween, writeTape } from '../../helpers/engine.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const SVC = new URL('../../../bin/svc.js', import.meta.url).pathname

function pipelineRun(tape: string, dataDir: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [SVC, 'pipeline', 'run', '--tape', tape, '--data-dir', dataDir], {
    env: { ...process.env, SVC_LOG: 'embedded', SVC_TRAIN_UNTIL: '2026-06-20T00:00:00Z', LOG_LEVEL: 'warn', SVC_PROGRESS_MS: '600000' },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stderr })))
}

async function counts(dataDir: string) {
  return withCatalog(dataDir, { readOnly: true }, async (c) => {
    const [d] = await c.query(`SELECT count(*) AS n, count(DISTINCT decision_id) AS ids, count(*) FILTER (WHERE action <> 'refuse') AS claims FROM decisions`)
    const [o] = await c.query(`SELECT count(*) AS n, count(DISTINCT decision_id) AS ids FROM outcomes`)
    const [orphans] = await c.query(`SELECT count(*) AS n FROM outcomes o WHERE NOT EXISTS (SELECT 1 FROM decisions d WHERE d.decision_id = o.decision_id)`)
    return { decisions: Number(d!.n), decisionIds: Number(d!.ids), claims: Number(d!.claims), outcomes: Number(o!.n), outcomeIds: Number(o!.ids), orphans: Number(orphans!.n) }
  })
}

t.test('svc pipeline run writes the engine’s decisions and outcomes to Parquet and the catalog', async (t) => {
  const dir = await makeTempDir(t, 'svc-pipeline-run-')
  const tape = await writeTape(join(dir, 'sol.ndjson'), await solTicksBetween('2026-03-01', '2026-07-15'))
  const dataDir = join(dir, 'data')

  const first = await pipelineRun(tape, dataDir)
  t.equal(first.code, 0, `exit 0:\n${first.stderr.slice(-2000)}`)
  const a = await counts(dataDir)
  t.ok(a.decisions > 0, `decisions view holds rows (${a.decisions})`)
  t.ok(a.claims > 0, `some are claims, not only refusals (${a.claims})`)
  t.ok(a.outcomes > 0, `outcomes view holds rows (${a.outcomes})`)
  t.equal(a.decisionIds, a.decisions, 'no decision twice')
  t.equal(a.outcomeIds, a.outcomes, 'no outcome twice')
  t.equal(a.orphans, 0, 'every outcome resolves a decision of the run')
  t.match(first.stderr, new RegExp(`engine: ${a.decisions} decisions, ${a.outcomes} outcomes in the ledger`), 'the summary names what the engine wrote')

  // A rerun over a folder whose log the sink already holds finishes at once (it used to wait 120 s for a sink that
  // had nothing to consume, then fail) and writes nothing twice.
  const again = await pipelineRun(tape, dataDir)
  t.equal(again.code, 0, `rerun exit 0:\n${again.stderr.slice(-2000)}`)
  t.same(await counts(dataDir), a, 'the rerun adds no row')
})
