/**
 * Outcomes: what the resolution engine re-derived once a clock's horizon (plus the late-data grace) had passed in
 * event time, one append-only record per decision on the `outcomes` topic (key = decision_id), canonical JSON.
 *
 * Spec, Resolution record: { decision_id, outcome: obtains | not | unresolvable, resolved_at, statistic }.
 * "Unresolvable is a legal outcome and is never coerced into not." The row adds the clock's identity (question_id,
 * asset, subject, horizon_end), the question's full measured statistic (statistic_detail; `statistic` is its primary
 * number), the realized class of choice questions and the resolver's reason for unresolvable outcomes.
 */
import { DecisionId, IsoMs, Nullable, NullableNumber, NullableString, StringEnum, Type, type Static } from '../../common/schema.ts'
import { CLOCK_FIELDS } from './decisionRecord.ts'
import { JournalDef } from '../journal/JournalDef.ts'

export const OUTCOME_RECORD_VERSION = 1
export const OUTCOMES = ['obtains', 'not', 'unresolvable'] as const
export type LedgerOutcomeKind = (typeof OUTCOMES)[number]

export const OUTCOME_RECORD_SCHEMA = Type.Object(
  {
    v: Type.Literal(OUTCOME_RECORD_VERSION),
    decision_id: DecisionId,
    ...CLOCK_FIELDS,
    outcome: StringEnum(OUTCOMES),
    /** Event time at which the resolution engine wrote it. */
    resolved_at: IsoMs,
    horizon_end: IsoMs,
    statistic: NullableNumber,
    statistic_detail: Nullable(Type.Record(Type.String(), Type.Union([Type.Number(), Type.String(), Type.Null()]))),
    realized_choice: NullableString,
    reason: NullableString,
  },
  { additionalProperties: false },
)

export type LedgerOutcome = Static<typeof OUTCOME_RECORD_SCHEMA>

export const OUTCOMES_JOURNAL = new JournalDef({
  name: 'outcomes',
  schema: OUTCOME_RECORD_SCHEMA,
  key: (o) => o.decision_id,
  id: (o) => o.decision_id,
  time: (o) => Date.parse(o.resolved_at),
  table: { rows: 'outcome_rows', first: 'outcomes', dir: 'outcomes', assetField: 'asset', version: { field: 'v', column: 'record_version' } },
})

export const validateOutcome = (value: unknown): LedgerOutcome => OUTCOMES_JOURNAL.check(value)
export const encodeOutcome = (o: LedgerOutcome): Buffer => OUTCOMES_JOURNAL.encode(o)
export const decodeOutcome = (value: Buffer | string): LedgerOutcome => OUTCOMES_JOURNAL.decode(value)
