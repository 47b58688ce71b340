/**
 * The API's own HTTP header names, in one place. The code that sends or reads them uses these constants, and CORS
 * (serving/http/Cors.ts) derives its lists from them: a browser page on another origin may send only the request
 * headers its preflight allowed, and reads only the response headers named in Access-Control-Expose-Headers, so a
 * header added here is exposed by construction and one sent from anywhere else would not be.
 */
import { SIWX_HEADER } from '../../product/identity/SignInWithX.ts'

/** Response headers a client reads beyond the CORS-safelisted ones (Content-Type, Cache-Control, …). */
export const RESPONSE_HEADER = {
  requestId: 'x-request-id',
  rateLimitLimit: 'ratelimit-limit',
  rateLimitRemaining: 'ratelimit-remaining',
  rateLimitReset: 'ratelimit-reset',
  retryAfter: 'retry-after',
  /** Which time the answer lives in (present or a tape's virtual time). */
  dataTime: 'x-svc-data-time',
  /** x402 v2: the base64 PaymentRequired of a 402. */
  paymentRequired: 'PAYMENT-REQUIRED',
  /** x402 v2: the base64 settlement receipt of a paid answer (or of a failed settlement). */
  paymentResponse: 'PAYMENT-RESPONSE',
  creditsCharged: 'x-svc-credits-charged',
  creditsBalance: 'x-svc-credits-balance',
  /** How to prove the payer (401 PAYER_UNPROVEN, the sign-in 402). */
  wwwAuthenticate: 'www-authenticate',
  /** The methods of a 405. */
  allow: 'allow',
} as const

/**
 * Request headers any route may read besides those its request schema declares (the route registry adds those: the
 * payer header of the Arena, x-svc-ops, x-admin-key, …).
 */
export const REQUEST_HEADER = {
  contentType: 'content-type',
  authorization: 'authorization',
  /** x402 v2: the base64 PaymentPayload of a per-call payment. */
  paymentSignature: 'payment-signature',
  /** The credits rail's payer (every paid route accepts it). */
  payer: 'x-svc-payer',
  signInWithX: SIWX_HEADER,
} as const
