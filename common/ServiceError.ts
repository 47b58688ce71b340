import { ERRORS, type ErrorCode } from './errors.ts'

/** Extra detail fields; never secrets or stacks (they are serialized to clients as-is). */
export type ErrorDetail = { reason?: string } & Record<string, unknown>

/** A typed refusal: thrown by handlers and services, rendered as the spec's error envelope. */
export class ServiceError extends Error {
  override name = 'ServiceError'
  readonly code: ErrorCode
  readonly status: number
  readonly retryable: boolean
  readonly retryAfterMs: number | null
  readonly detail: ErrorDetail
  /** Response headers the refusal needs (Allow, Retry-After, PAYMENT-REQUIRED). */
  readonly headers: Record<string, string>

  constructor(
    code: ErrorCode,
    opts: { message?: string; detail?: ErrorDetail; retryAfterMs?: number | null; headers?: Record<string, string> } = {},
  ) {
    const entry = ERRORS[code]
    super(opts.message ?? entry.message)
    this.code = code
    this.status = entry.status
    this.retryable = entry.retryable
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
