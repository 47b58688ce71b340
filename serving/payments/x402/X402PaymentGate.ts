/**
 * The x402 rail: per-call payment by an EIP-3009 USDC authorization on Base, settled through a facilitator.
 *
 * Spec (Authentication 2): "1. Call a paid route without PAYMENT-SIGNATURE: response 402 with a base64
 * PAYMENT-REQUIRED header carrying the requirements (amount derived from the price table). 2. Sign the transfer
 * authorization and retry with a base64 PAYMENT-SIGNATURE header. 3. On success the response carries the settlement
 * receipt in the base64 PAYMENT-RESPONSE header. 4. A replayed one-time nonce gives 402 PAYMENT_REPLAYED; a bad
 * payload gives 402 PAYMENT_INVALID; a missing payment gives 402 PAYMENT_REQUIRED."
 *
 * authorize(): local verification (X402Verifier) → durable nonce claim (NonceStore, before any paid work) →
 * facilitator /verify (balance and on-chain state; optional) → a grant whose settle() calls facilitator /settle.
 * x402-v2.md §8: "Reference order: verify → run handler → settle → attach PAYMENT-RESPONSE"; §1: "Settlement
 * failure: 402 with PAYMENT-RESPONSE (success:false)". Every 402 of this rail also carries a fresh PAYMENT-REQUIRED
 * so a client can sign again. A used nonce stays used whatever happens after the claim.
 */
import { createHash } from 'node:crypto'
import type { Logger } from 'pino'
import { childLogger } from '../../../common/logger.ts'
import { isX402ProtocolReason, type ErrorCode, type ReasonCode } from '../../../common/errors.ts'
import { ServiceError } from '../../../common/ServiceError.ts'
import type { Price } from '../../../product/billing/pricing.ts'
import type { PaymentChallenge, PaymentGate, PaymentGrant, PaymentRequest, SettleOutcome } from '../PaymentGate.ts'
import { BASE_NETWORK, buildPaymentRequired, encodeHeader, requirementsFor } from '../x402.ts'
import { FacilitatorClient } from './FacilitatorClient.ts'
import { FacilitatorError } from './FacilitatorError.ts'
import { NonceStore } from './NonceStore.ts'
import type { SettleResponse } from './types.ts'
import { X402Verifier, type VerifiedPayment } from './X402Verifier.ts'
import { REQUEST_HEADER, RESPONSE_HEADER } from '../../http/apiHeaders.ts'

export interface X402PaymentGateOptions {
  /** Recipient on Base (SVC_PAY_TO). */
  payTo: string
  /** Directory of the durable nonce set. */
  dataDir: string
  facilitator: FacilitatorClient
  /** Epoch milliseconds. */
  now?: () => number
  /** Ask the facilitator's /verify before the handler runs (reference order). Default true. */
  remoteVerify?: boolean
  nonceSkewSeconds?: number
  logger?: Logger
}

export class X402PaymentGate implements PaymentGate {
  private constructor(
    private readonly payTo: string,
    private readonly verifier: X402Verifier,
    readonly nonces: NonceStore,
    private readonly facilitator: FacilitatorClient,
    private readonly remoteVerify: boolean,
    private readonly log: Logger,
  ) {}

  static async open(opts: X402PaymentGateOptions): Promise<X402PaymentGate> {
    const now = opts.now ?? Date.now
    const nonces = await NonceStore.open({ dir: opts.dataDir, now, ...(opts.nonceSkewSeconds !== undefined ? { skewSeconds: opts.nonceSkewSeconds } : {}) })
    return new X402PaymentGate(
      opts.payTo,
      new X402Verifier({ now }),
      nonces,
      opts.facilitator,
      opts.remoteVerify ?? true,
      opts.logger ?? childLogger('x402'),
    )
  }

  close(): Promise<void> {
    return this.nonces.close()
  }

  async authorize(req: PaymentRequest, price: Price): Promise<PaymentGrant | PaymentChallenge> {
    const ours = requirementsFor(price, this.payTo)
    const header = req.headers[REQUEST_HEADER.paymentSignature]
    if (!header) return this.challenge('PAYMENT_REQUIRED', req, price, { reason: 'PAYMENT_REQUIRED' })

    const v = await this.verifier.verify(header, ours)
    if (!v.ok) {
      return this.challenge('PAYMENT_INVALID', req, price, {
        reason: v.reason,
        message: `The payment payload is invalid: ${v.message}.`,
        detail: { ...(v.field ? { field: v.field } : {}), ...(v.payer ? { payer: v.payer } : {}) },
      })
    }
    const p = v.payment
    const paymentId = paymentIdOf(p)

    // Claimed before any paid work; durable when insert resolves.
    if (!(await this.nonces.insert(p.payer, p.nonce, p.validBefore))) {
      return this.challenge('PAYMENT_REPLAYED', req, price, { reason: 'PAYMENT_REPLAYED', detail: { payer: p.payer, nonce: p.nonce } })
    }

    if (this.remoteVerify) {
      let verdict
      try {
        verdict = await this.facilitator.verify(p.payload, p.requirements)
      } catch (err) {
        return this.challenge('PAYMENT_REQUIRED', req, price, this.unavailable(err, paymentId))
      }
      if (!verdict.isValid) {
        this.log.info({ payment_id: paymentId, payer: p.payer, reason: verdict.invalidReason }, 'facilitator rejected payment at verify')
        const given = verdict.invalidReason
        return this.challenge('PAYMENT_INVALID', req, price, {
          reason: protocolReason(given, 'unexpected_verify_error'),
          message: `The facilitator rejected the payment: ${given ?? 'no reason given'}.`,
          detail: { payer: p.payer, ...unlisted(given) },
        })
      }
    }

    return {
      kind: 'paid',
      payment_id: paymentId,
      rail: 'x402',
      payer: p.payer,
      settle: () => this.settle(p, paymentId, req, price),
      release: async (cause) => {
        // Nothing was settled, so nothing was charged; the nonce stays used (the client signs a fresh one).
        this.log.info({ payment_id: paymentId, payer: p.payer, cause }, 'x402 payment released unsettled')
      },
    }
  }

  private async settle(p: VerifiedPayment, paymentId: string, req: PaymentRequest, price: Price): Promise<SettleOutcome> {
    let r: SettleResponse
    try {
      r = await this.facilitator.settle(p.payload, p.requirements)
    } catch (err) {
      const receipt: SettleResponse = { success: false, errorReason: 'unexpected_settle_error', transaction: '', network: BASE_NETWORK, payer: p.payer }
      const c = this.challenge('PAYMENT_REQUIRED', req, price, this.unavailable(err, paymentId), { [RESPONSE_HEADER.paymentResponse]: encodeHeader(receipt) })
      return { ok: false, error: c.error }
    }
    if (!r.success || r.network !== BASE_NETWORK) {
      const given = r.success ? 'unexpected_settle_error' : (r.errorReason ?? 'unexpected_settle_error')
      // settlement_pending: broadcast without a receipt; the transfer may still land, so it is logged for reconciliation.
      this.log.warn({ payment_id: paymentId, payer: p.payer, reason: given, transaction: r.transaction, network: r.network }, 'x402 settlement failed')
      // The receipt repeats the facilitator's own words; detail.reason stays within the registry.
      const receipt: SettleResponse = { success: false, errorReason: given, transaction: r.success ? '' : r.transaction, network: BASE_NETWORK, payer: r.payer ?? p.payer }
      const c = this.challenge('PAYMENT_INVALID', req, price, {
        reason: protocolReason(given, 'unexpected_settle_error'),
        message: `Settlement failed: ${given}.`,
        detail: { payer: p.payer, ...unlisted(given) },
      }, { [RESPONSE_HEADER.paymentResponse]: encodeHeader(receipt) })
      return { ok: false, error: c.error }
    }
    const receipt: SettleResponse = { success: true, transaction: r.transaction, network: r.network, payer: r.payer ?? p.payer }
    this.log.info({ payment_id: paymentId, payer: p.payer, transaction: r.transaction, amount: p.requirements.amount }, 'x402 payment settled')
    return { ok: true, response_headers: { [RESPONSE_HEADER.paymentResponse]: encodeHeader(receipt) } }
  }

  private unavailable(err: unknown, paymentId: string): ChallengeSpec {
    if (!(err instanceof FacilitatorError)) throw err
    this.log.warn({ payment_id: paymentId, kind: err.kind, operation: err.operation, status: err.status }, 'facilitator unavailable')
    return {
      reason: 'FACILITATOR_UNAVAILABLE' satisfies ReasonCode,
      message: `The payment facilitator could not ${err.operation} the payment (${err.kind}); nothing was charged. Sign a new authorization and retry.`,
      detail: { facilitator_error: err.kind },
      retryAfterMs: err.retryAfterMs,
    }
  }

  /** A 402 of this rail: the envelope plus a fresh PAYMENT-REQUIRED whose `error` names the reason. */
  private challenge(code: ErrorCode, req: PaymentRequest, price: Price, spec: ChallengeSpec, extraHeaders: Record<string, string> = {}): PaymentChallenge {
    const required = buildPaymentRequired(
      price,
      this.payTo,
      { url: req.resource_url, description: req.route_summary },
      code === 'PAYMENT_REQUIRED' && spec.reason === 'PAYMENT_REQUIRED' ? undefined : spec.reason,
    )
    return {
      kind: 'challenge',
      error: new ServiceError(code, {
        ...(spec.message ? { message: spec.message } : {}),
        retryAfterMs: spec.retryAfterMs ?? null,
        headers: { [RESPONSE_HEADER.paymentRequired]: encodeHeader(required), 'Cache-Control': 'no-store', ...extraHeaders },
        detail: {
          reason: spec.reason,
          ...spec.detail,
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

interface ChallengeSpec {
  reason: ReasonCode
  message?: string
  detail?: Record<string, unknown>
  retryAfterMs?: number | null
}

/**
 * A facilitator's reason string as detail.reason: one of the x402 list as given, else the stand-in (x402-v2 §9:
 * "treat as opaque strings; log them"; the registry stays closed, the string itself goes to facilitator_reason).
 */
function protocolReason(given: string | undefined, standIn: 'unexpected_verify_error' | 'unexpected_settle_error'): ReasonCode {
  return given !== undefined && isX402ProtocolReason(given) ? given : standIn
}

function unlisted(given: string | undefined): { facilitator_reason?: string } {
  return given !== undefined && !isX402ProtocolReason(given) ? { facilitator_reason: given } : {}
}

/** Stable id of one authorization: the same (payer, nonce) always names the same payment. */
function paymentIdOf(p: VerifiedPayment): string {
  return 'x402_' + createHash('sha256').update(`${p.payer.toLowerCase()}:${p.nonce}`).digest('hex').slice(0, 32)
}
