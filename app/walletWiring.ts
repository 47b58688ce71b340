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
import { validateOptions } from '../ingest/hyperliquid/validateOptions.ts'
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

const OPTIONS_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['provider'],
  properties: {
    provider: { enum: ['hyperliquid', 'none'] },
    hlBaseUrl: { type: 'string', pattern: '^https?://[^\\s]+$' },
  },
} as const

/** Reads SVC_WALLET_PROVIDER and SVC_HL_BASE_URL. */
export function walletWiringFromEnv(env: NodeJS.ProcessEnv = process.env): WalletWiringOptions {
  const o: Record<string, string> = { provider: env.SVC_WALLET_PROVIDER || 'none' }
  if (env.SVC_HL_BASE_URL) o.hlBaseUrl = env.SVC_HL_BASE_URL
  return validateOptions<WalletWiringOptions>('wallet wiring (SVC_WALLET_PROVIDER, SVC_HL_BASE_URL)', OPTIONS_SCHEMA, o)
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
