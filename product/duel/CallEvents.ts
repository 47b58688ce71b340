/**
 * What the duel tells other domains (the Arena's XP, quests, badges, streaks and notifications; the operator funnel),
 * so they never read the duel's internals. Same semantics as the ledger bus (engine/LedgerBus.ts): a subscriber gets
 * every event already known when it subscribes (rebuilt from the call journal at every start), then every new one,
 * once per id within a process; subscribers are idempotent by call_id.
 *
 * Spec, States (Player call: locked → graded): "counts in graded totals; call XP and notifications follow".
 */
import type { Channel } from '../../engine/LedgerBus.ts'

export type CallSide = 'obtains' | 'not'

/** A call was locked on an open clock (the paid POST /v1/calls was captured). */
export interface CallLocked {
  call_id: string
  payer: string
  decision_id: string
  question_id: string
  asset: string
  call: CallSide
  /** The player's own probability that the event obtains, when given. */
  call_probability: number | null
  /** The house's frozen probability for the event (the decision's probability), stored beside the call. */
  house_probability: number
  /** Instant the call was locked (ISO-8601 UTC, ms). */
  locked_at: string
  /** The clock's horizon end (ISO-8601 UTC, ms). */
  horizon_end: string
  /**
   * Distribution questions (S01): the house's chosen class, the event the call is about ("obtains" = this class is the
   * realized one); null for binary questions. Optional: added by the duel beyond the first contract.
   */
  choice_id?: string | null
}

/** The clock of a locked call resolved: the call is graded, or void when the outcome was unresolvable. */
export interface CallGraded extends CallLocked {
  status: 'graded' | 'void'
  outcome: 'obtains' | 'not' | 'unresolvable'
  /** Whether the call side matched the outcome; null when void. */
  correct: boolean | null
  /** Brier of the player's probability (call_probability, else 1/0 from the side); null when void. */
  player_brier: number | null
  /** Brier of the house's frozen probability on the same outcome; null when void. */
  house_brier: number | null
  /** Instant of the resolution that graded it (ISO-8601 UTC, ms). */
  graded_at: string
  /** The house's side of the same event (product/duel/grading.ts houseSide). Optional: added by the duel. */
  house_call?: CallSide
  /** Whether the house's side matched the outcome; null when void. Optional: added by the duel. */
  house_correct?: boolean | null
}

/**
 * Resolution order: graded_at, then call_id (the order PayerState keeps a payer's grades in, and the order grades were
 * first made in). A fold of grades in another order (a log's partitions read back in another interleaving) passes a
 * payer's record through states it never had.
 */
export function inResolutionOrder(gradedAtA: number, callIdA: string, gradedAtB: number, callIdB: string): number {
  const at = gradedAtA - gradedAtB
  return at !== 0 ? at : callIdA < callIdB ? -1 : callIdA > callIdB ? 1 : 0
}

/** inResolutionOrder of two grades (a sort comparator). */
export function byResolution(a: CallGraded, b: CallGraded): number {
  return inResolutionOrder(Date.parse(a.graded_at), a.call_id, Date.parse(b.graded_at), b.call_id)
}

/**
 * What a consumer rebuilding its state hands to CallEvents.history: the events are given to it one at a time, so a
 * history of a million calls is never held as events (at 365 days the arrays of them were most of a rebuild's 3.1 GiB
 * peak, issue 31).
 */
export interface CallHistoryFold {
  /** Calls graded before this instant (ms) are left out, lock and grade: the consumer folded them before. null: none. */
  since: number | null
  /** Every call's lock first, in the call journal's order (first record per call id). */
  locked(e: CallLocked): void
  /** Then every grade, in resolution order (byResolution). */
  graded(e: CallGraded): void
}

export interface CallEvents {
  /** Replayed on subscribe: the calls the duel holds in memory (issue 31: not graded yet, or graded inside its window). */
  readonly locked: Channel<CallLocked>
  readonly graded: Channel<CallGraded>
  /**
   * Every call ever locked and every grade, read back from the call journal and the outcome bus: what a consumer
   * rebuilding its state from nothing folds before it subscribes (the channels' replay holds only the hot calls).
   * Resolves once the last grade was handed over.
   */
  history?(fold: CallHistoryFold): Promise<void>
  /** The event time (ms) from which the channels' replay holds every grade; null while it holds every call. */
  hotSince?(): number | null
  /**
   * The newest graded_at (ms) of a grade the source holds; null: none. A consumer rebuilding from history() will fold
   * a grade at least this new, so its window will start no earlier than this less the window (the Arena, Arena.open).
   */
  newestGrade?(): number | null
}
