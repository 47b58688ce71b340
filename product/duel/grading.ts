/**
 * One evaluator for both sides of the duel (spec, What the service does 6: "at resolution one evaluator grades both the
 * house's frozen probability and the call"). Pure: a grade is a function of the call record and the clock's outcome,
 * so a resolution delivered twice, or replayed after a restart, gives the same grade.
 *
 * The event a call is about: for a binary question, the decision's event (outcome obtains); for a distribution
 * question (S01, decision.choice), "the house's chosen class is the realized class" — the same binary event the
 * measured record scores the house on (record/RecordJob.ts: y = realized_choice = choice_id), so the house's Brier here
 * is the record's Brier on the same pair.
 */
import type { CallRow } from '../../pipeline/records/callRecord.ts'
import type { CallGraded, CallLocked, CallSide } from './CallEvents.ts'
import type { CallView } from './schemas.ts'

/** What grading needs of the clock's outcome record. */
export interface OutcomeFacts {
  decision_id: string
  outcome: 'obtains' | 'not' | 'unresolvable'
  realized_choice: string | null
  resolved_at: string
}

/** What a call's events are made of: its record less what only the journal needs (subject, payment). */
export type CallFacts = Pick<CallRow, 'call_id' | 'payer' | 'decision_id' | 'question_id' | 'asset' | 'call' | 'call_probability' | 'house_probability' | 'locked_at' | 'horizon_end' | 'choice_id'>

export function lockedEvent(c: CallFacts): CallLocked {
  return {
    call_id: c.call_id,
    payer: c.payer,
    decision_id: c.decision_id,
    question_id: c.question_id,
    asset: c.asset,
    call: c.call,
    call_probability: c.call_probability,
    house_probability: c.house_probability,
    locked_at: c.locked_at,
    horizon_end: c.horizon_end,
    choice_id: c.choice_id,
  }
}

/**
 * The house's side of the call's event: a distribution question's chosen class is the house saying "obtains"; a binary
 * question's probability says obtains at 0.5 or above (docs/decisions.md).
 */
export function houseSide(c: Pick<CallRow, 'choice_id' | 'house_probability'>): CallSide {
  return c.choice_id !== null || c.house_probability >= 0.5 ? 'obtains' : 'not'
}

const round = (x: number) => Math.round(x * 1e12) / 1e12

/** The grade of one call on its clock's outcome: graded, or void when the outcome is unresolvable (never wrong). */
export function grade(c: CallFacts, o: OutcomeFacts): CallGraded {
  const base = { ...lockedEvent(c), graded_at: o.resolved_at }
  // A distribution question whose realized class is unknown cannot say whether the chosen class occurred: void too.
  const unresolvable = o.outcome === 'unresolvable' || (c.choice_id !== null && o.realized_choice === null)
  if (unresolvable) {
    return { ...base, status: 'void', outcome: 'unresolvable', correct: null, player_brier: null, house_brier: null, house_call: houseSide(c), house_correct: null }
  }
  const obtained = c.choice_id !== null ? o.realized_choice === c.choice_id : o.outcome === 'obtains'
  const y = obtained ? 1 : 0
  const p = c.call_probability ?? (c.call === 'obtains' ? 1 : 0)
  const house = houseSide(c)
  return {
    ...base,
    status: 'graded',
    outcome: obtained ? 'obtains' : 'not',
    correct: (c.call === 'obtains') === obtained,
    player_brier: round((p - y) ** 2),
    house_brier: round((c.house_probability - y) ** 2),
    house_call: house,
    house_correct: (house === 'obtains') === obtained,
  }
}

/** A call as the routes show it: its record, and its grade once its clock resolved (hot or read back from Parquet). */
export function callView(row: CallRow, g: CallGraded | null): CallView {
  return {
    call_id: row.call_id,
    decision_id: row.decision_id,
    question_id: row.question_id,
    asset: row.asset,
    call: row.call,
    call_probability: row.call_probability,
    house_probability: row.house_probability,
    choice_id: row.choice_id,
    locked_at: row.locked_at,
    horizon_end: row.horizon_end,
    status: g ? g.status : 'locked',
    outcome: g ? g.outcome : null,
    correct: g ? g.correct : null,
    house_correct: g ? (g.house_correct ?? null) : null,
    player_brier: g ? g.player_brier : null,
    house_brier: g ? g.house_brier : null,
    graded_at: g ? g.graded_at : null,
  }
}
