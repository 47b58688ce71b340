/**
 * Sealed release rows on real Parquet through real DuckDB: statuses derived at read time, one-shot activation,
 * rollback as a new activation of the parent, append-only files, and the catalog's views binding on an empty folder.
 */
import t from 'tap'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { jcsSha256 } from '../../../common/hash.ts'
import { Catalog, withCatalog } from '../../../sql/Catalog.ts'
import { GATES } from '../../../record/releases/evaluate.ts'
import { ReleaseStore } from '../../../record/releases/ReleaseStore.ts'
import { body, evaluation, gates } from '../../helpers/releaseRows.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

t.test('statuses are derived from the rows at read time; activation is one-shot; rollback activates the parent', async (t) => {
  const dir = await makeTempDir(t)
  const store = await ReleaseStore.open(dir)
  t.teardown(() => store.close())
  t.same(await store.list(), [], 'an empty folder lists nothing')
  t.equal(await store.activeRelease(), null)
  t.same(await store.ladderFacts(), { active_release_major: null, release_skill_ci_above_zero: 0 })

  const { checksum } = await store.putRelease(body('1.0.0', null), '2025-03-01T00:00:00.000Z')
  t.equal(checksum, jcsSha256(body('1.0.0', null)), 'checksum = JCS SHA-256 of the body')
  await t.rejects(store.putRelease(body('1.0.0', null), '2025-03-01T00:00:01.000Z'), { code: 'RELEASE_EXISTS' }, 'a version is never reused')
  t.equal((await store.list())[0]!.status, 'candidate')
  await t.rejects(store.activate('1.0.0', '2025-03-02T00:00:00.000Z'), { code: 'NOT_EVALUATED' }, 'no activation before the gates are sealed')
  await t.rejects(store.activate('9.9.9', '2025-03-02T00:00:00.000Z'), { code: 'RELEASE_NOT_FOUND' })

  await store.putEvaluation('1.0.0', { evaluation: evaluation([-0.02, -0.01]), families: {} }, gates(null), '2025-03-02T00:00:00.000Z')
  await t.rejects(store.putEvaluation('1.0.0', { evaluation: evaluation([-0.02, -0.01]), families: {} }, gates(null), '2025-03-02T00:00:01.000Z'), { code: 'ALREADY_EVALUATED' }, 'gate rows are sealed once')
  const evaluated = (await store.detail('1.0.0'))!
  t.equal(evaluated.status, 'candidate', 'all gates passed: still a candidate until activated')
  t.same(evaluated.gates.map((g) => g.gate), [...GATES], 'four sealed gate rows in the spec order')
  t.same(Object.keys(evaluated.gate_verdicts!), [...GATES])
  t.equal(evaluated.measured_at, '2025-03-02T00:00:00.000Z')
  t.equal(evaluated.body.version, '1.0.0', 'the body verbatim')

  const a1 = await store.activate('1.0.0', '2025-03-03T00:00:00.000Z')
  t.same(a1, { seq: 1, previous: null })
  await t.rejects(store.activate('1.0.0', '2025-03-04T00:00:00.000Z'), { code: 'ALREADY_ACTIVATED' }, 'a second activate refuses')
  t.same(await store.activeRelease(), { version: '1.0.0', activated_at: '2025-03-03T00:00:00.000Z', delta_brier: -0.015, delta_brier_ci: [-0.02, -0.01] })
  t.same(await store.ladderFacts(), { active_release_major: 1, release_skill_ci_above_zero: 1 })
  await t.rejects(store.rollback('2025-03-04T00:00:00.000Z'), { code: 'NO_PARENT' }, '1.0.0 has no parent to roll back to')

  // 2.0.0 passes and is activated; 2.1.0 fails a gate.
  await store.putRelease(body('2.0.0', '1.0.0'), '2025-03-05T00:00:00.000Z')
  await store.putEvaluation('2.0.0', { evaluation: evaluation([0.001, 0.01]), families: {} }, gates(null), '2025-03-05T00:00:01.000Z')
  await store.activate('2.0.0', '2025-03-06T00:00:00.000Z')
  await store.putRelease(body('2.1.0', '2.0.0'), '2025-03-07T00:00:00.000Z')
  await store.putEvaluation('2.1.0', { evaluation: evaluation([-0.01, 0.01]), families: {} }, gates('improvement'), '2025-03-07T00:00:01.000Z')
  await t.rejects(store.activate('2.1.0', '2025-03-08T00:00:00.000Z'), { code: 'GATES_NOT_MET', message: /improvement \(improvement failed\)/ }, 'a failed gate never promotes')
  const statuses = Object.fromEntries((await store.list()).map((r) => [r.version, r.status]))
  t.same(statuses, { '1.0.0': 'superseded', '2.0.0': 'active', '2.1.0': 'rejected' })
  t.same((await store.list({ status: 'rejected' })).map((r) => r.version), ['2.1.0'], 'status filter')
  t.same(await store.ladderFacts(), { active_release_major: 2, release_skill_ci_above_zero: 1 }, '1.0.0 was activated with skill; 2.0.0 is active')

  // Rollback: a new activation of 2.0.0's parent; nothing is rewritten.
  const before = await readdir(join(dir, 'parquet/record/release_activations'))
  const rb = await store.rollback('2025-03-09T00:00:00.000Z')
  t.same(rb, { seq: 3, from: '2.0.0', to: '1.0.0' })
  const after = await readdir(join(dir, 'parquet/record/release_activations'))
  t.same(after.filter((f) => !before.includes(f)).length, 1, 'one new activation file')
  t.ok(before.every((f) => after.includes(f)), 'no activation file removed')
  const rolled = Object.fromEntries((await store.list()).map((r) => [r.version, r.status]))
  t.same(rolled, { '1.0.0': 'active', '2.0.0': 'superseded', '2.1.0': 'rejected' })
  t.equal((await store.activeRelease())!.activated_at, '2025-03-09T00:00:00.000Z', 'active since the rollback')
  await t.rejects(store.activate('2.0.0', '2025-03-10T00:00:00.000Z'), { code: 'ALREADY_ACTIVATED' }, 'rolled-back releases are not re-activated; activation stays one-shot')
  t.equal(await store.detail('3.0.0'), null)
})

t.test('the catalog binds the release views on an empty folder and derives the same statuses', async (t) => {
  const dir = await makeTempDir(t)
  await Catalog.apply(dir)
  const empty = await withCatalog(dir, { readOnly: true }, (c) => c.query('SELECT count(*) AS n FROM releases'))
  t.equal(empty[0]!.n, '0', 'zero rows, no error, on an empty data folder')
  const store = await ReleaseStore.open(dir)
  await store.putRelease(body('1.0.0', null), '2025-03-01T00:00:00.000Z')
  await store.putEvaluation('1.0.0', { evaluation: evaluation([-0.02, -0.01]), families: {} }, gates('evidence'), '2025-03-02T00:00:00.000Z')
  store.close()
  const rows = await withCatalog(dir, { readOnly: true }, (c) => c.query('SELECT version, status FROM releases'))
  t.same(rows, [{ version: '1.0.0', status: 'rejected' }], 'a quant reads the same status from catalog.duckdb')
  const gateRows = await withCatalog(dir, { readOnly: true }, (c) => c.query('SELECT gate, met FROM release_gates ORDER BY gate'))
  t.same(gateRows.map((g) => `${g.gate}:${g.met}`), ['evidence:false', 'improvement:true', 'no_regression:true', 'reproducible:true'])
})
