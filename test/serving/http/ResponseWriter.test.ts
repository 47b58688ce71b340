import t from 'tap'
import { headerBlockBytes } from '../../../serving/http/ResponseWriter.ts'

/** What uWS writes for writeHeader(k1, block): `k1: block\r\n`; the block must equal the remaining lines joined. */
function joined(headers: Record<string, string>): string {
  return Object.entries(headers)
    .map(([k, v], i) => (i === 0 ? v : `${k}: ${v}`))
    .join('\r\n')
}

t.test('the header block is the later header lines after the first value, byte for byte', async (t) => {
  const cases: Array<Record<string, string>> = [
    { 'x-request-id': 'abc' },
    { 'x-request-id': 'abc', 'ratelimit-limit': '120', 'content-type': 'application/json; charset=utf-8' },
    { location: '/docs', 'x-request-id': '' },
    { 'x-note': 'café ☕', 'x-request-id': 'r1' },
    { 'x-request-id': 'r2', 'x-note': 'naïve' },
  ]
  for (const h of cases) {
    t.equal(headerBlockBytes(h).toString('utf8'), joined(h), JSON.stringify(h))
  }
  t.equal(headerBlockBytes({}).length, 0)
})
