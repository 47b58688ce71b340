/**
 * The wallet domain's public face for other domains: reading a wallet's history through the provider, with provider
 * failures as the service's error (the risk domain assesses over the same reads).
 */
export { WALLET_HISTORY_MS, providerDown, readHistory } from './walletReads.ts'
