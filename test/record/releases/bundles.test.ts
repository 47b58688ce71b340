/**
 * The published proof bundles (docs/releases/*.json, `svc release show`): each is a valid release detail, its checksum
 * is recomputable from the body it carries verbatim, and its dataset manifest (docs/releases/datasets/) hashes to the
 * body's dataset_hash. Rebuilding a body (the reproducibility gate) fits on 3.6 years of tapes; `svc release evaluate`
 * does that, not this suite.
 */
import t from 'tap'
import { readdir, readFile } from 'node:fs/promises'
import { compile } from '../../../common/validation.ts'
import { jcsSha256 } from '../../../common/hash.ts'
import { datasetHash, type DatasetManifest } from '../../../record/releases/dataset.ts'
import { RELEASE_DETAIL } from '../../../record/releases/schemas.ts'

const DIR = new URL('../../../docs/releases/', import.meta.url).pathname

t.test('every published bundle is a consistent, checksummed release detail', async (t) => {
  const files = (await readdir(DIR)).filter((f) => /^\d+\.\d+\.\d+\.json$/.test(f))
  t.ok(files.length >= 2, 'the first real use: 1.0.0 and 2.0.0')
  const validate = compile(RELEASE_DETAIL)
  for (const f of files) {
    const bundle = JSON.parse(await readFile(DIR + f, 'utf8')) as { version: string; checksum: string; body: { version: string; dataset: { dataset_hash: string } }; gates: Array<{ gate: string; met: boolean; reason?: string }>; gate_verdicts: Record<string, { met: boolean }>; status: string }
    t.ok(validate(bundle), `${f}: ${JSON.stringify(validate.errors)}`)
    t.equal(`${bundle.version}.json`, f)
    t.equal(bundle.checksum, jcsSha256(bundle.body), `${f}: checksum = JCS SHA-256 of the body`)
    t.equal(bundle.body.version, bundle.version)
    for (const g of bundle.gates) t.equal(bundle.gate_verdicts[g.gate]!.met, g.met, `${f}: ${g.gate} verdict = its sealed row`)
    const failed = bundle.gates.filter((g) => !g.met)
    if (failed.length > 0) {
      t.equal(bundle.status, 'rejected', `${f}: a failed gate is published as rejected`)
      for (const g of failed) t.ok(g.reason, `${f}: ${g.gate} publishes its reason`)
    }
    const manifest = JSON.parse(await readFile(`${DIR}datasets/${bundle.body.dataset.dataset_hash}.json`, 'utf8')) as DatasetManifest
    const { dataset_hash: claimed, paths: _paths, ...identity } = manifest
    t.equal(datasetHash(identity), claimed, `${f}: the dataset manifest hashes to the body's dataset_hash`)
  }
})
