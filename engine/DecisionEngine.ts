/**
 * The write path of the engine: evaluates the live feature snapshot, applies the sealed policy, journals the snapshot
 * and appends the record to the ledger (deduped). Beside it: LiveFeatures (what decisions are made from and when),
 * Replayer (replay and state verification) and LedgerView (the free reads); EngineRunner composes them.
 *
 * Spec, What the service does 4: "The service refuses rather than invents. Stale inputs, inadequate baselines or
 * unavailable surfaces yield an ordinary 200 response whose recorded decision names the refusal, with probability 0
 * and confidence 0 meaning no claim. An unreachable provider is an error (PROVIDER_DOWN), never a decision."
 * Versioning 4: "Identical inputs under the same policy version yield the same recorded decision."
 * States, Next decision: "previous clock still open → typed refusal clock_open".
 *
 * Event time only: a decision's created_at is the snapshot's instant — the engine's clock (the newest tick it has
 * seen, unless a clock is injected), or a cadence grid instant — never Date.now().
 *
 * Account-scoped questions (S09..S11; the subject is a wallet): the subject's history is read through the wired
 * WalletProvider at the account clock's instant (`accountClock`: the engine clock unless one is injected — svc start
 * injects wall time for a live provider), the snapshot is built from it (models/account/accountSnapshot.ts) and
 * journaled, the fit is the operator's pooled one or the documented fit on the subject's own history
 * (accountInputs.ts), and the record goes through the same prepare path. No provider, or a provider that
 * fails: PROVIDER_DOWN, and no row.
 */
import type { FeatureSnapshot } from '../pipeline/features/FeatureSnapshot.ts'
import type { FittedParams, QuestionModel } from '../models/QuestionModel.ts'
import { isoMs } from '../ingest/Tick.ts'
import type { LedgerDecision, PaymentRail } from '../pipeline/records/decisionRecord.ts'
import type { Policy } from '../models/policy/Policy.ts'
import { activePolicy } from '../models/policy/rulesets.ts'
import type { RiskCandidate } from '../models/account/accountSnapshot.ts'
import { ADDRESS_PATTERN } from '../common/schema.ts'
import { canonicalAddress, type WalletProvider } from '../ingest/wallet/WalletProvider.ts'
import type { AccountQuestion } from '../models/questions/AccountQuestion.ts'
import { ACCOUNT_HISTORY_MS, accountSnapshot, ownHistoryFit, readAccountHistory } from './accountInputs.ts'
import { JEV_VERSION } from '../models/version.ts'
import { EngineError } from './EngineError.ts'
import type { DecisionLedger } from './DecisionLedger.ts'
import type { FitStore } from './FitStore.ts'
import { decisionIdOf, journalOf, stateHashOf } from './identity.ts'
import type { LiveFeatures } from './LiveFeatures.ts'
import { isClaim } from './LedgerIndex.ts'
import { QuestionCatalog } from './QuestionCatalog.ts'
import { ServedRelease } from './ServedRelease.ts'

export interface PaymentRef {
  payment_id: string
  rail: Exclude<PaymentRail, 'none'>
}

export interface DecideInput {
  question_id: string
  asset: string
  subject?: string | null
  /** S11_risk only: the candidate movement the risk answer is about (spec, Risk assessment request `candidate`). */
  candidate?: RiskCandidate | null
  payment?: PaymentRef | null
}

export interface DecisionResult {
  record: LedgerDecision
  /** True when identical inputs re-served an already recorded decision (no new row). */
  reserved: boolean
}

/**
 * A decision evaluated but not written (unless `reserved`: identical inputs were recorded): the paid caller appends
 * it in its call's unit of work (DecisionLedger.appendIn), the runner stages it for its next flush.
 */
export interface PreparedDecision extends DecisionResult {
  /** The snapshot the record was evaluated from (a re-served record's own journal may differ in freshness ages). */
  snapshot: FeatureSnapshot
}

export interface DecisionEngineOptions {
  ledger: DecisionLedger
  fits: FitStore
  /** The ruleset in force for new decisions (default: the active sealed ruleset, models/policy/rulesets.ts). */
  policy?: Policy
  /** The live features and event time decisions are made from. */
  live: LiveFeatures
  /** The questions and assets the engine answers (default: every registered question on BTC, ETH, SOL). */
  catalog?: QuestionCatalog
  /** The wallet provider account-scoped questions read (default none: they answer PROVIDER_DOWN). */
  walletProvider?: WalletProvider | null
}

/**
 * Public conditions: the machine conditions object the resolver re-derives the event from, names sorted — the same
 * shape the SQL views give (a JSON object), so an agent and a quant read one field one way (issue 14).
 */
export function publicConditions(conditions: Record<string, unknown>): Record<string, unknown> {
  return sortedByName(conditions)
}

/** An object's members by name, as canonical JSON (RFC 8785) orders them: a record's own write and its read-back agree. */
function sortedByName<V>(members: Readonly<Record<string, V>>): Record<string, V> {
  const out: Record<string, V> = {}
  for (const k of Object.keys(members).sort()) out[k] = members[k]!
  return out
}

export class DecisionEngine {
  /** The live features and the engine's event time (what decisions are made from, and when). */
  readonly live: LiveFeatures
  readonly ledger: DecisionLedger
  readonly fits: FitStore
  readonly policy: Policy
  private readonly catalog: QuestionCatalog
  readonly walletProvider: WalletProvider | null
  private readonly accountFits = new Map<string, FittedParams>()
  /** What market questions answer with: the active release (replaced whole on a switch, never edited). */
  private served: ServedRelease = ServedRelease.none()

  constructor(options: DecisionEngineOptions) {
    this.ledger = options.ledger
    this.fits = options.fits
    this.policy = options.policy ?? activePolicy()
    this.live = options.live
    this.catalog = options.catalog ?? new QuestionCatalog()
    this.walletProvider = options.walletProvider ?? null
  }

  /**
   * Installs pooled parameters for an account-scoped question (every subject), e.g. fitted offline on many wallets'
   * histories; without them each decision fits on the subject's own history. Kept in the fit store for replay.
   */
  setAccountFit(fitted: FittedParams): Promise<void> {
    if (this.catalog.find(fitted.question_id)?.scope !== 'account') throw new RangeError(`${fitted.question_id} is not account-scoped`)
    this.accountFits.set(fitted.question_id, fitted)
    return this.fits.put(fitted)
  }

  /**
   * Serves `release` from the next decision on. An ask already composing keeps the release it read (compose reads it
   * once, synchronously). Its families' parameters go to the fit store, so replay finds them by fitted_version.
   */
  async useRelease(release: ServedRelease): Promise<void> {
    for (const fitted of release.fits()) await this.fits.put(fitted)
    this.served = release
  }

  /** The release in force (immutable; a switch replaces it). */
  get release(): ServedRelease {
    return this.served
  }

  /** The parameters a market question answers with under the active release (null: see release.refusal). */
  fittedFor(questionId: string): FittedParams | null {
    return this.served.fitted(questionId)
  }

  question(id: string): QuestionModel {
    return this.catalog.question(id)
  }

  /**
   * The record for `question` on `asset` at event time `at`: the recorded one when identical inputs were already
   * decided under this policy version, else a new one (not yet appended).
   */
  compose(
    question: QuestionModel,
    asset: string,
    subject: string | null,
    at: number,
    payment: PaymentRef | null,
    journaled?: { snapshot: FeatureSnapshot; journal: string; input_hash: string },
    fittedOverride?: FittedParams | null,
  ): { record: LedgerDecision; isNew: boolean; snapshot: FeatureSnapshot } {
    const snapshot = journaled?.snapshot ?? this.live.snapshotAt(asset, at)
    const { journal, input_hash } = journaled ?? journalOf(snapshot)
    const policy = this.policy
    const decision_id = decisionIdOf({ question_id: question.id, asset, subject, input_hash, policy_version: policy.version })
    const existing = this.ledger.findDecision(decision_id)
    if (existing) return { record: existing, isNew: false, snapshot }
    // One read of the release per decision: a switch during an ask cannot mix two releases in one record.
    const release = question.scope === 'account' ? null : this.served
    const fitted = fittedOverride !== undefined ? fittedOverride : (release?.fitted(question.id) ?? null)
    let out = question.evaluate(snapshot, fitted)
    // No parameters because no release serves them: the record says which (never a fit made here instead).
    const unserved = release && fitted === null ? release.refusal(question.id) : null
    if (unserved && out.kind === 'refusal' && out.reason === 'model_not_fitted') out = { ...out, reason: unserved }
    const jev_version = release?.jevVersion ?? JEV_VERSION
    const release_version = release?.version ?? null
    const res = policy.apply(out, question.id)
    let choice: LedgerDecision['choice'] = null
    if (out.kind === 'claim' && out.distribution && res.action !== 'refuse') {
      const predicted = out.conditions.predicted_class
      const modal = Object.entries(out.distribution).reduce((a, b) => (b[1] > a[1] ? b : a))[0]
      // Classes by name: the order the record has when read back from the log (canonical JSON), so the instance that
      // answered and every replica or restart serve one text, not the model's class order here and sorted there.
      choice = { choice_id: typeof predicted === 'string' ? predicted : modal, distribution: sortedByName(out.distribution) }
    }
    const fitted_version = fitted?.version ?? null
    const record: LedgerDecision = {
      v: 1,
      decision_id,
      question_id: question.id,
      asset,
      subject,
      event: out.event,
      horizon: out.horizon,
      horizon_end: isoMs(at + question.horizonMs),
      created_at: isoMs(at),
      conditions: out.conditions,
      probability: res.probability,
      confidence: res.confidence,
      decision: res.decision,
      action: res.action,
      input_hash,
      state_hash: stateHashOf({ model_id: question.id, jev_version, fitted_version, policy_version: policy.version, policy_checksum: policy.checksum, release_version }),
      policy_version: policy.version,
      jev_version,
      choice,
      payment_id: payment?.payment_id ?? null,
      payment_rail: payment?.rail ?? 'none',
      matched_rules: res.matched_rules,
      refusal_reason: out.kind === 'refusal' ? out.reason : res.action === 'refuse' ? 'min_confidence' : null,
      model_id: question.id,
      fitted_version,
      release_version,
      policy_checksum: policy.checksum,
      journal,
    }
    return { record, isNew: true, snapshot }
  }

  /** Stages a composed record for the caller's next ledger flush (cadence decisions of the engine runner). */
  stage(record: LedgerDecision): { record: LedgerDecision; isNew: boolean } {
    return this.ledger.stageDecision(record)
  }

  /**
   * Evaluates a decision without writing it, so a paid caller can record it only once payment is captured
   * (spec, x402: "The decision is recorded only when settlement succeeds"). `reserved` means identical inputs
   * re-serve a recorded decision: nothing to write, and nothing to charge as a new row. Otherwise the caller appends
   * the row in its unit of work (DecisionLedger.appendIn dedupes it against a concurrent twin).
   */
  async prepare(input: DecideInput): Promise<PreparedDecision> {
    const question = this.question(input.question_id)
    this.catalog.checkAsset(input.asset)
    if (question.scope === 'account') return this.prepareAccount(question as AccountQuestion, input)
    const at = this.live.now()
    if (at === null) throw new EngineError('PROVIDER_DOWN', 'no venue data has reached the engine yet', { reason: 'NO_VENUE_DATA' })
    return this.prepared(this.compose(question, input.asset, null, at, input.payment ?? null))
  }

  /**
   * An account-scoped decision (the subject is a wallet). Spec catalog: "S09..S11 Account-scoped questions: the
   * subject is a wallet"; What the service does 4: "An unreachable provider is an error (PROVIDER_DOWN), never a
   * decision." The subject is required (400 naming /body/subject), S11 needs its candidate (/body/candidate).
   */
  private async prepareAccount(question: AccountQuestion, input: DecideInput): Promise<PreparedDecision> {
    if (typeof input.subject !== 'string' || !ADDRESS_PATTERN.test(input.subject)) {
      throw new EngineError('VALIDATION', `${question.id} is account-scoped: body.subject must be the wallet address (0x + 20 bytes hex)`, {
        reason: 'REQUEST_VALIDATION_FAILED',
        field: '/body/subject',
      })
    }
    const candidate = question.id === 'S11_risk' ? input.candidate ?? null : null
    if (question.id === 'S11_risk' && candidate === null) {
      throw new EngineError('VALIDATION', 'S11_risk assesses one candidate movement: body.candidate is required', { reason: 'REQUEST_VALIDATION_FAILED', field: '/body/candidate' })
    }
    const provider = this.walletProvider
    if (!provider) {
      throw new EngineError('PROVIDER_DOWN', `${question.id} needs a wallet provider, and none is wired on this deployment`, { reason: 'WALLET_PROVIDER_UNWIRED' })
    }
    const at = this.live.accountNow()
    if (at === null) throw new EngineError('PROVIDER_DOWN', 'no event time has reached the engine yet', { reason: 'NO_VENUE_DATA' })
    const subject = canonicalAddress(input.subject)
    const history = await readAccountHistory(provider, subject, at - ACCOUNT_HISTORY_MS, at)
    const snapshot = accountSnapshot(question, history, at, candidate)
    const fitted = this.accountFits.get(question.id) ?? ownHistoryFit(question, history)
    // Durable before the row can be: replay finds the parameters by the record's fitted_version.
    await this.fits.put(fitted)
    return this.prepared(this.compose(question, input.asset, subject, at, input.payment ?? null, { snapshot, ...journalOf(snapshot) }, fitted))
  }

  private async prepared(composed: { record: LedgerDecision; isNew: boolean; snapshot: FeatureSnapshot }): Promise<PreparedDecision> {
    const { record, isNew, snapshot } = composed
    if (!isNew) {
      if (this.ledger.index.decision(record.decision_id) === null) await this.ledger.flush() // staged by the runner: make it durable first
      return { record, reserved: true, snapshot }
    }
    return { record, reserved: false, snapshot }
  }

  /** The question, asset and subject a next decision asks again; null for an unknown id; CLOCK_OPEN while open. */
  nextDecisionInput(previousId: string): { question_id: string; asset: string; subject: string | null } | null {
    const prev = this.ledger.index.decision(previousId)
    if (!prev) return null
    if (prev.question_id === 'S11_risk') {
      throw new EngineError('VALIDATION', 'S11_risk answers about one candidate movement; ask POST /v1/decisions with the next candidate', {
        reason: 'REQUEST_VALIDATION_FAILED',
        field: '/body/previous_decision_id',
      })
    }
    const now = this.catalog.clockFor(prev.question_id, this.live)
    if (isClaim(prev) && (now === null || now < Date.parse(prev.horizon_end))) {
      throw new EngineError('CLOCK_OPEN', `the clock of ${previousId} is open until ${prev.horizon_end}`, { reason: 'clock_open', horizon_end: prev.horizon_end })
    }
    return { question_id: prev.question_id, asset: prev.asset, subject: prev.subject }
  }
}
