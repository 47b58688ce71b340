/**
 * The one error type of the Hyperliquid adapter. `code` is a closed union so callers can switch exhaustively;
 * `retryable` says whether the same request may succeed later (timeouts, refused connections, 429 and 5xx).
 */
export const HL_ERROR_CODES = ['HL_HTTP_STATUS', 'HL_TIMEOUT', 'HL_BAD_RESPONSE', 'HL_UNREACHABLE'] as const
export type HlErrorCode = (typeof HL_ERROR_CODES)[number]

export interface HyperliquidErrorDetails {
  /** HTTP status for HL_HTTP_STATUS. */
  status?: number
  /** The request type ('l2Book', 'fundingHistory', …) or 'ws'. */
  request?: string
  /** JSON pointer into the response for HL_BAD_RESPONSE. */
  path?: string
  cause?: unknown
}

export class HyperliquidError extends Error {
  override name = 'HyperliquidError'
  readonly code: HlErrorCode
  readonly retryable: boolean
  readonly status: number | null
  readonly request: string | null
  readonly path: string | null

  constructor(code: HlErrorCode, message: string, details: HyperliquidErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause })
    this.code = code
    this.status = details.status ?? null
    this.request = details.request ?? null
    this.path = details.path ?? null
    this.retryable = HyperliquidError.isRetryable(code, this.status)
  }

  /** Rate limiting and server-side failures are transient; other 4xx mean our request is wrong. */
  static isRetryable(code: HlErrorCode, status: number | null): boolean {
    switch (code) {
      case 'HL_TIMEOUT':
      case 'HL_UNREACHABLE':
        return true
      case 'HL_HTTP_STATUS':
        return status === 429 || (status !== null && status >= 500)
      case 'HL_BAD_RESPONSE':
        return false
    }
  }
}
