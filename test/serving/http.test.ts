/**
 * HTTP behaviour of the serving core over real sockets: typed 404/405, malformed JSON, body limit, field-naming
 * validation, HEAD, rate limiting with IETF RateLimit headers, INTERNAL without leaks, and graceful drain on close.
 */
import t from 'tap'
import { request as httpRequest } from 'node:http'
import { Ajv } from 'ajv'
import { ROUTES } from '../../serving/routes/registry.ts'
import type { RouteDef } from '../../serving/routes/types.ts'
import { ERROR_ENVELOPE_SCHEMA } from '../../serving/envelope.ts'
import { RateLimiter } from '../../serving/RateLimiter.ts'
import { Server } from '../../serving/Server.ts'
import { Type } from '../../common/schema.ts'
import { memoryServices, PAYER, PENDING_ID, RESOLVED_ID } from '../helpers/serving/memoryServices.ts'
import { PAY_TO, withServer } from '../helpers/serving/server.ts'

const errorEnvelope = new Ajv({ strict: false, allowUnionTypes: true }).compile(ERROR_ENVELOPE_SCHEMA)

async function call(url: string, init: RequestInit = {}) {
  // Bodies here are JSON (a non-JSON content type is its own 415 test below): say so, as fetch would send text/plain.
  const headers = init.body !== undefined ? { 'content-type': 'application/json', ...(init.headers as Record<string, string> | undefined) } : init.headers
  const res = await fetch(url, { redirect: 'manual', ...init, ...(headers ? { headers } : {}) })
  const text = await res.text()
  return { res, text, body: text ? (JSON.parse(text) as any) : null }
}

t.test('unknown path: 404 ROUTE_NOT_FOUND envelope', async (t) => {
  const s = await withServer(t)
  const { res, body } = await call(`${s.url}/v1/nothing-here`)
  t.equal(res.status, 404)
  t.ok(errorEnvelope(body))
  t.equal(body.error.code, 'ROUTE_NOT_FOUND')
  t.equal(body.error.retryable, false)
  t.equal(body.error.retry_after_ms, null)
  t.equal(body.error.request_id, res.headers.get('x-request-id'))
})

t.test('known path, wrong method: 405 with Allow', async (t) => {
  const s = await withServer(t)
  const a = await call(`${s.url}/v1/pricing`, { method: 'POST', body: '{}' })
  t.equal(a.res.status, 405)
  t.equal(a.body.error.code, 'METHOD_NOT_ALLOWED')
  t.equal(a.res.headers.get('allow'), 'GET, HEAD')
  const b = await call(`${s.url}/v1/decisions/${RESOLVED_ID}`, { method: 'DELETE' })
  t.equal(b.res.status, 405, 'templated path too')
  const c = await call(`${s.url}/v1/decisions`, { method: 'GET' })
  t.equal(c.res.status, 405)
  t.equal(c.res.headers.get('allow'), 'POST')
})

t.test('HEAD is served as GET without a body', async (t) => {
  const s = await withServer(t)
  const res = await fetch(`${s.url}/robots.txt`, { method: 'HEAD' })
  t.equal(res.status, 200)
  t.equal(await res.text(), '')
  t.equal(res.headers.get('content-length'), String('User-agent: *\nAllow: /\nDisallow: /v1/admin/\n'.length))
})


t.test('headers are read from a synchronous handler, and after an await (copied before the uWS callback returned)', async (t) => {
  const route = (id: string, path: string, handler: RouteDef['handler']): RouteDef => ({
    id, method: 'GET', path, summary: id, tags: ['test'], pay: { kind: 'free' },
    request: {}, response: { kind: 'envelope', schema: { type: 'object' } }, errors: [], handler,
  })
  const routes = [
    ...ROUTES,
    route('test.sync', '/test/header-now', (ctx) => ({ data: { seen: ctx.headers['x-probe'] ?? null } })),
    route('test.later', '/test/header-later', async (ctx) => {
      await new Promise((r) => setTimeout(r, 20))
      return { data: { seen: ctx.headers['x-probe'] ?? null, repeated: ctx.headers['x-twice'] ?? null } }
    }),
    // Never looks at its headers: answered synchronously without copying them.
    route('test.blind', '/test/header-blind', () => ({ data: { ok: true } })),
  ]
  const s = await withServer(t, { routes })
  const now = await call(`${s.url}/test/header-now`, { headers: { 'x-probe': 'sync' } })
  t.same(now.body.data, { seen: 'sync' })
  const later = await new Promise<any>((resolve, reject) => {
    // node:http keeps repeated headers as sent (fetch would join them before the wire).
    const req = httpRequest(`${s.url}/test/header-later`, { headers: { 'x-probe': 'async', 'x-twice': ['a', 'b'] } }, (res) => {
      let text = ''
      res.on('data', (c: Buffer) => (text += c.toString()))
      res.on('end', () => resolve(JSON.parse(text)))
    })
    req.on('error', reject)
    req.end()
  })
  t.same(later.data, { seen: 'async', repeated: 'a, b' })
  const blind = await call(`${s.url}/test/header-blind`, { headers: { 'x-probe': 'unread' } })
  t.equal(blind.res.status, 200)
  t.same(blind.body.data, { ok: true })
})
t.test('malformed JSON: 400 VALIDATION MALFORMED_JSON', async (t) => {
  const { parts } = memoryServices()
  const s = await withServer(t, { services: parts })
  const { res, body } = await call(`${s.url}/v1/decisions/${RESOLVED_ID}/replay`, { method: 'POST', body: '{"ruleset_version": ', headers: { 'content-type': 'application/json' } })
  t.equal(res.status, 400)
  t.ok(errorEnvelope(body))
  t.equal(body.error.code, 'VALIDATION')
  t.equal(body.error.detail.reason, 'MALFORMED_JSON')
  t.equal(body.error.detail.field, '/body')
  const paid = await call(`${s.url}/v1/decisions`, { method: 'POST', body: 'nope' })
  t.equal(paid.res.status, 400, 'a malformed paid call is 400, never a 402')
})

t.test('a replay pin in the form the service serves (policy-X.Y.Z), or X.Y.Z, or vX.Y.Z, is accepted', async (t) => {
  const { parts } = memoryServices()
  const s = await withServer(t, { services: parts })
  for (const pin of ['policy-1.0.0', '1.0.0', 'v1.0.0']) {
    const { res } = await call(`${s.url}/v1/decisions/${RESOLVED_ID}/replay`, { method: 'POST', body: JSON.stringify({ ruleset_version: pin }), headers: { 'content-type': 'application/json' } })
    t.equal(res.status, 200, pin)
  }
  const bad = await call(`${s.url}/v1/decisions/${RESOLVED_ID}/replay`, { method: 'POST', body: JSON.stringify({ ruleset_version: 'policy-one' }), headers: { 'content-type': 'application/json' } })
  t.equal(bad.res.status, 400, 'a malformed pin is still 400')
})

t.test('refusals that cost nothing come before the payment challenge', async (t) => {
  const { parts } = memoryServices()
  const s = await withServer(t, { services: parts })
  const post = (path: string, body: unknown) => call(`${s.url}${path}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } })
  const unknown = await post('/v1/decisions', { asset: 'BTC', question_id: 'S99_no_such_question' })
  t.equal(unknown.res.status, 400, 'an unknown question is 400, not a 402 challenge')
  t.equal(unknown.body.error.code, 'VALIDATION')
  const open = await post('/v1/decisions/next', { previous_decision_id: PENDING_ID })
  t.equal(open.res.status, 409, 'a next ask on an open clock is the clock_open refusal, not a 402 challenge')
  t.same([open.body.error.code, open.body.error.detail.reason], ['CLOCK_OPEN', 'clock_open'])
  const missing = await post('/v1/decisions/next', { previous_decision_id: '11111111-2222-4333-8444-555555555555' })
  t.equal(missing.res.status, 404, 'an unknown previous decision is 404 before any payment')
  const known = await post('/v1/decisions', { asset: 'BTC', question_id: 'S01_market_regime' })
  t.equal(known.res.status, 402, 'a valid unpaid ask still gets the challenge')
})

t.test('validation errors name the field in every request part', async (t) => {
  const { parts } = memoryServices()
  const s = await withServer(t, { services: parts })
  const cases: Array<[string, RequestInit, string, string]> = [
    ['/v1/feed?limit=0', {}, '/query/limit', 'minimum'],
    ['/v1/market/btc', {}, '/params/asset', 'pattern'],
    ['/v1/wallet/ethereum/' + PAYER, {}, '/params/chain', 'enum'],
    ['/v1/decisions/latest?asset=BTC', {}, '/query/question_id', 'required'],
    ['/v1/decisions', { method: 'POST', body: JSON.stringify({ asset: 'DOGE', question_id: 'S01_market_regime' }) }, '/body/asset', 'enum'],
    ['/v1/decisions', { method: 'POST', body: JSON.stringify({ asset: 'BTC', question_id: 'S01_market_regime', extra: 1 }) }, '/body/extra', 'additionalProperties'],
    ['/v1/risk/transaction', { method: 'POST', body: JSON.stringify({ asset: 'BTC', address: PAYER, candidate: { tx_hash: '0x' + '1'.repeat(64), log_index: -1, block_time: '2026-01-01T00:00:00Z', direction: 'in', asset: 'X', amount: 1, usd_value: 1, counterparty: null } }) }, '/body/candidate/log_index', 'minimum'],
    ['/v1/calls', { method: 'POST', body: JSON.stringify({ decision_id: RESOLVED_ID, call: 'obtains' }) }, '/headers/x-svc-payer', 'required'],
  ]
  for (const [path, init, field, rule] of cases) {
    const { res, body } = await call(s.url + path, init)
    t.equal(res.status, 400, path)
    t.ok(errorEnvelope(body))
    t.equal(body.error.code, 'VALIDATION')
    t.equal(body.error.detail.reason, 'REQUEST_VALIDATION_FAILED')
    t.equal(body.error.detail.field, field, `${path} names ${field}`)
    t.equal(body.error.detail.rule, rule)
    t.match(body.error.message, field)
  }
})

t.test('oversized body: 413 PAYLOAD_TOO_LARGE (declared length and streamed chunks)', async (t) => {
  const s = await withServer(t, { config: { payTo: PAY_TO, maxBodyBytes: 4096 } })
  const declared = await call(`${s.url}/v1/decisions`, { method: 'POST', body: JSON.stringify({ pad: 'x'.repeat(10_000) }) })
  t.equal(declared.res.status, 413)
  t.ok(errorEnvelope(declared.body))
  t.equal(declared.body.error.code, 'PAYLOAD_TOO_LARGE')
  t.equal(declared.body.error.detail.limit_bytes, 4096)

  // Chunked upload without Content-Length: the limit is enforced while reading.
  const streamed = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest(`${s.url}/v1/decisions`, { method: 'POST', headers: { 'transfer-encoding': 'chunked' } }, (res) => {
      let body = ''
      res.on('data', (c) => (body += c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    for (let i = 0; i < 10; i++) req.write('y'.repeat(1024))
    req.end()
  })
  t.equal(streamed.status, 413)
  t.equal(JSON.parse(streamed.body).error.code, 'PAYLOAD_TOO_LARGE')

  const ok = await call(`${s.url}/v1/decisions`, { method: 'POST', body: JSON.stringify({ asset: 'BTC', question_id: 'S01_market_regime' }) })
  t.not(ok.res.status, 413, 'a body under the limit is read')
})

t.test('rate limit: 429 RATE_LIMITED with Retry-After and RateLimit-* headers after a burst', async (t) => {
  const s = await withServer(t, { services: { rateLimiter: new RateLimiter({ ip: { burst: 5, refillPerSec: 1 }, payer: { burst: 5, refillPerSec: 1 } }) } })
  const remaining: string[] = []
  for (let i = 0; i < 5; i++) {
    const r = await call(`${s.url}/v1/pricing`)
    t.equal(r.res.status, 200)
    t.equal(r.res.headers.get('ratelimit-limit'), '5')
    remaining.push(r.res.headers.get('ratelimit-remaining')!)
  }
  t.same(remaining, ['4', '3', '2', '1', '0'])
  const limited = await call(`${s.url}/v1/pricing`)
  t.equal(limited.res.status, 429)
  t.ok(errorEnvelope(limited.body))
  t.equal(limited.body.error.code, 'RATE_LIMITED')
  t.equal(limited.body.error.retryable, true)
  t.ok(limited.body.error.retry_after_ms > 0 && limited.body.error.retry_after_ms <= 1000, `retry_after_ms ${limited.body.error.retry_after_ms}`)
  t.equal(limited.res.headers.get('retry-after'), '1')
  t.equal(limited.res.headers.get('ratelimit-limit'), '5')
  t.equal(limited.res.headers.get('ratelimit-remaining'), '0')
  t.equal(Number(limited.res.headers.get('ratelimit-reset')) * 1000, limited.body.error.retry_after_ms, 'one wait: RateLimit-Reset = retry_after_ms')
  t.equal((await call(`${s.url}/healthz`)).res.status, 200, 'health probes are not limited')
  const unknown = await call(`${s.url}/v1/whatever`)
  t.equal(unknown.res.status, 429, 'unknown routes count against the bucket too')
})

t.test('a thrown non-ServiceError becomes INTERNAL with a generic message (no stack, no secret)', async (t) => {
  const { parts } = memoryServices()
  parts.ledger!.getDecision = async () => {
    throw new Error('db password=hunter2 at /secret/path.ts:12')
  }
  const s = await withServer(t, { services: parts })
  const { res, text, body } = await call(`${s.url}/v1/decisions/${RESOLVED_ID}`)
  t.equal(res.status, 500)
  t.ok(errorEnvelope(body))
  t.equal(body.error.code, 'INTERNAL')
  t.equal(body.error.message, 'Internal error.')
  t.notMatch(text, /hunter2|secret|\.ts:/)
})

t.test('graceful close drains an in-flight request, then refuses new connections', async (t) => {
  let release!: () => void
  let started!: () => void
  const gate = new Promise<void>((r) => (release = r))
  const entered = new Promise<void>((r) => (started = r))
  const slow: RouteDef = {
    id: 'test.slow', method: 'GET', path: '/test/slow', summary: 'waits for the test', tags: ['test'], pay: { kind: 'free' },
    request: {}, response: { kind: 'envelope', schema: { type: 'object' } }, errors: [],
    handler: async () => {
      started()
      await gate
      return { data: { finished: true } }
    },
  }
  const server = await Server.start({ port: 0, config: { payTo: PAY_TO, drainTimeoutMs: 5000 }, routes: [...ROUTES, slow] })
  const url = server.url
  const inflight = call(`${url}/test/slow`)
  await entered
  t.equal(server.inFlight, 1)
  const closing = server.close()
  await new Promise((r) => setTimeout(r, 50))
  const refused = await fetch(`${url}/healthz`, { headers: { connection: 'close' } }).then(() => 'served', (e: Error) => `refused: ${e.message}`)
  t.match(refused, /^refused/, 'new connections are refused while draining')
  release()
  const done = await inflight
  t.equal(done.res.status, 200)
  t.same(done.body.data, { finished: true })
  t.equal(done.res.headers.get('connection'), 'close', 'the drained response closes its connection')
  t.same(await closing, { drained: true })
  t.equal(server.inFlight, 0)
})

t.test('close gives up after the drain timeout and force-closes', async (t) => {
  const stuck: RouteDef = {
    id: 'test.stuck', method: 'GET', path: '/test/stuck', summary: 'never finishes', tags: ['test'], pay: { kind: 'free' },
    request: {}, response: { kind: 'envelope', schema: { type: 'object' } }, errors: [],
    handler: () => new Promise(() => undefined),
  }
  const server = await Server.start({ port: 0, config: { payTo: PAY_TO, drainTimeoutMs: 100 }, routes: [...ROUTES, stuck] })
  const pending = fetch(`${server.url}/test/stuck`).then(() => 'answered', () => 'aborted')
  await new Promise((r) => setTimeout(r, 50))
  t.same(await server.close(), { drained: false })
  t.equal(await pending, 'aborted')
})

t.test('large frozen bodies answered concurrently by async handlers each arrive whole and their own', async (t) => {
  // A large envelope is written into lent memory the next one reuses (byteSlab slabConcat); the dispatcher sends it
  // before anything else runs, so interleaved handlers never see another answer's bytes.
  const boards = ['a', 'b', 'c'].map((tag) => Object.freeze(Array.from({ length: 500 }, (_, i) => Object.freeze({ i, tag, pad: 'x'.repeat(60) }))))
  const big: RouteDef = {
    id: 'test.big', method: 'GET', path: '/test/big', summary: 'a large frozen answer', tags: ['test'], pay: { kind: 'free' },
    request: { query: Type.Object({ n: Type.String() }) }, response: { kind: 'envelope', schema: { type: 'object' } }, errors: [],
    handler: async (ctx) => {
      const n = Number(ctx.query.n)
      // Finish out of order, so large answers are written between one another's awaits.
      await new Promise((r) => setTimeout(r, (n * 7) % 5))
      return { data: boards[n % 3]! }
    },
  }
  const server = await Server.start({ port: 0, config: { payTo: PAY_TO }, routes: [...ROUTES, big] })
  t.teardown(() => server.close())
  const answers = await Promise.all(Array.from({ length: 60 }, async (_, n) => {
    const res = await fetch(`${server.url}/test/big?n=${n}`)
    return { n, status: res.status, body: JSON.parse(await res.text()) as { data: Array<{ tag: string }> } }
  }))
  for (const a of answers) {
    t.equal(a.status, 200)
    t.same(a.body.data, boards[a.n % 3], `answer ${a.n} is board ${['a', 'b', 'c'][a.n % 3]}, whole`)
  }
})
