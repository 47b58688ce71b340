/**
 * A test PaymentGate that authorizes every paid call (rail 'credits', fixed payer) and records what it saw, so paid
 * routes can be exercised over real HTTP without a payment stack. Settles and releases are counted, nothing is moved.
 */
import type { PaymentGate, PaymentGrant, PaymentRequest, ReleaseCause } from '../../../serving/payments/PaymentGate.ts'
import type { Price } from '../../../product/billing/pricing.ts'

export class AuthorizingPaymentGate implements PaymentGate {
  readonly authorized: Array<{ route_id: string; pricing_key: string }> = []
  readonly settled: Array<{ payment_id: string; refusal: boolean }> = []
  readonly released: Array<{ payment_id: string; cause: ReleaseCause }> = []
  #n = 0

  constructor(readonly payer = '0x209693Bc6afc0C5328bA36FaF03C514EF312287C') {}

  async authorize(req: PaymentRequest, price: Price): Promise<PaymentGrant> {
    const payment_id = `test-${++this.#n}`
    this.authorized.push({ route_id: req.route_id, pricing_key: price.key })
    return {
      kind: 'paid',
      payment_id,
      rail: 'credits',
      payer: this.payer,
      settle: async (answer) => {
        this.settled.push({ payment_id, refusal: answer?.refusal ?? false })
        return { ok: true }
      },
      release: async (cause) => void this.released.push({ payment_id, cause }),
    }
  }
}
