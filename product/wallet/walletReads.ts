/**
 * Shared by WalletServices and RiskServices: one wallet history read through the provider, with provider failures
 * mapped to the service's error. Spec, What the service does 4: "An unreachable provider is an error (PROVIDER_DOWN),
 * never a decision."
 */
import { WalletProviderError } from '../../ingest/wallet/WalletProviderError.ts'
import { canonicalAddress, type WalletHistory, type WalletProvider } from '../../ingest/wallet/WalletProvider.ts'
import { ServiceError } from '../../common/ServiceError.ts'

/** How far back the services read a wallet (the state machine looks back at most 90 daily steps). */
export const WALLET_HISTORY_MS = 91 * 86_400_000

export function providerDown(err: unknown): never {
  if (err instanceof WalletProviderError) {
    throw new ServiceError('PROVIDER_DOWN', {
      message: `The wallet provider '${err.provider}' is unavailable (${err.reason}).`,
      detail: { provider: err.provider, provider_reason: err.reason },
    })
  }
  throw err
}

export async function readHistory(provider: WalletProvider, address: string, now: number): Promise<WalletHistory> {
  try {
    return await provider.history(canonicalAddress(address), { start: now - WALLET_HISTORY_MS, end: now })
  } catch (err) {
    providerDown(err)
  }
}
