/** Request ids: UUID v4 shaped, unique within a process and across instances (docs/decisions.md). */
import t from 'tap'
import { RequestIds } from '../../../serving/http/RequestIds.ts'

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

t.test('ids are v4-shaped and distinct', async (t) => {
  const a = new RequestIds()
  const b = new RequestIds()
  const seen = new Set<string>()
  for (let i = 0; i < 20_000; i++) {
    for (const id of [a.next(), b.next()]) {
      if (!UUID_V4.test(id)) t.fail(`not v4-shaped: ${id}`)
      seen.add(id)
    }
  }
  t.equal(seen.size, 40_000, 'no id repeats within or across instances')
  t.not(a.next().slice(0, 24), b.next().slice(0, 24), 'each instance draws its own prefix')
})
