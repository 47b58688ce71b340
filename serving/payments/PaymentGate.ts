/**
 * The payment seam between the dispatcher and the rails (x402 per call, prepaid credits).
 *
 * Spec (Authentication 2–3): a paid route called without PAYMENT-SIGNATURE answers 402 with a base64
 * PAYMENT-REQUIRED header; every paid endpoint also accepts x-svc-payer (credits) instead. "On success the response
 * carries the settlement receipt in the base64 PAYMENT-RESPONSE header." Credits: "A call yielding neither a decision
 * nor a typed refusal reverses its debit."
 *
 * A paid call runs in four steps, driven by the Dispatcher:
 *
 *   1. grant = gate.authorize(req, price)   verify the payment and reserve it (x402: local verify + durable nonce
 *                                           insert; credits: an in-memory reservation). A PaymentChallenge ends it.
 *   2. handler(ctx)                         computes the answer WITHOUT writing it: what must exist only for a paid
 *                                           answer (a ledger row, a locked call, an armed hook) goes into the call's
 *                                           unit of work, ctx.unit, instead of being written.
 *   3. grant.settle(answer, unit)           captures the payment (x402: facilitator /settle; credits: the debit rows
 *                                           join the unit). { ok: false } ends the call with its error (x402: 402
 *                                           with PAYMENT-RESPONSE success:false); the unit is dropped, so nothing
 *                                           is recorded or charged.
 *   4. grant.recorded(unit), unit.commit()  the answer receipt joins the unit (credits), and the unit is appended as
 *                                           ONE atomic unit of the event log: the debit, the answer's records and
 *                                           the receipt land together or not at all (issue 11, item 7). Then the
 *                                           answer is written with settle's response_headers.
 *
 * settle() is told whether the answer is a refusal decision (credits: a refusal never consumes a free-allowance
 * question). A handler result with charge: false (a re-served recorded answer) is released with 'not_charged'
 * instead of settled.
 *
 * grant.release(cause) is called exactly once instead of settle when no answer is delivered (the handler threw, the
 * per-payer rate limit refused, or settle itself failed): the rail undoes its reservation. x402 burns the nonce anyway
 * (a used nonce is never reusable), so its release only logs. If the unit cannot be appended after an x402 payment
 * was captured, the call answers INTERNAL, logged with the payment_id so an operator can reconcile; a credits unit
 * that cannot be appended charged nothing.
 */
import type { ServiceError } from '../../common/ServiceError.ts'
import type { Price } from '../../product/billing/pricing.ts'
import type { PaidCall } from '../../pipeline/journal/PaidCall.ts'
import type { UnitOfWork } from '../../pipeline/journal/UnitOfWork.ts'

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
  /** The catalog question the call asks when the route knows it before the handler (free-allowance eligibility). */
  question_id?: string | null
  /**
   * The id the payment should carry when the rail lets the route name it: a credits debit takes it as its ref (an
   * outcome hook endpoint's debit has ref = the endpoint id). x402 payments keep the facilitator's id.
   */
  payment_ref?: string
}

export type SettleOutcome =
  | { ok: true; /** Headers for the success response (x402: PAYMENT-RESPONSE). */ response_headers?: Record<string, string> }
  | { ok: false; /** The refusal to answer with (carries its own headers, e.g. PAYMENT-RESPONSE success:false). */ error: ServiceError }

export type ReleaseCause = 'handler_failed' | 'rate_limited' | 'settle_failed' | 'not_charged' | 'payer_mismatch'

/** What settle() learns about the answer. */
export interface AnswerFacts {
  /** A refusal decision (stale_input, insufficient_confidence, suppress): 200 with probability 0. */
  refusal: boolean
}

/** What a rail returns from authorize(): the reserved payment and how to capture or undo it. */
export interface PaymentGrant {
  kind: 'paid'
  payment_id: string
  rail: 'x402' | 'credits'
  /** Verified payer address (per-payer rate limit applies); null when the rail does not identify one. */
  payer: string | null
  /** Headers to add to the success response known at authorize time. */
  response_headers?: Record<string, string>
  /**
   * Capture after the handler answered (step 3). The rail's own durable records (a credits debit) go into the call's
   * unit, appended atomically with what the answer writes. Absent: the payment was captured by authorize().
   */
  settle?(answer: AnswerFacts, unit: UnitOfWork): Promise<SettleOutcome>
  /** Adds the answer receipt to the call's unit, before it is committed (step 4). A throw answers INTERNAL instead. */
  recorded?(unit: UnitOfWork): Promise<void>
  /** Undo the reservation when no answer is delivered. Called at most once, never after a successful settle. */
  release?(cause: ReleaseCause): Promise<void>
}

export interface PaymentChallenge {
  kind: 'challenge'
  /** A 402 ServiceError carrying the PAYMENT-REQUIRED header and the envelope detail. */
  error: ServiceError
}

export interface PaymentGate {
  authorize(req: PaymentRequest, price: Price): Promise<PaymentGrant | PaymentChallenge>
}
