/**
 * Typed refusals of the decision engine. Models may not import serving, so the engine has its own closed union;
 * engine/EngineServices.ts maps each code onto the error registry (common/errors.ts).
 */
export const ENGINE_ERRORS = {
  /** Unknown question, asset or ruleset pin; an ambiguous lineage prefix. → 400 VALIDATION */
  VALIDATION: 'VALIDATION',
  /** Journal missing, or its JCS SHA-256 differs from input_hash; fitted state missing. → 409 REPLAY_INPUT_LOST */
  REPLAY_INPUT_LOST: 'REPLAY_INPUT_LOST',
  /** Next decision asked while the previous clock is open. → 409 CLOCK_OPEN */
  CLOCK_OPEN: 'CLOCK_OPEN',
  /** An account-scoped question with no wallet provider wired: an error, never a decision. → 503 PROVIDER_DOWN */
  PROVIDER_DOWN: 'PROVIDER_DOWN',
  /** A record with a recorded decision_id (or outcome) but different content: refused, the ledger keeps the first. */
  LEDGER_CONFLICT: 'LEDGER_CONFLICT',
  /** The engine was closed, or its ledger follower failed. → 503 */
  ENGINE_CLOSED: 'ENGINE_CLOSED',
} as const

export type EngineErrorCode = keyof typeof ENGINE_ERRORS

export class EngineError extends Error {
  override name = 'EngineError'
  constructor(
    readonly code: EngineErrorCode,
    message: string,
    readonly detail: { reason?: string } & Record<string, unknown> = {},
  ) {
    super(message)
  }
}
