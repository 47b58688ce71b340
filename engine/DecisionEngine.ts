/**
 * The in-process decision engine: evaluates the live feature snapshot, applies the sealed policy, journals the
 * snapshot, appends the record to the ledger (deduped), and answers the free reads from the ledger index.
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
 * (accountInputs.ts), and the record goes through the same prepare / record_ path. No provider, or a provider that
 * fails: PROVIDER_DOWN, and no row.
 */
import type { FeatureSnapshot } from '../pipeline/features/FeatureSnapshot.ts'
import type { FittedParams, QuestionModel } from '../models/QuestionModel.ts'
import { FeatureState } from '../pipeline/features/FeatureState.ts'
import { CANONICAL_ASSETS, isoMs, tickTime, type Tick } from '../ingest/Tick.ts'
import type { Clock } from '../common/Clock.ts'
import type { LedgerDecision, PaymentRail } from '../pipeline/records/decisionRecord.ts'
import type { LedgerOutcome } from '../pipeline/records/outcomeRecord.ts'
import type { Policy } from '../models/policy/Policy.ts'
import { activePolicy, policyByVersion } from '../models/policy/rulesets.ts'
import type { RiskCandidate } from '../models/account/accountSnapshot.ts'
import { ADDRESS_PATTERN, canonicalAddress, type WalletProvider } from '../ingest/wallet/WalletProvider.ts'
import type { AccountQuestion } from '../models/questions/AccountQuestion.ts'
import { ACCOUNT_HISTORY_MS, accountSnapshot, ownHistoryFit, readAccountHistory } from './accountInputs.ts'
import { QUESTIONS } from '../models/questions/index.ts'
import { JEV_VERSION } from '../models/version.ts'
import { EngineError } from './EngineError.ts'
import type { DecisionLedger } from './DecisionLedger.ts'
import type { FitStore } from './FitStore.ts'
import { decisionIdOf, journalMatches, journalOf, stateHashOf } from './identity.ts'
import { isClaim } from './LedgerIndex.ts'

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

export interface ReplayOutcome {
  decision_id: string
  original_verdict: string
  replayed_verdict: string
  matched_rules: string[]
  policy_version: string
  deterministic: true
}

export type ResolutionRead =
  | { status: 'resolved'; decision_id: string; outcome: LedgerOutcome['outcome']; resolved_at: string; statistic: number | null }
  | { status: 'pending'; decision_id: string; horizon_end: string }

export type Verified = boolean | 'unknown'

export interface Lineage {
  decision: LedgerDecision
  resolution: ResolutionRead
  payment: { rail: PaymentRail; payment_id: string | null }
  tape: { sources: Array<{ input: string; source: string; from: string | null; to: string | null }> }
  hashes: { input_hash: string | null; state_hash: string | null; policy_checksum: string; fitted_version: string | null }
  verify: { input_ok: Verified; state_ok: Verified }
}

export interface OpenClockRead {
  question_id: string
  asset: string
  question_label: string
  decision_id: string
  predicted: number | string
  horizon_end: string
}

export interface FeedChipRead {
  decision_id: string
  question_id: string
  asset: string
  output: 'choice' | 'probability'
  predicted: string | number | null
  realized: string | null
  match: boolean | null
  observed: boolean | null
  status: LedgerOutcome['outcome']
  resolved_at: string
  horizon_end: string
}

export interface DecisionEngineOptions {
  ledger: DecisionLedger
  fits: FitStore
  /** The ruleset in force for new decisions (default: the active sealed ruleset, models/policy/rulesets.ts). */
  policy?: Policy
  /** Event time of API decisions; default: the newest tick time this engine has observed. */
  clock?: Clock | null
  questions?: readonly QuestionModel[]
  /** The wallet provider account-scoped questions read (default none: they answer PROVIDER_DOWN). */
  walletProvider?: WalletProvider | null
  /** The instant account decisions are made at and account clocks resolve at (default: this engine's clock). */
  accountClock?: Clock | null
  /** Assets the engine answers (default BTC, ETH, SOL). */
  assets?: readonly string[]
}

/** Public conditions: the machine conditions as `name=value` strings, names sorted (strings bare, the rest as JSON). */
export function conditionStrings(conditions: Record<string, unknown>): string[] {
  return Object.keys(conditions)
    .sort()
    .map((k) => {
      const v = conditions[k]
      return `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`
    })
}

export class DecisionEngine {
  readonly features = new FeatureState()
  readonly ledger: DecisionLedger
  readonly fits: FitStore
  readonly policy: Policy
  private readonly clock: Clock | null
  private readonly questions: Map<string, QuestionModel>
  readonly walletProvider: WalletProvider | null
  private readonly accountClock: Clock | null
  private readonly accountFits = new Map<string, FittedParams>()
  private readonly assets: Set<string>
  private readonly fitted = new Map<string, FittedParams>()
  private watermark = -Infinity

  constructor(options: DecisionEngineOptions) {
    this.ledger = options.ledger
    this.fits = options.fits
    this.policy = options.policy ?? activePolicy()
    this.clock = options.clock ?? null
    this.questions = new Map((options.questions ?? QUESTIONS).map((q) => [q.id, q]))
    this.walletProvider = options.walletProvider ?? null
    this.accountClock = options.accountClock ?? null
    this.assets = new Set(options.assets ?? CANONICAL_ASSETS)
  }

  /** Folds a tick into the live features and moves the engine's event time. */
  observe(tick: Tick): void {
    this.features.ingest(tick)
    const t = tickTime(tick)
    if (t > this.watermark) this.watermark = t
  }

  /** Event time now (epoch ms), or null before any data. */
  now(): number | null {
    if (this.clock) return this.clock.now()
    return Number.isFinite(this.watermark) ? this.watermark : null
  }

  /** Account event time now: the account clock, else the engine's. */
  accountNow(): number | null {
    return this.accountClock ? this.accountClock.now() : this.now()
  }

  /**
   * Installs pooled parameters for an account-scoped question (every subject), e.g. fitted offline on many wallets'
   * histories; without them each decision fits on the subject's own history. Kept in the fit store for replay.
   */
  setAccountFit(fitted: FittedParams): Promise<void> {
    if (this.questions.get(fitted.question_id)?.scope !== 'account') throw new RangeError(`${fitted.question_id} is not account-scoped`)
    this.accountFits.set(fitted.question_id, fitted)
    return this.fits.put(fitted)
  }

  /** Installs fitted parameters for one (question, asset) (and keeps them in the fit store for replay). */
  setFitted(asset: string, fitted: FittedParams): Promise<void> {
    // In force at once; the promise only reports when the fit store's file is durable.
    this.fitted.set(`${fitted.question_id}|${asset}`, fitted)
    return this.fits.put(fitted)
  }

  fittedFor(questionId: string, asset: string): FittedParams | null {
    return this.fitted.get(`${questionId}|${asset}`) ?? null
  }

  /** Event time for a question's clocks: the account clock for account-scoped questions, else the engine's. */
  private clockFor(questionId: string): number | null {
    return this.questions.get(questionId)?.scope === 'account' ? this.accountNow() : this.now()
  }

  question(id: string): QuestionModel {
    const q = this.questions.get(id)
    if (!q) throw new EngineError('VALIDATION', `unknown question_id '${id}'`, { reason: 'REQUEST_VALIDATION_FAILED', field: 'question_id' })
    return q
  }

  private checkAsset(asset: string): void {
    if (!this.assets.has(asset)) throw new EngineError('VALIDATION', `unknown asset '${asset}'`, { reason: 'REQUEST_VALIDATION_FAILED', field: 'asset' })
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
    const snapshot = journaled?.snapshot ?? this.snapshotAt(asset, at)
    const { journal, input_hash } = journaled ?? journalOf(snapshot)
    const policy = this.policy
    const decision_id = decisionIdOf({ question_id: question.id, asset, subject, input_hash, policy_version: policy.version })
    const existing = this.ledger.findDecision(decision_id)
    if (existing) return { record: existing, isNew: false, snapshot }
    const fitted = fittedOverride !== undefined ? fittedOverride : this.fittedFor(question.id, asset)
    const out = question.evaluate(snapshot, fitted)
    const res = policy.apply(out, question.id)
    let choice: LedgerDecision['choice'] = null
    if (out.kind === 'claim' && out.distribution && res.action !== 'refuse') {
      const predicted = out.conditions.predicted_class
      const modal = Object.entries(out.distribution).reduce((a, b) => (b[1] > a[1] ? b : a))[0]
      choice = { choice_id: typeof predicted === 'string' ? predicted : modal, distribution: out.distribution }
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
      state_hash: stateHashOf({ model_id: question.id, jev_version: JEV_VERSION, fitted_version, policy_version: policy.version, policy_checksum: policy.checksum }),
      policy_version: policy.version,
      jev_version: JEV_VERSION,
      choice,
      payment_id: payment?.payment_id ?? null,
      payment_rail: payment?.rail ?? 'none',
      matched_rules: res.matched_rules,
      refusal_reason: out.kind === 'refusal' ? out.reason : res.action === 'refuse' ? 'min_confidence' : null,
      model_id: question.id,
      fitted_version,
      policy_checksum: policy.checksum,
      journal,
    }
    return { record, isNew: true, snapshot }
  }

  /**
   * The live snapshot of `asset` at `at`. A feature that is not a finite number is journaled as null: JSON has no NaN,
   * and models already read a non-finite feature as missing (models/questions/common.ts feature()), so the answer is
   * the same and the journal replays it exactly.
   */
  snapshotAt(asset: string, at: number): FeatureSnapshot {
    const s = this.features.snapshot(asset, at)
    for (const [k, v] of Object.entries(s.features)) if (v !== null && !Number.isFinite(v)) s.features[k] = null
    return s
  }

  /** The snapshot of `asset` at `at` with its journal and input_hash (one per cadence instant, shared by its questions). */
  journaled(asset: string, at: number): { snapshot: FeatureSnapshot; journal: string; input_hash: string } {
    const snapshot = this.snapshotAt(asset, at)
    return { snapshot, ...journalOf(snapshot) }
  }

  /** Stages a composed record for the caller's next ledger flush (cadence decisions of the engine runner). */
  stage(record: LedgerDecision): { record: LedgerDecision; isNew: boolean } {
    return this.ledger.stageDecision(record)
  }

  /**
   * POST /v1/decisions: decides now, appends durably (or re-serves the recorded decision for identical inputs).
   * Account-scoped questions without a wallet provider throw PROVIDER_DOWN and record nothing.
   */
  async decide(input: DecideInput): Promise<DecisionResult> {
    const prepared = await this.prepare(input)
    return prepared.reserved ? prepared : prepared.record_()
  }

  /**
   * Evaluates a decision without writing it, so a paid caller can record it only once payment is captured
   * (spec, x402: "The decision is recorded only when settlement succeeds"). `reserved` means identical inputs
   * re-serve a recorded decision: nothing to write, and nothing to charge as a new row. Otherwise `record_()`
   * appends the row (deduping against a concurrent twin) and resolves with what the ledger holds.
   */
  async prepare(input: DecideInput): Promise<DecisionResult & { record_: () => Promise<DecisionResult> }> {
    const question = this.question(input.question_id)
    this.checkAsset(input.asset)
    if (question.scope === 'account') return this.prepareAccount(question as AccountQuestion, input)
    const at = this.now()
    if (at === null) throw new EngineError('PROVIDER_DOWN', 'no venue data has reached the engine yet', { reason: 'NO_VENUE_DATA' })
    return this.prepared(this.compose(question, input.asset, null, at, input.payment ?? null))
  }

  /**
   * An account-scoped decision (the subject is a wallet). Spec catalog: "S09..S11 Account-scoped questions: the
   * subject is a wallet"; What the service does 4: "An unreachable provider is an error (PROVIDER_DOWN), never a
   * decision." The subject is required (400 naming /body/subject), S11 needs its candidate (/body/candidate).
   */
  private async prepareAccount(question: AccountQuestion, input: DecideInput): Promise<DecisionResult & { record_: () => Promise<DecisionResult> }> {
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
    const at = this.accountNow()
    if (at === null) throw new EngineError('PROVIDER_DOWN', 'no event time has reached the engine yet', { reason: 'NO_VENUE_DATA' })
    const subject = canonicalAddress(input.subject)
    const history = await readAccountHistory(provider, subject, at - ACCOUNT_HISTORY_MS, at)
    const snapshot = accountSnapshot(question, history, at, candidate)
    const fitted = this.accountFits.get(question.id) ?? ownHistoryFit(question, history)
    // Durable before the row can be: replay finds the parameters by the record's fitted_version.
    await this.fits.put(fitted)
    return this.prepared(this.compose(question, input.asset, subject, at, input.payment ?? null, { snapshot, ...journalOf(snapshot) }, fitted))
  }

  private async prepared(composed: { record: LedgerDecision; isNew: boolean }): Promise<DecisionResult & { record_: () => Promise<DecisionResult> }> {
    const { record, isNew } = composed
    if (!isNew) {
      if (this.ledger.index.decision(record.decision_id) === null) await this.ledger.flush() // staged by the runner: make it durable first
      return { record, reserved: true, record_: async () => ({ record, reserved: true }) }
    }
    return {
      record,
      reserved: false,
      record_: async () => {
        const appended = await this.ledger.appendDecision(record)
        return { record: appended.record, reserved: !appended.isNew }
      },
    }
  }

  /** POST /v1/decisions/next: null for an unknown id; CLOCK_OPEN while the previous claim's clock is open. */
  async nextDecision(previousId: string, payment: PaymentRef | null): Promise<DecisionResult | null> {
    const next = this.nextDecisionInput(previousId)
    return next ? this.decide({ ...next, payment }) : null
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
    const now = this.clockFor(prev.question_id)
    if (isClaim(prev) && (now === null || now < Date.parse(prev.horizon_end))) {
      throw new EngineError('CLOCK_OPEN', `the clock of ${previousId} is open until ${prev.horizon_end}`, { reason: 'clock_open', horizon_end: prev.horizon_end })
    }
    return { question_id: prev.question_id, asset: prev.asset, subject: prev.subject }
  }

  /**
   * Replay (spec: "re-verifies journaled inputs against the row's input_hash; unverifiable inputs: 409
   * REPLAY_INPUT_LOST"; "a bad version pin is a 400 VALIDATION"). No clock, no network: the journal, the fit store
   * and the sealed ruleset are all it reads.
   */
  replay(decisionId: string, options: { ruleset_version: string | null }): ReplayOutcome | null {
    const d = this.ledger.index.decision(decisionId)
    if (!d) return null
    let policy: Policy | null
    if (options.ruleset_version !== null) {
      policy = policyByVersion(options.ruleset_version)
      if (!policy) throw new EngineError('VALIDATION', `unknown ruleset_version '${options.ruleset_version}'`, { reason: 'REQUEST_VALIDATION_FAILED', field: 'ruleset_version' })
    } else {
      policy = policyByVersion(d.policy_version)
      if (!policy) throw new EngineError('REPLAY_INPUT_LOST', `the recorded ruleset ${d.policy_version} is not known to this build`, { reason: 'ruleset_unknown' })
    }
    if (d.journal === null) throw new EngineError('REPLAY_INPUT_LOST', `decision ${decisionId} has no journaled inputs`, { reason: 'journal_missing' })
    if (journalMatches(d.journal, d.input_hash) !== true) {
      throw new EngineError('REPLAY_INPUT_LOST', `the journaled inputs of ${decisionId} do not hash to its input_hash`, { reason: 'journal_hash_mismatch' })
    }
    const question = this.question(d.question_id)
    let fitted: FittedParams | null = null
    if (d.fitted_version !== null) {
      fitted = this.fits.get(d.question_id, d.fitted_version)
      if (!fitted) throw new EngineError('REPLAY_INPUT_LOST', `fitted parameters ${d.fitted_version} are not in the fit store`, { reason: 'fitted_state_missing' })
    }
    const snapshot = JSON.parse(d.journal) as FeatureSnapshot
    const res = policy.apply(question.evaluate(snapshot, fitted), question.id)
    return { decision_id: d.decision_id, original_verdict: d.decision, replayed_verdict: res.decision, matched_rules: res.matched_rules, policy_version: policy.version, deterministic: true }
  }

  getDecision(id: string): LedgerDecision | null {
    return this.ledger.index.decision(id)
  }

  latest(questionId: string, asset: string): LedgerDecision | null {
    this.question(questionId)
    this.checkAsset(asset)
    return this.ledger.index.latest(questionId, asset)
  }

  /** Resolution read: the outcome, or pending before it. A refusal carries no claim: past its horizon it reads unresolvable (no outcome row is written). */
  resolution(decisionId: string): ResolutionRead | null {
    const d = this.ledger.index.decision(decisionId)
    if (!d) return null
    const o = this.ledger.index.outcome(decisionId)
    if (o) return { status: 'resolved', decision_id: d.decision_id, outcome: o.outcome, resolved_at: o.resolved_at, statistic: o.statistic }
    const now = this.clockFor(d.question_id)
    if (!isClaim(d) && now !== null && now >= Date.parse(d.horizon_end)) {
      return { status: 'resolved', decision_id: d.decision_id, outcome: 'unresolvable', resolved_at: d.horizon_end, statistic: null }
    }
    return { status: 'pending', decision_id: d.decision_id, horizon_end: d.horizon_end }
  }

  /** Lineage by id or unique prefix (8+); an ambiguous prefix is a VALIDATION error. A ledger read only. */
  lineage(idOrPrefix: string): Lineage | null {
    const key = idOrPrefix.toLowerCase()
    let d = this.ledger.index.decision(key)
    if (!d) {
      if (key.length < 8) return null
      const hits = this.ledger.index.byPrefix(key, 2)
      if (hits.length > 1) throw new EngineError('VALIDATION', `decision id prefix '${idOrPrefix}' is ambiguous`, { reason: 'AMBIGUOUS_PREFIX', field: 'decision_id' })
      d = hits[0] ?? null
    }
    if (!d) return null
    let sources: Lineage['tape']['sources'] = []
    let inputOk: Verified = 'unknown'
    if (d.journal !== null) {
      const m = journalMatches(d.journal, d.input_hash)
      inputOk = m === true
      if (m !== null) {
        const s = JSON.parse(d.journal) as FeatureSnapshot
        const source = s.sources.join('+')
        sources = s.freshness.map((f) => ({ input: f.input, source, from: null, to: f.last_success_at }))
      }
    }
    return {
      decision: d,
      resolution: this.resolution(d.decision_id)!,
      payment: { rail: d.payment_rail, payment_id: d.payment_id },
      tape: { sources },
      hashes: { input_hash: d.input_hash, state_hash: d.state_hash, policy_checksum: d.policy_checksum, fitted_version: d.fitted_version },
      verify: { input_ok: inputOk, state_ok: this.verifyState(d) },
    }
  }

  /** state_ok: the recorded parts hash to state_hash, the ruleset of that version has that checksum, the fit hashes to its version. */
  private verifyState(d: LedgerDecision): Verified {
    const parts = { model_id: d.model_id, jev_version: d.jev_version, fitted_version: d.fitted_version, policy_version: d.policy_version, policy_checksum: d.policy_checksum }
    if (stateHashOf(parts) !== d.state_hash) return false
    const policy = policyByVersion(d.policy_version)
    if (!policy) return 'unknown'
    if (policy.checksum !== d.policy_checksum) return false
    if (d.fitted_version === null) return true
    return this.fits.verify(d.question_id, d.fitted_version)
  }

  /** Open clocks: unresolved claims on sold market questions over the engine's assets whose horizon_end is still ahead. */
  openClocks(): OpenClockRead[] {
    const now = this.now()
    const nowIso = now === null ? null : isoMs(now)
    const out: OpenClockRead[] = []
    for (const d of this.ledger.index.unresolvedClaims()) {
      const q = this.questions.get(d.question_id)
      if (!q || !q.sold || q.scope !== 'market' || !this.assets.has(d.asset)) continue
      if (nowIso !== null && d.horizon_end <= nowIso) continue
      out.push({ question_id: d.question_id, asset: d.asset, question_label: q.label, decision_id: d.decision_id, predicted: d.choice?.choice_id ?? d.probability, horizon_end: d.horizon_end })
    }
    return out.sort((a, b) => (a.horizon_end < b.horizon_end ? -1 : a.horizon_end > b.horizon_end ? 1 : a.decision_id < b.decision_id ? -1 : 1))
  }

  /** Feed chips, newest resolved first. No wallet, no model internals. */
  feed(limit: number): FeedChipRead[] {
    return this.ledger.index.feed(limit).map((o) => {
      const d = this.ledger.index.decision(o.decision_id)!
      const choice = d.choice !== null
      const graded = o.outcome !== 'unresolvable'
      return {
        decision_id: o.decision_id,
        question_id: o.question_id,
        asset: o.asset,
        output: choice ? 'choice' : 'probability',
        predicted: !graded ? null : choice ? d.choice!.choice_id : d.probability,
        realized: graded && choice ? o.realized_choice : null,
        match: graded && choice ? d.choice!.choice_id === o.realized_choice : null,
        observed: graded && !choice ? o.outcome === 'obtains' : null,
        status: o.outcome,
        resolved_at: o.resolved_at,
        horizon_end: o.horizon_end,
      }
    })
  }
}
