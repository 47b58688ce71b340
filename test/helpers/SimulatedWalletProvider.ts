/**
 * A WalletProvider over SIMULATED wallet histories (test/helpers/SyntheticWalletHistory.ts) — for engine and serving
 * tests that need claims, which the recorded venue data (three wallets, minutes to weeks) is far too thin to give.
 * Everything it returns keeps source 'simulated' (provider 'simulated'), so inputs journaled from it say so.
 *
 * Reads are windowed the way the venue provider windows them (rows with start ≤ time ≤ end); received_at is the
 * window end, i.e. the instant the decision asked at, so the same ask gives the same bytes. `down = true` (or `downFor` an address) makes every
 * read fail as an unreachable provider (WalletProviderError PROVIDER_DOWN), as the real provider does.
 */
import type { TimeWindow, WalletFill, WalletFundingPayment, WalletHistory, WalletLiquidation, WalletProvider, WalletSnapshot, WalletTransfer } from '../../ingest/wallet/WalletProvider.ts'
import { canonicalAddress } from '../../ingest/wallet/WalletProvider.ts'
import { WalletProviderError } from '../../ingest/wallet/WalletProviderError.ts'

export class SimulatedWalletProvider implements WalletProvider {
  readonly name = 'simulated'
  down = false
  /** Addresses whose reads fail as unreachable (a provider outage for some accounts only). */
  readonly downFor = new Set<string>()
  /** Every history read: address and window. */
  readonly reads: Array<{ address: string; window: TimeWindow }> = []
  readonly #histories = new Map<string, WalletHistory>()

  constructor(histories: readonly WalletHistory[]) {
    for (const h of histories) {
      if (h.source !== 'simulated') throw new RangeError('SimulatedWalletProvider serves simulated histories only')
      this.#histories.set(h.address, h)
    }
  }

  #get(address: string): WalletHistory {
    if (this.down || this.downFor.has(address.toLowerCase())) throw new WalletProviderError(this.name, 'unreachable', 'simulated provider switched down')
    const h = this.#histories.get(canonicalAddress(address))
    if (!h) throw new WalletProviderError(this.name, 'http_status', `no simulated history for ${address}`)
    return h
  }

  async snapshot(address: string): Promise<WalletSnapshot> {
    return { ...this.#get(address).snapshot }
  }

  async fills(address: string, w: TimeWindow): Promise<{ fills: WalletFill[]; truncated: boolean }> {
    return { fills: this.#get(address).fills.filter((f) => f.time >= w.start && f.time <= w.end), truncated: false }
  }

  async funding(address: string, w: TimeWindow): Promise<WalletFundingPayment[]> {
    return this.#get(address).funding.filter((f) => f.time >= w.start && f.time <= w.end)
  }

  async ledger(address: string, w: TimeWindow): Promise<{ transfers: WalletTransfer[]; liquidations: WalletLiquidation[] }> {
    const h = this.#get(address)
    return { transfers: h.transfers.filter((x) => x.time >= w.start && x.time <= w.end), liquidations: h.liquidations.filter((x) => x.time >= w.start && x.time <= w.end) }
  }

  async history(address: string, w: TimeWindow): Promise<WalletHistory> {
    const h = this.#get(address)
    this.reads.push({ address: h.address, window: { ...w } })
    const { fills } = await this.fills(address, w)
    const { transfers, liquidations } = await this.ledger(address, w)
    return {
      ...h,
      window: { ...w },
      snapshot: { ...h.snapshot, as_of: w.end, received_at: w.end },
      fills,
      funding: await this.funding(address, w),
      transfers,
      liquidations,
    }
  }
}
