/**
 * The base of every error the code base throws on purpose. `code` is one of a closed `as const` set of the stage that
 * throws it, so callers branch on the code rather than on message text; `retryable` says whether the same call may
 * succeed later (a timeout, a busy resource) or never will as it is (bad input, a refused state); `cause` keeps the
 * underlying error. `name` is the subclass name.
 *
 * Two families sit on it (as the MCP SDK keeps wire errors apart from local ones):
 * - stage errors (LogError, SinkError, CatalogError, EngineError, HyperliquidError, ...): local to a layer, each with
 *   its own closed code table (`static codes`, see codedError below), one entry per code with its retry flag and
 *   meaning;
 * - the wire error, ServiceError (common/ServiceError.ts): a code of the one error registry (common/errors.ts), what a
 *   client receives in the spec's error envelope.
 */
export class CodedError<Code extends string> extends Error {
  /** The subclass's code table; `retryable` defaults to the entry of the thrown code. */
  static readonly codes: CodeTable<string> = {}

  readonly code: Code
  readonly retryable: boolean

  /** `retryable` overrides the table where the answer depends on more than the code (an HTTP status, a reason). */
  constructor(code: Code, message: string, options: { cause?: unknown; retryable?: boolean } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = new.target.name
    this.code = code
    this.retryable = options.retryable ?? (new.target as typeof CodedError).codes[code]?.retryable ?? false
  }
}

/**
 * The base of a stage error with this code table, so the class is one line:
 * `export class LogError extends codedError(LOG_ERRORS) {}` (code: the table's keys; retryable: the thrown code's entry).
 */
export function codedError<const Table extends CodeTable<string>>(codes: Table) {
  return class extends CodedError<keyof Table & string> {
    static override readonly codes: Table = codes
  }
}

/** A stage's closed code table: each code with whether it is retryable and what it means. */
export type CodeTable<Code extends string> = Readonly<Record<Code, { readonly retryable: boolean; readonly meaning: string }>>

/** An HTTP status worth retrying: rate limited (429) or a server-side failure (5xx); other 4xx mean the request is wrong. */
export function isRetryableStatus(status: number | null): boolean {
  return status === 429 || (status !== null && status >= 500)
}
