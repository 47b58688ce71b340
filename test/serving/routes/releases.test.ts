/**
 * GET /v1/intelligence/releases and /v1/intelligence/releases/{version} over real HTTP, on a store of real Parquet:
 * the feed with its status filter (400 VALIDATION on anything else), the proof bundle with the body verbatim, and the
 * typed 404 RELEASE_NOT_FOUND.
 */
import t from 'tap'
import { jcsSha256 } from '../../../common/hash.ts'
import type { ReleaseBody } from '../../../record/releases/body.ts'
import { GATES, type Evaluation, type GateName, type GateVerdict } from '../../../record/releases/evaluate.ts'
import { ReleaseStore } from '../../../record/releases/ReleaseStore.ts'
import { withServer } from '../../helpers/serving/server.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const HASH = 'd'.repeat(64)
const body = (version: string, parent: string | null): ReleaseBody => ({
  version,
  parent,
  method: { name: 'v2', jev_version: 'jev-2.0.0' },
  families: {},
  dataset: { window_start: '2025-01-01T00:00:00.000Z', window_end: '2025-02-01T00:00:00.000Z', n_realized: 321, dataset_hash: HASH },
  code: { jev_version: 'jev-2.0.0', policy_version: 'policy-3.0.0', policy_checksum: 'e'.repeat(64), fit_code: 'f'.repeat(64) },
})
const evaluation: Evaluation = {
  folds: [{ fold: 1, window_start: '2025-02-01T00:00:00.000Z', window_end: '2025-02-10T00:00:00.000Z', n_realized: 150, delta_brier: -0.01, delta_logloss: -0.02 }],
  incumbent: { version: null, kind: 'base_rate' },
  delta_brier: -0.01,
  delta_brier_ci: [-0.015, -0.005],
  delta_logloss: -0.02,
  delta_logloss_ci: [-0.03, -0.01],
  per_family: { S05_volatility_expansion: { n_realized: 150, delta_brier: -0.01, delta_brier_ci: [-0.015, -0.005], delta_logloss: -0.02 } },
  holdout: { window_start: '2025-02-01T00:00:00.000Z', window_end: null, n_decisions: 160, n_realized: 150 },
  bootstrap: { method: 'percentile, whole UTC days', seed: 1, resamples: 2000, level: 0.95 },
  candidate_checksum: HASH,
}
const gates = (failing: GateName | null) =>
  Object.fromEntries(GATES.map((g) => [g, g === failing ? { met: false, measured: { n: 1 }, reason: 'below the floor' } : { met: true, measured: { n: 1 } }])) as unknown as Record<GateName, GateVerdict>

t.test('the release feed, its status filter and the proof bundle', async (t) => {
  const dir = await makeTempDir(t)
  const store = await ReleaseStore.open(dir)
  t.teardown(() => store.close())
  await store.putRelease(body('1.0.0', null), '2025-03-01T00:00:00.000Z')
  await store.putEvaluation('1.0.0', { evaluation, families: { S05_volatility_expansion: { question_id: 'S05_volatility_expansion' } as never } }, gates(null), '2025-03-02T00:00:00.000Z')
  await store.activate('1.0.0', '2025-03-03T00:00:00.000Z')
  await store.putRelease(body('2.0.0', '1.0.0'), '2025-03-04T00:00:00.000Z')
  await store.putEvaluation('2.0.0', { evaluation, families: {} }, gates('evidence'), '2025-03-05T00:00:00.000Z')
  await store.putRelease(body('2.1.0', '1.0.0'), '2025-03-06T00:00:00.000Z')
  const s = await withServer(t, { services: { releases: store } })

  const all = await fetch(`${s.url}/v1/intelligence/releases`)
  t.equal(all.status, 200)
  const feed = (await all.json()) as { data: { releases: Array<Record<string, any>> }; meta: { pricing: unknown } }
  t.equal(feed.meta.pricing, null, 'free')
  t.same(feed.data.releases.map((r) => [r.version, r.status]), [['1.0.0', 'active'], ['2.0.0', 'rejected'], ['2.1.0', 'candidate']])
  const first = feed.data.releases[0]!
  t.same(Object.keys(first).sort(), ['activated_at', 'created_at', 'dataset', 'evaluation', 'gate_verdicts', 'gates', 'measured_at', 'parent', 'status', 'version'], 'exactly the spec feed item fields')
  t.same(first.dataset, { window_start: '2025-01-01T00:00:00.000Z', window_end: '2025-02-01T00:00:00.000Z', n_realized: 321, dataset_hash: HASH })
  t.same(Object.keys(first.evaluation).filter((k) => ['folds', 'incumbent', 'delta_brier', 'delta_brier_ci', 'delta_logloss', 'delta_logloss_ci', 'per_family'].includes(k)).length, 7)
  t.same(Object.keys(first.gate_verdicts), ['evidence', 'improvement', 'no_regression', 'reproducible'])
  t.same(first.gates[0], { gate: 'evidence', met: true, measured: { n: 1 } })
  t.equal(first.activated_at, '2025-03-03T00:00:00.000Z')
  const rejected = feed.data.releases[1]!
  t.same(rejected.gates[0], { gate: 'evidence', met: false, measured: { n: 1 }, reason: 'below the floor' }, "the failing gate's reason is published")
  const candidate = feed.data.releases[2]!
  t.match(candidate, { evaluation: null, gates: [], gate_verdicts: null, measured_at: null }, 'not yet evaluated')

  for (const status of ['candidate', 'active', 'superseded', 'rejected']) {
    const res = await fetch(`${s.url}/v1/intelligence/releases?status=${status}`)
    t.equal(res.status, 200)
    const rs = ((await res.json()) as { data: { releases: Array<{ status: string }> } }).data.releases
    t.ok(rs.every((r) => r.status === status), `status=${status}`)
  }
  const bad = await fetch(`${s.url}/v1/intelligence/releases?status=pending`)
  t.equal(bad.status, 400)
  const badBody = (await bad.json()) as { error: { code: string; detail: { reason: string } } }
  t.equal(badBody.error.code, 'VALIDATION')

  const one = await fetch(`${s.url}/v1/intelligence/releases/1.0.0`)
  t.equal(one.status, 200)
  const bundle = ((await one.json()) as { data: Record<string, any> }).data
  t.equal(bundle.checksum, jcsSha256(bundle.body), 'the checksum is recomputable from the body served verbatim')
  t.same(bundle.body, body('1.0.0', null))
  t.same(bundle.families, { S05_volatility_expansion: { question_id: 'S05_volatility_expansion' } }, 'per-family details')
  t.equal(bundle.status, 'active')

  const missing = await fetch(`${s.url}/v1/intelligence/releases/9.9.9`)
  t.equal(missing.status, 404)
  const err = (await missing.json()) as { error: { code: string; detail: { reason: string; value: string } } }
  t.equal(err.error.code, 'RELEASE_NOT_FOUND')
  t.equal(err.error.detail.reason, 'RELEASE_NOT_FOUND')
})

t.test('without a release store the routes answer 503 SERVICE_UNWIRED naming the part', async (t) => {
  const s = await withServer(t)
  const res = await fetch(`${s.url}/v1/intelligence/releases`)
  t.equal(res.status, 503)
  const body = (await res.json()) as { error: { detail: { reason: string; missing: unknown } } }
  t.equal(body.error.detail.reason, 'SERVICE_UNWIRED')
  t.match(JSON.stringify(body.error.detail.missing), /releases/)
})
