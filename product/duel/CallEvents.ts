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

export interface CallEvents {
  /** Replayed on subscribe: the calls the duel holds in memory (issue 31: not graded yet, or graded inside its window). */
  readonly locked: Channel<CallLocked>
  readonly graded: Channel<CallGraded>
  /**
   * Every call ever locked and every grade, read back from the call journal and the outcome bus: what a consumer
   * rebuilding its state from nothing folds before it subscribes (the channels' replay holds only the hot calls).
   */
  history?(): Promise<{ locked: CallLocked[]; graded: CallGraded[] }>
  /** The event time (ms) from which the channels' replay holds every grade; null while it holds every call. */
  hotSince?(): number | null
  /**
   * The newest graded_at (ms) of a grade the source holds; null: none. A consumer rebuilding from history() will fold
   * a grade at least this new, so its window will start no earlier than this less the window (the Arena, Arena.open).
   */
  newestGrade?(): number | null
}
