/**
 * SIMULATED wallet histories, only to exercise the account-question fitting when recorded data is too thin (the
 * recorded cassettes hold three wallets with minutes to weeks of data). Every history is labelled source 'simulated';
 * nothing built here may feed a published figure.
 *
 * Model: one coin; each day the wallet picks a regime by a seeded Markov chain (accumulate, hold, distribute, exit,
 * idle), trades 2–6 fills moving its position accordingly, sometimes deposits or withdraws USDC (a share of them
 * spot tokens without a USD value: unvalued), and is liquidated with a small daily chance while levered up.
 */
import { Prng } from '../../ingest/Prng.ts'
import type { WalletFill, WalletHistory, WalletLiquidation, WalletTransfer } from '../../ingest/wallet/WalletProvider.ts'

const DAY = 86_400_000
const REGIMES = ['accumulate', 'hold', 'distribute', 'exit', 'idle'] as const
type Regime = (typeof REGIMES)[number]
const NEXT: Record<Regime, Regime[]> = {
  accumulate: ['accumulate', 'accumulate', 'hold', 'hold', 'distribute'],
  hold: ['hold', 'hold', 'accumulate', 'distribute', 'exit'],
  distribute: ['distribute', 'exit', 'hold', 'accumulate', 'distribute'],
  exit: ['idle', 'idle', 'accumulate', 'exit', 'idle'],
  idle: ['idle', 'accumulate', 'accumulate', 'idle', 'hold'],
}

export function syntheticWalletHistory(opts: { seed: number; days: number; end: number; address?: string }): WalletHistory {
  const rng = new Prng(opts.seed, 'wallet')
  const address = (opts.address ?? `0x${(opts.seed >>> 0).toString(16).padStart(40, '0')}`).toLowerCase()
  const start = opts.end - opts.days * DAY
  const fills: WalletFill[] = []
  const transfers: WalletTransfer[] = []
  const liquidations: WalletLiquidation[] = []
  let regime: Regime = 'idle'
  let pos = 0
  let price = 100
  for (let d = 0; d < opts.days; d++) {
    const dayStart = start + d * DAY
    regime = NEXT[regime][rng.int(0, 4)]!
    const n = rng.int(2, 6)
    for (let i = 0; i < n; i++) {
      const time = dayStart + Math.floor(((i + rng.float()) / n) * (DAY - 1000)) + 1
      price *= Math.exp(0.01 * rng.normal())
      let delta = 0
      if (regime === 'accumulate') delta = 20 + 30 * rng.float()
      else if (regime === 'distribute') delta = -Math.min(pos, pos * 0.15 + 1)
      else if (regime === 'exit') delta = -pos
      else if (regime === 'hold') delta = (rng.float() - 0.5) * 2
      else delta = 0.01
      const side = delta >= 0 ? 'B' : 'A'
      fills.push({ time, coin: 'ETH', side, price, size: Math.abs(delta), start_position: pos, closed_pnl_usd: delta < 0 ? -delta * 0.5 * rng.normal() : 0, fee_usd: Math.abs(delta) * price * 2e-4, hash: null, liquidation_of_self: false })
      pos = Math.max(0, pos + delta)
    }
    if (rng.chance(0.6)) {
      const inflow = regime === 'accumulate' || regime === 'idle' ? rng.chance(0.75) : rng.chance(0.3)
      const unvalued = rng.chance(0.1)
      const usd = Math.round(500 + 5000 * rng.float())
      transfers.push({
        time: dayStart + Math.floor(DAY / 2) + rng.int(0, 3_600_000),
        hash: null,
        type: unvalued ? 'spotTransfer' : inflow ? 'deposit' : 'withdraw',
        direction: inflow ? 'in' : 'out',
        token: unvalued ? 'PURR' : 'USDC',
        amount: usd,
        usd: unvalued ? null : usd,
        fee_usd: null,
        counterparty: unvalued ? `0x${'ab'.repeat(20)}` : null,
      })
    }
    if (pos * price > 3000 && rng.chance(0.04)) {
      const time = dayStart + DAY - 10_000
      liquidations.push({ time, hash: null, coins: ['ETH'] })
      fills.push({ time, coin: 'ETH', side: 'A', price, size: pos, start_position: pos, closed_pnl_usd: -pos * price * 0.1, fee_usd: 0, hash: null, liquidation_of_self: true })
      pos = 0
      regime = 'idle'
    }
  }
  fills.sort((a, b) => a.time - b.time)
  return {
    address,
    provider: 'simulated',
    window: { start, end: opts.end },
    snapshot: { address, positions: [], account_value_usd: 0, withdrawable_usd: 0, as_of: opts.end + 1, received_at: opts.end, provider: 'simulated' },
    fills,
    funding: [],
    transfers,
    liquidations,
    source: 'simulated',
    fills_truncated: false,
  }
}
