/**
 * The composite gate: picks the rail by header.
 *
 * Spec (Authentication 2–3): a paid route takes a per-call x402 payment in PAYMENT-SIGNATURE, or "x-svc-payer (the
 * Base address holding credits) instead of PAYMENT-SIGNATURE"; with neither, the x402 challenge.
 *
 *   PAYMENT-SIGNATURE → the x402 rail (when wired; else the challenge names PAYMENT_VERIFIER_UNWIRED)
 *   x-svc-payer       → the credits rail
 *   neither           → the challenge (the x402 rail's own when wired)
 *
 * Spec (Billing): "Credit purchase routes currently advertise a payment challenge that this deployment cannot settle
 * (no top-up rail wired)": without an x402 rail, challenges on billing.* keys say so in detail.settlement_note.
 */
import { ServiceError } from '../../common/ServiceError.ts'
import type { Price } from '../../product/billing/pricing.ts'
import { ChallengePaymentGate } from './ChallengePaymentGate.ts'
import type { PaymentChallenge, PaymentGate, PaymentGrant, PaymentRequest } from './PaymentGate.ts'
import { REQUEST_HEADER } from '../http/apiHeaders.ts'
export interface RailRouterOptions {
  payTo: string | null
  /** The x402 rail; absent when no verifier/facilitator is wired. */
  x402?: PaymentGate
  /** The credits rail; absent when no credit ledger is wired. */
  credits?: PaymentGate
  /** Answers calls no wired rail takes (default: the x402 challenge, which offers no requirement when payTo is null). */
  fallback?: PaymentGate
}

export const NO_TOP_UP_RAIL = 'no top-up rail wired: this deployment cannot settle credit purchases; the working refill is an operator grant'

export class RailRouter implements PaymentGate {
  private readonly challenge: PaymentGate

  constructor(private readonly options: RailRouterOptions) {
    this.challenge = options.fallback ?? new ChallengePaymentGate(options.payTo)
  }

  async authorize(req: PaymentRequest, price: Price): Promise<PaymentGrant | PaymentChallenge> {
    if (req.headers[REQUEST_HEADER.paymentSignature] !== undefined) {
      return this.options.x402 ? this.options.x402.authorize(req, price) : this.unsettleable(req, price)
    }
    if (req.headers[REQUEST_HEADER.payer] !== undefined && this.options.credits) return this.options.credits.authorize(req, price)
    return this.options.x402 ? this.options.x402.authorize(req, price) : this.unsettleable(req, price)
  }

  private async unsettleable(req: PaymentRequest, price: Price): Promise<PaymentChallenge> {
    const c = (await this.challenge.authorize(req, price)) as PaymentChallenge
    if (!price.key.startsWith('billing.') || c.error.status !== 402) return c
    const e = c.error
    return {
      kind: 'challenge',
      error: new ServiceError(e.code, { message: e.message, headers: e.headers, detail: { ...e.detail, settlement_note: NO_TOP_UP_RAIL } }),
    }
  }
}
