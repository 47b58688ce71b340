/**
 * The wallet provider seam: what the account-scoped questions (S09..S11) and the wallet routes read about one
 * address. Spec, Shared conventions: "chain: Only value in v1: base"; "address: 0x-prefixed 20-byte hex string".
 *
 * One snapshot (positions and account value now) plus three histories over a window: fills, funding payments and
 * ledger movements (deposits, withdrawals, transfers). Implementations: HyperliquidWalletProvider (the venue's
 * /info endpoint, the 'base' address read as the same EVM address on the venue; docs/decisions.md) and
 * NoWalletProvider ('none', the default: every read is PROVIDER_DOWN 'unwired').
 *
 * Failures throw WalletProviderError (PROVIDER_DOWN); a provider never returns a partial or invented answer.
 */
import { ADDRESS_PATTERN } from '../../common/schema.ts'

export const WALLET_CHAINS = ['base'] as const
export type WalletChain = (typeof WALLET_CHAINS)[number]


/** Lower-case canonical form of an address; throws RangeError for anything that is not 0x + 20 bytes hex. */
export function canonicalAddress(address: string): string {
  if (!ADDRESS_PATTERN.test(address)) throw new RangeError(`address must be 0x-prefixed 20-byte hex, got ${JSON.stringify(address)}`)
  return address.toLowerCase()
}

export interface TimeWindow {
  /** Epoch ms, inclusive. */
  start: number
  /** Epoch ms, inclusive. */
  end: number
}

export interface WalletPosition {
  /** Venue symbol ('BTC'). */
  coin: string
  /** Signed size in base units; negative = short. */
  size: number
  entry_price: number | null
  /** Absolute notional at the mark, USD. */
  notional_usd: number
  unrealized_pnl_usd: number
  liquidation_price: number | null
  leverage: number | null
  margin_used_usd: number
}

export interface WalletSnapshot {
  address: string
  positions: WalletPosition[]
  account_value_usd: number
  withdrawable_usd: number
  /** Venue time of the state when it carries one, else the instant it was received (epoch ms). */
  as_of: number
  received_at: number
  provider: string
}

export interface WalletFill {
  time: number
  coin: string
  /** 'B' buy / 'A' sell. */
  side: 'B' | 'A'
  price: number
  size: number
  /** Position in this coin before the fill (signed), when the venue reports it. */
  start_position: number | null
  closed_pnl_usd: number
  fee_usd: number
  hash: string | null
  /** True when this fill liquidated the wallet itself. */
  liquidation_of_self: boolean
}

export interface WalletFundingPayment {
  time: number
  coin: string
  /** Signed USD: negative = the wallet paid funding. */
  usd: number
  size: number
  rate: number
}

/**
 * A ledger movement. `usd` is null when the movement carries no USD value (an unvalued transfer: a spot token without
 * a usdcValue, an unknown delta type): spec, wallet events "unvalued transfers are an explicit legal state, not
 * silently dropped".
 */
export interface WalletTransfer {
  time: number
  hash: string | null
  /** Venue delta type ('deposit', 'withdraw', 'internalTransfer', 'spotTransfer', 'accountClassTransfer', …). */
  type: string
  /**
   * in / out: value crossing the account boundary; internal: between the wallet's own sub-ledgers (perp ↔ spot),
   * not a flow; unknown: a type whose direction is not known.
   */
  direction: 'in' | 'out' | 'internal' | 'unknown'
  token: string | null
  amount: number | null
  /** Positive magnitude in USD, or null when unvalued. */
  usd: number | null
  fee_usd: number | null
  counterparty: string | null
}

/** A liquidation of the wallet recorded in its ledger. */
export interface WalletLiquidation {
  time: number
  hash: string | null
  coins: string[]
}

export interface WalletHistory {
  address: string
  provider: string
  window: TimeWindow
  snapshot: WalletSnapshot
  fills: WalletFill[]
  funding: WalletFundingPayment[]
  transfers: WalletTransfer[]
  liquidations: WalletLiquidation[]
  /** Provenance label: 'real' for venue data, 'simulated' for generated histories (kept out of published figures). */
  source: 'real' | 'simulated'
  /** The venue's fill lookup is capped (Hyperliquid: the 2000 most recent); true when the cap may hide older fills. */
  fills_truncated: boolean
}

export interface WalletProvider {
  /** Slug for provenance and health ('hyperliquid', 'none'). */
  readonly name: string
  snapshot(address: string): Promise<WalletSnapshot>
  fills(address: string, window: TimeWindow): Promise<{ fills: WalletFill[]; truncated: boolean }>
  funding(address: string, window: TimeWindow): Promise<WalletFundingPayment[]>
  ledger(address: string, window: TimeWindow): Promise<{ transfers: WalletTransfer[]; liquidations: WalletLiquidation[] }>
  /** All of the above for one window; fails as a whole (PROVIDER_DOWN) when any part fails. */
  history(address: string, window: TimeWindow): Promise<WalletHistory>
}
