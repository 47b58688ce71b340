/**
 * The duel's public shapes (spec, Call and duel boards), each one TypeBox schema with its type inferred from it. The
 * spec leaves the response bodies open ("Response bodies of ... POST /v1/calls ... are not shown"); each choice is a
 * line of docs/decisions.md.
 *
 * Privacy (spec: "never balance, spend or payment fields"): no board shape has a payment, price, balance or credit
 * field, and the public board names players only by their derived, abbreviated handle (handles.ts).
 */
import { Address, DecisionId, IsoMs, Nullable, NullableNumber, NullableString, Probability, QuestionId, StringEnum, Type, type Static } from '../../common/schema.ts'

const Strict = { additionalProperties: false } as const
const Count = Type.Integer({ minimum: 0 })
const NullableProbability = Nullable(Probability)
const Side = StringEnum(['obtains', 'not'])

/** The minimum graded calls for a board entry (spec, Limits: "Board entry | at least 10 graded calls"). */
export const BOARD_MIN_GRADED = 10
/** The minimum graded calls per question for the crowd benchmark (spec, Limits: "Crowd benchmark | at least 10"). */
export const CROWD_MIN_GRADED = 10
/** Calls listed in a personal scoreboard's `recent`, newest first. */
export const RECENT_CALLS = 20

export const BOARD_WINDOWS = ['all', '30d', '7d'] as const
export type BoardWindow = (typeof BOARD_WINDOWS)[number]

/** One call as its player sees it: the call, the house's frozen probability beside it, and its grade once resolved. */
export const CALL_VIEW = Type.Object(
  {
    call_id: Type.String(),
    decision_id: DecisionId,
    question_id: QuestionId,
    asset: Type.String(),
    call: Side,
    call_probability: NullableProbability,
    house_probability: Probability,
    /** Distribution questions: the house's chosen class the call is about ("obtains" = it is the realized class). */
    choice_id: NullableString,
    locked_at: IsoMs,
    horizon_end: IsoMs,
    /** locked: waiting for the clock; graded: resolved obtains or not; void: unresolvable, never counted wrong. */
    status: StringEnum(['locked', 'graded', 'void']),
    outcome: Nullable(StringEnum(['obtains', 'not', 'unresolvable'])),
    correct: Nullable(Type.Boolean()),
    house_correct: Nullable(Type.Boolean()),
    player_brier: NullableNumber,
    house_brier: NullableNumber,
    graded_at: Nullable(IsoMs),
  },
  Strict,
)
export type CallView = Static<typeof CALL_VIEW>

/** POST /v1/calls: the locked call (201). */
export const LOCKED_CALL = Type.Object({ ...CALL_VIEW.properties, payer: Address }, Strict)
export type LockedCall = Static<typeof LOCKED_CALL>

/**
 * GET /v1/calls (spec: "Personal scoreboard | calls, graded, open, player_accuracy, house_accuracy, plus both Brier
 * scores; accuracies are null for an empty record, never zero").
 */
export const PERSONAL_SCOREBOARD = Type.Object(
  {
    payer: Address,
    opt_in: Type.Boolean(),
    calls: Count,
    graded: Count,
    open: Count,
    void: Count,
    correct: Count,
    house_correct: Count,
    player_accuracy: NullableProbability,
    house_accuracy: NullableProbability,
    player_brier: NullableNumber,
    house_brier: NullableNumber,
    recent: Type.Array(CALL_VIEW),
  },
  Strict,
)
export type PersonalScoreboard = Static<typeof PERSONAL_SCOREBOARD>

/** GET /v1/calls/scoreboard entry: identifiers and counts only (accuracy is correct ÷ graded). */
export const AGGREGATE_ENTRY = Type.Object(
  { rank: Type.Integer({ minimum: 1 }), payer: Address, handle: Type.String(), calls_graded: Count, calls_correct: Count, accuracy: Probability },
  Strict,
)

export const AGGREGATE_BOARD = Type.Object(
  {
    min_graded: Count,
    entries: Type.Array(AGGREGATE_ENTRY),
    /** The asking payer's own standing: rank null until opted in with at least min_graded graded calls. */
    you: Type.Object({ payer: Address, opt_in: Type.Boolean(), calls_graded: Count, rank: Nullable(Type.Integer({ minimum: 1 })) }, Strict),
  },
  Strict,
)
export type AggregateBoard = Static<typeof AGGREGATE_BOARD>

/** GET /v1/scoreboard entry (spec: "graded accuracy (correct divided by graded), calls graded, calls correct, derived abbreviated handle"). */
export const PUBLIC_ENTRY = Type.Object(
  { rank: Type.Integer({ minimum: 1 }), handle: Type.String(), accuracy: Probability, calls_graded: Count, calls_correct: Count },
  Strict,
)

export const PUBLIC_BOARD = Type.Object(
  {
    window: StringEnum(BOARD_WINDOWS),
    /** Calls graded at or after this instant count (null for window all). */
    since: Nullable(IsoMs),
    min_graded: Count,
    entries: Type.Array(PUBLIC_ENTRY),
  },
  Strict,
)
export type PublicBoard = Static<typeof PUBLIC_BOARD>

/** POST /v1/calls/opt-in (spec: "Opt-in record | payer, opt_in (boolean, default false)"). */
export const OPT_IN = Type.Object({ payer: Address, opt_in: Type.Boolean(), recorded_at: IsoMs }, Strict)
export type OptInView = Static<typeof OPT_IN>

/** The crowd benchmark line of the intelligence snapshot (record/schemas.ts benchmarks.crowd). */
export interface CrowdBenchmark {
  /** Mean Brier of the graded player calls counted. */
  brier: number
  /** Graded player calls counted (questions with at least CROWD_MIN_GRADED graded calls). */
  n: number
  /** Mean Brier of the house's frozen probabilities on the same calls' resolved pairs. */
  house_brier: number
}
