/**
 * A WalletProvider that reports every read to the provider health registry (GET /v1/providers, /readyz): success
 * with its latency, or failure with the provider's reason as error class. Reads and errors pass through unchanged
 * (a failure stays PROVIDER_DOWN for the caller).
 */
import type { TimeWindow, WalletFill, WalletFundingPayment, WalletHistory, WalletLiquidation, WalletProvider, WalletSnapshot, WalletTransfer } from '../../ingest/wallet/WalletProvider.ts'
import { WalletProviderError } from '../../ingest/wallet/WalletProviderError.ts'
import type { CallRecorder } from '../platform/ProviderHealth.ts'

export class TrackedWalletProvider implements WalletProvider {
  readonly name: string
  readonly #inner: WalletProvider
  readonly #recorder: CallRecorder

  constructor(inner: WalletProvider, recorder: CallRecorder) {
    this.#inner = inner
    this.#recorder = recorder
    this.name = inner.name
  }

  async #call<T>(read: () => Promise<T>): Promise<T> {
    const t0 = performance.now()
    try {
      const out = await read()
      this.#recorder.success(performance.now() - t0)
      return out
    } catch (err) {
      // The registry shows the provider's reason ('timeout', 'http_status', …) as the error class.
      this.#recorder.failure(err instanceof WalletProviderError ? { code: `WALLET_${err.reason.toUpperCase()}` } : err, performance.now() - t0)
      throw err
    }
  }

  snapshot(address: string): Promise<WalletSnapshot> {
    return this.#call(() => this.#inner.snapshot(address))
  }

  fills(address: string, window: TimeWindow): Promise<{ fills: WalletFill[]; truncated: boolean }> {
    return this.#call(() => this.#inner.fills(address, window))
  }

  funding(address: string, window: TimeWindow): Promise<WalletFundingPayment[]> {
    return this.#call(() => this.#inner.funding(address, window))
  }

  ledger(address: string, window: TimeWindow): Promise<{ transfers: WalletTransfer[]; liquidations: WalletLiquidation[] }> {
    return this.#call(() => this.#inner.ledger(address, window))
  }

  history(address: string, window: TimeWindow): Promise<WalletHistory> {
    return this.#call(() => this.#inner.history(address, window))
  }
}
