/**
 * The bridge from wallet data to the question contract (models/QuestionModel.ts): the FeatureSnapshot an
 * account-scoped question evaluates, and the AccountWindow its resolver reads. Both come from one WalletHistory by
 * the same grammar (WalletFeatures.ts), so a training row, a live answer and a resolution agree.
 *
 * For account-scoped snapshots `asset` carries the subject wallet address (lower-case); numbers only in features
 * (state as its index in WALLET_STATES); one freshness input 'wallet'.
 */
import type { AccountWindow } from '../../pipeline/features/ResolutionWindow.ts'
import type { FeatureSnapshot } from '../../pipeline/features/FeatureSnapshot.ts'
import { computeWalletFeatures, flowSummary, walletState, type WalletFeatures } from './WalletFeatures.ts'
import { WALLET_STATES } from './WalletStateMachine.ts'
import { Instant, NullableString, StringEnum, Type, type Static } from '../../common/schema.ts'
import type { WalletHistory, WalletTransfer } from '../../ingest/wallet/WalletProvider.ts'

export const WALLET_INPUT = 'wallet'
/** A wallet read older than this at decision time is stale. */
export const WALLET_STALENESS_BUDGET_MS = 5 * 60_000

export const RISK_SUBJECT_KINDS = ['transaction', 'token', 'wallet', 'protocol'] as const
export type RiskSubjectKind = (typeof RISK_SUBJECT_KINDS)[number]

/**
 * The candidate movement an S11 assessment is about. Spec, Risk assessment request: "candidate: { tx_hash, log_index
 * (integer), block_time (instant), direction ('in' or 'out'), asset (token symbol), amount (number), usd_value
 * (number), counterparty (string or null) }".
 */
export const RISK_CANDIDATE = Type.Object(
  {
    tx_hash: Type.String({ pattern: '^0x[0-9a-fA-F]{64}$' }),
    log_index: Type.Integer({ minimum: 0 }),
    block_time: Instant,
    direction: StringEnum(['in', 'out']),
    asset: Type.String({ minLength: 1, maxLength: 20 }),
    amount: Type.Number(),
    usd_value: Type.Number(),
    counterparty: NullableString,
  },
  { additionalProperties: false },
)
export type RiskCandidate = Static<typeof RISK_CANDIDATE>

export function featureMap(f: WalletFeatures): Record<string, number | null> {
  return {
    state_index: WALLET_STATES.indexOf(f.state),
    state_age_ms: f.state_since === null ? null : f.at - f.state_since,
    net_flow_24h_usd: f.net_flow_24h.net_usd,
    net_flow_7d_usd: f.net_flow_7d.net_usd,
    net_flow_30d_usd: f.net_flow_30d.net_usd,
    valued_transfers_30d: f.net_flow_30d.valued,
    unvalued_transfers_30d: f.net_flow_30d.unvalued,
    gross_exposure_usd: f.gross_exposure_usd,
    gross_exposure_3d_ago_usd: f.gross_exposure_3d_ago_usd,
    realized_pnl_30d_usd: f.realized_pnl_30d_usd,
    funding_paid_30d_usd: f.funding_paid_30d_usd,
    fills_30d: f.fills_30d,
    active_days_30d: f.active_days_30d,
    sample_adequate: f.sample_adequacy.adequate ? 1 : 0,
    median_transfer_usd_30d: f.median_transfer_usd_30d,
    liquidations_30d: f.liquidations_30d,
  }
}

/**
 * The snapshot at `at`. `receivedAt` is when the provider's answer arrived (live) — training rows built from a
 * history at an earlier instant pass `at` (the data was complete then).
 */
export function walletFeatureSnapshot(
  history: WalletHistory,
  at: number,
  opts: { receivedAt?: number; candidate?: RiskCandidate; subjectKind?: RiskSubjectKind } = {},
): FeatureSnapshot {
  const f = computeWalletFeatures(history, at)
  const features = featureMap(f)
  if (opts.subjectKind !== undefined) features.subject_kind_index = RISK_SUBJECT_KINDS.indexOf(opts.subjectKind)
  if (opts.candidate) {
    const c = opts.candidate
    features.candidate_usd = Math.abs(c.usd_value)
    features.candidate_direction = c.direction === 'in' ? 1 : -1
    const seen = c.counterparty === null ? null : f.counterparties_30d.includes(c.counterparty.toLowerCase()) ? 1 : 0
    features.candidate_counterparty_seen = seen
  }
  const age = Math.max(0, at - (opts.receivedAt ?? at))
  return {
    asset: history.address,
    at,
    features,
    freshness: [
      {
        input: WALLET_INPUT,
        ok: age <= WALLET_STALENESS_BUDGET_MS,
        staleness_budget_ms: WALLET_STALENESS_BUDGET_MS,
        age_ms: age,
        last_success_at: new Date(opts.receivedAt ?? at).toISOString(),
        quality: history.source === 'simulated' ? 'simulated' : 'real',
      },
    ],
    sources: [`${history.provider}:wallet`],
  }
}

/** The wallet over (start, end]; incomplete when the history does not cover the whole window. */
export function accountWindow(history: WalletHistory, start: number, end: number): AccountWindow {
  const complete = start >= history.window.start && end <= history.window.end
  const flow = flowSummary(history.transfers, start, end)
  return {
    address: history.address,
    complete,
    state_at_end: complete ? walletState(history, end).state : null,
    net_flow_usd: flow.net_usd,
    valued_transfers: flow.valued,
    unvalued_transfers: flow.unvalued,
    liquidations: history.liquidations.filter((l) => l.time > start && l.time <= end).length,
  }
}

/** A historical transfer as an S11 candidate (training rows use the wallet's own valued in/out transfers). */
export function transferAsCandidate(t: WalletTransfer): RiskCandidate | null {
  if ((t.direction !== 'in' && t.direction !== 'out') || t.usd === null) return null
  return {
    tx_hash: t.hash ?? '0x' + '0'.repeat(64),
    log_index: 0,
    block_time: new Date(t.time).toISOString(),
    direction: t.direction,
    asset: t.token ?? 'USDC',
    amount: t.amount ?? t.usd,
    usd_value: t.usd,
    counterparty: t.counterparty,
  }
}
