/**
 * X402Verifier reasons, one per rule of x402-v2.md §8 (steps 1–7), each with the reference reason string of §9.
 * Signatures are real (viem, the public TEST key); the clock is injected.
 */
import t from 'tap'
import { X402Verifier } from '../../../../serving/payments/x402/X402Verifier.ts'
import { encodeHeader, requirementsFor } from '../../../../serving/payments/x402.ts'
import { priceOf } from '../../../../product/billing/pricing.ts'
import { PAY_TO } from '../../../helpers/serving/server.ts'
import { signPayment, testAccount, TEST_ADDRESS } from '../../../helpers/serving/x402Stack.ts'

const NOW_S = 1_800_000_000
const verifier = new X402Verifier({ now: () => NOW_S * 1000 + 999 })
const ours = requirementsFor(priceOf('perp.funding', 0), PAY_TO)
const account = testAccount()
const sign = (o: Omit<Parameters<typeof signPayment>[0], 'account' | 'accepted' | 'nowS'> & { accepted?: typeof ours } = {}) =>
  signPayment({ account, accepted: ours, nowS: NOW_S, ...o })

t.test('a payload signed for our requirement passes', async (t) => {
  const { header, payload } = await sign()
  const r = await verifier.verify(header, ours)
  t.ok(r.ok)
  if (!r.ok) return
  t.equal(r.payment.payer, TEST_ADDRESS)
  t.equal(r.payment.nonce, payload.payload.authorization.nonce)
  t.same(r.payment.requirements, ours, 'our requirement is what goes to the facilitator')
  t.equal(ours.amount, '100000', 'perp.funding at rung 0 = 100 credits = $0.10')
})

t.test('step 1: decode', async (t) => {
  const cases: Array<[string, string, string]> = [
    ['', 'invalid_payload', 'empty'],
    ['not base64!', 'invalid_payload', 'not base64'],
    ['eyJhIjox-_', 'invalid_payload', 'base64url alphabet'],
    [Buffer.from('{not json').toString('base64'), 'invalid_payload', 'not JSON'],
    [encodeHeader([1, 2]), 'invalid_payload', 'not an object'],
    [encodeHeader({ x402Version: 1, accepted: ours }), 'invalid_x402_version', 'v1'],
    [encodeHeader({ x402Version: 2 }), 'invalid_payload', 'no accepted'],
    [encodeHeader({ x402Version: 2, accepted: { ...ours, scheme: 'upto' } }), 'invalid_scheme', 'scheme upto'],
    [encodeHeader({ x402Version: 2, accepted: ours }), 'invalid_payload', 'no payload'],
  ]
  for (const [header, reason, why] of cases) t.match(await verifier.verify(header, ours), { ok: false, reason }, why)
  for (const f of ['from', 'to', 'value', 'validAfter', 'validBefore', 'nonce'] as const) {
    const { header } = await sign({ tamper: (p) => void delete (p.payload.authorization as Partial<typeof p.payload.authorization>)[f] })
    t.match(await verifier.verify(header, ours), { ok: false, reason: 'invalid_payload', field: `/payload/authorization/${f}` }, `${f} missing`)
  }
  const numeric = await sign({ tamper: (p) => void ((p.payload.authorization as unknown as Record<string, unknown>).value = 100000) })
  t.match(await verifier.verify(numeric.header, ours), { ok: false, reason: 'invalid_payload', field: '/payload/authorization/value' }, 'value as a number')
  const noSig = await sign({ tamper: (p) => void delete (p.payload as Partial<typeof p.payload>).signature })
  t.match(await verifier.verify(noSig.header, ours), { ok: false, reason: 'invalid_payload', field: '/payload/signature' })
  const badNonce = await sign({ tamper: (p) => void (p.payload.authorization.nonce = '0x1234') })
  t.match(await verifier.verify(badNonce.header, ours), { ok: false, reason: 'invalid_payload', field: '/payload/authorization/nonce' })
})

t.test('steps 2–3: accepted must be our requirement; network has its own reason', async (t) => {
  const net = await sign({ accepted: { ...ours, network: 'eip155:84532' } })
  t.match(await verifier.verify(net.header, ours), { ok: false, reason: 'invalid_network' })
  for (const [field, value] of [['amount', '99999'], ['payTo', '0x0000000000000000000000000000000000000001'], ['asset', '0x036CbD53842c5426634e7929541eC2318f3dCF7e'], ['maxTimeoutSeconds', 3600]] as const) {
    const { header } = await sign({ accepted: { ...ours, [field]: value } })
    t.match(await verifier.verify(header, ours), { ok: false, reason: 'invalid_payment_requirements', field: `/accepted/${field}` }, `accepted.${field} differs`)
  }
  const wrongName = await sign({ accepted: { ...ours, extra: { name: 'USDC', version: '2' } } })
  t.match(await verifier.verify(wrongName.header, ours), { ok: false, reason: 'invalid_payment_requirements', field: '/accepted/extra/name' })
  const superset = await sign({ accepted: { ...ours, extra: { ...ours.extra, assetTransferMethod: 'eip3009' } as typeof ours.extra } })
  t.ok((await verifier.verify(superset.header, ours)).ok, 'extra may be a superset of ours')
  const lower = await sign({ accepted: { ...ours, payTo: ours.payTo.toLowerCase(), asset: ours.asset.toLowerCase() } })
  t.ok((await verifier.verify(lower.header, ours)).ok, 'addresses compare case-insensitively')
  const nextRung = requirementsFor(priceOf('perp.funding', 1), PAY_TO)
  const { header } = await sign()
  t.match(await verifier.verify(header, nextRung), { ok: false, reason: 'invalid_payment_requirements', field: '/accepted/amount' }, 'a ladder turn since the challenge')
})

t.test('step 4: signature', async (t) => {
  const forged = await sign({ tamper: (p) => void (p.payload.signature = p.payload.signature.slice(0, 10) + (p.payload.signature[10] === 'a' ? 'b' : 'a') + p.payload.signature.slice(11)) })
  t.match(await verifier.verify(forged.header, ours), { ok: false, reason: 'invalid_exact_evm_payload_signature' }, 'one flipped nibble')
  const otherFrom = await sign({ tamper: (p) => void (p.payload.authorization.from = '0x857b06519E91e3A54538791bDbb0E22373e36b66') })
  t.match(await verifier.verify(otherFrom.header, ours), { ok: false, reason: 'invalid_exact_evm_payload_signature' }, 'claims another payer')
  const raised = await sign({ tamper: (p) => void (p.payload.authorization.value = '1') })
  t.match(await verifier.verify(raised.header, ours), { ok: false, reason: 'invalid_exact_evm_payload_signature' }, 'value edited after signing')
  const foreignDomain = await sign({ domain: { name: 'USDC', version: '2', chainId: 8453, verifyingContract: ours.asset as `0x${string}` } })
  t.match(await verifier.verify(foreignDomain.header, ours), { ok: false, reason: 'invalid_exact_evm_payload_signature' }, 'signed with domain name USDC')
  const smart = await sign({ tamper: (p) => void (p.payload.signature = p.payload.signature + '00'.repeat(32)) })
  const r = await verifier.verify(smart.header, ours)
  t.match(r, { ok: false, reason: 'invalid_exact_evm_payload_signature', message: /97 bytes.*ERC-1271/ }, 'longer than 65 bytes: smart-wallet signature refused')
  const short = await sign({ tamper: (p) => void (p.payload.signature = p.payload.signature.slice(0, 130)) })
  t.match(await verifier.verify(short.header, ours), { ok: false, reason: 'invalid_exact_evm_payload_signature', message: /64 bytes/ })
})

t.test('step 5: recipient', async (t) => {
  const { header } = await sign({ authorization: { to: '0x0000000000000000000000000000000000000001' } })
  t.match(await verifier.verify(header, ours), { ok: false, reason: 'invalid_exact_evm_recipient_mismatch', payer: TEST_ADDRESS })
})

t.test('step 6: time window with the 6 s buffer', async (t) => {
  const at = async (validBefore: number, validAfter = 0) =>
    verifier.verify((await sign({ authorization: { validBefore: String(validBefore), validAfter: String(validAfter) } })).header, ours)
  t.match(await at(NOW_S + 5), { ok: false, reason: 'invalid_exact_evm_payload_authorization_valid_before' }, 'now + 5')
  t.ok((await at(NOW_S + 6)).ok, 'now + 6')
  t.match(await at(NOW_S - 100), { ok: false, reason: 'invalid_exact_evm_payload_authorization_valid_before' }, 'expired')
  t.ok((await at(NOW_S + 60, NOW_S)).ok, 'validAfter = now')
  t.ok((await at(NOW_S + 60, NOW_S - 600)).ok, 'validAfter = now − 600 (older clients)')
  t.match(await at(NOW_S + 60, NOW_S + 1), { ok: false, reason: 'invalid_exact_evm_payload_authorization_valid_after' }, 'not valid yet')
})

t.test('step 7: exact amount, not >=', async (t) => {
  for (const value of ['99999', '100001', '1000000']) {
    const { header } = await sign({ authorization: { value } })
    t.match(await verifier.verify(header, ours), { ok: false, reason: 'invalid_exact_evm_payload_authorization_value_mismatch' }, `value ${value}`)
  }
})
