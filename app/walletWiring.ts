/**
 * The wallet part of `svc start`: SVC_WALLET_PROVIDER=hyperliquid|none (default none).
 *
 * - hyperliquid: the venue's /info endpoint (SVC_HL_BASE_URL, else the public API) behind HyperliquidWalletProvider,
 *   tracked in the provider health registry as 'wallet-provider' (kind 'wallet', non-critical: a wallet outage
 *   degrades the service, it does not take the market surfaces down). The wallet and risk routes are wired over it,
 *   and the decision engine answers S09..S11 from it.
 * - none: nothing is wired. The wallet and risk routes answer 503 SERVICE_UNWIRED; account-scoped decisions answer
 *   PROVIDER_DOWN (WALLET_PROVIDER_UNWIRED); GET /v1/signals lists them unavailable, 'wallet_provider_unwired'.
 *
 * Account decisions and resolutions with a live provider run on wall time (the wallet data is live, whatever tape the
 * market side replays): `accountClock` is the given clock then, else null (the engine's own clock).
 */
import { HyperliquidInfoClient } from '../ingest/hyperliquid/HyperliquidInfoClient.ts'
import type { AppConfig } from './config.ts'
import { HyperliquidWalletProvider } from '../ingest/hyperliquid/HyperliquidWalletProvider.ts'
import type { WalletProvider } from '../ingest/wallet/WalletProvider.ts'
import type { Clock } from '../common/Clock.ts'
import type { ProviderHealth } from '../product/platform/ProviderHealth.ts'
import { RiskServices } from '../product/risk/RiskServices.ts'
import { TrackedWalletProvider } from '../product/wallet/TrackedWalletProvider.ts'
import { WalletServices } from '../product/wallet/WalletServices.ts'

export interface WalletWiringOptions {
  provider: 'hyperliquid' | 'none'
  hlBaseUrl?: string
}

/** The wallet part of the configuration (SVC_WALLET_PROVIDER, SVC_HL_BASE_URL; app/config.ts validated it). */
export function walletWiringOf(c: Pick<AppConfig, 'SVC_WALLET_PROVIDER' | 'SVC_HL_BASE_URL'>): WalletWiringOptions {
  return { provider: c.SVC_WALLET_PROVIDER, ...(c.SVC_HL_BASE_URL ? { hlBaseUrl: c.SVC_HL_BASE_URL } : {}) }
}

export interface WalletWiring {
  /** Null when none is wired. */
  provider: WalletProvider | null
  /** The account clock for the engine (wall time with a live provider), null otherwise. */
  accountClock: Clock | null
  /** The serving parts to spread into Services (empty when none is wired: those routes stay SERVICE_UNWIRED). */
  services: { wallets?: WalletServices; risk?: RiskServices }
}

export function openWalletWiring(o: WalletWiringOptions, deps: { providers: ProviderHealth; clock: Clock }): WalletWiring {
  if (o.provider === 'none') return { provider: null, accountClock: null, services: {} }
  const client = new HyperliquidInfoClient({ ...(o.hlBaseUrl ? { baseUrl: o.hlBaseUrl } : {}), timeoutMs: 5_000 })
  const provider = new TrackedWalletProvider(new HyperliquidWalletProvider(client), deps.providers.track('wallet-provider', 'wallet'))
  return {
    provider,
    accountClock: deps.clock,
    services: { wallets: new WalletServices({ provider, clock: deps.clock }), risk: new RiskServices({ provider, clock: deps.clock }) },
  }
}
