/**
 * x402 v2 wire shapes the x402 rail reads and writes (reference: ../shared/reference/x402-v2.md §4, §5, §9).
 * PaymentRequirements / PaymentRequired (the challenge) live in ../x402.ts.
 */
import type { X402ProtocolReason } from '../../../common/errors.ts'
import type { PaymentRequirements } from '../x402.ts'

export type Hex = `0x${string}`

/** The EIP-3009 TransferWithAuthorization message: every number a decimal string, nonce 0x + 32 bytes. */
export interface Eip3009Authorization {
  from: string
  to: string
  value: string
  validAfter: string
  validBefore: string
  nonce: string
}

/** Decoded PAYMENT-SIGNATURE (§4). */
export interface PaymentPayload {
  x402Version: 2
  resource?: { url: string; description?: string; mimeType?: string }
  /** The PaymentRequirements the client chose, echoed; never trusted for amounts or addresses. */
  accepted: PaymentRequirements & { extra: Record<string, unknown> }
  payload: { signature: string; authorization: Eip3009Authorization }
  extensions?: Record<string, unknown>
}

/** Decoded PAYMENT-RESPONSE and the facilitator's /settle answer (§5). */
export interface SettleResponse {
  success: boolean
  transaction: string
  network: string
  payer?: string
  errorReason?: string
  errorMessage?: string
}

/** The facilitator's /verify answer (§5). */
export interface VerifyResponse {
  isValid: boolean
  invalidReason?: string
  invalidMessage?: string
  payer?: string
}

/**
 * Reason strings of the x402 spec and @x402/evm@2.27.0 (§9) that this rail's own checks emit in detail.reason. They
 * are the protocol's own machine reasons, kept verbatim (lower snake case) and registered in common/errors.ts.
 */
export const X402_REASONS = [
  'invalid_payload',
  'invalid_x402_version',
  'invalid_scheme',
  'invalid_network',
  'invalid_payment_requirements',
  'invalid_exact_evm_payload_signature',
  'invalid_exact_evm_recipient_mismatch',
  'invalid_exact_evm_payload_authorization_value_mismatch',
  'invalid_exact_evm_payload_authorization_valid_before',
  'invalid_exact_evm_payload_authorization_valid_after',
] as const satisfies readonly X402ProtocolReason[]

export type X402Reason = (typeof X402_REASONS)[number]
