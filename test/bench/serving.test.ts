/**
 * The serving bench reads wrk's report. The texts below are wrk 4.1.0 (Debian 4.1.0-3+b2) output captured on this
 * project's machine: one against a server answering 404 (non-2xx counted), one with socket errors and sub-ms
 * percentiles in microseconds.
 */
import t from 'tap'
import { medianRow, parseWrk } from '../../bench/serving.ts'
import { splitEnvelope, startFloorServer } from '../../bench/serving-floor.ts'

const NOT_FOUND = `Running 1s test @ http://127.0.0.1:9933/nope
  1 threads and 4 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.54ms    2.22ms  19.83ms   86.15%
    Req/Sec     1.76k   286.45     2.18k    80.00%
  Latency Distribution
     50%    1.66ms
     75%    3.57ms
     90%    5.21ms
     99%   10.66ms
  1748 requests in 1.00s, 0.87MB read
  Non-2xx or 3xx responses: 1748
Requests/sec:   1745.29
Transfer/sec:      0.87MB
`

const FAST = `Running 5s test @ http://127.0.0.1:51813/
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   282.40us  401.15us  12.02ms   97.71%
    Req/Sec   123.50k    10.11k  131.73k    90.00%
  Latency Distribution
     50%  219.00us
     75%  255.00us
     90%  319.00us
     99%    1.16ms
  614554 requests in 5.00s, 60.37MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
Requests/sec: 122978.91
Transfer/sec:     12.07MB
`

t.test('parseWrk reads req/s, p50/p99 in ms, non-2xx and socket errors', async (t) => {
  t.same(parseWrk(NOT_FOUND), { reqPerSec: 1745.29, p50Ms: 1.66, p99Ms: 10.66, non2xx: 1748, errors: 0 })
  const fast = parseWrk(FAST)
  t.equal(fast.reqPerSec, 122978.91)
  t.equal(fast.p50Ms, 0.219, 'microseconds become milliseconds')
  t.equal(fast.p99Ms, 1.16)
  t.equal(fast.non2xx, 0)
  t.equal(fast.errors, 3, 'read 2 + timeout 1')
})

t.test('parseWrk refuses output without a latency distribution', async (t) => {
  t.throws(() => parseWrk('Requests/sec: 10\n'), /unparsed wrk output/)
})

t.test('medianRow takes each figure’s median over the pairs and sums the failures', async (t) => {
  const pair = (reqPerSec: number, p99Ms: number, bare: number, non2xx = 0) =>
    ({ name: 'decision read', path: '/v1/decisions/x', reqPerSec, p50Ms: p99Ms / 3, p99Ms, non2xx, errors: 0, ratio: reqPerSec / bare, bareReqPerSec: bare })
  const m = medianRow([pair(70_000, 2.4, 140_000), pair(80_000, 1.9, 112_000, 2), pair(75_000, 2.1, 130_000)])
  t.equal(m.reqPerSec, 75_000)
  t.equal(m.p99Ms, 2.1)
  t.equal(m.ratio, 75_000 / 130_000, 'the median ratio, not the ratio of medians')
  t.equal(m.bareReqPerSec, 130_000)
  t.equal(m.non2xx, 2)
  const even = medianRow([pair(60_000, 2, 100_000), pair(80_000, 4, 100_000)])
  t.equal(even.reqPerSec, 70_000, 'an even count averages the middle two')
  t.equal(even.p99Ms, 3)
})

t.test('the floor server re-sends a recorded answer with a fresh request id and timestamp per response', async (t) => {
  const body = JSON.stringify({ data: { decision_id: 'd-1', probability: 0.25 }, meta: { request_id: 'recorded', timestamp: '2026-01-01T00:00:00.000Z', state: 'ok', pricing: null } })
  const headers = new Headers({ 'ratelimit-limit': '60', 'ratelimit-remaining': '59', 'ratelimit-reset': '1' })
  const floor = await startFloorServer({ body, headers })
  t.teardown(() => floor.close())
  const seen = new Set<string>()
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`http://127.0.0.1:${floor.port}/v1/decisions/d-1?x=1`)
    const got = (await res.json()) as { data: unknown; meta: { request_id: string; timestamp: string; state: string; pricing: null } }
    t.same(got.data, { decision_id: 'd-1', probability: 0.25 }, 'the recorded data, byte for byte')
    t.equal(got.meta.state, 'ok')
    t.equal(got.meta.pricing, null)
    t.not(got.meta.request_id, 'recorded')
    t.ok(Number.isFinite(Date.parse(got.meta.timestamp)))
    t.equal(res.headers.get('x-request-id'), got.meta.request_id, 'header and body carry the same id')
    t.equal(res.headers.get('ratelimit-remaining'), '59')
    t.equal(res.headers.get('content-type'), 'application/json; charset=utf-8')
    seen.add(got.meta.request_id)
  }
  t.equal(seen.size, 3, 'every response has its own id')
})

t.test('splitEnvelope refuses a body that is not a success envelope', async (t) => {
  t.throws(() => splitEnvelope('{"error":{"code":"INTERNAL"}}'), /not a success envelope/)
})
