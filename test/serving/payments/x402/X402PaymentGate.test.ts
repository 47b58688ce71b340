/**
 * detail.reason of the x402 rail stays within the closed registry (common/errors.ts): a facilitator's reason string
 * from the x402 list passes through; any other string is reported as the protocol's unexpected_settle_error, with the
 * string itself in detail.facilitator_reason and in the receipt (x402-v2.md §9: "treat as opaque strings; log them").
 */
import t from 'tap'
import { REASONS } from '../../../../common/errors.ts'
import { decodeHeader } from '../../../../serving/payments/x402.ts'
import type { SettleResponse } from '../../../../serving/payments/x402/types.ts'
import { LocalFacilitator } from '../../../../peers/LocalFacilitator.ts'
import { makeTempDir } from '../../../helpers/tmp.ts'
import { requiredOf, signPayment, testAccount, TEST_ADDRESS, withX402Stack } from '../../../helpers/serving/x402Stack.ts'

t.test('settlement refused: a listed reason passes through, an unlisted one is named beside the stand-in', async (t) => {
  const facilitator = await LocalFacilitator.start()
  t.teardown(() => facilitator.close())
  facilitator.token.fund(TEST_ADDRESS, 1_000_000_000n)
  const stack = await withX402Stack(t, { dataDir: await makeTempDir(t), facilitator })
  const url = `${stack.server.url}/test/answers`
  facilitator.mode = 'reject'

  const refused = async () => {
    const accepted = requiredOf(await fetch(url, { method: 'POST' })).accepts[0]!
    const { header } = await signPayment({ account: testAccount(), accepted, resourceUrl: url })
    const res = await fetch(url, { method: 'POST', headers: { 'PAYMENT-SIGNATURE': header } })
    const body = (await res.json()) as { error: { code: string; detail: Record<string, unknown> } }
    return { status: res.status, error: body.error, receipt: decodeHeader<SettleResponse>(res.headers.get('payment-response')!), required: requiredOf(res) }
  }

  facilitator.rejectReason = 'invalid_exact_evm_transaction_failed'
  const listed = await refused()
  t.match(listed, { status: 402, error: { code: 'PAYMENT_INVALID', detail: { reason: 'invalid_exact_evm_transaction_failed' } } })
  t.notOk('facilitator_reason' in listed.error.detail)

  facilitator.rejectReason = 'gas_price_spike_try_later'
  const unlisted = await refused()
  t.match(unlisted, { status: 402, error: { code: 'PAYMENT_INVALID', detail: { reason: 'unexpected_settle_error', facilitator_reason: 'gas_price_spike_try_later' } } })
  t.ok('unexpected_settle_error' in REASONS && !('gas_price_spike_try_later' in REASONS))
  t.equal(unlisted.receipt.errorReason, 'gas_price_spike_try_later', "the receipt keeps the facilitator's words")
  t.equal(unlisted.required.error, 'unexpected_settle_error', 'the fresh challenge names the registered reason')
  t.equal(stack.book.recorded.length, 0, 'nothing recorded')
})
