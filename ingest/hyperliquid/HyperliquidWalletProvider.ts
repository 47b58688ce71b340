/**
 * The wallet provider over the venue's /info endpoint (ingest/hyperliquid/HyperliquidInfoClient.ts).
 *
 * Address mapping (docs/decisions.md): the spec's only chain is 'base' and its addresses are EVM 20-byte addresses;
 * a Hyperliquid account is keyed by the same EVM address (the key that signs for it), so a 'base' address is read as
 * the venue account with the same 20 bytes, lower-cased. Nothing is bridged or looked up: an address with no venue
 * activity is simply an account with no history (and the questions refuse for an inadequate sample).
 *
 * Reads (reference §2): clearinghouseState (positions now), userFills (at most the 2000 most recent fills, filtered
 * to the window), userFunding and userNonFundingLedgerUpdates (paginated time ranges). Every HyperliquidError becomes
 * WalletProviderError PROVIDER_DOWN with the cause's class as its reason; nothing is retried here.
 */
import { HyperliquidError } from './HyperliquidError.ts'
import type { HyperliquidInfoClient } from './HyperliquidInfoClient.ts'
import type { HlFill, HlLedgerUpdate } from './parseInfo.ts'
import {
  canonicalAddress,
  type TimeWindow,
  type WalletFill,
  type WalletFundingPayment,
  type WalletHistory,
  type WalletLiquidation,
  type WalletProvider,
  type WalletSnapshot,
  type WalletTransfer,
} from '../wallet/WalletProvider.ts'
import { WalletProviderError, type WalletProviderDownReason } from '../wallet/WalletProviderError.ts'

/** Reference §2 userFills: "At most the 2000 most recent fills." */
export const HL_FILLS_CAP = 2000

const DOWN_REASON: Record<HyperliquidError['code'], WalletProviderDownReason> = {
  HL_UNREACHABLE: 'unreachable',
  HL_TIMEOUT: 'timeout',
  HL_HTTP_STATUS: 'http_status',
  HL_BAD_RESPONSE: 'bad_response',
}

function numOrNull(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null
}

function strOrNull(v: unknown): string | null {
  return typeof v === 'string' && v.length > 0 ? v : null
}

/**
 * One ledger update as a transfer (reference §2 delta table), or a liquidation. Direction is relative to `self`.
 * Types whose USD value the venue does not state keep usd null (unvalued), never 0.
 */
export function mapLedgerUpdate(self: string, u: HlLedgerUpdate): { transfer: WalletTransfer } | { liquidation: WalletLiquidation } {
  const d = u.delta
  if (u.type === 'liquidation') {
    const coins = Array.isArray(d.liquidatedPositions) ? (d.liquidatedPositions as Array<{ coin: string }>).map((p) => p.coin) : []
    return { liquidation: { time: u.time, hash: u.hash, coins } }
  }
  const user = strOrNull(d.user)?.toLowerCase() ?? null
  const destination = strOrNull(d.destination)?.toLowerCase() ?? null
  const usdc = numOrNull(d.usdc)
  const base = { time: u.time, hash: u.hash, type: u.type, fee_usd: numOrNull(d.fee) }
  const between = (usd: number | null, token: string | null, amount: number | null): WalletTransfer => {
    const outgoing = user === self && destination !== self
    const incoming = destination === self && user !== self
    return {
      ...base,
      direction: outgoing ? 'out' : incoming ? 'in' : user === self && destination === self ? 'internal' : 'unknown',
      token,
      amount,
      usd: usd === null ? null : Math.abs(usd),
      counterparty: outgoing ? destination : incoming ? user : null,
    }
  }
  const flow = (direction: WalletTransfer['direction'], usd: number | null, counterparty: string | null = null): WalletTransfer => ({
    ...base,
    direction,
    token: 'USDC',
    amount: usd,
    usd: usd === null ? null : Math.abs(usd),
    counterparty,
  })
  switch (u.type) {
    case 'deposit':
      return { transfer: flow('in', usdc) }
    case 'withdraw':
      return { transfer: flow('out', usdc) }
    case 'internalTransfer':
    case 'subAccountTransfer':
      return { transfer: between(usdc, 'USDC', usdc) }
    case 'accountClassTransfer':
      return { transfer: flow('internal', usdc) }
    case 'spotTransfer':
      return { transfer: between(numOrNull(d.usdcValue), strOrNull(d.token), numOrNull(d.amount)) }
    case 'vaultCreate':
    case 'vaultDeposit':
      return { transfer: flow('out', usdc, strOrNull(d.vault)) }
    case 'vaultWithdraw':
      return { transfer: flow('in', numOrNull(d.netWithdrawnUsd) ?? usdc, strOrNull(d.vault)) }
    case 'vaultDistribution':
    case 'vaultLeaderCommission':
      return { transfer: flow('in', usdc, strOrNull(d.vault)) }
    case 'rewardsClaim':
    case 'spotGenesis':
      return { transfer: { ...base, direction: 'in', token: strOrNull(d.token), amount: numOrNull(d.amount), usd: usdc === null ? null : Math.abs(usdc), counterparty: null } }
    default:
      return { transfer: { ...base, direction: 'unknown', token: strOrNull(d.token), amount: numOrNull(d.amount) ?? usdc, usd: usdc === null ? null : Math.abs(usdc), counterparty: null } }
  }
}

export function mapFill(self: string, f: HlFill): WalletFill {
  return {
    time: f.time,
    coin: f.coin,
    side: f.side,
    price: f.px,
    size: f.sz,
    start_position: f.startPosition,
    closed_pnl_usd: f.closedPnl ?? 0,
    fee_usd: f.fee ?? 0,
    hash: f.hash,
    liquidation_of_self: f.liquidation?.liquidatedUser?.toLowerCase() === self,
  }
}

export class HyperliquidWalletProvider implements WalletProvider {
  readonly name = 'hyperliquid'
  readonly #client: HyperliquidInfoClient

  constructor(client: HyperliquidInfoClient) {
    this.#client = client
  }

  async #read<T>(what: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call()
    } catch (err) {
      if (err instanceof HyperliquidError) {
        throw new WalletProviderError(this.name, DOWN_REASON[err.code], `hyperliquid ${what}: ${err.message}`, { retryable: err.retryable, cause: err })
      }
      throw err
    }
  }

  async snapshot(address: string): Promise<WalletSnapshot> {
    const self = canonicalAddress(address)
    const { data, receivedAt } = await this.#read('clearinghouseState', () => this.#client.clearinghouseState(self))
    return {
      address: self,
      positions: data.positions.map((p) => ({
        coin: p.coin,
        size: p.szi,
        entry_price: p.entryPx,
        notional_usd: Math.abs(p.positionValue),
        unrealized_pnl_usd: p.unrealizedPnl,
        liquidation_price: p.liquidationPx,
        leverage: p.leverage?.value ?? null,
        margin_used_usd: p.marginUsed,
      })),
      account_value_usd: data.marginSummary.accountValue,
      withdrawable_usd: data.withdrawable,
      as_of: data.time ?? receivedAt,
      received_at: receivedAt,
      provider: this.name,
    }
  }

  async fills(address: string, window: TimeWindow): Promise<{ fills: WalletFill[]; truncated: boolean }> {
    const self = canonicalAddress(address)
    const { data } = await this.#read('userFills', () => this.#client.userFills(self))
    const fills = data
      .filter((f) => f.time >= window.start && f.time <= window.end)
      .map((f) => mapFill(self, f))
      .sort((a, b) => a.time - b.time)
    return { fills, truncated: data.length >= HL_FILLS_CAP }
  }

  async funding(address: string, window: TimeWindow): Promise<WalletFundingPayment[]> {
    const self = canonicalAddress(address)
    const { data } = await this.#read('userFunding', () => this.#client.userFunding(self, { startTime: window.start, endTime: window.end }))
    return data.map((r) => ({ time: r.time, coin: r.coin, usd: r.usdc, size: r.szi, rate: r.fundingRate }))
  }

  async ledger(address: string, window: TimeWindow): Promise<{ transfers: WalletTransfer[]; liquidations: WalletLiquidation[] }> {
    const self = canonicalAddress(address)
    const { data } = await this.#read('userNonFundingLedgerUpdates', () =>
      this.#client.userNonFundingLedgerUpdates(self, { startTime: window.start, endTime: window.end }),
    )
    const transfers: WalletTransfer[] = []
    const liquidations: WalletLiquidation[] = []
    for (const u of data) {
      const m = mapLedgerUpdate(self, u)
      if ('transfer' in m) transfers.push(m.transfer)
      else liquidations.push(m.liquidation)
    }
    return { transfers, liquidations }
  }

  async history(address: string, window: TimeWindow): Promise<WalletHistory> {
    const self = canonicalAddress(address)
    // Sequential on purpose: one venue, a per-IP weight budget, and the first failure ends the read.
    const snapshot = await this.snapshot(self)
    const { fills, truncated } = await this.fills(self, window)
    const funding = await this.funding(self, window)
    const { transfers, liquidations } = await this.ledger(self, window)
    for (const f of fills) if (f.liquidation_of_self) liquidations.push({ time: f.time, hash: f.hash, coins: [f.coin] })
    liquidations.sort((a, b) => a.time - b.time)
    return { address: self, provider: this.name, window, snapshot, fills, funding, transfers, liquidations, source: 'real', fills_truncated: truncated }
  }
}
