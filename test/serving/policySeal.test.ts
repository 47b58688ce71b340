/** GET /v1/policy/seal: the checksum is recomputable from the body (spec: "the checksum is recomputable from the body"). */
import t from 'tap'
import { jcsSha256 } from '../../common/hash.ts'
import { activePolicy } from '../../models/policy/rulesets.ts'
import { withServer } from '../helpers/serving/server.ts'

t.test('the served seal is the active ruleset, and its checksum is JCS SHA-256 of the body', async (t) => {
  const s = await withServer(t)
  const res = await fetch(`${s.url}/v1/policy/seal`)
  t.equal(res.status, 200)
  const body = (await res.json()) as { data: { version: string; checksum: string; ruleset: unknown }; meta: { pricing: unknown } }
  t.equal(body.data.version, activePolicy().seal().version)
  t.equal(body.data.checksum, jcsSha256(body.data.ruleset), 'recomputed from the served body')
  t.equal(body.meta.pricing, null, 'free route')
})
