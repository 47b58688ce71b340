/**
 * The service parts the HTTP layer calls, composed from the interfaces their domains define. Serving owns routing,
 * validation, envelopes, payment and rate limiting; everything that needs ledger data, a model or a domain rule is
 * behind these parts.
 *
 * A part left undefined is "not wired on this deployment": routes needing it answer 503 PROVIDER_DOWN with
 * detail.reason SERVICE_UNWIRED and detail.missing naming the part (spec: "When a provider is not wired or down,
 * paid wallet and market routes answer 503 PROVIDER_DOWN").
 *
 * Implementations signal typed refusals by throwing ServiceError (e.g. DECISION_NOT_FOUND, REPLAY_INPUT_LOST);
 * lookups that may miss return null and the route renders the spec's 404.
 */
import type { Logger } from 'pino'
import type { Clock } from '../common/Clock.ts'
import type { DecisionService } from '../engine/DecisionService.ts'
import type { LedgerReads } from '../engine/LedgerReads.ts'
import type { EventStream } from '../common/EventStream.ts'
import type { RecordReads } from '../record/MeasuredRecord.ts'
import type { AnswerKeyring } from '../record/answerKeys/AnswerKeyring.ts'
import type { ReleaseReads } from '../record/releases/ReleaseStore.ts'
import type { Arena } from '../product/arena/Arena.ts'
import type { Billing, LadderSource } from '../product/billing/Billing.ts'
import type { Delivery } from '../product/delivery/Delivery.ts'
import type { Duel } from '../product/duel/Duel.ts'
import type { FunnelReads } from '../product/funnel/FunnelService.ts'
import type { MarketData } from '../product/market/MarketData.ts'
import type { ClusterStatusSource, DataTimeSource, ProviderRegistry } from '../product/platform/schemas.ts'
import type { RiskEngine } from '../product/risk/RiskEngine.ts'
import type { WalletData } from '../product/wallet/WalletData.ts'
import type { ServingConfig } from './config.ts'
import type { ServiceMetrics } from './metrics/ServiceMetrics.ts'
import type { PaymentGate } from './payments/PaymentGate.ts'
import type { RateLimiter } from './RateLimiter.ts'
import type { PayerProof } from '../product/identity/PayerProof.ts'
import type { PayerOwners } from './cluster/PayerOwners.ts'

export interface Services {
  clock: Clock
  config: ServingConfig
  logger: Logger
  rateLimiter: RateLimiter
  paymentGate: PaymentGate
  /** Proof of payer control (sign-in-with-x and bearer sessions): every payer-scoped route and the credits rail. */
  payerProof: PayerProof
  providers?: ProviderRegistry
  /** Several instances (issue 32): payer-scoped requests go to the payer's owner; absent: this instance serves all. */
  payerOwners?: PayerOwners
  /** Which time the data lives in: /readyz data_time and the x-svc-data-time header on every answer. */
  dataTime?: DataTimeSource
  /** Several instances (issue 32): /readyz cluster, who this instance is and who owns what. */
  cluster?: ClusterStatusSource
  ledger?: LedgerReads
  /** The ledger's live streams (engine/LedgerStreams.ts): the feed, the open clocks, the new decisions. */
  streams?: { feed: EventStream; clocks: EventStream; decisions: EventStream }
  engine?: DecisionService
  record?: RecordReads
  releases?: ReleaseReads
  market?: MarketData
  wallets?: WalletData
  risk?: RiskEngine
  billing?: Billing
  duel?: Duel
  delivery?: Delivery
  /** XP, ranks, quests, badges, seasons, boards and notifications (product/arena). */
  arena?: Arena
  ladder?: LadderSource
  /** The operator funnel; wired only where an admin key is configured (its route exists only then). */
  funnel?: FunnelReads
  /** The /metrics registry (serving/metrics/); when wired, the dispatcher counts every answer into it. */
  metrics?: ServiceMetrics
  /**
   * The deployment's answer keys (issue 29): the key in force signs every decision record served (meta.signatures),
   * and every key is published with its window. Unset: records are served unsigned and no receipt verifies.
   */
  answerKeys?: AnswerKeyring
}

/** The optional parts, by the name detail.missing reports. */
export type ServicePart = 'providers' | 'ledger' | 'streams' | 'engine' | 'record' | 'releases' | 'market' | 'wallets' | 'risk' | 'billing' | 'duel' | 'delivery' | 'arena' | 'ladder' | 'metrics' | 'funnel'
