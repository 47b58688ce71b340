/** A facilitator call that produced no usable answer (as opposed to a well-formed isValid:false / success:false). */
export type FacilitatorErrorKind =
  /** Connection refused, reset, DNS failure. */
  | 'unreachable'
  /** No answer within the timeout. */
  | 'timeout'
  /** 429 again after honouring Retry-After once. */
  | 'rate_limited'
  /** A non-2xx status without a verify/settle body. */
  | 'http'
  /** A 2xx whose body is not the documented shape. */
  | 'protocol'

export class FacilitatorError extends Error {
  override name = 'FacilitatorError'

  constructor(
    readonly kind: FacilitatorErrorKind,
    readonly operation: 'verify' | 'settle' | 'supported',
    message: string,
    readonly status: number | null = null,
    readonly retryAfterMs: number | null = null,
    options?: { cause?: unknown },
  ) {
    super(message, options)
  }
}
