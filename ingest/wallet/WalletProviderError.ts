import { codedError, type CodeTable } from '../../common/CodedError.ts'

/**
 * The one error of the wallet provider seam. Spec, What the service does 4: "An unreachable provider is an error
 * (PROVIDER_DOWN), never a decision." Every failure to read a wallet (no provider wired, venue unreachable, timeout,
 * HTTP error, unparseable body) is this error with code PROVIDER_DOWN; callers never turn it into a refusal or a row.
 */
export const WALLET_PROVIDER_ERRORS = {
  PROVIDER_DOWN: { retryable: true, meaning: 'the wallet cannot be read; `reason` says why (unwired is not retryable)' },
} as const satisfies CodeTable<string>

export type WalletProviderErrorCode = keyof typeof WALLET_PROVIDER_ERRORS

export const WALLET_PROVIDER_DOWN_REASONS = ['unwired', 'unreachable', 'timeout', 'http_status', 'bad_response'] as const
export type WalletProviderDownReason = (typeof WALLET_PROVIDER_DOWN_REASONS)[number]

export class WalletProviderError extends codedError(WALLET_PROVIDER_ERRORS) {
  readonly reason: WalletProviderDownReason
  /** Provider slug ('hyperliquid', 'none'). */
  readonly provider: string

  constructor(provider: string, reason: WalletProviderDownReason, message: string, opts: { retryable?: boolean; cause?: unknown } = {}) {
    super('PROVIDER_DOWN', message, { cause: opts.cause, retryable: opts.retryable ?? reason !== 'unwired' })
    this.provider = provider
    this.reason = reason
  }
}
