/**
 * The public shapes of the decision engine's answers, each one TypeBox schema with its type inferred from it: the
 * route registry validates and documents them (OpenAPI), the engine and every test double produce them.
 */
import { FRESHNESS } from '../pipeline/features/FeatureSnapshot.ts'
import { OUTCOMES } from '../pipeline/records/outcomeRecord.ts'
import { GATE_REASONS } from '../models/saleGate.ts'
import {
  Instant, JsonObject, Nullable, NullableInstant, NullableNumber, NullableString, Probability, QuestionId, StringEnum, Type, Uuid, type Static,
} from '../common/schema.ts'

const Choice = Type.Object(
  { choice_id: Type.String(), distribution: Type.Record(Type.String(), Probability) },
  { additionalProperties: false },
)

/**
 * Spec, Decision record (public): decision_id, question_id, event, horizon, conditions, probability, confidence,
 * decision, action, input_hash, state_hash, policy_version, jev_version, choice, payment_id; plus asset, subject,
 * created_at and horizon_end (docs/decisions.md). `conditions` is the machine conditions object (names sorted),
 * the same JSON object the SQL views give; choice and payment_id appear only when present.
 */
export const DECISION_RECORD = Type.Object({
  decision_id: Uuid,
  question_id: QuestionId,
  asset: NullableString,
  /** Subject wallet for account-scoped questions (S09..S11), else null. */
  subject: NullableString,
  event: Type.String(),
  horizon: Type.String({ pattern: '^[0-9]+[smhd]$' }),
  horizon_end: Instant,
  created_at: Instant,
  conditions: Type.Record(Type.String(), Type.Unknown(), { description: 'the machine conditions the claim holds under, by name (the same JSON object as the decisions view)' }),
  probability: Probability,
  confidence: Probability,
  decision: Type.String({ description: 'verdict kind; refusals: stale_input, insufficient_confidence, suppress' }),
  action: Type.String(),
  input_hash: Type.String(),
  state_hash: Type.String(),
  policy_version: Type.String(),
  jev_version: Type.String(),
  choice: Type.Optional(Choice),
  payment_id: Type.Optional(Type.String()),
})
export type DecisionRecord = Static<typeof DECISION_RECORD>

/** A decision plus what meta needs (freshness of its inputs, their sources). */
export interface DecisionRead {
  record: DecisionRecord
  freshness: Static<typeof FRESHNESS>[]
  data_sources: string[]
  /** True when identical inputs re-served an already recorded decision: no new row, so no charge. */
  reserved?: boolean
}

/** Spec, Resolution record: { decision_id, outcome: obtains | not | unresolvable, resolved_at, statistic }. */
export const RESOLVED = Type.Object(
  { status: Type.Literal('resolved'), decision_id: Uuid, outcome: StringEnum(OUTCOMES), resolved_at: Instant, statistic: NullableNumber },
  { additionalProperties: false },
)
export type ResolutionRecord = Static<typeof RESOLVED>
/** "Before the horizon ends the resolution route returns { status: 'pending', horizon_end: <timestamp> }." */
export const PENDING = Type.Object(
  { status: Type.Literal('pending'), decision_id: Uuid, horizon_end: Instant },
  { additionalProperties: false },
)
export type PendingResolution = Static<typeof PENDING>
export const RESOLUTION = Type.Union([RESOLVED, PENDING])
export type ResolutionRead = Static<typeof RESOLUTION>

/**
 * Spec, Lineage bundle: verify fields are "each true, false or 'unknown'". 'unknown' is a one-value string enum, not a
 * const: openapi-python-client 0.29 parses a union member `{const}` without trying the boolean first, so every lineage
 * read raised in a generated client (issue 14).
 */
const Verified = Type.Union([Type.Boolean(), StringEnum(['unknown'])])
export type Verified = Static<typeof Verified>

export const LINEAGE = Type.Object(
  {
    decision: DECISION_RECORD,
    resolution: RESOLUTION,
    payment: Type.Object(
      { rail: StringEnum(['x402', 'credits', 'none']), payment_id: NullableString },
      { additionalProperties: false },
    ),
    tape: Type.Object(
      {
        sources: Type.Array(
          Type.Object(
            { input: Type.String(), source: Type.String(), from: NullableInstant, to: NullableInstant },
            { additionalProperties: false },
          ),
        ),
      },
      { additionalProperties: false },
    ),
    hashes: Type.Object({
      input_hash: NullableString,
      state_hash: NullableString,
      /** The checksum of the sealed ruleset the decision was made under. */
      policy_checksum: Type.Optional(Type.String()),
      /** The content-hashed version of the fitted parameters (null: the model needs none). */
      fitted_version: Type.Optional(NullableString),
      /**
       * The release whose sealed body holds those parameters (GET /v1/intelligence/releases/{version}); null when
       * none was active or for account-scoped questions; absent on rows recorded before releases were served.
       */
      release_version: Type.Optional(NullableString),
    }),
    verify: Type.Object({ input_ok: Verified, state_ok: Verified }),
  },
  { additionalProperties: false },
)
export type LineageBundle = Static<typeof LINEAGE>

/** Spec: "Replay result: { decision_id, original_verdict, replayed_verdict, matched_rules, policy_version, deterministic: true }". */
export const REPLAY_RESULT = Type.Object(
  {
    decision_id: Uuid,
    original_verdict: Type.String(),
    replayed_verdict: Type.String(),
    matched_rules: Type.Array(Type.String()),
    policy_version: Type.String(),
    deterministic: Type.Literal(true),
  },
  { additionalProperties: false },
)
export type ReplayResult = Static<typeof REPLAY_RESULT>

/** Spec, Open clock: { question_id, asset, question_label, decision_id, predicted, horizon_end }. */
export const OPEN_CLOCK = Type.Object(
  {
    question_id: QuestionId,
    asset: Type.String(),
    question_label: Type.String(),
    decision_id: Uuid,
    /** Probability, or the predicted label of a choice question. */
    predicted: Type.Union([Type.Number(), Type.String()]),
    horizon_end: Instant,
  },
  { additionalProperties: false },
)
export type OpenClock = Static<typeof OPEN_CLOCK>
export const OPEN_CLOCKS = Type.Object({ clocks: Type.Array(OPEN_CLOCK) }, { additionalProperties: false })

/** Spec, Feed chip: { decision_id, question_id, asset, output, predicted, realized, match, observed, status, resolved_at, horizon_end }. */
export const FEED_CHIP = Type.Object(
  {
    decision_id: Uuid,
    question_id: QuestionId,
    asset: NullableString,
    output: StringEnum(['choice', 'probability']),
    predicted: Nullable(Type.Union([Type.String(), Type.Number()])),
    realized: NullableString,
    match: Nullable(Type.Boolean()),
    observed: Nullable(Type.Boolean()),
    status: StringEnum(OUTCOMES),
    resolved_at: Instant,
    horizon_end: Instant,
  },
  { additionalProperties: false },
)
export type FeedChip = Static<typeof FEED_CHIP>
/** next_cursor: the position of the last chip, to pass as `cursor` for the older chips after it; null at the end. */
export const FEED = Type.Object({ chips: Type.Array(FEED_CHIP), next_cursor: NullableString }, { additionalProperties: false })
export type FeedPage = Static<typeof FEED>

/** Spec, GET /v1/signals: "the eleven questions, each available or blocked with its exact reason ... includes sample_hours_by_asset". */
/** One asset's sale-gate verdict as /v1/signals shows it. */
export const SALE_GATE_ENTRY = Type.Object(
  {
    asset: Type.String(),
    status: StringEnum(['sold', 'blocked']),
    reason: Nullable(StringEnum([...GATE_REASONS])),
    /** The measured figures in one sentence (holdout window, n, BSS with its interval, the one-feature baseline's BSS). */
    measured: Type.String(),
    holdout_start: NullableInstant,
    n_scored: Type.Integer({ minimum: 0 }),
    bss: NullableNumber,
    bss_ci: Nullable(Type.Array(Type.Number(), { minItems: 2, maxItems: 2 })),
    one_feature_bss: NullableNumber,
  },
  { additionalProperties: false },
)

export const SIGNALS = Type.Object(
  {
    questions: Type.Array(
      Type.Object(
        {
          question_id: QuestionId,
          label: Type.String(),
          available: Type.Boolean(),
          /** Exact reason when blocked, else null. */
          reason: NullableString,
          /**
           * The sale gate's measured verdict of the active release's parameters (models/saleGate.ts): measured on a
           * holdout of the release's training span, pooled over its assets (asset 'pooled'); [] for a question
           * without a gate (account-scoped, not sold, no release serving it).
           */
          sale_gate: Type.Array(SALE_GATE_ENTRY),
        },
        { additionalProperties: false },
      ),
    ),
    sample_hours_by_asset: Type.Record(Type.String(), Type.Number({ minimum: 0 })),
    /**
     * The release the market questions answer with (engine/ServedRelease.ts): its version and checksum, whether the
     * body hashes to its sealed checksum, and each family served or refused with the reason; version null when none
     * is active (every sold market question then refuses no_active_release).
     */
    release: Type.Object(
      {
        version: NullableString,
        checksum: NullableString,
        checksum_verified: Nullable(Type.Boolean()),
        jev_version: NullableString,
        families: Type.Record(Type.String(), Type.String()),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
)
export type SignalCatalog = Static<typeof SIGNALS>
export type SignalEntry = SignalCatalog['questions'][number]

/** GET /v1/policy/seal: the sealed ruleset; checksum = SHA-256 of its JCS (RFC 8785) canonical form. */
export const POLICY_SEAL = Type.Object(
  { version: Type.String(), checksum: Type.String({ pattern: '^[0-9a-f]{64}$' }), ruleset: JsonObject },
  { additionalProperties: false },
)
