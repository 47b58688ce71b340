/**
 * The payment seam between the dispatcher and the rails (x402 per call, prepaid credits).
 *
 * Spec (Authentication 2–3): a paid route called without PAYMENT-SIGNATURE answers 402 with a base64
 * PAYMENT-REQUIRED header; every paid endpoint also accepts x-svc-payer (credits) instead.
 */
import type { ServiceError } from '../ServiceError.ts'
import type { Price } from '../pricing.ts'

/** What the gate sees of a request: a plain copy, safe after awaits. */
export interface PaymentRequest {
  request_id: string
  method: string
  path: string
  /** Absolute URL of the resource, used as x402 resource.url. */
  resource_url: string
  headers: Readonly<Record<string, string>>
  route_id: string
  route_summary: string
}

export interface PaymentAuthorized {
  kind: 'paid'
  payment_id: string
  rail: 'x402' | 'credits'
  /** Verified payer address (per-payer rate limit applies); null when the rail does not identify one. */
  payer: string | null
  /** Headers to add to the success response (e.g. PAYMENT-RESPONSE). */
  response_headers?: Record<string, string>
}

export interface PaymentChallenge {
  kind: 'challenge'
  /** A 402 ServiceError carrying the PAYMENT-REQUIRED header and the envelope detail. */
  error: ServiceError
}

export interface PaymentGate {
  authorize(req: PaymentRequest, price: Price): Promise<PaymentAuthorized | PaymentChallenge>
}
