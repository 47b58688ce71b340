/**
 * The release jobs on a small generated tape (two assets, 60 days of hourly bars and BTC funding), real Parquet and
 * DuckDB: build → evaluate (rebuild from the dataset hash, holdout folds, the four gates) → sealed rows, and the
 * reproducibility the spec asks for: evaluating a release twice from its dataset hash gives the same checksum.
 */
import t from 'tap'
import { appendFile, copyFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { jcsSha256 } from '../../../common/hash.ts'
import { tickLine } from '../../../ingest/Tick.ts'
import { buildRelease, rebuildBody, runEvaluation } from '../../../record/releases/ReleaseJobs.ts'
import { readDataset } from '../../../record/releases/dataset.ts'
import { EVIDENCE_PER_FAMILY, GATES, mapCheck } from '../../../record/releases/evaluate.ts'
import { ReleaseStore } from '../../../record/releases/ReleaseStore.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { mergeTicks, syntheticBars, syntheticFunding } from '../../helpers/ticks.ts'

const FAMILIES = ['S01_market_regime', 'S05_volatility_expansion', 'S06_funding_anomaly']
const NOW = () => Date.parse('2026-01-01T00:00:00Z')

async function fixture(t: { teardown(fn: () => unknown): void }) {
  const dir = await makeTempDir(t, 'svc-release-')
  const tape = join(dir, 'gen.ndjson')
  await writeFile(tape, mergeTicks(syntheticBars('BTC', 60 * 24), syntheticBars('ETH', 60 * 24, 5), syntheticFunding('BTC', 60 * 24)).map(tickLine).join('\n') + '\n')
  const store = await ReleaseStore.open(join(dir, 'data'))
  t.teardown(() => store.close())
  return { dir, tape, store }
}

t.test('build seals a candidate; evaluate rebuilds it from the dataset hash, scores the holdout and seals four gates', async (t) => {
  const { tape, store } = await fixture(t)
  const built = await buildRelease(store, { version: '1.0.0', parent: null, method: 'v1', dataset: { tapes: [tape], window_end: '2025-02-10T00:00:00Z' }, families: FAMILIES, now: NOW })
  t.equal(built.checksum, jcsSha256(built.body), 'checksum = JCS SHA-256 of the body')
  t.same(Object.keys(built.body.families), FAMILIES)
  t.match(built.body, { version: '1.0.0', parent: null, method: { name: 'v1', jev_version: 'jev-1.0.0' }, code: { jev_version: 'jev-1.0.0', policy_version: 'policy-2.0.0', fit_code: /^[0-9a-f]{64}$/ } })
  t.match(built.body.dataset, { window_start: '2025-01-01T01:00:00.000Z', window_end: '2025-02-10T00:00:00.000Z', dataset_hash: built.manifest.dataset_hash })
  t.ok(built.body.dataset.n_realized > 0)
  t.equal((await readDataset(store.dataDir, built.manifest.dataset_hash.slice(0, 10))).dataset_hash, built.manifest.dataset_hash, 'the manifest is found from a hash prefix')

  // Reproducibility: two rebuilds from the dataset hash give the sealed checksum.
  const sealed = (await store.body('1.0.0'))!
  const r1 = await rebuildBody(store, sealed.body)
  const r2 = await rebuildBody(store, sealed.body)
  t.equal(r1.checksum, sealed.checksum, 'rebuilding from the dataset hash reproduces the checksum')
  t.equal(r2.checksum, r1.checksum, 'twice')

  const ev = await runEvaluation(store, '1.0.0', { now: NOW })
  t.equal(ev.sealed, true)
  t.same(Object.keys(ev.gates), [...GATES])
  t.equal(ev.gates.reproducible.met, true)
  t.match(ev.gates.reproducible.measured, { sealed_checksum: sealed.checksum, rebuilt_checksum: sealed.checksum })
  t.equal(ev.gates.evidence.met, true, 'hundreds of realized holdout decisions')
  t.same(ev.evaluation.incumbent, { version: null, kind: 'base_rate' }, 'no parent: compared with the base rate')
  t.equal(ev.evaluation.folds.length, 4, 'four time-ordered folds')
  for (let i = 1; i < 4; i++) t.equal(ev.evaluation.folds[i]!.window_start, ev.evaluation.folds[i - 1]!.window_end, 'folds are consecutive')
  t.equal(ev.evaluation.folds.reduce((a, f) => a + f.n_realized, 0), ev.evaluation.holdout.n_realized, 'the folds partition the holdout')
  t.ok(ev.evaluation.holdout.window_start === '2025-02-10T00:00:00.000Z')
  t.ok(ev.evaluation.delta_brier_ci![0] <= ev.evaluation.delta_brier! && ev.evaluation.delta_brier! <= ev.evaluation.delta_brier_ci![1], 'the estimate sits in its interval')
  const imp = ev.gates.improvement
  t.equal(imp.met, ev.evaluation.delta_brier! < 0 && ev.evaluation.delta_brier_ci![1] < 0, 'improvement = interval strictly below zero')
  for (const id of FAMILIES) {
    const f = ev.families[id]!
    t.ok(f.n_realized >= EVIDENCE_PER_FAMILY, `${id}: realized holdout decisions`)
    t.equal(f.refusals.replay_identical, true, `${id}: the sealed body replays its own answers`)
    t.equal(f.refusals.input_rule_flips, null, `${id}: no incumbent release to compare refusals with`)
  }
  const nr = ev.gates.no_regression
  t.equal(nr.met, Object.values(ev.families).every((f) => f.regression_met), 'no_regression = every family')
  if (!nr.met) t.match(nr.reason, /S0\d_/, 'a failed no_regression names the family')

  const detail = ev.detail
  t.equal(detail.status, GATES.every((g) => ev.gates[g].met) ? 'candidate' : 'rejected', 'status derived from the sealed gates')
  t.equal(detail.checksum, sealed.checksum)
  t.same(detail.evaluation, JSON.parse(JSON.stringify(ev.evaluation)), 'the sealed evaluation reads back as measured')

  // Evaluating again re-measures from the dataset hash: same checksum, same verdicts, nothing written.
  const again = await runEvaluation(store, '1.0.0', { now: () => NOW() + 1000 })
  t.equal(again.sealed, false)
  t.same(again.remeasured, { identical: true, differences: [] }, 'the second evaluation measures exactly what was sealed')
  t.equal(again.rebuilt_checksum, ev.rebuilt_checksum, 'evaluating twice from the dataset hash gives the same checksum')
  t.equal((await store.detail('1.0.0'))!.measured_at, '2026-01-01T00:00:00.000Z', 'the sealed rows are unchanged')

  // The next version against it: same dataset (by hash), v2 method, parent 1.0.0.
  const v2 = await buildRelease(store, { version: '2.0.0', parent: '1.0.0', method: 'v2', dataset: { hash: built.manifest.dataset_hash }, families: FAMILIES, now: NOW })
  t.equal(v2.body.parent, '1.0.0')
  t.equal(v2.body.dataset.dataset_hash, built.body.dataset.dataset_hash)
  const ev2 = await runEvaluation(store, '2.0.0', { now: NOW })
  t.same(ev2.evaluation.incumbent, { version: '1.0.0', kind: 'release' })
  for (const id of FAMILIES) {
    const f = ev2.families[id]!
    t.type(f.refusals.input_rule_flips, 'number', `${id}: refusals compared decision by decision with the incumbent`)
    t.equal(f.incumbent.brier, ev.families[id]!.candidate.brier, `${id}: the incumbent's score is 1.0.0's own holdout score`)
  }
  await t.rejects(buildRelease(store, { version: '2.0.0', parent: '1.0.0', method: 'v2', dataset: { hash: built.manifest.dataset_hash }, families: FAMILIES }), { code: 'RELEASE_EXISTS' })
})

t.test('evidence fails on a short holdout, with the reason; a tape that changed is refused', async (t) => {
  const { dir, tape, store } = await fixture(t)
  const copy = join(dir, 'copy.ndjson')
  await copyFile(tape, copy)
  const built = await buildRelease(store, { version: '0.1.0', parent: null, method: 'v1', dataset: { tapes: [copy], window_end: '2025-02-20T00:00:00Z', holdout_end: '2025-02-21T06:00:00Z' }, families: ['S05_volatility_expansion', 'S06_funding_anomaly'], now: NOW })
  const ev = await runEvaluation(store, '0.1.0', { now: NOW })
  t.equal(ev.gates.evidence.met, false)
  t.match(ev.gates.evidence.reason, /S05_volatility_expansion: \d+ realized < 30/)
  t.match(ev.gates.evidence.reason, /realized in total < 100/)
  t.equal((await store.detail('0.1.0'))!.status, 'rejected')
  await t.rejects(store.activate('0.1.0', '2026-01-02T00:00:00.000Z'), { code: 'GATES_NOT_MET' })

  await appendFile(copy, '\n')
  await t.rejects(rebuildBody(store, built.body), { code: 'DATASET_CHANGED' }, 'the dataset hash pins the bytes')
})

t.test('the calibration map check: monotone and slope-bounded', async (t) => {
  const v1 = (calibration: Array<{ x_min: number; x_max: number; p: number }>) => ({ question_id: 'S05_volatility_expansion' as const, version: 'x', trained_on: { window_start: '', window_end: '', n: 0, positives: null }, params: { status: 'ok', method: 'logit-l2-irls+isotonic-pav', calibration } })
  t.match(mapCheck(v1([{ x_min: 0.1, x_max: 0.2, p: 0.1 }, { x_min: 0.2, x_max: 0.4, p: 0.2 }])), { kind: 'isotonic', monotone: true, met: true })
  t.match(mapCheck(v1([{ x_min: 0.1, x_max: 0.2, p: 0.2 }, { x_min: 0.2, x_max: 0.4, p: 0.19 }])), { monotone: false, met: false })
  t.match(mapCheck(v1([{ x_min: 0.1, x_max: 0.2, p: 0.05 }, { x_min: 0.2, x_max: 0.21, p: 0.6 }])), { monotone: true, met: false }, 'a near-step map is not slope-bounded')
  const platt = (beta: number[], sd: number, sale_gate: unknown = null) => ({ question_id: 'S05_volatility_expansion' as const, version: 'x', trained_on: { window_start: '', window_end: '', n: 0, positives: null }, params: { status: 'ok', method: 'logit-l2-walkforward+platt', platt: { mean: [0], sd: [sd], beta }, sale_gate } })
  t.match(mapCheck(platt([0, 1], 1)), { kind: 'platt', max_slope: 1, met: true })
  t.match(mapCheck(platt([0, -1], 1)), { monotone: false, met: false })
  t.match(mapCheck(platt([0, 3], 0.5)), { max_slope: 6, met: false })
  t.match(mapCheck(platt([0, -1], 1, { status: 'blocked' })), { kind: 'none', met: true }, 'a family its sale gate blocked serves no map')
})
