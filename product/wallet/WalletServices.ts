/**
 * The wallet routes (spec, Market, liquidation, funding, wallet, universe):
 *   Wallet profile   { wallet, chain, profile: { state, first_seen_at, last_active_at, net_flow_30d_usd, sample_adequacy } }
 *   Wallet state     { wallet, chain, state, since, sample_adequacy }
 *   Wallet positions { wallet, chain, balances, provenance }
 *   events           paginated transfer events; "query window (default 24h), cursor"; "unvalued transfers are an
 *                    explicit legal state, not silently dropped" (item fields: docs/decisions.md).
 * Reads go through a WalletProvider; any provider failure is 503 PROVIDER_DOWN, never an empty wallet.
 */
import { Buffer } from 'node:buffer'
import { computeWalletFeatures } from '../../models/account/WalletFeatures.ts'
import { canonicalAddress, type WalletProvider, type WalletTransfer } from '../../ingest/wallet/WalletProvider.ts'
import type { PaidCall } from '../../pipeline/journal/PaidCall.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import type { Clock } from '../../common/Clock.ts'
import { providerDown, readHistory } from './walletReads.ts'
import type { WalletEventItem } from './schemas.ts'
import type { WalletData } from './WalletData.ts'

export const EVENTS_PAGE_SIZE = 50
/** Longest events window accepted (the venue's ledger is paginated; the profile reads 30 days). */
export const EVENTS_MAX_WINDOW_MS = 90 * 86_400_000

export interface WalletServicesOptions {
  provider: WalletProvider
  clock: Clock
  pageSize?: number
}

interface Cursor {
  /** Window end pinned by the first page, epoch ms. */
  e: number
  /** Window start, epoch ms. */
  s: number
  /** Last served event id. */
  k: string
}

const iso = (ms: number) => new Date(ms).toISOString()

export function parseWindow(window: string): number {
  const m = /^([0-9]+)([hd])$/.exec(window)
  const n = m ? Number(m[1]) : NaN
  const ms = m ? n * (m[2] === 'h' ? 3_600_000 : 86_400_000) : NaN
  if (!(ms > 0 && ms <= EVENTS_MAX_WINDOW_MS)) {
    throw new ServiceError('VALIDATION', { message: 'window must be <n>h or <n>d, between 1h and 90d', detail: { reason: 'REQUEST_VALIDATION_FAILED', field: 'query.window', value: window } })
  }
  return ms
}

function badCursor(cursor: string): never {
  throw new ServiceError('VALIDATION', { message: 'cursor is not one this route issued', detail: { reason: 'REQUEST_VALIDATION_FAILED', field: 'query.cursor', value: cursor } })
}

function decodeCursor(cursor: string): Cursor {
  try {
    const c = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Cursor
    if (Number.isSafeInteger(c.e) && Number.isSafeInteger(c.s) && c.s < c.e && typeof c.k === 'string') return c
  } catch {
    /* fall through */
  }
  return badCursor(cursor)
}

function eventItem(t: WalletTransfer): WalletEventItem {
  return {
    event_id: `${t.time}:${t.hash ?? ''}:${t.type}`,
    time: iso(t.time),
    hash: t.hash,
    type: t.type,
    direction: t.direction,
    token: t.token,
    amount: t.amount,
    usd_value: t.usd,
    valued: t.usd !== null && (t.direction === 'in' || t.direction === 'out'),
    fee_usd: t.fee_usd,
    counterparty: t.counterparty,
  }
}

export class WalletServices implements WalletData {
  readonly #provider: WalletProvider
  readonly #clock: Clock
  readonly #pageSize: number

  constructor(o: WalletServicesOptions) {
    this.#provider = o.provider
    this.#clock = o.clock
    this.#pageSize = o.pageSize ?? EVENTS_PAGE_SIZE
  }

  async profile(chain: 'base', address: string, _payment: PaidCall): Promise<unknown> {
    const now = this.#clock.now()
    const f = computeWalletFeatures(await readHistory(this.#provider, address, now), now)
    return {
      wallet: f.address,
      chain,
      profile: {
        state: f.state,
        first_seen_at: f.first_seen_at === null ? null : iso(f.first_seen_at),
        last_active_at: f.last_active_at === null ? null : iso(f.last_active_at),
        net_flow_30d_usd: f.net_flow_30d.net_usd,
        sample_adequacy: f.sample_adequacy,
      },
    }
  }

  async state(chain: 'base', address: string, _payment: PaidCall): Promise<unknown> {
    const now = this.#clock.now()
    const f = computeWalletFeatures(await readHistory(this.#provider, address, now), now)
    return { wallet: f.address, chain, state: f.state, since: f.state_since === null ? null : iso(f.state_since), sample_adequacy: f.sample_adequacy }
  }

  async positions(chain: 'base', address: string, _payment: PaidCall): Promise<unknown> {
    const self = canonicalAddress(address)
    let snap
    try {
      snap = await this.#provider.snapshot(self)
    } catch (err) {
      providerDown(err)
    }
    const now = this.#clock.now()
    return {
      wallet: self,
      chain,
      balances: [
        { kind: 'collateral', asset: 'USDC', account_value_usd: snap.account_value_usd, withdrawable_usd: snap.withdrawable_usd },
        ...snap.positions.map((p) => ({
          kind: 'perp_position',
          asset: p.coin,
          size: p.size,
          side: p.size > 0 ? 'long' : p.size < 0 ? 'short' : 'flat',
          entry_price: p.entry_price,
          notional_usd: p.notional_usd,
          unrealized_pnl_usd: p.unrealized_pnl_usd,
          liquidation_price: p.liquidation_price,
          leverage: p.leverage,
          margin_used_usd: p.margin_used_usd,
        })),
      ],
      provenance: {
        source: snap.provider,
        provider: snap.provider,
        timestamp: iso(snap.as_of),
        received_at: iso(snap.received_at),
        age_ms: Math.max(0, now - snap.as_of),
        quality: 'real',
      },
    }
  }

  /** Newest first; the cursor pins the window so later pages never shift. */
  async events(chain: 'base', address: string, q: { window: string; cursor: string | null }, _payment: PaidCall): Promise<unknown> {
    const self = canonicalAddress(address)
    const windowMs = parseWindow(q.window)
    const cursor = q.cursor === null ? null : decodeCursor(q.cursor)
    const end = cursor?.e ?? this.#clock.now()
    const start = cursor?.s ?? end - windowMs
    let transfers: WalletTransfer[]
    try {
      transfers = (await this.#provider.ledger(self, { start, end })).transfers
    } catch (err) {
      providerDown(err)
    }
    const all = transfers
      .filter((t) => t.time >= start && t.time <= end)
      .map(eventItem)
      .sort((a, b) => (a.time < b.time ? 1 : a.time > b.time ? -1 : a.event_id < b.event_id ? 1 : a.event_id > b.event_id ? -1 : 0))
    let from = 0
    if (cursor) {
      const at = all.findIndex((e) => e.event_id === cursor.k)
      if (at < 0) badCursor(q.cursor!)
      from = at + 1
    }
    const page = all.slice(from, from + this.#pageSize)
    const more = from + page.length < all.length
    return {
      wallet: self,
      chain,
      window: q.window,
      from: iso(start),
      to: iso(end),
      events: page,
      count: page.length,
      unvalued_count: page.filter((e) => !e.valued && e.direction !== 'internal').length,
      next_cursor: more ? Buffer.from(JSON.stringify({ e: end, s: start, k: page.at(-1)!.event_id } satisfies Cursor)).toString('base64url') : null,
    }
  }
}
