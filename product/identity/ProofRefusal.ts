/** Why a caller's proof of payer control was refused: one reason of the closed list (common/errors.ts REASONS). */
import { REASONS, type ReasonCode } from '../../common/errors.ts'
import { codedError } from '../../common/CodedError.ts'

const PROOF_REASONS = [
  'SIGN_IN_REQUIRED', 'SIGN_IN_MALFORMED', 'SIGN_IN_DOMAIN', 'SIGN_IN_URI', 'SIGN_IN_CHAIN', 'SIGN_IN_EXPIRED',
  'SIGN_IN_NONCE_UNKNOWN', 'SIGN_IN_NONCE_REPLAYED', 'SIGN_IN_SIGNATURE', 'PROOF_FOR_OTHER_PAYER', 'SESSION_INVALID',
] as const satisfies readonly ReasonCode[]

export type ProofReason = (typeof PROOF_REASONS)[number]

/** The code table is the reasons' own entries: one meaning per reason, written once in the error registry. */
const PROOF_CODES = Object.fromEntries(PROOF_REASONS.map((r) => [r, { retryable: false, meaning: REASONS[r].meaning }])) as {
  readonly [R in ProofReason]: { readonly retryable: false; readonly meaning: string }
}

export class ProofRefusal extends codedError(PROOF_CODES) {
  constructor(
    code: ProofReason,
    message: string,
    readonly detail: Record<string, unknown> = {},
  ) {
    super(code, message)
  }

  get reason(): ProofReason {
    return this.code
  }
}
