/**
 * The one error of the wallet provider seam. Spec, What the service does 4: "An unreachable provider is an error
 * (PROVIDER_DOWN), never a decision." Every failure to read a wallet (no provider wired, venue unreachable, timeout,
 * HTTP error, unparseable body) is this error with code PROVIDER_DOWN; callers never turn it into a refusal or a row.
 */
export const WALLET_PROVIDER_ERROR_CODES = ['PROVIDER_DOWN'] as const
export type WalletProviderErrorCode = (typeof WALLET_PROVIDER_ERROR_CODES)[number]

export const WALLET_PROVIDER_DOWN_REASONS = ['unwired', 'unreachable', 'timeout', 'http_status', 'bad_response'] as const
export type WalletProviderDownReason = (typeof WALLET_PROVIDER_DOWN_REASONS)[number]

export class WalletProviderError extends Error {
  override name = 'WalletProviderError'
  readonly code: WalletProviderErrorCode = 'PROVIDER_DOWN'
  readonly reason: WalletProviderDownReason
  /** Provider slug ('hyperliquid', 'none'). */
  readonly provider: string
  /** Whether the same read may succeed later. */
  readonly retryable: boolean

  constructor(provider: string, reason: WalletProviderDownReason, message: string, opts: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause })
    this.provider = provider
    this.reason = reason
    this.retryable = opts.retryable ?? reason !== 'unwired'
  }
}
