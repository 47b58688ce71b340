/**
 * Issue 29, acceptance: the spoofing table, each refused with nothing moved, over real HTTP and over MCP (the
 * official SDK client), and the lock-out repeated. The paid route is the test work route on the credits rail (a real
 * BillingService on an EmbeddedLog); the free payer-scoped route is the scout grant (it would move 3,000 credits).
 */
import { withArena } from '../../helpers/serving/arena.ts'
import { LocalFacilitator } from '../../../peers/LocalFacilitator.ts'
import { FacilitatorClient } from '../../../serving/payments/x402/FacilitatorClient.ts'
import { X402PaymentGate } from '../../../serving/payments/x402/X402PaymentGate.ts'
import { AnswerBook } from '../../helpers/serving/AnswerBook.ts'
import { requiredOf, signPayment, testAccount, TEST_ADDRESS } from '../../helpers/serving/x402Stack.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import t, { type Test } from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { Clock } from '../../../common/Clock.ts'
import { RateLimiter } from '../../../serving/RateLimiter.ts'
import { MCP_PATH } from '../../../serving/mcp/McpEndpoint.ts'
import { CreditsPaymentGate } from '../../../serving/payments/CreditsPaymentGate.ts'
import { RailRouter } from '../../../serving/payments/RailRouter.ts'
import { decodeHeader } from '../../../serving/payments/x402.ts'
import { ROUTES } from '../../../serving/routes/registry.ts'
import { OPS_TOKEN, withBilling } from '../../helpers/serving/billing.ts'
import { PAY_TO, withServer } from '../../helpers/serving/server.ts'
import { fetchChallenge, signChallenge, signIn, signInHeader } from '../../helpers/serving/signIn.ts'
import { WorkBook, workRoutes } from '../../helpers/serving/workRoutes.ts'

class TestClock implements Clock {
  constructor(public t: number) {}
  now(): number {
    return this.t
  }
}

const QUESTION = 'S03_trend_continuation'

async function stack(t: Test, rateLimiter?: RateLimiter) {
  const clock = new TestClock(Date.now())
  const billing = await withBilling(t, { clock })
  const book = new WorkBook()
  // The work route as an MCP tool too, so the same credits call runs over MCP.
  const routes = [...ROUTES, ...workRoutes(book).map((r) => (r.id === 'test.work' ? { ...r, mcp: { name: 'svc_test_work', description: 'Test: paid work' } } : r))]
  const server = await withServer(t, {
    routes,
    config: { payTo: PAY_TO, sessionTtlS: 60 },
    services: {
      clock, billing, paymentGate: new RailRouter({ payTo: PAY_TO, credits: new CreditsPaymentGate(billing.ledger, PAY_TO) }),
      ...(rateLimiter ? { rateLimiter } : {}),
    },
  })
  // Raw HTTP: jsonCaller would add the named payer's session, which is exactly what these tests must not have.
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(server.url + path, {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    })
    return { status: res.status, headers: res.headers, body: JSON.parse(await res.text()) }
  }
  const victim = privateKeyToAccount(generatePrivateKey())
  const stranger = privateKeyToAccount(generatePrivateKey())
  for (const [who, ref] of [[victim, 'g-victim'], [stranger, 'g-stranger']] as const) {
    const g = await call('POST', '/v1/billing/grants', { action: 'grant', payer: who.address, credits: 50_000, ref }, { 'x-svc-ops': OPS_TOKEN })
    t.equal(g.status, 200, 'operator grant')
  }
  /** What must not move: both balances, both scout states, the work done. */
  const state = () => JSON.stringify([
    billing.credits(victim.address).balance_credits, billing.credits(stranger.address).balance_credits,
    billing.scoutStatus(victim.address), billing.scoutStatus(stranger.address), book.records.size,
  ])
  return { clock, billing, book, server, call, victim, stranger, state }
}

type Stack = Awaited<ReturnType<typeof stack>>

/** The spoofing table: each row gives the headers of one attempt in the victim's name and the reason expected. */
async function spoofRows(s: Stack): Promise<Array<{ name: string; headers: () => Promise<Record<string, string>>; reason: string }>> {
  const { server, victim, stranger, call, clock } = s
  const V = victim.address
  const sessionUrl = `${server.url}/v1/auth/session`
  const tweaked = async (tweak: Record<string, unknown>, signer = victim) => signChallenge(await fetchChallenge(server.url), signer, sessionUrl, tweak)
  return [
    { name: "another payer's address without proof", headers: async () => ({ 'x-svc-payer': V }), reason: 'SIGN_IN_REQUIRED' },
    { name: 'a session for A used with x-svc-payer B', headers: async () => ({ authorization: `Bearer ${(await signIn(server.url, stranger)).token}`, 'x-svc-payer': V }), reason: 'PROOF_FOR_OTHER_PAYER' },
    { name: 'a sign-in for A used with x-svc-payer B', headers: async () => ({ 'sign-in-with-x': await signInHeader(server.url, stranger), 'x-svc-payer': V }), reason: 'PROOF_FOR_OTHER_PAYER' },
    {
      name: 'a replayed sign-in nonce',
      headers: async () => {
        const once = await signInHeader(server.url, victim)
        const first = await fetch(sessionUrl, { method: 'POST', headers: { 'sign-in-with-x': once } })
        if (first.status !== 201) throw new Error(`first use refused: ${first.status}`)
        return { 'sign-in-with-x': once, 'x-svc-payer': V }
      },
      reason: 'SIGN_IN_NONCE_REPLAYED',
    },
    {
      name: 'an expired message',
      headers: async () => {
        const signed = await signInHeader(server.url, victim)
        clock.t += 6 * 60_000 // past the challenge's expirationTime (5 minutes)
        return { 'sign-in-with-x': signed, 'x-svc-payer': V }
      },
      reason: 'SIGN_IN_EXPIRED',
    },
    { name: 'a wrong domain', headers: async () => ({ 'sign-in-with-x': await tweaked({ domain: 'evil.example' }), 'x-svc-payer': V }), reason: 'SIGN_IN_DOMAIN' },
    { name: 'a wrong URI', headers: async () => ({ 'sign-in-with-x': await tweaked({ uri: 'https://evil.example/v1/auth/session' }), 'x-svc-payer': V }), reason: 'SIGN_IN_URI' },
    { name: 'a wrong chain', headers: async () => ({ 'sign-in-with-x': await tweaked({ chainId: 'eip155:1' }), 'x-svc-payer': V }), reason: 'SIGN_IN_CHAIN' },
    { name: 'a signature by another key', headers: async () => ({ 'sign-in-with-x': await tweaked({ address: V }, stranger), 'x-svc-payer': V }), reason: 'SIGN_IN_SIGNATURE' },
    {
      name: 'a revoked token',
      headers: async () => {
        const s2 = await signIn(server.url, victim)
        const r = await call('DELETE', '/v1/auth/session', undefined, { authorization: `Bearer ${s2.token}` })
        if (r.status !== 200) throw new Error(`revoke refused: ${r.status}`)
        return s2.headers
      },
      reason: 'SESSION_INVALID',
    },
    {
      name: 'an expired token',
      headers: async () => {
        const s2 = await signIn(server.url, victim)
        clock.t += 61_000 // sessionTtlS is 60 on this server
        return s2.headers
      },
      reason: 'SESSION_INVALID',
    },
    { name: 'a token used for another address', headers: async () => ({ authorization: `Bearer ${(await signIn(server.url, victim)).token}`, 'x-svc-payer': stranger.address }), reason: 'PROOF_FOR_OTHER_PAYER' },
  ]
}

t.test('spoofing table over real HTTP: paid credits call and free payer-scoped write, each refused, nothing moved', async (t) => {
  const s = await stack(t)
  for (const row of await spoofRows(s)) {
    // The paid credits call: 402 carrying the sign-in-with-x challenge.
    let before = s.state()
    let headers = await row.headers()
    before = s.state()
    const paid = await s.call('POST', '/v1/test/work', { question_id: QUESTION, n: 8 }, headers)
    t.equal(paid.status, 402, `${row.name}: paid call refused`)
    t.equal(paid.body.error.detail.reason, row.reason, `${row.name}: reason ${row.reason}`)
    t.ok(paid.body.error.detail['sign-in-with-x']?.info?.nonce, `${row.name}: the 402 carries a fresh challenge`)
    const required = decodeHeader<{ extensions: Record<string, { info: { nonce: string } }> }>(paid.headers.get('payment-required')!)
    t.ok(required.extensions['sign-in-with-x']?.info.nonce, `${row.name}: PAYMENT-REQUIRED advertises sign-in-with-x`)
    t.equal(s.state(), before, `${row.name}: nothing moved (balances, scout, work)`)
    // The free payer-scoped write (scout grant in the named payer's name): typed 401 that says how to sign in.
    headers = await row.headers()
    before = s.state()
    const payer = headers['x-svc-payer']!
    const free = await s.call('POST', '/v1/billing/scout', { payer }, headers)
    t.equal(free.status, 401, `${row.name}: free write refused`)
    t.equal(free.body.error.code, 'PAYER_UNPROVEN', `${row.name}: PAYER_UNPROVEN`)
    t.equal(free.body.error.detail.reason, row.reason, `${row.name}: reason ${row.reason}`)
    t.match(free.headers.get('www-authenticate') ?? '', /SIWX .*Bearer/, `${row.name}: WWW-Authenticate names both schemes`)
    t.equal(s.state(), before, `${row.name}: nothing moved`)
  }
  // And the proofs work: the victim's own session spends the victim's credits, once.
  const v = await signIn(s.server.url, s.victim)
  const before = s.billing.credits(s.victim.address).balance_credits
  const ok = await s.call('POST', '/v1/test/work', { question_id: QUESTION, n: 8 }, v.headers)
  t.equal(ok.status, 200, 'the proven call is served')
  t.ok(s.billing.credits(s.victim.address).balance_credits < before, 'and charged to the victim')
  const signedOnce = await s.call('POST', '/v1/billing/scout', { payer: s.victim.address }, { 'sign-in-with-x': await signInHeader(s.server.url, s.victim), 'x-svc-payer': s.victim.address })
  t.equal(signedOnce.status, 200, 'a one-use sign-in proves a free write too')
})

t.test('spoofing table over MCP (official SDK client): each refused, nothing moved', async (t) => {
  const s = await stack(t)
  for (const row of await spoofRows(s)) {
    const headers = await row.headers()
    const before = s.state()
    const client = new Client({ name: 'spoof', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(new URL(s.server.url + MCP_PATH), { requestInit: { headers } }))
    const r = (await client.callTool({ name: 'svc_test_work', arguments: { question_id: QUESTION, n: 8 } })) as CallToolResult
    await client.close()
    t.equal(r.isError, true, `${row.name}: tool refused`)
    t.match(JSON.stringify(r), new RegExp(row.reason), `${row.name}: reason ${row.reason}`)
    t.equal(s.state(), before, `${row.name}: nothing moved`)
  }
  const v = await signIn(s.server.url, s.victim)
  const client = new Client({ name: 'victim', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(s.server.url + MCP_PATH), { requestInit: { headers: v.headers } }))
  const before = s.billing.credits(s.victim.address).balance_credits
  const ok = (await client.callTool({ name: 'svc_test_work', arguments: { question_id: QUESTION, n: 8 } })) as CallToolResult
  await client.close()
  t.not(ok.isError, true, 'the proven tool call is served')
  t.ok(s.billing.credits(s.victim.address).balance_credits < before, 'and charged to the victim')
})

t.test('lock-out repeated: 250 unproven repeats naming the victim, then the victim’s proven call succeeds', async (t) => {
  const s = await stack(t, new RateLimiter({ ip: { burst: 60, refillPerSec: 20 }, payer: { burst: 120, refillPerSec: 40 } }))
  const v = await signIn(s.server.url, s.victim)
  const before = s.state()
  const statuses = await Promise.all(Array.from({ length: 250 }, () => s.call('POST', '/v1/test/work', { question_id: QUESTION, n: 8 }, { 'x-svc-payer': s.victim.address })))
  t.ok(statuses.every((r) => r.status === 402 || r.status === 429), 'every unproven repeat is refused')
  const limited = statuses.find((r) => r.status === 429)
  t.ok(limited, 'the repeats exhausted their own (IP) bucket')
  if (limited) {
    const wait = limited.body.error.retry_after_ms as number
    t.equal(Number(limited.headers.get('ratelimit-reset')) * 1000, wait, '429: RateLimit-Reset is the one wait')
    t.equal(Number(limited.headers.get('retry-after')) * 1000, wait, '429: Retry-After is the same wait')
    t.equal(limited.headers.get('ratelimit-limit'), '60', '429: headers of the bucket that refused (per IP)')
  }
  t.equal(s.state(), before, 'nothing moved')
  const ok = await s.call('POST', '/v1/test/work', { question_id: QUESTION, n: 8 }, v.headers)
  t.equal(ok.status, 200, "the victim's next proven call succeeds")
  const health = await Promise.all(Array.from({ length: 100 }, () => fetch(s.server.url + '/healthz')))
  t.ok(health.every((r) => r.status === 200), 'health probes are never rate limited')
})

t.test('a body that is not application/json on a JSON route is 415', async (t) => {
  const s = await stack(t)
  const res = await fetch(s.server.url + '/v1/billing/scout', { method: 'POST', body: JSON.stringify({ payer: s.victim.address }), headers: { 'content-type': 'text/plain' } })
  t.equal(res.status, 415)
  const body = (await res.json()) as { error: { code: string; detail: { reason: string; content_type: string } } }
  t.equal(body.error.code, 'UNSUPPORTED_MEDIA_TYPE')
  t.equal(body.error.detail.reason, 'BODY_NOT_JSON')
  t.equal(body.error.detail.content_type, 'text/plain')
})

t.test('an x402 payment proves its own payer: paying from A while naming B is refused, nothing recorded or settled', async (t) => {
  const facilitator = await LocalFacilitator.start()
  t.teardown(() => facilitator.close())
  facilitator.token.fund(TEST_ADDRESS, 1_000_000_000n)
  const gate = await X402PaymentGate.open({ payTo: PAY_TO, dataDir: await makeTempDir(t), facilitator: new FacilitatorClient({ url: facilitator.url }) })
  t.teardown(() => gate.close())
  const book = new AnswerBook()
  // The test answer route as a payer-scoped paid route (as POST /v1/calls and POST /v1/hook-endpoints are).
  const routes = book.routes().map((r) => (r.id === 'test.answers.create' ? { ...r, payer: { header: 'x-svc-payer' } as const } : r))
  const server = await withServer(t, { routes: [...ROUTES, ...routes], services: { paymentGate: gate } })
  const url = `${server.url}/test/answers`
  const victim = privateKeyToAccount(generatePrivateKey()).address
  const challenge = await fetch(url, { method: 'POST', headers: { 'x-svc-payer': TEST_ADDRESS } })
  t.equal(challenge.status, 402, 'a name without proof or payment: the challenge')
  const accepted = requiredOf(challenge).accepts[0]!
  const spoof = await signPayment({ account: testAccount(), accepted, resourceUrl: url })
  const refused = await fetch(url, { method: 'POST', headers: { 'x-svc-payer': victim, 'PAYMENT-SIGNATURE': spoof.header } })
  t.equal(refused.status, 401)
  const body = (await refused.json()) as { error: { code: string; detail: { reason: string; proven: string } } }
  t.equal(body.error.code, 'PAYER_UNPROVEN')
  t.equal(body.error.detail.reason, 'PROOF_FOR_OTHER_PAYER')
  t.equal(body.error.detail.proven, TEST_ADDRESS.toLowerCase(), 'names the address the payment proves')
  t.equal(book.recorded.length, 0, 'nothing recorded')
  t.equal(facilitator.calls.settle, 0, 'nothing settled')
  t.equal(facilitator.token.balanceOf(PAY_TO), 0n, 'no money moved')
  const own = await signPayment({ account: testAccount(), accepted, resourceUrl: url })
  const paid = await fetch(url, { method: 'POST', headers: { 'x-svc-payer': TEST_ADDRESS, 'PAYMENT-SIGNATURE': own.header } })
  t.equal(paid.status, 200, 'naming the paying address: served, no sign-in needed')
})

t.test("a private read in another payer's name (Arena profile), over HTTP and over MCP: refused without its proof", async (t) => {
  const clock = new TestClock(Date.now())
  const arena = await withArena(t, clock)
  const server = await withServer(t, { services: { clock, arena } })
  const victim = privateKeyToAccount(generatePrivateKey())
  const rest = await fetch(`${server.url}/v1/arena/profile?payer=${victim.address}`)
  t.equal(rest.status, 401, 'HTTP: 401')
  t.equal(((await rest.json()) as { error: { code: string } }).error.code, 'PAYER_UNPROVEN')
  const stranger = await signIn(server.url, privateKeyToAccount(generatePrivateKey()))
  const asStranger = await fetch(`${server.url}/v1/arena/profile?payer=${victim.address}`, { headers: { authorization: `Bearer ${stranger.token}` } })
  t.equal(asStranger.status, 401, "HTTP: another payer's session is no proof")
  const mcpCall = async (headers: Record<string, string>) => {
    const client = new Client({ name: 'arena', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url + MCP_PATH), { requestInit: { headers } }))
    const r = (await client.callTool({ name: 'svc_arena_profile', arguments: { payer: victim.address } })) as CallToolResult
    await client.close()
    return r
  }
  const spoofed = await mcpCall({ authorization: `Bearer ${stranger.token}` })
  t.equal(spoofed.isError, true, 'MCP: refused')
  t.match(JSON.stringify(spoofed), /PROOF_FOR_OTHER_PAYER/)
  const own = await signIn(server.url, victim)
  const proven = await mcpCall(own.headers)
  t.not(proven.isError, true, "MCP: the payer's own session reads it")
  const ownRest = await fetch(`${server.url}/v1/arena/profile?payer=${victim.address}`, { headers: own.headers })
  t.equal(ownRest.status, 200, 'HTTP: and so does REST')
  const leaderboard = await fetch(`${server.url}/v1/arena/leaderboard?limit=5`)
  t.equal(leaderboard.status, 200, 'public boards stay anonymous')
})
