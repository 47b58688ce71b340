import { codedError, isRetryableStatus, type CodeTable } from '../../common/CodedError.ts'

/**
 * The one error type of the Hyperliquid adapter. `code` is a closed union so callers can switch exhaustively;
 * `retryable` says whether the same request may succeed later (timeouts, refused connections, 429 and 5xx).
 */
export const HL_ERRORS = {
  HL_HTTP_STATUS: { retryable: false, meaning: 'the venue answered a non-2xx status; retryable for 429 and 5xx, other 4xx mean our request is wrong' },
  HL_TIMEOUT: { retryable: true, meaning: 'no answer within the timeout' },
  HL_BAD_RESPONSE: { retryable: false, meaning: 'the body is not the documented shape; path names the field' },
  HL_UNREACHABLE: { retryable: true, meaning: 'connection refused, reset or DNS failure' },
} as const satisfies CodeTable<string>

export type HlErrorCode = keyof typeof HL_ERRORS

export interface HyperliquidErrorDetails {
  /** HTTP status for HL_HTTP_STATUS. */
  status?: number
  /** The request type ('l2Book', 'fundingHistory', …) or 'ws'. */
  request?: string
  /** JSON pointer into the response for HL_BAD_RESPONSE. */
  path?: string
  cause?: unknown
}

export class HyperliquidError extends codedError(HL_ERRORS) {
  readonly status: number | null
  readonly request: string | null
  readonly path: string | null

  constructor(code: HlErrorCode, message: string, details: HyperliquidErrorDetails = {}) {
    const status = details.status ?? null
    super(code, message, { cause: details.cause, retryable: HyperliquidError.isRetryable(code, status) })
    this.status = status
    this.request = details.request ?? null
    this.path = details.path ?? null
  }

  /** Rate limiting and server-side failures are transient; other 4xx mean our request is wrong. */
  static isRetryable(code: HlErrorCode, status: number | null): boolean {
    return code === 'HL_HTTP_STATUS' ? isRetryableStatus(status) : HL_ERRORS[code].retryable
  }
}
