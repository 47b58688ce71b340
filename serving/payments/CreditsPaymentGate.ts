/**
 * The credits rail: a paid call with x-svc-payer reserves the route's price in credits at the current ladder rung
 * (the billing domain's rules: product/billing/CreditLedger.ts reserve/settleHoldIn), and the debit is written
 * (durably) only once the handler answered.
 *
 * Spec (Authentication 3): "every paid endpoint accepts x-svc-payer (the Base address holding credits) instead of
 * PAYMENT-SIGNATURE. When the balance cannot cover the price, the response is the standard x402 challenge with
 * detail.reason INSUFFICIENT_BALANCE and fields balance and required_credits."
 *
 * authorize() reserves; settle() puts the debit rows into the call's unit of work and recorded() the answer receipt,
 * so the debit, the answer and its receipt are appended as one atomic unit (the 200 is written only after it is
 * durable); release() drops the reservation (handler threw, rate-limited, a re-served repeat): nothing is written.
 */
import { ServiceError } from '../../common/ServiceError.ts'
import type { ReasonCode } from '../../common/errors.ts'
import { ADDRESS_PATTERN } from '../../common/schema.ts'
import type { Price } from '../../product/billing/pricing.ts'
import { ENTRY_TIER_QUESTIONS, type CreditLedger, type Shortfall } from '../../product/billing/CreditLedger.ts'
import type { UnitOfWork } from '../../pipeline/journal/UnitOfWork.ts'
import type { PaymentChallenge, PaymentGate, PaymentGrant, PaymentRequest, SettleOutcome } from './PaymentGate.ts'
import { buildPaymentRequired, encodeHeader } from './x402.ts'
import { RESPONSE_HEADER } from '../http/apiHeaders.ts'

export const PAYER_HEADER = 'x-svc-payer'

/**
 * A payer's price adjustment on the credits rail: the Arena's rank discount (product/arena: only the premium above the
 * 1,000-credit judgment floor is discounted). Credits debits only: an x402 challenge is priced before the payer is
 * known, so it pays list price (docs/decisions.md).
 */
export interface CreditsDiscount {
  creditsFor(payer: string, credits: number): number
}

/** A payer header that is no address: the caller's typo, answered before anything asks it to sign or pay. */
export function malformedPayer(): ServiceError {
  return new ServiceError('VALIDATION', {
    message: 'x-svc-payer must be a 0x-prefixed 20-byte hex address.',
    detail: { reason: 'REQUEST_VALIDATION_FAILED' satisfies ReasonCode, field: `/headers/${PAYER_HEADER}` },
  })
}

export class CreditsPaymentGate implements PaymentGate {
  constructor(
    private readonly ledger: CreditLedger,
    private readonly payTo: string | null,
    private readonly discount: CreditsDiscount | null = null,
  ) {}

  async authorize(req: PaymentRequest, price: Price): Promise<PaymentGrant | PaymentChallenge> {
    const payer = req.headers[PAYER_HEADER]
    if (payer === undefined || !ADDRESS_PATTERN.test(payer)) throw malformedPayer()
    const credits = this.discount && !price.key.startsWith('billing.') ? this.discount.creditsFor(payer, price.credits) : price.credits
    const payable = credits === price.credits ? price : { ...price, credits }
    const hold = this.ledger.reserve(payer, payable, req.question_id, req.payment_ref)
    if (hold.kind === 'short') return this.insufficient(req, payable, hold)
    const ledger = this.ledger
    return {
      kind: 'paid',
      payment_id: hold.payment_id,
      rail: 'credits',
      payer: hold.payer,
      async settle(answer: { refusal: boolean }, unit: UnitOfWork): Promise<SettleOutcome> {
        const { charged, balance } = ledger.settleHoldIn(hold, { refusal: answer.refusal }, unit)
        return { ok: true, response_headers: { [RESPONSE_HEADER.creditsCharged]: String(charged), [RESPONSE_HEADER.creditsBalance]: String(balance) } }
      },
      async recorded(unit: UnitOfWork): Promise<void> {
        ledger.answeredIn(hold, unit)
      },
      async release(): Promise<void> {
        ledger.release(hold)
      },
    }
  }

  /**
   * `balance` is the payer's balance as GET /v1/billing/credits reports it, so the two never disagree (issue 14: the
   * 402 said 0 beside 3000 of free allowance); what this call could actually use is `spendable_credits`, and free
   * allowance the call may not use is named with the reason.
   */
  private insufficient(req: PaymentRequest, price: Price, short: Shortfall): PaymentChallenge {
    const required = buildPaymentRequired(price, this.payTo, { url: req.resource_url, description: req.route_summary }, 'insufficient credit balance')
    const excluded = short.freeAllowanceExcluded > 0
    const covers = `the free allowance covers entry-tier questions only (${ENTRY_TIER_QUESTIONS.join(', ')})`
    return {
      kind: 'challenge',
      error: new ServiceError('PAYMENT_REQUIRED', {
        message: excluded
          ? `The credit balance (${short.balance}) cannot cover this call: ${short.freeAllowanceExcluded} of it is free allowance, and ${covers}. Top up, or pay per call with PAYMENT-SIGNATURE.`
          : 'The credit balance cannot cover this call; top up, or pay per call with PAYMENT-SIGNATURE.',
        headers: { [RESPONSE_HEADER.paymentRequired]: encodeHeader(required), 'Cache-Control': 'no-store' },
        detail: {
          reason: 'INSUFFICIENT_BALANCE' satisfies ReasonCode,
          balance: short.balance,
          spendable_credits: short.spendable,
          ...(excluded ? { free_allowance_credits: short.freeAllowanceExcluded, free_allowance_note: covers } : {}),
          required_credits: price.credits,
          pricing_key: price.key,
          credits: price.credits,
          amount: price.amount_atomic,
          usd: price.usd,
          rung: price.rung,
        },
      }),
    }
  }
}
