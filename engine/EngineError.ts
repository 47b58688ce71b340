import { codedError, type CodeTable } from '../common/CodedError.ts'
import type { ErrorCode, ReasonCode } from '../common/errors.ts'

/**
 * Typed refusals of the decision engine. Models may not import serving, so the engine has its own closed union; each
 * code names the registry code (common/errors.ts) it answers with on the wire (engine/EngineServices.ts), and the
 * machine reason that stands in when the throw gives none (otherwise the wire code repeats).
 */
export const ENGINE_ERRORS = {
  VALIDATION: { wire: 'VALIDATION', retryable: false, meaning: 'unknown question, asset or ruleset pin; an ambiguous lineage prefix; bad options' },
  REPLAY_INPUT_LOST: { wire: 'REPLAY_INPUT_LOST', retryable: false, meaning: 'journal missing, or its JCS SHA-256 differs from input_hash; fitted state or ruleset missing' },
  CLOCK_OPEN: { wire: 'CLOCK_OPEN', retryable: true, meaning: 'the next decision was asked while the previous clock is open' },
  PROVIDER_DOWN: { wire: 'PROVIDER_DOWN', retryable: true, meaning: 'no venue data yet, or an account-scoped question with no wallet provider (an error, never a decision)' },
  LEDGER_CONFLICT: {
    wire: 'INTERNAL',
    reason: 'LEDGER_CONFLICT',
    retryable: false,
    meaning: 'a record with a recorded decision_id (or outcome) but different content: refused, the ledger keeps the first',
  },
  ENGINE_CLOSED: { wire: 'PROVIDER_DOWN', reason: 'ENGINE_CLOSED', retryable: false, meaning: 'the engine was closed, or its ledger follower failed' },
} as const satisfies CodeTable<string> & Record<string, { wire: ErrorCode; reason?: ReasonCode }>

export type EngineErrorCode = keyof typeof ENGINE_ERRORS

/** Detail of a refusal; it becomes the wire error's detail, so its reason is one of the closed registry. */
export type EngineErrorDetail = { reason?: ReasonCode } & Record<string, unknown>

export class EngineError extends codedError(ENGINE_ERRORS) {
  constructor(
    code: EngineErrorCode,
    message: string,
    readonly detail: EngineErrorDetail = {},
  ) {
    super(code, message)
  }
}
