import { CodedError } from './CodedError.ts'
import { ERRORS, type ErrorCode, type ReasonCode } from './errors.ts'

/**
 * Extra detail fields; never secrets or stacks (they are serialized to clients as-is). `reason` is one of the closed
 * registry (common/errors.ts REASONS, listed in docs/errors.md); without it the envelope repeats the code.
 */
export type ErrorDetail = { reason?: ReasonCode } & Record<string, unknown>

/** A typed refusal: thrown by handlers and services, rendered as the spec's error envelope. */
export class ServiceError extends CodedError<ErrorCode> {
  readonly status: number
  readonly retryAfterMs: number | null
  readonly detail: ErrorDetail
  /** Response headers the refusal needs (Allow, Retry-After, PAYMENT-REQUIRED). */
  readonly headers: Record<string, string>

  constructor(
    code: ErrorCode,
    opts: { message?: string; detail?: ErrorDetail; retryAfterMs?: number | null; headers?: Record<string, string> } = {},
  ) {
    const entry = ERRORS[code]
    super(code, opts.message ?? entry.message, { retryable: entry.retryable })
    this.status = entry.status
    this.retryAfterMs = opts.retryAfterMs ?? null
    this.detail = opts.detail ?? {}
    this.headers = opts.headers ?? {}
  }

  /** The spec's error envelope. */
  toEnvelope(requestId: string): ErrorEnvelope {
    return {
      error: {
        code: this.code,
        message: this.message,
        retryable: this.retryable,
        retry_after_ms: this.retryAfterMs,
        request_id: requestId,
        detail: { reason: this.detail.reason ?? this.code, ...this.detail, ...(this.detail.reason ? {} : { reason: this.code }) },
      },
    }
  }
}

export interface ErrorEnvelope {
  error: {
    code: ErrorCode
    message: string
    retryable: boolean
    retry_after_ms: number | null
    request_id: string
    detail: { reason: string } & Record<string, unknown>
  }
}
