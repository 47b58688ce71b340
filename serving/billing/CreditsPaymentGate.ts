/**
 * The credits rail: a paid call with x-svc-payer reserves the route's price in credits at the current ladder rung,
 * and the debit is written (durably) only once the handler answered.
 *
 * Spec (Authentication 3): "every paid endpoint accepts x-svc-payer (the Base address holding credits) instead of
 * PAYMENT-SIGNATURE. When the balance cannot cover the price, the response is the standard x402 challenge with
 * detail.reason INSUFFICIENT_BALANCE and fields balance and required_credits. A call yielding neither a decision nor
 * a typed refusal reverses its debit."
 *
 * authorize() holds; settle() commits the debit rows (the 200 is written only after they are durable); release()
 * drops the hold (handler threw, rate-limited, a re-served repeat): nothing is written, so nothing needs reversing.
 * A refusal decision answered from the free allowance is released too: "a refusal never consumes a question".
 * Credit purchases (packs, plans) never take credits: PLAN_NOT_RECHARGEABLE (docs/decisions.md).
 */
import { questionById } from '../../models/questions/index.ts'
import { ServiceError } from '../ServiceError.ts'
import type { ReasonCode } from '../errors.ts'
import type { Price } from '../pricing.ts'
import type { PaymentChallenge, PaymentGate, PaymentGrant, PaymentRequest, SettleOutcome } from '../payments/PaymentGate.ts'
import { buildPaymentRequired, encodeHeader } from '../payments/x402.ts'
import type { CreditLedger } from './CreditLedger.ts'

export const PAYER_HEADER = 'x-svc-payer'
const ADDRESS = /^0x[0-9a-fA-F]{40}$/

/** Spec (Limits): free allowance applies to S01, S05, S06 — the questions the registry marks entryTier. */
export function isEntryTier(questionId: string | null | undefined): boolean {
  return !!questionId && questionById(questionId)?.entryTier === true
}

export class CreditsPaymentGate implements PaymentGate {
  constructor(
    private readonly ledger: CreditLedger,
    private readonly payTo: string | null,
  ) {}

  async authorize(req: PaymentRequest, price: Price): Promise<PaymentGrant | PaymentChallenge> {
    const payer = req.headers[PAYER_HEADER]
    if (payer === undefined || !ADDRESS.test(payer)) {
      throw new ServiceError('VALIDATION', {
        message: 'x-svc-payer must be a 0x-prefixed 20-byte hex address.',
        detail: { reason: 'REQUEST_VALIDATION_FAILED' satisfies ReasonCode, field: `/headers/${PAYER_HEADER}` },
      })
    }
    if (price.key.startsWith('billing.')) {
      throw new ServiceError('PLAN_NOT_RECHARGEABLE', {
        detail: { pricing_key: price.key, rail: 'credits', settlement_note: 'credit purchases are paid by x402, never from credits' },
      })
    }
    const hold = this.ledger.hold(payer, price.credits, { key: price.key, entryTier: isEntryTier(req.question_id) })
    if (hold.kind === 'short') return this.insufficient(req, price, hold.balance)
    const ledger = this.ledger
    return {
      kind: 'paid',
      payment_id: hold.payment_id,
      rail: 'credits',
      payer: hold.payer,
      async settle(answer?: { refusal: boolean }): Promise<SettleOutcome> {
        if (hold.scout && answer?.refusal) {
          ledger.release(hold)
          return { ok: true, response_headers: { 'x-svc-credits-charged': '0', 'x-svc-credits-balance': String(ledger.balance(payer)) } }
        }
        const rows = await ledger.commit(hold)
        const charged = -rows.reduce((s, r) => s + r.amount, 0)
        return { ok: true, response_headers: { 'x-svc-credits-charged': String(charged), 'x-svc-credits-balance': String(ledger.balance(payer)) } }
      },
      async recorded(): Promise<void> {
        await ledger.answered(hold)
      },
      async release(): Promise<void> {
        ledger.release(hold)
      },
    }
  }

  private insufficient(req: PaymentRequest, price: Price, balance: number): PaymentChallenge {
    const required = buildPaymentRequired(price, this.payTo, { url: req.resource_url, description: req.route_summary }, 'insufficient credit balance')
    return {
      kind: 'challenge',
      error: new ServiceError('PAYMENT_REQUIRED', {
        message: 'The credit balance cannot cover this call; top up, or pay per call with PAYMENT-SIGNATURE.',
        headers: { 'PAYMENT-REQUIRED': encodeHeader(required), 'Cache-Control': 'no-store' },
        detail: {
          reason: 'INSUFFICIENT_BALANCE' satisfies ReasonCode,
          balance,
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
