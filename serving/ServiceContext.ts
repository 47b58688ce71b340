/**
 * The services the HTTP layer calls. Serving owns routing, validation, envelopes, payment and rate limiting;
 * everything that needs ledger data or a model is behind these interfaces, implemented by the engine work.
 *
 * A part left undefined is "not wired on this deployment": routes needing it answer 503 PROVIDER_DOWN with
 * detail.reason SERVICE_UNWIRED and detail.missing naming the part (spec: "When a provider is not wired or down,
 * paid wallet and market routes answer 503 PROVIDER_DOWN").
 *
 * Implementations signal typed refusals by throwing ServiceError (e.g. DECISION_NOT_FOUND, REPLAY_INPUT_LOST);
 * lookups that may miss return null and the route renders the spec's 404.
 */
import type { Logger } from 'pino'
import type { ServingConfig } from './config.ts'
import type { Freshness } from './envelope.ts'
import type { PaymentAuthorized, PaymentGate } from './payments/PaymentGate.ts'
import type { LadderMeasures, PackId, PlanId, Price } from './pricing.ts'
import type { RateLimiter } from './RateLimiter.ts'

export interface Clock {
  /** Epoch milliseconds. */
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

// ---------------------------------------------------------------- records (shapes of the spec's Resources)

export type Asset = 'BTC' | 'ETH' | 'SOL'

export interface DecisionRecord {
  decision_id: string
  question_id: string
  asset: string | null
  /** Subject wallet for account-scoped questions (S09..S11), else null. */
  subject: string | null
  event: string
  horizon: string
  horizon_end: string
  created_at: string
  conditions: string[]
  probability: number
  confidence: number
  decision: string
  action: string
  input_hash: string
  state_hash: string
  policy_version: string
  jev_version: string
  choice?: { choice_id: string; distribution: Record<string, number> }
  payment_id?: string
}

/** A decision plus what meta needs (freshness of its inputs, probabilities when a distribution). */
export interface DecisionRead {
  record: DecisionRecord
  freshness: Freshness[]
  data_sources: string[]
  /** True when identical inputs re-served an already recorded decision: no new row, so no charge. */
  reserved?: boolean
}

export interface ResolutionRecord {
  status: 'resolved'
  decision_id: string
  outcome: 'obtains' | 'not' | 'unresolvable'
  resolved_at: string
  statistic: number | null
}

export interface PendingResolution {
  status: 'pending'
  decision_id: string
  horizon_end: string
}

/** GET /v1/priors item (a prior is a base rate, not a forecast); the engine computes it. */
export type { QuestionPrior } from '../models/engine/DecisionEngine.ts'
import type { QuestionPrior } from '../models/engine/DecisionEngine.ts'

export type Verified = boolean | 'unknown'

export interface LineageBundle {
  decision: DecisionRecord
  resolution: ResolutionRecord | PendingResolution
  payment: { rail: 'x402' | 'credits' | 'none'; payment_id: string | null }
  tape: { sources: Array<{ input: string; source: string; from: string | null; to: string | null }> }
  hashes: { input_hash: string | null; state_hash: string | null }
  verify: { input_ok: Verified; state_ok: Verified }
}

export interface ReplayResult {
  decision_id: string
  original_verdict: string
  replayed_verdict: string
  matched_rules: string[]
  policy_version: string
  deterministic: true
}

export interface CalibrationBucket {
  lo: number
  hi: number
  n: number
  mean_predicted: number | null
  realized_frequency: number | null
  published: boolean
}

export interface CalibrationReport {
  question_id: string | null
  subject: string | null
  buckets: CalibrationBucket[]
  published: boolean
  n: number
  n_floor: number
  note: string
}

export interface OpenClock {
  question_id: string
  asset: string
  question_label: string
  decision_id: string
  /** Probability, or the predicted label of a choice question. */
  predicted: number | string
  horizon_end: string
}

export interface FeedChip {
  decision_id: string
  question_id: string
  asset: string | null
  output: 'choice' | 'probability'
  predicted: string | number | null
  realized: string | null
  match: boolean | null
  observed: boolean | null
  status: 'obtains' | 'not' | 'unresolvable'
  resolved_at: string
  horizon_end: string
}

export interface MarketSnapshot {
  asset: string
  quote: { price: number | null; bid: number | null; ask: number | null; mark: number | null; index: number | null; volume_24h: number | null }
  derived: { mid: number | null; spread_bps: number | null }
  provenance: { source: string; provider: string; timestamp: string; received_at: string; age_ms: number; quality: string }
}

export interface UniverseAsset {
  symbol: string
  mid: number | null
  mark: number | null
  change_24h: number | null
  volume_24h: number | null
  oi_usd: number | null
  funding: number | null
  max_leverage: number | null
  delisted: false
}

export interface Universe {
  venue: string
  as_of: string
  quality: 'real' | 'degraded'
  assets: UniverseAsset[]
  count: number
  total_live: number
  truncated: boolean
}

export interface MarketCapList {
  as_of: string
  source: string
  coins: Array<{ rank: number; symbol: string; name: string; market_cap_usd: number; askable: boolean | null }>
}

export interface LiqHours {
  asset: string
  hours_observed: number
  hours_required: number
  /** 'N/24'. */
  figure: string
  ready: boolean
}

export interface SignalEntry {
  question_id: string
  label: string
  available: boolean
  /** Exact reason when blocked, else null. */
  reason: string | null
}

export interface SignalCatalog {
  questions: SignalEntry[]
  sample_hours_by_asset: Record<string, number>
}

export type ProviderStatus = 'ok' | 'degraded' | 'down'

export interface ProviderHealth {
  slug: string
  kind: string
  status: ProviderStatus
  last_success_at: string | null
  latency_ms: number | null
  error_class: string | null
  /** A critical provider down makes the service down (readyz 503); a non-critical one only degrades it. */
  critical: boolean
}

// ---------------------------------------------------------------- service parts

/** Provider inventory and health (readyz rollup, GET /v1/providers). */
export interface ProviderRegistry {
  list(): ProviderHealth[]
}

/** A value now, or later. In-memory reads answer synchronously so the hottest routes never hop through a microtask. */
export type MaybePromise<T> = T | Promise<T>

/** A market snapshot with its inputs' freshness (GET /v1/market/{asset}). */
export interface SnapshotRead {
  snapshot: MarketSnapshot
  freshness: Freshness[]
}

/** Free ledger reads: never call a live model. */
export interface LedgerReads {
  getDecision(decisionId: string): MaybePromise<DecisionRead | null>
  /** Newest per (question_id, asset) by timestamp desc then decision id; refusal rows included. */
  latestDecision(q: { question_id: string; asset: string }): Promise<DecisionRead | null>
  /** Accepts a full id or a unique prefix of 8+ characters; an ambiguous prefix throws ServiceError VALIDATION. */
  lineage(idOrPrefix: string): Promise<LineageBundle | null>
  resolution(decisionId: string): Promise<ResolutionRecord | PendingResolution | null>
  calibration(q: { question_id: string | null; subject: string | null }): Promise<CalibrationReport>
  /** Soonest horizon_end first; degraded upstream throws ServiceError STALE_DATA or PROVIDER_DOWN. */
  openClocks(): MaybePromise<OpenClock[]>
  /** Newest resolved first. */
  feed(q: { limit: number }): MaybePromise<FeedChip[]>
  /** Per-question base rates from realized outcomes (spec Computation rule 5); null prior with a reason where none. */
  priors(): Promise<QuestionPrior[]>
}

/** Decisions and replays (the decision engine). Paid operations receive the authorized payment. */
export interface DecisionEngine {
  /** Unknown id → null; unverifiable inputs → ServiceError REPLAY_INPUT_LOST; bad pin → VALIDATION. */
  replay(decisionId: string, opts: { ruleset_version: string | null }): Promise<ReplayResult | null>
  decide(
    /** subject: the wallet of an account-scoped question (S09..S11); candidate: S11's candidate movement. */
    input: { asset: Asset; chain: 'base'; question_id: string; subject: string | null; candidate?: Record<string, unknown> | null },
    payment: PaymentAuthorized,
  ): Promise<DecisionRead>
  /** Previous clock still open → ServiceError CLOCK_OPEN; unknown previous → null. */
  nextDecision(previousDecisionId: string, payment: PaymentAuthorized): Promise<DecisionRead | null>
  marketRegime(asset: Asset, payment: PaymentAuthorized): Promise<DecisionRead>
  marketRisk(asset: Asset, payment: PaymentAuthorized): Promise<DecisionRead>
  signals(): Promise<SignalCatalog>
}

/**
 * A paid market surface (liquidation surface, funding): the data plus what meta needs. `reserved` is true when every
 * decision in the answer re-served an already recorded one (no new row, so no charge); `refusal` when the answer
 * carries decisions and every one is a refusal.
 */
export interface MarketRead<T = unknown> {
  data: T
  /** meta.state: 'ok', 'degraded' (an input breached its budget) or 'unavailable' (surface not available). */
  state: string
  freshness: Freshness[]
  data_sources: string[]
  reserved?: boolean
  refusal?: boolean
}

/** Venue market data (free snapshot and universe; paid surfaces). */
export interface MarketData {
  /** Unknown or delisted symbol → null (404 ASSET_NOT_FOUND). */
  snapshot(symbol: string): MaybePromise<SnapshotRead | null>
  /** Read failure with no prior snapshot → ServiceError PROVIDER_DOWN. */
  universe(q: { limit: number; q: string | null }): Promise<Universe>
  marketcap(): Promise<MarketCapList>
  liqHours(asset: string): Promise<LiqHours | null>
  liquidationSurface(asset: Asset, payment: PaymentAuthorized): Promise<MarketRead>
  fundingSnapshot(payment: PaymentAuthorized): Promise<MarketRead>
  fundingAsset(asset: Asset, payment: PaymentAuthorized): Promise<MarketRead>
  fundingOpportunities(payment: PaymentAuthorized): Promise<MarketRead>
}

export interface WalletData {
  profile(chain: 'base', address: string, payment: PaymentAuthorized): Promise<unknown>
  state(chain: 'base', address: string, payment: PaymentAuthorized): Promise<unknown>
  positions(chain: 'base', address: string, payment: PaymentAuthorized): Promise<unknown>
  events(chain: 'base', address: string, q: { window: string; cursor: string | null }, payment: PaymentAuthorized): Promise<unknown>
}

export type RiskSubjectKind = 'transaction' | 'token' | 'wallet' | 'protocol'

export interface RiskEngine {
  assess(kind: RiskSubjectKind, body: Record<string, unknown>, payment: PaymentAuthorized): Promise<unknown>
}

/** Credits, the free allowance, purchases and operator actions (serving/billing/BillingService.ts). */
export interface Billing {
  /** Paid by x402 only (the credits rail refuses credit purchases with PLAN_NOT_RECHARGEABLE). */
  purchasePack(packId: PackId, payer: string, payment: PaymentAuthorized, price: Price): Promise<unknown>
  purchasePlan(planId: PlanId, payer: string, payment: PaymentAuthorized, price: Price): Promise<unknown>
  scoutGrant(payer: string): Promise<{ granted: boolean; balance_credits: number }>
  scoutStatus(payer: string): unknown
  credits(payer: string): unknown
  draws(payer: string, limit: number): unknown
  /** Throws OPS_UNSET (no token wired) or OPS_FORBIDDEN (missing or wrong x-svc-ops). */
  requireOperator(token: string | undefined): void
  grant(input: { payer: string; credits: number; ref: string }): Promise<unknown>
  /** Unknown ref → DEBIT_NOT_FOUND; idempotent. */
  reverse(input: { payer: string; ref: string }): Promise<unknown>
  rateLockQuote(payer: string, rung: number): unknown
  rateLockIssue(payer: string, credits: number, rung: number, ref: string): Promise<unknown>
  rateLockFee(credits: number, rung: number): { usd: string; atomic: bigint }
  surge(turnAt: number): unknown
}

export interface DuelAndHooks {
  /** Terminal clock → HOOK_CLOCK_TERMINAL; unsafe url → UNSAFE_URL; unknown decision → null. */
  armHook(input: { decision_id: string; url: string }, payment: PaymentAuthorized): Promise<unknown | null>
  /** CLOCK_CLOSED / CALL_ALREADY_LOCKED as ServiceErrors; unknown decision → null. */
  lockCall(
    input: { payer: string; decision_id: string; call: 'obtains' | 'not'; call_probability: number | null },
    payment: PaymentAuthorized,
  ): Promise<unknown | null>
}

/** Ladder measurements (GET /v1/pricing and the intelligence routes publish the same ladder object). */
export interface LadderSource {
  measures(): Promise<LadderMeasures>
}

export interface Services {
  clock: Clock
  config: ServingConfig
  logger: Logger
  rateLimiter: RateLimiter
  paymentGate: PaymentGate
  providers?: ProviderRegistry
  ledger?: LedgerReads
  engine?: DecisionEngine
  market?: MarketData
  wallets?: WalletData
  risk?: RiskEngine
  billing?: Billing
  duel?: DuelAndHooks
  ladder?: LadderSource
}

/** The optional parts, by the name detail.missing reports. */
export type ServicePart = 'providers' | 'ledger' | 'engine' | 'market' | 'wallets' | 'risk' | 'billing' | 'duel' | 'ladder'
