/**
 * The decision ledger: one append-only record per decision on the `decisions` topic, as canonical JSON (RFC 8785), so
 * one record always has the same bytes whichever process or log carried it.
 *
 * Spec, What the service does 2: "Decisions are kept on an append-only ledger. A recorded row is never altered."
 * Decision record (public): decision_id, question_id, event, horizon, conditions, probability, confidence, decision,
 * action, input_hash, state_hash, policy_version, jev_version, choice, payment_id. The spec counts sixteen fields and
 * names fifteen; the ledger row adds asset, subject, created_at and horizon_end (docs/decisions.md) plus what replay
 * and lineage need: the input journal (the exact FeatureSnapshot, canonical JSON), the parts state_hash is computed
 * from (model_id, fitted_version, policy_checksum), matched_rules, refusal_reason and payment_rail.
 *
 * `conditions` is the machine-readable object the resolver re-derives the event from; the public record renders it
 * as a list of strings (engine/EngineServices.ts publicRecord).
 *
 * Key on the topic: question_id|asset|subject (decisionKey), so one clock's decisions keep their order.
 */
import {
  DecisionId, Hex64, IsoMs, JsonObject, Nullable, NullableString, Probability, QuestionId, StringEnum, Type, type Static,
} from '../../common/schema.ts'
import { JournalDef } from '../journal/JournalDef.ts'

export const DECISION_RECORD_VERSION = 1

export const PAYMENT_RAILS = ['x402', 'credits', 'none'] as const
export type PaymentRail = (typeof PAYMENT_RAILS)[number]

/**
 * The clock a ledger row belongs to: one question on one asset (and, for account-scoped questions, one subject
 * wallet; null for market questions). Decisions and their outcomes both carry it, so each is readable on its own.
 */
export const CLOCK_FIELDS = {
  question_id: QuestionId,
  asset: Type.String({ minLength: 1 }),
  subject: NullableString,
}

export const DECISION_RECORD_SCHEMA = Type.Object(
  {
    v: Type.Literal(DECISION_RECORD_VERSION),
    decision_id: DecisionId,
    ...CLOCK_FIELDS,
    event: Type.String(),
    horizon: Type.String({ pattern: '^[0-9]+m$' }),
    /** created_at + horizon. */
    horizon_end: IsoMs,
    /** Event time of the snapshot the decision was made from (never the wall clock of the engine). */
    created_at: IsoMs,
    conditions: JsonObject,
    probability: Probability,
    confidence: Probability,
    decision: Type.String({ minLength: 1 }),
    action: Type.String({ minLength: 1 }),
    input_hash: Hex64,
    state_hash: Hex64,
    policy_version: Type.String({ minLength: 1 }),
    jev_version: Type.String({ minLength: 1 }),
    /** Distribution questions: the chosen (modal) class and the distribution. */
    choice: Nullable(Type.Object({ choice_id: Type.String(), distribution: Type.Record(Type.String(), Type.Number()) }, { additionalProperties: false })),
    payment_id: NullableString,
    payment_rail: StringEnum(PAYMENT_RAILS),
    matched_rules: Type.Array(Type.String()),
    /** The model's refusal reason (e.g. 'input_stale:bars'), null for claims. */
    refusal_reason: NullableString,
    /** state_hash parts (engine/identity.ts). */
    model_id: Type.String({ minLength: 1 }),
    fitted_version: NullableString,
    /**
     * The release a market question was answered with (engine/ServedRelease.ts): its sealed body holds the exact
     * parameters (fitted_version). Null when none was active (the record refuses no_active_release) and for
     * account-scoped questions; absent on rows recorded before releases were served.
     */
    release_version: Type.Optional(NullableString),
    policy_checksum: Hex64,
    /** The FeatureSnapshot the decision was evaluated from, as canonical JSON; null only when lost. */
    journal: NullableString,
  },
  { additionalProperties: false },
)

export type LedgerDecision = Static<typeof DECISION_RECORD_SCHEMA>

/** The topic key: one clock (question, asset, subject) per key, so its decisions keep their order. */
export function decisionKey(d: Pick<LedgerDecision, 'question_id' | 'asset' | 'subject'>): string {
  return `${d.question_id}|${d.asset}|${d.subject ?? ''}`
}

export const DECISIONS = new JournalDef({
  name: 'decisions',
  schema: DECISION_RECORD_SCHEMA,
  key: decisionKey,
  id: (d) => d.decision_id,
  time: (d) => Date.parse(d.created_at),
  table: {
    rows: 'decision_rows',
    first: 'decisions',
    dir: 'decisions',
    assetField: 'asset',
    flatten: { choice: { choice_id: 'choice_id', choice_distribution: 'distribution' } },
    version: { field: 'v', column: 'record_version' },
  },
})

/** Throws LedgerRecordError naming the field path. */
export const validateDecision = (value: unknown): LedgerDecision => DECISIONS.check(value)
export const encodeDecision = (d: LedgerDecision): Buffer => DECISIONS.encode(d)
export const decodeDecision = (value: Buffer | string): LedgerDecision => DECISIONS.decode(value)
