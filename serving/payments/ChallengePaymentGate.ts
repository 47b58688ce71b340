/**
 * The default gate until a verifier and a credit ledger are wired: every paid call is answered with the x402
 * challenge. It never grants access, so no paid data leaves the service unpaid.
 */
import { ServiceError } from '../../common/ServiceError.ts'
import type { Price } from '../../product/billing/pricing.ts'
import type { PaymentChallenge, PaymentGate, PaymentRequest } from './PaymentGate.ts'
import { buildPaymentRequired, encodeHeader } from './x402.ts'
import { REQUEST_HEADER, RESPONSE_HEADER } from '../http/apiHeaders.ts'

export class ChallengePaymentGate implements PaymentGate {
  constructor(private readonly payTo: string | null) {}

  async authorize(req: PaymentRequest, price: Price): Promise<PaymentChallenge> {
    const required = buildPaymentRequired(price, this.payTo, { url: req.resource_url, description: req.route_summary })
    // A signature or credit identity that cannot be checked here is named, not silently ignored.
    const reason = req.headers[REQUEST_HEADER.paymentSignature]
      ? 'PAYMENT_VERIFIER_UNWIRED'
      : req.headers[REQUEST_HEADER.payer]
        ? 'CREDITS_UNWIRED'
        : 'PAYMENT_REQUIRED'
    return {
      kind: 'challenge',
      error: new ServiceError('PAYMENT_REQUIRED', {
        headers: { [RESPONSE_HEADER.paymentRequired]: encodeHeader(required), 'Cache-Control': 'no-store' },
        detail: {
          reason,
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
