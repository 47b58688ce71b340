/**
 * Cross-origin access (issue 33 item 3) over real HTTP: preflights from an allowed origin answered from the route
 * registry, a disallowed origin refused with the error envelope and no CORS header, actual answers exposing every
 * non-safelisted header the API sends (compared with what the responses really carry, not with a copied list), and no
 * CORS at all without an allowlist. Then a real browser: Debian's chromium (playwright-core) on pages of two other
 * local origins, one allowed and one not.
 *
 * Needs chromium for its browser half (CHROMIUM_PATH, default /usr/bin/chromium): skipped locally without it, a
 * failure under CI=true.
 */
import t from 'tap'
import { createServer, type Server as HttpServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { chromiumMissing, launchChromium } from '../../helpers/chromium.ts'
import { RateLimiter } from '../../../serving/RateLimiter.ts'
import { CORS_MAX_AGE_S } from '../../../serving/http/Cors.ts'
import { REQUEST_HEADER, RESPONSE_HEADER } from '../../../serving/http/apiHeaders.ts'
import { memoryServices } from '../../helpers/serving/memoryServices.ts'
import { withServer } from '../../helpers/serving/server.ts'
import { skipUnlessTool } from '../../helpers/requiredTool.ts'

const PAYER = '0x209693Bc6afc0C5328bA36FaF03C514EF312287C'
const ALLOWED = 'http://app.example:3000'
const OTHER = 'http://evil.example'
/** Headers a browser page reads without their being exposed (Fetch: CORS-safelisted response-header names). */
const SAFELISTED = new Set(['cache-control', 'content-language', 'content-length', 'content-type', 'expires', 'last-modified', 'pragma'])
/** Set by the transport or by CORS itself, not read by a client as an API header. */
const TRANSPORT = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding', 'uwebsockets', 'vary'])

function corsServer(t: Parameters<typeof withServer>[0], origins: string[], rate = { burst: 100_000, refillPerSec: 100_000 }) {
  const { parts } = memoryServices(Date.now())
  return withServer(t, {
    config: { payTo: PAYER, corsOrigins: origins },
    services: { ...parts, rateLimiter: new RateLimiter({ ip: rate, payer: rate }) },
  })
}

const preflight = (url: string, origin: string, method = 'GET', headers = 'authorization') =>
  fetch(url, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers } })

async function envelope(res: Response) {
  return ((await res.json()) as { error: { code: string; detail: Record<string, unknown> } }).error
}

const listOf = (h: string | null) => (h ?? '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean)

t.test('without an allowlist: no CORS header, and a preflight is the registry 405 like any OPTIONS', async (t) => {
  const server = await corsServer(t, [])
  const res = await preflight(`${server.url}/v1/pricing`, ALLOWED)
  t.equal(res.status, 405)
  t.equal(res.headers.get('allow'), 'GET, HEAD')
  t.equal((await envelope(res)).code, 'METHOD_NOT_ALLOWED')
  t.equal(res.headers.get('access-control-allow-origin'), null)
  const get = await fetch(`${server.url}/v1/pricing`, { headers: { origin: ALLOWED } })
  t.equal(get.status, 200)
  for (const h of ['access-control-allow-origin', 'access-control-expose-headers', 'vary']) t.equal(get.headers.get(h), null, `no ${h}`)
})

t.test('preflight from an allowed origin: 204, the origin echoed, the path\'s methods from the registry, the API\'s request headers', async (t) => {
  const server = await corsServer(t, [ALLOWED, 'https://Other.Example:443'], { burst: 1, refillPerSec: 0.001 })
  const res = await preflight(`${server.url}/v1/pricing`, ALLOWED, 'GET', 'authorization, x-svc-payer')
  t.equal(res.status, 204)
  t.equal(res.headers.get('access-control-allow-origin'), ALLOWED)
  t.equal(res.headers.get('vary'), 'Origin')
  t.equal(res.headers.get('access-control-allow-methods'), 'GET, HEAD')
  t.equal(res.headers.get('access-control-max-age'), String(CORS_MAX_AGE_S))
  t.equal(res.headers.get('access-control-allow-credentials'), null, 'no credentials: the API authenticates with headers, never cookies')
  const allowed = listOf(res.headers.get('access-control-allow-headers'))
  for (const h of Object.values(REQUEST_HEADER)) t.ok(allowed.includes(h), `${h} may be sent`)
  // Headers declared by route schemas come from the registry: the Arena's payer header, the operator's.
  for (const h of ['payer', 'x-svc-ops']) t.ok(allowed.includes(h), `${h} (a route's request schema) may be sent`)
  t.ok(res.headers.get('x-request-id'), 'a preflight has its request id')
  t.equal(res.headers.get('ratelimit-remaining'), null, 'a preflight is not rate-limited')

  const session = await preflight(`${server.url}/v1/auth/session`, ALLOWED, 'POST', 'sign-in-with-x')
  t.equal(session.status, 204)
  t.equal(session.headers.get('access-control-allow-methods'), 'DELETE, POST', 'the methods of that path')
  const templated = await preflight(`${server.url}/v1/market/BTC/regime`, ALLOWED, 'GET', 'x-svc-payer')
  t.equal(templated.status, 204, 'a templated path')
  const normalized = await preflight(`${server.url}/v1/pricing`, 'https://other.example', 'GET')
  t.equal(normalized.headers.get('access-control-allow-origin'), 'https://other.example', 'a configured origin matches in its serialized form')
  // Still one preflight after another: the one-token bucket above was never touched.
  t.equal((await preflight(`${server.url}/v1/pricing`, ALLOWED)).status, 204)

  const unknown = await preflight(`${server.url}/v1/nowhere`, ALLOWED)
  t.equal(unknown.status, 404)
  t.equal((await envelope(unknown)).code, 'ROUTE_NOT_FOUND')
  t.equal(unknown.headers.get('access-control-allow-origin'), ALLOWED, 'the page may read why')
})

t.test('preflight from another origin: 403 ORIGIN_FORBIDDEN in the envelope, no CORS header', async (t) => {
  const server = await corsServer(t, [ALLOWED])
  const res = await preflight(`${server.url}/v1/pricing`, OTHER)
  t.equal(res.status, 403)
  const error = await envelope(res)
  t.equal(error.code, 'ORIGIN_FORBIDDEN')
  t.same(error.detail, { reason: 'ORIGIN_FORBIDDEN', origin: OTHER })
  for (const h of ['access-control-allow-origin', 'access-control-allow-methods', 'access-control-allow-headers', 'access-control-expose-headers']) {
    t.equal(res.headers.get(h), null, `no ${h}`)
  }
  const get = await fetch(`${server.url}/v1/pricing`, { headers: { origin: OTHER } })
  t.equal(get.status, 200, 'an actual request is served (the browser withholds it from the page)')
  t.equal(get.headers.get('access-control-allow-origin'), null)
  t.equal(get.headers.get('vary'), 'Origin', 'Vary: a cache must not hand this answer to an allowed origin')
})

t.test('OPTIONS that is not a preflight keeps the 405 with Allow, on an allowed origin too', async (t) => {
  const server = await corsServer(t, [ALLOWED])
  for (const headers of [{ origin: ALLOWED }, { 'access-control-request-method': 'GET' }, {} as Record<string, string>]) {
    const res = await fetch(`${server.url}/v1/pricing`, { method: 'OPTIONS', headers })
    t.equal(res.status, 405, JSON.stringify(headers))
    t.equal(res.headers.get('allow'), 'GET, HEAD')
    t.equal((await envelope(res)).code, 'METHOD_NOT_ALLOWED')
  }
})

t.test('answers to an allowed origin expose every API header they carry (200, 402, 405, 429)', async (t) => {
  const server = await corsServer(t, [ALLOWED], { burst: 4, refillPerSec: 0.001 })
  const calls: Array<[string, Response]> = []
  const call = async (what: string, path: string, init: RequestInit = {}) => {
    const res = await fetch(server.url + path, { ...init, headers: { origin: ALLOWED, ...(init.headers as Record<string, string>) } })
    await res.arrayBuffer()
    calls.push([what, res])
    return res
  }
  t.equal((await call('free read', '/v1/pricing')).status, 200)
  t.equal((await call('paid call, no payment', '/v1/market/BTC/regime')).status, 402)
  t.equal((await call('credits payer unproven', '/v1/market/BTC/regime', { headers: { [REQUEST_HEADER.payer]: PAYER } })).status, 402)
  t.equal((await call('wrong method', '/v1/pricing', { method: 'DELETE' })).status, 405)
  t.equal((await call('over the limit', '/v1/pricing')).status, 429)
  const exposed = new Set(Object.values(RESPONSE_HEADER).map((h) => h.toLowerCase()))
  for (const [what, res] of calls) {
    t.equal(res.headers.get('access-control-allow-origin'), ALLOWED, `${what}: the origin echoed`)
    t.equal(res.headers.get('vary'), 'Origin')
    const list = new Set(listOf(res.headers.get('access-control-expose-headers')))
    t.same([...list].sort(), [...exposed].sort(), `${what}: the exposed list is the API's response headers`)
    const sent = [...res.headers.keys()].filter((h) => !SAFELISTED.has(h) && !TRANSPORT.has(h) && !h.startsWith('access-control-'))
    t.same(sent.filter((h) => !list.has(h)), [], `${what}: every API header it carries is exposed (${sent.join(', ')})`)
  }
  t.ok(calls[1]![1].headers.get('payment-required'), 'the 402 carries PAYMENT-REQUIRED')
  t.ok(calls[2]![1].headers.get('www-authenticate'), 'the sign-in 402 carries WWW-Authenticate')
  t.ok(calls[4]![1].headers.get('retry-after'), 'the 429 carries Retry-After')
})

/** A page server on its own port: its origin is http://127.0.0.1:<port>, another origin than the API's. */
async function pageServer(t: Parameters<typeof withServer>[0]): Promise<string> {
  const server: HttpServer = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><title>cross-origin client</title><p>client</p>')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** What a page's script sees of three calls: a free GET, a preflighted GET (Authorization) and a paid call naming a payer. */
interface Seen {
  free: { status: number; requestId: string | null; remaining: string | null; body: unknown } | { blocked: string }
  preflighted: { status: number } | { blocked: string }
  paid: { status: number; paymentRequired: string | null; code: string } | { blocked: string }
}

const browserSkip = skipUnlessTool(t, await chromiumMissing(), 'chromium for the CORS browser test')

t.test('in Chromium: a page of an allowed origin calls /v1 and reads exposed headers; another origin is blocked', { skip: browserSkip }, async (t) => {
  const allowedPage = await pageServer(t)
  const otherPage = await pageServer(t)
  const server = await corsServer(t, [allowedPage])
  const browser = await launchChromium()
  t.teardown(() => browser.close())

  const visit = async (pageUrl: string): Promise<Seen> => {
    const page = await browser.newPage()
    t.equal((await page.goto(pageUrl))?.status(), 200)
    return page.evaluate(
      // The page runs this function's source: it names no function of its own (tsx, which loads the tests, wraps a
      // named one in a __name helper the page does not have). The calls run one after another, each caught apart.
      async ({ api, payer }) => {
        const seen: unknown[] = []
        for (const call of [
          async () => {
            const r = await fetch(`${api}/v1/pricing`)
            return { status: r.status, requestId: r.headers.get('x-request-id'), remaining: r.headers.get('ratelimit-remaining'), body: await r.json() }
          },
          async () => {
            const r = await fetch(`${api}/v1/pricing`, { headers: { authorization: 'Bearer not-a-session' } })
            return { status: r.status }
          },
          async () => {
            const r = await fetch(`${api}/v1/market/BTC/regime`, { headers: { 'x-svc-payer': payer } })
            return { status: r.status, paymentRequired: r.headers.get('payment-required'), code: ((await r.json()) as { error: { code: string } }).error.code }
          },
        ]) {
          seen.push(await call().catch((err: unknown) => ({ blocked: String(err) })))
        }
        return { free: seen[0], preflighted: seen[1], paid: seen[2] } as Seen
      },
      { api: server.url, payer: PAYER },
    )
  }

  const allowed = await visit(allowedPage)
  t.ok(!('blocked' in allowed.free), `the free GET is readable: ${JSON.stringify(allowed.free).slice(0, 200)}`)
  if (!('blocked' in allowed.free)) {
    t.equal(allowed.free.status, 200)
    t.match(allowed.free.requestId, /^[0-9a-f-]{36}$/, 'x-request-id is exposed')
    t.match(allowed.free.remaining, /^\d+$/, 'RateLimit-Remaining is exposed')
    t.ok((allowed.free.body as { data?: unknown }).data, 'the envelope is readable')
  }
  t.same(allowed.preflighted, { status: 200 }, 'a request with Authorization passes its preflight')
  t.ok(!('blocked' in allowed.paid), `the paid call with x-svc-payer passes its preflight: ${JSON.stringify(allowed.paid).slice(0, 200)}`)
  if (!('blocked' in allowed.paid)) {
    t.equal(allowed.paid.status, 402)
    t.equal(allowed.paid.code, 'PAYMENT_REQUIRED')
    const required = JSON.parse(Buffer.from(allowed.paid.paymentRequired ?? '', 'base64').toString('utf8')) as { x402Version: number; accepts: unknown[] }
    t.equal(required.x402Version, 2, 'the page reads and decodes PAYMENT-REQUIRED')
  }

  const other = await visit(otherPage)
  for (const [what, seen] of Object.entries(other)) {
    t.ok('blocked' in seen, `${what}: blocked by the browser (${JSON.stringify(seen).slice(0, 120)})`)
  }
})
