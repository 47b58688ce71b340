/**
 * The base of every error the code base throws on purpose. `code` is one of a closed `as const` set of the stage that
 * throws it, so callers branch on the code rather than on message text; `retryable` says whether the same call may
 * succeed later (a timeout, a busy resource) or never will as it is (bad input, a refused state); `cause` keeps the
 * underlying error. `name` is the subclass name.
 *
 * Two families sit on it (as the MCP SDK keeps wire errors apart from local ones):
 * - stage errors (LogError, SinkError, CatalogError, EngineError, HyperliquidError, ...): local to a layer, each with
 *   its own closed code table;
 * - the wire error, ServiceError (common/ServiceError.ts): a code of the one error registry (common/errors.ts), what a
 *   client receives in the spec's error envelope.
 */
export class CodedError<Code extends string> extends Error {
  readonly code: Code
  readonly retryable: boolean

  constructor(code: Code, message: string, options: { cause?: unknown; retryable?: boolean } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = new.target.name
    this.code = code
    this.retryable = options.retryable ?? false
  }
}

/** A stage's closed code table: each code with whether it is retryable and what it means. */
export type CodeTable<Code extends string> = Readonly<Record<Code, { readonly retryable: boolean; readonly meaning: string }>>
