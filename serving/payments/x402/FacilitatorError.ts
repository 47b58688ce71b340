import { codedError, isRetryableStatus, type CodeTable } from '../../../common/CodedError.ts'

/** A facilitator call that produced no usable answer (as opposed to a well-formed isValid:false / success:false). */
export const FACILITATOR_ERRORS = {
  FACILITATOR_UNREACHABLE: { retryable: true, meaning: 'connection refused, reset, DNS failure' },
  FACILITATOR_TIMEOUT: { retryable: true, meaning: 'no answer within the timeout' },
  FACILITATOR_RATE_LIMITED: { retryable: true, meaning: '429 again after honouring Retry-After once' },
  FACILITATOR_HTTP: { retryable: false, meaning: 'a non-2xx status without a verify/settle body; retryable for 5xx' },
  FACILITATOR_PROTOCOL: { retryable: false, meaning: 'a 2xx (or error) body that is not the documented shape' },
} as const satisfies CodeTable<string>

export type FacilitatorErrorCode = keyof typeof FACILITATOR_ERRORS

/** The failure's kind as logged and as the envelope's detail.facilitator_error. */
export type FacilitatorErrorKind = 'unreachable' | 'timeout' | 'rate_limited' | 'http' | 'protocol'

const CODE_OF_KIND = {
  unreachable: 'FACILITATOR_UNREACHABLE',
  timeout: 'FACILITATOR_TIMEOUT',
  rate_limited: 'FACILITATOR_RATE_LIMITED',
  http: 'FACILITATOR_HTTP',
  protocol: 'FACILITATOR_PROTOCOL',
} as const satisfies Record<FacilitatorErrorKind, FacilitatorErrorCode>

export class FacilitatorError extends codedError(FACILITATOR_ERRORS) {
  constructor(
    readonly kind: FacilitatorErrorKind,
    readonly operation: 'verify' | 'settle' | 'supported',
    message: string,
    readonly status: number | null = null,
    readonly retryAfterMs: number | null = null,
    options: { cause?: unknown } = {},
  ) {
    const code = CODE_OF_KIND[kind]
    super(code, message, { cause: options.cause, retryable: kind === 'http' ? isRetryableStatus(status) : FACILITATOR_ERRORS[code].retryable })
  }
}
