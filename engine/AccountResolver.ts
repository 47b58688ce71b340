/**
 * Resolution of account-scoped clocks (S09..S11). Market clocks resolve from ticks (ResolutionEngine); an account
 * clock needs the subject wallet over its window, which only the wallet provider has, so this resolver reads the
 * provider once a clock is due and re-derives the event with the question's resolve() over the window built by the
 * same grammar as the decision's features (models/account/walletSamples.ts accountResolutionWindow). Outcomes go to
 * the same ledger outcomes topic.
 *
 * Spec, What the service does 3: "When the horizon ends, a resolution engine re-derives the event from the same input
 * grammar and writes an outcome: obtains, not, or unresolvable. Unresolvable is a legal outcome and is never coerced
 * into not." And 4: an unreachable provider is an error, never an answer — so a failed read is retried, never read as
 * an empty wallet.
 *
 * - Time: the account clock (DecisionEngine accountClock): event time in replays and tests, wall time live. A clock is
 *   due once now > horizon_end + ACCOUNT_RESOLUTION_GRACE_MS (10 min: the venue's ledger and fills settle within
 *   seconds, the margin covers provider lag). resolved_at is the pass's instant.
 * - Passes: resolveDue() resolves every due clock; start() runs it every intervalMs (default 60 s, timer unref'd)
 *   until close(). Passes never overlap.
 * - Provider down at resolution: the clock stays pending and the next pass retries, until horizon_end +
 *   ACCOUNT_RESOLUTION_DEADLINE_MS (24 h); a pass after that writes unresolvable with reason 'provider_down'.
 * - Idempotent: a clock with an outcome (recorded or staged) is never resolved again; restart re-registers the
 *   ledger's unresolved claims.
 */
import { childLogger } from '../common/logger.ts'
import type { Clock } from '../common/Clock.ts'
import type { LedgerDecision } from '../pipeline/records/decisionRecord.ts'
import type { LedgerOutcome } from '../pipeline/records/outcomeRecord.ts'
import { accountResolutionWindow } from '../models/account/walletSamples.ts'
import type { WalletProvider } from '../ingest/wallet/WalletProvider.ts'
import type { QuestionModel, Resolution } from '../models/QuestionModel.ts'
import { QUESTIONS } from '../models/questions/index.ts'
import { ACCOUNT_HISTORY_MS, readAccountHistory } from './accountInputs.ts'
import type { DecisionLedger } from './DecisionLedger.ts'
import { EngineError } from './EngineError.ts'
import { isClaim } from './LedgerIndex.ts'
import { outcomeRecord } from './ResolutionEngine.ts'

const log = childLogger('account-resolver')

export const ACCOUNT_RESOLUTION_GRACE_MS = 10 * 60_000
export const ACCOUNT_RESOLUTION_DEADLINE_MS = 24 * 3_600_000

export interface AccountResolverOptions {
  ledger: DecisionLedger
  /** Null: no provider wired; due clocks wait for the deadline and then resolve unresolvable. */
  provider: WalletProvider | null
  clock: Clock
  questions?: readonly QuestionModel[]
  graceMs?: number
  deadlineMs?: number
}

export interface AccountPassResult {
  resolved: number
  /** Due clocks left pending because the provider failed (retried next pass). */
  retrying: number
}

interface PendingAccountClock {
  decision: LedgerDecision
  start: number
  end: number
  /** Last provider failure reason, for the log and the unresolvable statistic. */
  lastError: string | null
}

export class AccountResolver {
  readonly graceMs: number
  readonly deadlineMs: number
  private readonly ledger: DecisionLedger
  private readonly provider: WalletProvider | null
  private readonly clock: Clock
  private readonly questions: Map<string, QuestionModel>
  private readonly pending = new Map<string, PendingAccountClock>()
  private running: Promise<AccountPassResult> | null = null
  private timer: NodeJS.Timeout | null = null
  resolvedCount = 0

  constructor(o: AccountResolverOptions) {
    this.ledger = o.ledger
    this.provider = o.provider
    this.clock = o.clock
    this.questions = new Map((o.questions ?? QUESTIONS).map((q) => [q.id, q]))
    this.graceMs = o.graceMs ?? ACCOUNT_RESOLUTION_GRACE_MS
    this.deadlineMs = o.deadlineMs ?? ACCOUNT_RESOLUTION_DEADLINE_MS
  }

  /** Whether this resolver owns a decision's clock (an account-scoped question). */
  owns(d: Pick<LedgerDecision, 'question_id'>): boolean {
    return this.questions.get(d.question_id)?.scope === 'account'
  }

  /** Tracks an account claim's clock (refusals, resolved or already tracked clocks are ignored). */
  register(d: LedgerDecision): void {
    if (!this.owns(d) || !isClaim(d) || d.subject === null || this.pending.has(d.decision_id) || this.ledger.hasOutcome(d.decision_id)) return
    this.pending.set(d.decision_id, { decision: d, start: Date.parse(d.created_at), end: Date.parse(d.horizon_end), lastError: null })
  }

  openCount(): number {
    return this.pending.size
  }

  /** One pass: resolves every due clock, stages and flushes the outcomes. Concurrent callers share the pass. */
  resolveDue(): Promise<AccountPassResult> {
    this.running ??= this.pass().finally(() => {
      this.running = null
    })
    return this.running
  }

  private async pass(): Promise<AccountPassResult> {
    const now = this.clock.now()
    const due = [...this.pending.values()].filter((c) => now > c.end + this.graceMs).sort((a, b) => a.end - b.end || (a.decision.decision_id < b.decision.decision_id ? -1 : 1))
    let resolved = 0
    let retrying = 0
    for (const clock of due) {
      const id = clock.decision.decision_id
      if (this.ledger.hasOutcome(id)) {
        this.pending.delete(id)
        continue
      }
      let r: Resolution | null
      try {
        r = await this.resolve(clock)
      } catch (err) {
        if (!(err instanceof EngineError && err.code === 'PROVIDER_DOWN')) throw err
        clock.lastError = String(err.detail.provider_reason ?? err.detail.reason ?? 'provider_down')
        r = null
      }
      if (r === null) {
        if (now <= clock.end + this.deadlineMs) {
          retrying++
          continue
        }
        r = { outcome: 'unresolvable', statistic: { provider_error: clock.lastError }, realized_choice: null, reason: 'provider_down' }
      }
      this.ledger.stageOutcome(this.outcome(clock.decision, r, now))
      this.pending.delete(id)
      resolved++
    }
    if (resolved > 0) await this.ledger.flush()
    if (retrying > 0) log.warn({ retrying, provider: this.provider?.name ?? 'none' }, 'account clocks due but the wallet provider is down; retrying next pass')
    this.resolvedCount += resolved
    return { resolved, retrying }
  }

  /** The question's resolution over the provider's read of the window; PROVIDER_DOWN (thrown) when it cannot read. */
  private async resolve(clock: PendingAccountClock): Promise<Resolution> {
    const d = clock.decision
    const question = this.questions.get(d.question_id)!
    if (!this.provider) throw new EngineError('PROVIDER_DOWN', 'no wallet provider is wired', { reason: 'WALLET_PROVIDER_UNWIRED', provider_reason: 'unwired' })
    // The state machine at the window's end looks back up to 90 days, as at decision time.
    const history = await readAccountHistory(this.provider, d.subject!, clock.end - ACCOUNT_HISTORY_MS, clock.end)
    try {
      return question.resolve(d.conditions, accountResolutionWindow(history, clock.start, clock.end))
    } catch {
      return { outcome: 'unresolvable', statistic: null, realized_choice: null, reason: 'conditions_incomplete' }
    }
  }

  private outcome(d: LedgerDecision, r: Resolution, now: number): LedgerOutcome {
    return outcomeRecord(d, r, now)
  }

  /** Runs a pass every intervalMs (wall time) until close(); a failed pass is logged and the next one retries. */
  start(intervalMs = 60_000): this {
    if (this.timer) return this
    this.timer = setInterval(() => {
      this.resolveDue().catch((err: unknown) => log.error({ err }, 'account resolution pass failed'))
    }, intervalMs)
    this.timer.unref()
    return this
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.running?.catch(() => undefined)
  }
}
