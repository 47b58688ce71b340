/**
 * Account features of one wallet at an evaluation instant `at`, from the provider's history (models/account/
 * WalletProvider.ts). Only data with time ≤ at is used, so the same history answers any earlier instant the same way
 * (training rows and live answers share this grammar).
 *
 * - Net flow over a window: Σ valued inflows − Σ valued outflows (deposits, withdrawals, transfers, vault moves).
 *   Transfers between the wallet's own sub-ledgers (perp ↔ spot) are 'internal' and not flow. A transfer without a USD
 *   value, or of unknown direction, is counted as unvalued and kept (spec: "unvalued transfers are an explicit legal
 *   state, not silently dropped"); it never contributes a guessed number.
 * - Exposure at t: per coin, the position after the last fill at or before t (start_position + signed size), valued
 *   at that fill's price; before a coin's first fill in the history, its start_position at that fill's price. The
 *   venue snapshot replaces the fill path from its as_of on (it is the latest known observation).
 * - Realized PnL: Σ closed PnL − Σ fees of fills in the 30 days; fill cadence: fills, active UTC days, median gap.
 * - first_seen / last_active: the earliest / latest fill or transfer the provider returned (within its reachable
 *   history: the venue serves at most the 2000 most recent fills).
 * - Funding paid: −Σ funding payments over 30 days (positive = the wallet paid).
 * - Sample adequacy: at least MIN_FILLS_30D fills on at least MIN_ACTIVE_DAYS_30D distinct days in the 30 days.
 */
import { STATE_RULES, WALLET_STATES, WalletStateMachine, type StateObservation, type StateRun, type WalletState } from './WalletStateMachine.ts'
import type { WalletHistory, WalletTransfer } from '../../ingest/wallet/WalletProvider.ts'
import { DAY_MS } from '../../common/time.ts'

export const FEATURE_WINDOW_MS = 30 * DAY_MS
export const MIN_FILLS_30D = 30
export const MIN_ACTIVE_DAYS_30D = 7
/** Gross exposure below this is 'flat'. */
export const FLAT_EXPOSURE_USD = 1
/** The state machine looks back at most this many daily steps. */
export const STATE_LOOKBACK_STEPS = 90

export interface FlowSummary {
  net_usd: number
  inflow_usd: number
  outflow_usd: number
  valued: number
  unvalued: number
  internal: number
}

export interface SampleAdequacy {
  adequate: boolean
  fills_30d: number
  active_days_30d: number
  min_fills_30d: number
  min_active_days_30d: number
  /** null when adequate, else why not. */
  reason: 'no_activity' | 'too_few_fills' | 'too_few_active_days' | null
}

export interface WalletFeatures {
  address: string
  at: number
  net_flow_24h: FlowSummary
  net_flow_7d: FlowSummary
  net_flow_30d: FlowSummary
  gross_exposure_usd: number
  net_exposure_usd: number
  direction: 'long' | 'short' | 'flat'
  /** Gross exposure three days earlier (for the exposure change feature). */
  gross_exposure_3d_ago_usd: number
  realized_pnl_30d_usd: number
  fees_30d_usd: number
  fills_30d: number
  active_days_30d: number
  median_fill_gap_ms: number | null
  funding_paid_30d_usd: number
  /** Median USD of valued in/out transfers in 30 days, null when there are none. */
  median_transfer_usd_30d: number | null
  counterparties_30d: string[]
  first_seen_at: number | null
  last_active_at: number | null
  sample_adequacy: SampleAdequacy
  state: WalletState
  state_since: number | null
  liquidations_30d: number
}

export function flowSummary(transfers: readonly WalletTransfer[], start: number, end: number): FlowSummary {
  const s: FlowSummary = { net_usd: 0, inflow_usd: 0, outflow_usd: 0, valued: 0, unvalued: 0, internal: 0 }
  for (const t of transfers) {
    if (!(t.time > start && t.time <= end)) continue
    if (t.direction === 'internal') {
      s.internal++
    } else if (t.direction === 'unknown' || t.usd === null) {
      s.unvalued++
    } else {
      s.valued++
      if (t.direction === 'in') s.inflow_usd += t.usd
      else s.outflow_usd += t.usd
    }
  }
  s.net_usd = s.inflow_usd - s.outflow_usd
  return s
}

/** Gross (Σ |notional|) and net (signed) exposure at t. */
export function exposureAt(history: WalletHistory, t: number): { gross: number; net: number } {
  const snap = history.snapshot
  const lastFill = lastBefore(history.fills, t)
  if (snap.as_of <= t && (lastFill === null || lastFill.time <= snap.as_of)) {
    let gross = 0
    let net = 0
    for (const p of snap.positions) {
      gross += p.notional_usd
      net += Math.sign(p.size) * p.notional_usd
    }
    return { gross, net }
  }
  const pos = new Map<string, { size: number; price: number }>()
  for (const f of history.fills) {
    if (!pos.has(f.coin) && f.start_position !== null) pos.set(f.coin, { size: f.start_position, price: f.price })
  }
  for (const f of history.fills) {
    if (f.time > t) break
    const before = f.start_position ?? pos.get(f.coin)?.size ?? 0
    pos.set(f.coin, { size: before + (f.side === 'B' ? f.size : -f.size), price: f.price })
  }
  let gross = 0
  let net = 0
  for (const p of pos.values()) {
    gross += Math.abs(p.size) * p.price
    net += p.size * p.price
  }
  return { gross, net }
}

function lastBefore<T extends { time: number }>(rows: readonly T[], t: number): T | null {
  let hit: T | null = null
  for (const r of rows) if (r.time <= t) hit = r
  return hit
}

function median(xs: number[]): number | null {
  if (xs.length === 0) return null
  const s = [...xs].sort((a, b) => a - b)
  const m = Math.floor(s.length / 2)
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

/** First and last activity (fills and transfers) at or before t. */
export function activitySpan(history: WalletHistory, t: number): { first: number | null; last: number | null } {
  let first: number | null = null
  let last: number | null = null
  for (const x of [...history.fills, ...history.transfers]) {
    if (x.time > t) continue
    if (first === null || x.time < first) first = x.time
    if (last === null || x.time > last) last = x.time
  }
  return { first, last }
}

/**
 * Daily observations ending exactly at `at`, from the first activity (at most STATE_LOOKBACK_STEPS steps back).
 * No activity at all → a single observation at `at`.
 */
export function stateObservations(history: WalletHistory, at: number): StateObservation[] {
  const { first } = activitySpan(history, at)
  const span = first === null ? 0 : Math.ceil((at - first) / STATE_RULES.STEP_MS)
  const k = Math.min(STATE_LOOKBACK_STEPS, span)
  const out: StateObservation[] = []
  for (let i = k; i >= 0; i--) {
    const t = at - i * STATE_RULES.STEP_MS
    out.push({ at: t, gross_exposure_usd: exposureAt(history, t).gross, net_flow_usd: flowSummary(history.transfers, t - STATE_RULES.STEP_MS, t).net_usd })
  }
  return out
}

export function walletState(history: WalletHistory, at: number): StateRun {
  return WalletStateMachine.run(stateObservations(history, at))
}

export function computeWalletFeatures(history: WalletHistory, at: number): WalletFeatures {
  const from = at - FEATURE_WINDOW_MS
  const fills = history.fills.filter((f) => f.time > from && f.time <= at)
  const days = new Set(fills.map((f) => Math.floor(f.time / DAY_MS)))
  const gaps: number[] = []
  for (let i = 1; i < fills.length; i++) gaps.push(fills[i]!.time - fills[i - 1]!.time)
  const exposure = exposureAt(history, at)
  const valued = history.transfers.filter((x) => x.time > from && x.time <= at && (x.direction === 'in' || x.direction === 'out') && x.usd !== null)
  const counterparties = [...new Set(valued.map((x) => x.counterparty).filter((c): c is string => c !== null))].sort()
  const { first, last } = activitySpan(history, at)
  const adequacy: SampleAdequacy = {
    adequate: fills.length >= MIN_FILLS_30D && days.size >= MIN_ACTIVE_DAYS_30D,
    fills_30d: fills.length,
    active_days_30d: days.size,
    min_fills_30d: MIN_FILLS_30D,
    min_active_days_30d: MIN_ACTIVE_DAYS_30D,
    reason: fills.length === 0 ? 'no_activity' : fills.length < MIN_FILLS_30D ? 'too_few_fills' : days.size < MIN_ACTIVE_DAYS_30D ? 'too_few_active_days' : null,
  }
  const run = walletState(history, at)
  return {
    address: history.address,
    at,
    net_flow_24h: flowSummary(history.transfers, at - DAY_MS, at),
    net_flow_7d: flowSummary(history.transfers, at - 7 * DAY_MS, at),
    net_flow_30d: flowSummary(history.transfers, from, at),
    gross_exposure_usd: exposure.gross,
    net_exposure_usd: exposure.net,
    direction: exposure.gross < FLAT_EXPOSURE_USD ? 'flat' : exposure.net >= 0 ? 'long' : 'short',
    gross_exposure_3d_ago_usd: exposureAt(history, at - 3 * DAY_MS).gross,
    realized_pnl_30d_usd: fills.reduce((a, f) => a + f.closed_pnl_usd - f.fee_usd, 0),
    fees_30d_usd: fills.reduce((a, f) => a + f.fee_usd, 0),
    fills_30d: fills.length,
    active_days_30d: days.size,
    median_fill_gap_ms: median(gaps),
    funding_paid_30d_usd: -history.funding.filter((p) => p.time > from && p.time <= at).reduce((a, p) => a + p.usd, 0),
    median_transfer_usd_30d: median(valued.map((x) => x.usd!)),
    counterparties_30d: counterparties,
    first_seen_at: first,
    last_active_at: last,
    sample_adequacy: adequacy,
    state: run.state,
    state_since: first === null ? null : run.since,
    liquidations_30d: history.liquidations.filter((l) => l.time > from && l.time <= at).length,
  }
}

export function stateIndex(state: WalletState): number {
  return WALLET_STATES.indexOf(state)
}
