import t from 'tap'
import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { tickLine } from '../../../ingest/Tick.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { mergeTicks, syntheticBars, syntheticFunding } from '../../helpers/ticks.ts'

const run = promisify(execFile)
const SVC = new URL('../../../bin/svc.js', import.meta.url).pathname

t.test('svc eval runs end to end on a generated tape and prints every column', async (t) => {
  const dir = await makeTempDir(t)
  const tape = join(dir, 'gen.ndjson')
  const ticks = mergeTicks(syntheticBars('BTC', 60 * 24), syntheticBars('ETH', 60 * 24, 5), syntheticFunding('BTC', 60 * 24))
  await writeFile(tape, ticks.map(tickLine).join('\n') + '\n')

  const { stdout, stderr } = await run('node', [SVC, 'eval', '--tape', tape], { env: { ...process.env, CI: 'true' } })
  for (const col of ['question', 'split', 'train n', 'decisions', 'resolved', 'unresolvable', 'refused', 'Brier', 'base-rate Brier', 'BSS', 'BSS 95% CI', 'ECE']) {
    t.match(stdout, `| ${col}`, `column ${col}`)
  }
  for (const q of ['S01_market_regime', 'S03_trend_continuation', 'S04_drawdown_risk', 'S05_volatility_expansion', 'S06_funding_anomaly', 'S07_funding_persistence']) {
    t.match(stdout, q, `row ${q}`)
  }
  t.match(stdout, /multi-class Brier/, 'says how S01 is scored')
  t.match(stdout, /K = 10 equal-width bins, \(a,b\]/, 'states ECE bins and convention')
  t.match(stdout, /seed 1, 2000 resamples/, 'states the bootstrap')
  t.match(stderr, /eval: \d+\/\d+ ticks/, 'progress on stderr')

  const json = await run('node', [SVC, 'eval', '--tape', tape, '--questions', 'S05_volatility_expansion,S06_funding_anomaly', '--split', '2025-02-10', '--json'], { env: { ...process.env, CI: 'true' } })
  const doc = JSON.parse(json.stdout) as { evaluations: Array<Record<string, unknown>>; policy_checksum: string }
  t.equal(doc.evaluations.length, 2)
  for (const e of doc.evaluations) {
    t.equal(e.split, '2025-02-10T00:00:00.000Z')
    t.equal(e.split_rule, 'given (--split)')
    for (const k of ['n_decisions', 'n_resolved', 'n_unresolvable', 'n_refused', 'brier', 'base_brier', 'bss', 'bss_ci', 'ece']) t.ok(k in e, `${e.question_id}: ${k}`)
    t.ok((e.n_resolved as number) > 0, `${e.question_id} scored decisions`)
  }
  t.match(doc.policy_checksum, /^[0-9a-f]{64}$/)
})

t.test('svc eval refuses bad arguments with usage', async (t) => {
  await t.rejects(run('node', [SVC, 'eval']), { code: 2 })
  await t.rejects(run('node', [SVC, 'eval', '--tape', 'x', '--split', 'yesterday']), { code: 2 })
})
