/**
 * The gate of a deployment with no payment recipient configured (SVC_PAY_TO unset, e.g. a local `npm start`):
 * paid routes answer 503 PROVIDER_DOWN naming PAYMENTS_UNWIRED instead of a 402 challenge that no one could settle.
 */
import type { ReasonCode } from '../errors.ts'
import { ServiceError } from '../ServiceError.ts'
import type { PaymentChallenge, PaymentGate } from './PaymentGate.ts'

export class UnwiredPaymentGate implements PaymentGate {
  async authorize(): Promise<PaymentChallenge> {
    return { kind: 'challenge', error: new ServiceError('PROVIDER_DOWN', { detail: { reason: 'PAYMENTS_UNWIRED' satisfies ReasonCode, missing: 'SVC_PAY_TO' } }) }
  }
}
