/**
 * The default wallet provider: nothing is wired, so every read is PROVIDER_DOWN 'unwired' (spec: "When a provider is
 * not wired or down, paid wallet and market routes answer 503 PROVIDER_DOWN"). Never a refusal, never an empty wallet.
 */
import type { TimeWindow, WalletFill, WalletFundingPayment, WalletHistory, WalletLiquidation, WalletProvider, WalletSnapshot, WalletTransfer } from './WalletProvider.ts'
import { WalletProviderError } from './WalletProviderError.ts'

export class NoWalletProvider implements WalletProvider {
  readonly name = 'none'

  #down(what: string): never {
    throw new WalletProviderError(this.name, 'unwired', `no wallet provider is wired on this deployment (${what})`)
  }

  async snapshot(_address: string): Promise<WalletSnapshot> {
    this.#down('snapshot')
  }

  async fills(_address: string, _window: TimeWindow): Promise<{ fills: WalletFill[]; truncated: boolean }> {
    this.#down('fills')
  }

  async funding(_address: string, _window: TimeWindow): Promise<WalletFundingPayment[]> {
    this.#down('funding')
  }

  async ledger(_address: string, _window: TimeWindow): Promise<{ transfers: WalletTransfer[]; liquidations: WalletLiquidation[] }> {
    this.#down('ledger')
  }

  async history(_address: string, _window: TimeWindow): Promise<WalletHistory> {
    this.#down('history')
  }
}
