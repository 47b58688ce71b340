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
  for (const col of ['question', 'split', 'train n', 'decisions', 'resolved', 'unresolvable', 'refused', 'Brier', 'base-rate Brier', 'BSS', 'BSS 95% CI', '1-feature BSS', 'previous BSS', 'ECE', 'distinct p', 'sale gate']) {
    t.match(stdout, `| ${col}`, `column ${col}`)
  }
  for (const q of ['S01_market_regime', 'S03_trend_continuation', 'S04_drawdown_risk', 'S05_volatility_expansion', 'S06_funding_anomaly', 'S07_funding_persistence']) {
    t.match(stdout, q, `row ${q}`)
  }
  t.match(stdout, /multi-class Brier/, 'says how S01 is scored')
  t.match(stdout, /K = 10 adaptive \(equal-count\) bins, \(a,b\]/, 'states ECE bins and convention')
  t.match(stdout, /seed 1, 2000 resamples\) over whole UTC days/, 'states the day-block bootstrap')
  t.match(stderr, /eval: \d+\/\d+ ticks/, 'progress on stderr')

  const json = await run('node', [SVC, 'eval', '--tape', tape, '--questions', 'S05_volatility_expansion,S06_funding_anomaly', '--split', '2025-02-10', '--json'], { env: { ...process.env, CI: 'true' } })
  const doc = JSON.parse(json.stdout) as { evaluations: Array<Record<string, unknown>>; policy_checksum: string }
  t.equal(doc.evaluations.length, 2)
  for (const e of doc.evaluations) {
    t.equal(e.split, '2025-02-10T00:00:00.000Z')
    t.equal(e.split_rule, 'given (--split)')
    for (const k of ['n_decisions', 'n_resolved', 'n_unresolvable', 'n_refused', 'brier', 'base_brier', 'bss', 'bss_ci', 'ece', 'murphy', 'distinct_probabilities', 'per_value', 'predicted_classes', 'one_feature', 'corp', 'previous', 'sale_gate']) t.ok(k in e, `${e.question_id}: ${k}`)
    t.match(e.previous, { fitted_version: /^logit-l2-irls\+isotonic-pav@/, bss: Number }, 'the live (v2) models are scored beside v1')
    t.match(e.sale_gate, { status: /^(sold|blocked)$/, n_scored: Number }, `${e.question_id}: the sale gate's verdict on the training span`)
    t.match(e.corp, { dsc: Number, unc: Number, diagram: { level: 0.9, points: Array } }, `${e.question_id}: CORP decomposition and diagram`)
    t.match(e.one_feature, { feature: String, brier: Number }, `${e.question_id}: the one-feature baseline is scored on the same decisions`)
    t.equal((e.ece as { strategy: string }).strategy, 'quantile')
    t.ok((e.bss_ci as { blocks: number }).blocks > 0, 'the interval says how many day blocks it resampled')
    t.ok((e.n_resolved as number) > 0, `${e.question_id} scored decisions`)
  }
  t.match(doc.policy_checksum, /^[0-9a-f]{64}$/)
})

t.test('svc eval --train/--test fits on one tape and scores on another', async (t) => {
  const dir = await makeTempDir(t)
  const train = join(dir, 'train.ndjson')
  const test = join(dir, 'test.ndjson')
  await writeFile(train, mergeTicks(syntheticBars('BTC', 45 * 24), syntheticBars('ETH', 45 * 24, 5)).map(tickLine).join('\n') + '\n')
  await writeFile(test, mergeTicks(syntheticBars('BTC', 30 * 24, 11), syntheticBars('ETH', 30 * 24, 13)).map(tickLine).join('\n') + '\n')
  const { stdout } = await run('node', [SVC, 'eval', '--train', train, '--test', test, '--questions', 'S05_volatility_expansion,S01_market_regime', '--json'], { env: { ...process.env, CI: 'true' } })
  const doc = JSON.parse(stdout) as { train_tapes: string[]; test_tapes: string[]; train_dataset: { decisions: Record<string, number> }; test_dataset: { decisions: Record<string, number> }; evaluations: Array<Record<string, any>> }
  t.same(doc.train_tapes, [train])
  t.same(doc.test_tapes, [test])
  for (const e of doc.evaluations) {
    t.equal(e.split_rule, 'train tapes → test tapes')
    t.ok(e.train.resolved > 0 && e.train.resolved <= doc.train_dataset.decisions[e.question_id]!, `${e.question_id}: fitted on the training tape's decisions only`)
    t.ok(e.n_decisions <= doc.test_dataset.decisions[e.question_id]!, `${e.question_id}: every scored decision is a test-tape decision`)
    t.ok(e.n_resolved > 0, `${e.question_id}: scored`)
  }
  const s01 = doc.evaluations.find((e) => e.question_id === 'S01_market_regime')!
  t.equal(Object.values(s01.predicted_classes as Record<string, number>).reduce((a, b) => a + b, 0), s01.n_resolved, 'S01 predicted-class counts cover every scored decision')
  t.equal(doc.evaluations.find((e) => e.question_id === 'S05_volatility_expansion')!.predicted_classes, null, 'binary questions have none')
})

t.test('svc eval scores the live v2 models beside v1; --models v1 scores v1 alone', async (t) => {
  const dir = await makeTempDir(t)
  const tape = join(dir, 'gen.ndjson')
  await writeFile(tape, mergeTicks(syntheticBars('BTC', 90 * 24), syntheticBars('ETH', 90 * 24, 5)).map(tickLine).join('\n') + '\n')
  const { stdout } = await run('node', [SVC, 'eval', '--tape', tape, '--questions', 'S05_volatility_expansion,S01_market_regime', '--json'], { env: { ...process.env, CI: 'true' } })
  const doc = JSON.parse(stdout) as { models: string; jev_version: string; policy_version: string; evaluations: Array<Record<string, any>> }
  t.equal(doc.models, 'v2')
  t.equal(doc.jev_version, 'jev-2.0.0')
  t.equal(doc.policy_version, 'policy-3.0.0', 'the ruleset in force')
  const s05 = doc.evaluations.find((e) => e.question_id === 'S05_volatility_expansion')!
  t.match(s05.train.fitted_version, /^logit-l2-walkforward\+platt@/, 'S05 fitted by the v2 method')
  t.ok(s05.distinct_probabilities > 20, `continuous: ${s05.distinct_probabilities} distinct probabilities`)
  t.match(s05.previous, { fitted_version: /^logit-l2-irls\+isotonic-pav@/, brier: Number, bss: Number }, 'v1 scored beside it as the previous version')
  const s01 = doc.evaluations.find((e) => e.question_id === 'S01_market_regime')!
  t.match(s01.train.fitted_version, /^softmax-l2-walkforward\+temperature@/, 'S01 fitted by its v2 method')
  t.match(s01.previous, { fitted_version: /^grid3x3-dirichlet\+shrink@/, bss: Number }, 'S01 v1 scored beside it')
  t.match(s01.sale_gate, { status: /^(sold|blocked)$/ })

  const v1 = JSON.parse((await run('node', [SVC, 'eval', '--tape', tape, '--questions', 'S05_volatility_expansion', '--models', 'v1', '--json'], { env: { ...process.env, CI: 'true' } })).stdout) as { models: string; evaluations: Array<Record<string, any>> }
  t.equal(v1.models, 'v1')
  t.match(v1.evaluations[0]!.train.fitted_version, /^logit-l2-irls\+isotonic-pav@/)
  t.equal(v1.evaluations[0]!.previous, null, 'v1 is the first version: nothing before it')
  t.equal(v1.evaluations[0]!.sale_gate, null, 'v1 has no sale gate')
})

t.test('svc eval refuses bad arguments with usage', async (t) => {
  await t.rejects(run('node', [SVC, 'eval']), { code: 2 })
  await t.rejects(run('node', [SVC, 'eval', '--tape', 'x', '--split', 'yesterday']), { code: 2 })
  await t.rejects(run('node', [SVC, 'eval', '--train', 'x']), { code: 2 }, '--train without --test')
  await t.rejects(run('node', [SVC, 'eval', '--train', 'x', '--test', 'y', '--split', '2025-01-01']), { code: 2 }, '--split with --train/--test')
  await t.rejects(run('node', [SVC, 'eval', '--tape', 'x', '--models', 'v3']), { code: 2 }, 'unknown --models')
})
