/**
 * What the funnel reads, each through a narrow port it defines itself, so it never reaches into another domain's
 * internals (test/layers.test.ts): the composition root (app/ServiceApp.ts) hands it the ledger bus, the credit
 * ledger's rows, and, once they exist on a deployment, the duel's call events and the Arena's counts. The shapes
 * are the fields the funnel uses, structurally satisfied by engine/LedgerBus.ts, product/billing/CreditLedger.ts and
 * product/duel/CallEvents.ts; a source left out is "not wired on this deployment" and its steps are null with a note,
 * never 0.
 */
import type { DrawRow } from '../../pipeline/records/drawRecord.ts'

/** One event stream with the ledger bus's semantics (engine/LedgerBus.ts Channel): replay on subscribe, once per id. */
export interface EventChannel<E> {
  subscribe(name: string, handler: (event: E) => void | Promise<void>, options?: { replay?: boolean }): { unsubscribe(): void }
}

/** The decision fields the funnel counts by: a decision is a paid run when it carries a payment rail. */
export interface FunnelDecision {
  decision_id: string
  payment_rail: 'x402' | 'credits' | 'none'
}

/** The ledger's bus (engine/LedgerBus.ts): decisions entered the ledger, clocks resolved. */
export interface FunnelLedgerSource {
  readonly decisions: EventChannel<FunnelDecision>
  readonly resolutions: EventChannel<{ decision: FunnelDecision; outcome: { decision_id: string } }>
}

/** The credit draws journal as the credit ledger holds it (product/billing/CreditLedger.ts allRows). */
export interface FunnelDrawsSource {
  allRows(): Iterable<DrawRow>
}

/** The CallLocked fields the funnel uses (product/duel/CallEvents.ts). */
export interface FunnelCallLock {
  call_id: string
  payer: string
  locked_at: string
}

/** The CallGraded fields the funnel uses (product/duel/CallEvents.ts); a void call is not graded. */
export interface FunnelCallGrade extends FunnelCallLock {
  status: 'graded' | 'void'
  graded_at: string
}

/** The duel's events (product/duel/CallEvents.ts CallEvents satisfies it). */
export interface FunnelCallSource {
  readonly locked: EventChannel<FunnelCallLock>
  readonly graded: EventChannel<FunnelCallGrade>
}

/**
 * The Arena's counts for the funnel, as of the moment they are asked (the Arena is built in its own domain; its
 * experience journal is the source of truth). The lead wires it with an adapter over the Arena's projections.
 */
export interface ArenaFunnelSource {
  /** XP awards (journal rows, not XP points) by award kind, e.g. { ask: 12, correct_call: 3 }. */
  xpAwardsByKind(): Record<string, number>
  /** Quest completions recorded. */
  questCompletions(): number
  /** Badge awards recorded. */
  badgeAwards(): number
}

/** Every source of one deployment; all optional but the clock's. */
export interface FunnelSources {
  ledger?: FunnelLedgerSource
  draws?: FunnelDrawsSource
  calls?: FunnelCallSource
  arena?: ArenaFunnelSource
}
