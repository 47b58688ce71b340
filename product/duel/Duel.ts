/**
 * The duel (spec, What the service does 6): a player locks a personal call on an open clock; at resolution one
 * evaluator grades the house's frozen probability and the call. What serving calls (DuelService implements it); a
 * deployment without it answers the duel routes 503 SERVICE_UNWIRED naming 'duel'.
 */
import type { PaidCall } from '../../pipeline/journal/PaidCall.ts'
import type { UnitOfWork } from '../../pipeline/journal/UnitOfWork.ts'
import type { CallEvents } from './CallEvents.ts'
import type { CallPosition } from './ColdCalls.ts'
import type { AggregateBoard, BoardWindow, CallView, CrowdBenchmark, LockedCall, OptInView, PersonalScoreboard, PublicBoard } from './schemas.ts'

export interface LockCallInput {
  payer: string
  decision_id: string
  call: 'obtains' | 'not'
  call_probability: number | null
}

export interface Duel {
  /** What the duel tells other domains (the Arena, the funnel): calls locked and graded. */
  readonly events: CallEvents
  /**
   * The lock's refusals without locking (a route precheck, before the payment challenge): unknown decision → null;
   * a refusal decision → VALIDATION NOT_A_CLAIM; CLOCK_CLOSED; CALL_ALREADY_LOCKED (ServiceErrors), the last only for
   * a named payer (null: the refusals that are not about a payer, safe to answer before the payer is proven).
   */
  checkCall(input: { payer: string | null; decision_id: string }): unknown | null
  /** Stages the call in the paid call's unit of work. The same refusals as checkCall; unknown decision → null. */
  lockCall(input: LockCallInput, payment: PaidCall, unit: UnitOfWork): Promise<LockedCall | null>
  /** GET /v1/calls: the payer's personal scoreboard (an unknown payer has an empty record, accuracies null). */
  scoreboard(payer: string): Promise<PersonalScoreboard>
  /**
   * The payer's calls with their grades, newest first by (locked_at, call_id), strictly after `before`, at most
   * `limit`, and the payer's total (GET /v1/decisions/mine pages them with the asks; older calls come from Parquet).
   */
  callsPage(payer: string, before: CallPosition | null, limit: number): Promise<{ total: number; items: CallView[] }>
  /** GET /v1/calls/scoreboard: opted-in payers with at least 10 graded calls, and the asking payer's standing. */
  aggregateBoard(payer: string): AggregateBoard
  /** GET /v1/scoreboard: the public board by abbreviated handle. */
  publicBoard(window: BoardWindow): PublicBoard
  /** POST /v1/calls/opt-in: records consent (the last record wins). */
  optIn(payer: string, optIn: boolean): Promise<OptInView>
  /** The intelligence snapshot's benchmarks.crowd; null below its floor. */
  crowdBenchmark(): CrowdBenchmark | null
}
