/** Why a caller's proof of payer control was refused: one reason of the closed list (common/errors.ts). */
import type { ReasonCode } from '../../common/errors.ts'

export type ProofReason = Extract<
  ReasonCode,
  | 'SIGN_IN_REQUIRED' | 'SIGN_IN_MALFORMED' | 'SIGN_IN_DOMAIN' | 'SIGN_IN_URI' | 'SIGN_IN_CHAIN' | 'SIGN_IN_EXPIRED'
  | 'SIGN_IN_NONCE_UNKNOWN' | 'SIGN_IN_NONCE_REPLAYED' | 'SIGN_IN_SIGNATURE' | 'PROOF_FOR_OTHER_PAYER' | 'SESSION_INVALID'
>

export class ProofRefusal extends Error {
  constructor(
    readonly reason: ProofReason,
    message: string,
    readonly detail: Record<string, unknown> = {},
  ) {
    super(message)
  }
}
