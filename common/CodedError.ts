/**
 * Base of the stage-local error classes whose `code` is one of a closed `as const` set, so callers branch on the
 * code rather than on message text. `name` is the subclass name.
 */
export class CodedError<Code extends string> extends Error {
  readonly code: Code

  constructor(code: Code, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = new.target.name
    this.code = code
  }
}
