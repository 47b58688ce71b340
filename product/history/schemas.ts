/** GET /v1/decisions/mine (docs/decisions.md, issue 33): a payer's own paid asks and duel calls, one list. */
import { Address, DecisionId, Instant, Nullable, NullableString, Probability, StringEnum, Type, type Static } from '../../common/schema.ts'
import { CALL_VIEW } from '../duel/index.ts'

const Int = Type.Integer({ minimum: 0 })
const OUTCOME = Nullable(StringEnum(['obtains', 'not', 'unresolvable']))

/** A paid ask: the decision it recorded (the free read GET /v1/decisions/{id} has all of it) and how it resolved. */
export const ASK_VIEW = Type.Object(
  {
    probability: Probability,
    confidence: Probability,
    decision: Type.String({ description: 'verdict kind; refusals: stale_input, insufficient_confidence, suppress' }),
    action: Type.String(),
    choice_id: NullableString,
    status: StringEnum(['pending', 'resolved']),
    outcome: OUTCOME,
    resolved_at: Nullable(Instant),
  },
  { additionalProperties: false },
)

/**
 * One row: kind 'ask' (id = the decision's id, at = its created_at) or 'call' (id = the call's id, at = its
 * locked_at), newest first by (at, id). Both times are the clock's event time, the one horizon_end is measured in.
 */
export const HISTORY_ITEM = Type.Object(
  {
    kind: StringEnum(['ask', 'call']),
    id: Type.String(),
    at: Instant,
    decision_id: DecisionId,
    question_id: Type.String(),
    asset: NullableString,
    horizon_end: Instant,
    ask: Nullable(ASK_VIEW),
    call: Nullable(CALL_VIEW),
  },
  { additionalProperties: false },
)
export type HistoryItem = Static<typeof HISTORY_ITEM>

export const PAYER_HISTORY = Type.Object(
  {
    payer: Address,
    /** Every ask and call of the payer (not only this page's). */
    asks: Int,
    calls: Int,
    items: Type.Array(HISTORY_ITEM),
    /** Pass as `cursor` for the older rows after this page; null at the end. */
    next_cursor: NullableString,
  },
  { additionalProperties: false },
)
export type PayerHistory = Static<typeof PAYER_HISTORY>
