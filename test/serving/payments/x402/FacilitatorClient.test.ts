/**
 * FacilitatorClient against real local servers (x402-v2.md §9): the LocalFacilitator for documented answers, a
 * closed port for connection refused, and a silent server for the timeout.
 */
import t from 'tap'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { FacilitatorClient, DEFAULT_FACILITATOR_URL } from '../../../../serving/payments/x402/FacilitatorClient.ts'
import { FacilitatorError } from '../../../../serving/payments/x402/FacilitatorError.ts'
import { requirementsFor } from '../../../../serving/payments/x402.ts'
import { priceOf } from '../../../../product/billing/pricing.ts'
import { LocalFacilitator } from '../../../../peers/LocalFacilitator.ts'
import { PAY_TO } from '../../../helpers/serving/server.ts'
import { freePort } from '../../../helpers/tmp.ts'
import { signPayment, testAccount, TEST_ADDRESS } from '../../../helpers/serving/x402Stack.ts'

const ours = requirementsFor(priceOf('perp.funding', 0), PAY_TO)

async function facilitator(t: { teardown(fn: () => unknown): void }) {
  const f = await LocalFacilitator.start()
  t.teardown(() => f.close())
  f.token.fund(TEST_ADDRESS, 10_000_000n)
  return f
}

t.test('verify, settle and supported speak the §9 shapes', async (t) => {
  const f = await facilitator(t)
  const client = new FacilitatorClient({ url: f.url + '/' })
  const { payload } = await signPayment({ account: testAccount(), accepted: ours })
  t.same(await client.verify(payload, ours), { isValid: true, payer: TEST_ADDRESS })
  const settled = await client.settle(payload, ours)
  t.match(settled, { success: true, network: 'eip155:8453', payer: TEST_ADDRESS, transaction: /^0x[0-9a-f]{64}$/ })
  const again = await client.settle(payload, ours)
  t.match(again, { success: false }, 'the token refuses a used authorization')
  t.match(await client.supported(), { kinds: [{ x402Version: 2, scheme: 'exact', network: 'eip155:8453' }] })
  const tampered = { ...payload, payload: { ...payload.payload, authorization: { ...payload.payload.authorization, value: '1' } } }
  t.match(await client.verify(tampered, ours), { isValid: false, invalidReason: 'invalid_exact_evm_signature' }, 'isValid:false is an answer, not an error')
})

t.test('typed errors: unreachable, refused, HTTP 500, timeout', async (t) => {
  const f = await facilitator(t)
  const { payload } = await signPayment({ account: testAccount(), accepted: ours })
  f.mode = 'down'
  await t.rejects(new FacilitatorClient({ url: f.url }).settle(payload, ours), { name: 'FacilitatorError', kind: 'unreachable', operation: 'settle' })
  const closed = await freePort()
  await t.rejects(new FacilitatorClient({ url: `http://127.0.0.1:${closed}` }).verify(payload, ours), { name: 'FacilitatorError', kind: 'unreachable' }, 'connection refused')
  f.mode = 'error'
  await t.rejects(new FacilitatorClient({ url: f.url }).verify(payload, ours), { name: 'FacilitatorError', kind: 'http', status: 500 })

  const silent = createServer(() => undefined)
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => new Promise<void>((r) => { silent.closeAllConnections(); silent.close(() => r()) }))
  const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`
  const err = await new FacilitatorClient({ url, settleTimeoutMs: 150 }).settle(payload, ours).catch((e: unknown) => e)
  t.ok(err instanceof FacilitatorError)
  t.match(err, { kind: 'timeout', message: /150 ms/ })
})

t.test('429: Retry-After honoured once, then rate_limited', async (t) => {
  const f = await facilitator(t)
  const { payload } = await signPayment({ account: testAccount(), accepted: ours })
  const client = new FacilitatorClient({ url: f.url })
  f.rateLimitNext(1)
  t.match(await client.verify(payload, ours), { isValid: true }, 'one 429 then the answer')
  f.rateLimitNext(2)
  await t.rejects(client.verify(payload, ours), { name: 'FacilitatorError', kind: 'rate_limited', status: 429 })
  f.rateLimitNext(0)
})

t.test('a non-2xx that carries a settle answer is that answer; a 2xx without one is a protocol error', async (t) => {
  let reply: { status: number; body: string } = { status: 400, body: '{"success":false,"errorReason":"invalid_payload","transaction":"","network":"eip155:8453"}' }
  const srv = createServer((_req, res) => res.writeHead(reply.status, { 'content-type': 'application/json' }).end(reply.body))
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => new Promise<void>((r) => srv.close(() => r())))
  const client = new FacilitatorClient({ url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}` })
  const { payload } = await signPayment({ account: testAccount(), accepted: ours })
  t.match(await client.settle(payload, ours), { success: false, errorReason: 'invalid_payload' })
  reply = { status: 200, body: '{"ok":true}' }
  await t.rejects(client.settle(payload, ours), { name: 'FacilitatorError', kind: 'protocol' })
  reply = { status: 200, body: '{"success":true,"transaction":"","network":"eip155:8453"}' }
  await t.rejects(client.settle(payload, ours), { name: 'FacilitatorError', kind: 'protocol' }, 'success without a transaction is not believed')
})

t.test('the built-in default and SVC_FACILITATOR_URL', async (t) => {
  t.equal(new FacilitatorClient().url, DEFAULT_FACILITATOR_URL)
  t.equal(new FacilitatorClient({}).url, DEFAULT_FACILITATOR_URL)
  t.equal(new FacilitatorClient({ url: 'https://facilitator.example/x402/' }).url, 'https://facilitator.example/x402')
  t.throws(() => new FacilitatorClient({ url: 'ftp://x' }), /http/)
})
