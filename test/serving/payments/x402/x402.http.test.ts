/**
 * The x402 rail end to end over real HTTP on 127.0.0.1: Server + X402PaymentGate + the LocalFacilitator (reference
 * facilitator code over SimulatedUsdc), with the AnswerBook paid route that records its answer only through
 * payment.commit(). Spec (Authentication 2) and x402-v2.md §1, §8, §12.4.
 */
import t from 'tap'
import { wrapFetchWithPayment, x402Client } from '@x402/fetch'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { decodeHeader } from '../../../../serving/payments/x402.ts'
import type { SettleResponse } from '../../../../serving/payments/x402/types.ts'
import { LocalFacilitator } from '../../../../peers/LocalFacilitator.ts'
import { makeTempDir } from '../../../helpers/tmp.ts'
import { PAY_TO } from '../../../helpers/serving/server.ts'
import { requiredOf, signPayment, startX402Stack, testAccount, TEST_ADDRESS, withX402Stack } from '../../../helpers/serving/x402Stack.ts'

const account = testAccount()

async function setup(t: { teardown(fn: () => unknown): void }, opts: { remoteVerify?: boolean } = {}) {
  const facilitator = await LocalFacilitator.start()
  t.teardown(() => facilitator.close())
  facilitator.token.fund(TEST_ADDRESS, 1_000_000_000n)
  const dataDir = await makeTempDir(t)
  const stack = await withX402Stack(t, { dataDir, facilitator, ...opts })
  return { ...stack, dataDir, url: `${stack.server.url}/test/answers` }
}

/** A challenge, then a hand-signed payment for its requirement. */
async function challengeAndSign(url: string, o: Omit<Parameters<typeof signPayment>[0], 'account' | 'accepted'> = {}) {
  const res = await fetch(url, { method: 'POST' })
  const accepted = requiredOf(res).accepts[0]!
  return signPayment({ account, accepted, resourceUrl: url, ...o })
}

const post = (url: string, header?: string) =>
  fetch(url, { method: 'POST', headers: header ? { 'PAYMENT-SIGNATURE': header } : {} })

async function errorOf(res: Response) {
  return ((await res.json()) as { error: { code: string; retryable: boolean; detail: Record<string, unknown> & { reason: string } } }).error
}

t.test('the @x402/fetch reference client pays end to end: 402 → sign → retry → 200 with PAYMENT-RESPONSE', async (t) => {
  const s = await setup(t)
  const client = new x402Client()
  client.register('eip155:*', new ExactEvmScheme(account))
  const payFetch = wrapFetchWithPayment(fetch, client)

  const first = await post(s.url)
  t.equal(first.status, 402)
  t.equal((await errorOf(first)).code, 'PAYMENT_REQUIRED')
  const required = requiredOf(first)
  t.match(required, { x402Version: 2, accepts: [{ scheme: 'exact', network: 'eip155:8453', amount: '100000', payTo: PAY_TO }] })

  const res = await payFetch(s.url, { method: 'POST' })
  t.equal(res.status, 200)
  const body = (await res.json()) as { data: { answer_id: string; payment_id: string; payer: string }; meta: { pricing: { rail: string } } }
  t.equal(body.data.payer, TEST_ADDRESS, 'the verified payer reaches the handler')
  t.match(res.headers.get('cache-control'), /private/)
  const receipt = decodeHeader<SettleResponse>(res.headers.get('payment-response')!)
  t.equal(receipt.success, true)
  t.equal(receipt.network, 'eip155:8453')
  t.equal(receipt.payer, TEST_ADDRESS)
  t.equal(receipt.transaction, s.facilitator.token.transfers[0]!.transaction, 'the (fake) settlement transaction of the local facilitator')
  t.match(receipt.transaction, /^0x[0-9a-f]{64}$/)

  t.equal(s.facilitator.calls.verify, 1)
  t.equal(s.facilitator.calls.settle, 1)
  t.equal(s.facilitator.token.balanceOf(PAY_TO), 100_000n, 'exactly the price moved to payTo')
  t.equal(s.book.recorded.length, 1, 'the answer was recorded after settlement')
  t.equal(s.book.recorded[0]!.answer_id, body.data.answer_id)

  const read = await fetch(`${s.server.url}/test/answers/${body.data.answer_id}`)
  t.equal(read.status, 200, 'the free read serves the recorded answer')
})

t.test('PAYMENT_INVALID with precise reasons; nothing recorded, nothing settled', async (t) => {
  const s = await setup(t)
  const cases = [
    { why: 'forged signature', reason: 'invalid_exact_evm_payload_signature',
      o: { tamper: (p: { payload: { signature: string } }) => void (p.payload.signature = '0x' + 'ab'.repeat(65)) } },
    { why: 'wrong amount', reason: 'invalid_exact_evm_payload_authorization_value_mismatch', o: { authorization: { value: '99999' } } },
    { why: 'wrong payTo', reason: 'invalid_exact_evm_recipient_mismatch', o: { authorization: { to: '0x0000000000000000000000000000000000000001' } } },
    { why: 'expired authorization', reason: 'invalid_exact_evm_payload_authorization_valid_before', o: { authorization: { validBefore: String(Math.floor(Date.now() / 1000) - 1) } } },
  ]
  for (const c of cases) {
    const { header } = await challengeAndSign(s.url, c.o as never)
    const res = await post(s.url, header)
    t.equal(res.status, 402, c.why)
    const err = await errorOf(res)
    t.equal(err.code, 'PAYMENT_INVALID', c.why)
    t.equal(err.detail.reason, c.reason, c.why)
    t.equal(requiredOf(res).error, c.reason, 'a fresh challenge names the reason')
    t.equal(res.headers.get('payment-response'), null)
  }
  const garbage = await post(s.url, 'not base64!')
  t.equal((await errorOf(garbage)).detail.reason, 'invalid_payload')
  t.equal(s.book.computed, 0, 'the handler never ran')
  t.equal(s.facilitator.calls.settle, 0)
  t.equal(s.facilitator.token.transfers.length, 0)
})

t.test('a replayed nonce → 402 PAYMENT_REPLAYED, also after a server restart on the same data dir', async (t) => {
  const facilitator = await LocalFacilitator.start()
  t.teardown(() => facilitator.close())
  facilitator.token.fund(TEST_ADDRESS, 1_000_000_000n)
  const dataDir = await makeTempDir(t)
  const a = await startX402Stack({ dataDir, facilitator })
  const url = `${a.server.url}/test/answers`
  const { header, payload } = await challengeAndSign(url)
  t.equal((await post(url, header)).status, 200)
  const again = await post(url, header)
  t.equal(again.status, 402)
  const err = await errorOf(again)
  t.equal(err.code, 'PAYMENT_REPLAYED')
  t.equal(err.detail.nonce, payload.payload.authorization.nonce)
  await a.stop()

  const b = await startX402Stack({ dataDir, facilitator, book: a.book })
  t.teardown(() => b.stop())
  const url2 = `${b.server.url}/test/answers`
  const afterRestart = await post(url2, header)
  t.equal(afterRestart.status, 402)
  t.equal((await errorOf(afterRestart)).code, 'PAYMENT_REPLAYED', 'the nonce set survived the restart')
  t.equal(facilitator.calls.settle, 1, 'the replay never reached the facilitator')
  t.equal(a.book.recorded.length, 1)
})

t.test('a nonce claimed before a crash is never reusable, even though it was never settled', async (t) => {
  const s = await setup(t)
  // The handler ran and the process died before settle: simulate by claiming through the gate, then restarting.
  const { header, payload } = await challengeAndSign(s.url)
  await s.gate.nonces.insert(payload.payload.authorization.from, payload.payload.authorization.nonce, BigInt(payload.payload.authorization.validBefore))
  await s.stop()
  const b = await startX402Stack({ dataDir: s.dataDir, facilitator: s.facilitator })
  t.teardown(() => b.stop())
  const res = await post(`${b.server.url}/test/answers`, header)
  t.equal((await errorOf(res)).code, 'PAYMENT_REPLAYED')
  t.equal(s.facilitator.token.transfers.length, 0, 'nothing charged')
})

t.test('concurrent requests with one nonce: exactly one succeeds and one transfer settles', async (t) => {
  const s = await setup(t)
  const { header } = await challengeAndSign(s.url)
  const all = await Promise.all(Array.from({ length: 8 }, () => post(s.url, header)))
  const statuses = all.map((r) => r.status).sort()
  t.same(statuses, [200, 402, 402, 402, 402, 402, 402, 402])
  for (const r of all.filter((r) => r.status === 402)) t.equal((await errorOf(r)).code, 'PAYMENT_REPLAYED')
  t.equal(s.facilitator.token.transfers.length, 1)
  t.equal(s.book.recorded.length, 1)
})

t.test('facilitator down at settle → 402 with PAYMENT-RESPONSE success:false; nothing recorded, nothing charged', async (t) => {
  const s = await setup(t, { remoteVerify: false })
  for (const mode of ['down', 'error'] as const) {
    s.facilitator.mode = mode
    const { header } = await challengeAndSign(s.url)
    const res = await post(s.url, header)
    t.equal(res.status, 402, mode)
    const err = await errorOf(res)
    t.equal(err.code, 'PAYMENT_REQUIRED')
    t.equal(err.detail.reason, 'FACILITATOR_UNAVAILABLE')
    t.equal(err.detail.facilitator_error, mode === 'down' ? 'unreachable' : 'http')
    const receipt = decodeHeader<SettleResponse>(res.headers.get('payment-response')!)
    t.same(receipt, { success: false, errorReason: 'unexpected_settle_error', transaction: '', network: 'eip155:8453', payer: TEST_ADDRESS })
    t.ok(requiredOf(res).accepts.length === 1, 'with a fresh challenge to pay again')
  }
  t.equal(s.book.computed, 2, 'the handler computed answers')
  t.equal(s.book.recorded.length, 0, 'but none was recorded')
  t.equal(s.facilitator.token.transfers.length, 0, 'and nothing was charged')
  t.equal(s.facilitator.token.balanceOf(PAY_TO), 0n)
})

t.test('facilitator down at verify → 402 FACILITATOR_UNAVAILABLE before the handler runs', async (t) => {
  const s = await setup(t)
  s.facilitator.mode = 'down'
  const { header } = await challengeAndSign(s.url)
  const res = await post(s.url, header)
  t.equal(res.status, 402)
  t.equal((await errorOf(res)).detail.reason, 'FACILITATOR_UNAVAILABLE')
  t.equal(res.headers.get('payment-response'), null, 'nothing was settled, so no receipt')
  t.equal(s.book.computed, 0)
})

t.test('facilitator rejects settlement → 402 PAYMENT_INVALID naming its reason; nothing recorded', async (t) => {
  const s = await setup(t)
  s.facilitator.mode = 'reject'
  const { header } = await challengeAndSign(s.url)
  const res = await post(s.url, header)
  t.equal(res.status, 402)
  const err = await errorOf(res)
  t.equal(err.code, 'PAYMENT_INVALID')
  t.equal(err.detail.reason, 'insufficient_funds')
  t.match(decodeHeader<SettleResponse>(res.headers.get('payment-response')!), { success: false, errorReason: 'insufficient_funds' })
  t.equal(s.book.recorded.length, 0)
})

t.test('the reference facilitator\'s own checks: an unfunded payer is refused at verify', async (t) => {
  const s = await setup(t)
  const { privateKeyToAccount, generatePrivateKey } = await import('viem/accounts')
  const poor = privateKeyToAccount(generatePrivateKey())
  const first = await post(s.url)
  const { header } = await signPayment({ account: poor, accepted: requiredOf(first).accepts[0]!, resourceUrl: s.url })
  const res = await post(s.url, header)
  t.equal(res.status, 402)
  const err = await errorOf(res)
  t.equal(err.code, 'PAYMENT_INVALID')
  t.equal(err.detail.reason, 'invalid_exact_evm_insufficient_balance', 'the facilitator\'s reason string is passed through')
  t.equal(s.book.computed, 0)
})

t.test('a handler that fails after authorization is not settled; an unwired part refuses before the gate', async (t) => {
  const s = await setup(t)
  const { header } = await challengeAndSign(s.url)
  const res = await post(`${s.url}?fail=1`, header)
  t.equal(res.status, 503)
  t.equal((await errorOf(res)).code, 'PROVIDER_DOWN')
  t.equal(res.headers.get('payment-response'), null)
  t.equal(s.facilitator.calls.verify, 1, 'verified')
  t.equal(s.facilitator.calls.settle, 0, 'never settled')
  t.equal(s.facilitator.token.transfers.length, 0)
  t.equal(s.book.recorded.length, 0)
  t.equal((await errorOf(await post(s.url, header))).code, 'PAYMENT_REPLAYED', 'the nonce stays used; the client signs a new one')

  const fund = await fetch(`${s.server.url}/v1/funding`, { headers: { 'PAYMENT-SIGNATURE': (await challengeAndSign(s.url)).header } })
  t.equal(fund.status, 503, 'the registry funding route needs the unwired market part')
  t.equal(s.facilitator.calls.verify, 1, 'it refused before the gate')
})
