/**
 * The duel's journals (product/duel/): locked player calls and opt-in consent, each one append-only record on its own
 * topic. Defined here, beside the ledger's and the draws' records, because the sink, the catalog's generated views
 * (sql/002_journals.sql) and the duel all derive from the one definition, and pipeline/ sits below every one of them.
 *
 * Spec, Call and duel boards: "Call (input) | decision_id, call (obtains or not), call_probability (optional); the
 * house's frozen probability is stored beside it"; "Opt-in record | payer, opt_in (boolean, default false)". Limits:
 * "Calls | one per payer per clock; immutable after horizon_end".
 *
 * Grades are not journaled: a grade is a pure function of a call record and the clock's outcome record, both durable
 * on the log, so a restart re-derives exactly the same grades (docs/decisions.md).
 */
import { createHash } from 'node:crypto'
import { DecisionId, IsoMs, Nullable, NullableString, Probability, QuestionId, StringEnum, Type, type Static } from '../../common/schema.ts'
import { JournalDef } from '../journal/JournalDef.ts'

export const CALL_RECORD_VERSION = 1
export const CALL_SIDES = ['obtains', 'not'] as const

export const CALL_RECORD_SCHEMA = Type.Object(
  {
    v: Type.Literal(CALL_RECORD_VERSION),
    /** callId(payer, decision_id): one id per payer per clock, so a second record of the pair is a duplicate, never a second call. */
    call_id: Type.String({ pattern: '^call_[0-9a-f]{32}$' }),
    /** The payer address, lower case (one payer, one key, whatever case the header used). */
    payer: Type.String({ pattern: '^0x[0-9a-f]{40}$' }),
    decision_id: DecisionId,
    question_id: QuestionId,
    asset: Type.String({ minLength: 1 }),
    subject: NullableString,
    call: StringEnum(CALL_SIDES),
    /** The player's own probability that the event obtains; null when not given. */
    call_probability: Nullable(Probability),
    /** The house's frozen probability (the decision's probability; for a distribution question, of its chosen class). */
    house_probability: Probability,
    /** Distribution questions: the house's chosen class, the event a call is about; null for binary questions. */
    choice_id: NullableString,
    /** The event time the call was locked at (the clock's own time, the one horizon_end is measured in). */
    locked_at: IsoMs,
    horizon_end: IsoMs,
    /** The payment that locked it (credits debit ref or x402 payment id). */
    payment_id: Type.String({ minLength: 1 }),
    payment_rail: StringEnum(['x402', 'credits']),
  },
  { additionalProperties: false },
)

export type CallRow = Static<typeof CALL_RECORD_SCHEMA>

/** One id per (payer, decision): the journal's first-per-id rule then enforces "one call per payer per clock". */
export function callId(payer: string, decisionId: string): string {
  return `call_${createHash('sha256').update(`svc.call.v1|${payer.toLowerCase()}|${decisionId.toLowerCase()}`).digest('hex').slice(0, 32)}`
}

export const CALLS = new JournalDef({
  name: 'duel.calls',
  schema: CALL_RECORD_SCHEMA,
  key: (c) => c.payer,
  id: (c) => c.call_id,
  time: (c) => Date.parse(c.locked_at),
  table: { rows: 'call_rows', first: 'calls', dir: 'duel.calls', assetField: 'asset', version: { field: 'v', column: 'record_version' } },
})

export const OPT_IN_RECORD_SCHEMA = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    payer: Type.String({ pattern: '^0x[0-9a-f]{40}$' }),
    opt_in: Type.Boolean(),
    /** Wall-clock instant the consent was recorded. */
    recorded_at: IsoMs,
  },
  { additionalProperties: false },
)

export type OptInRow = Static<typeof OPT_IN_RECORD_SCHEMA>

/** Consent is a history, not a flag: every change is a new record (key = payer, so the last one read is the newest). */
export const CALL_OPT_INS = new JournalDef({
  name: 'duel.opt_ins',
  schema: OPT_IN_RECORD_SCHEMA,
  key: (r) => r.payer,
  id: (r) => r.id,
  time: (r) => Date.parse(r.recorded_at),
  table: { rows: 'call_opt_in_rows', dir: 'duel.opt_ins' },
})
