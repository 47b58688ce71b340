/**
 * The public shapes of the measured record (spec, What the service does 7): calibration reports and base-rate priors,
 * each one TypeBox schema with its type inferred from it.
 */
import { Instant, Nullable, NullableNumber, NullableString, Probability, StringEnum, Type, Uuid, type Static } from '../common/schema.ts'

const CALIBRATION_BUCKETS = Type.Array(
  Type.Object(
    {
      lo: Probability,
      hi: Probability,
      n: Type.Integer({ minimum: 0 }),
      mean_predicted: NullableNumber,
      realized_frequency: NullableNumber,
      published: Type.Boolean(),
    },
    { additionalProperties: false },
  ),
)

/** How a report's or a snapshot's figures grade a claim (docs/decisions.md: the distribution is what is sold). */
export const SCORED_AS = ['event', 'distribution', 'pooled'] as const

/**
 * Spec, Calibration report: "{ buckets: [...], published: boolean, n: integer, n_floor: integer, note: string }".
 * Issue 30 adds beside it: buckets_grade (what the buckets grade: a binary question's event; a distribution question's
 * modal, chosen class, its secondary view; pooled: every question's claim so); scores, the report's claims scored as
 * the record scores them (a distribution question by its whole distribution: multi-class Brier, −ln p(realized),
 * reference = the realized class frequencies, classwise ECE); classes, a distribution question's one-vs-rest
 * reliability per class over the same decile bands and floors (null for binary questions and pooled reports).
 */
export const CALIBRATION = Type.Object(
  {
    question_id: NullableString,
    subject: NullableString,
    buckets: CALIBRATION_BUCKETS,
    buckets_grade: StringEnum(['event', 'modal_class', 'pooled'], { description: 'what the buckets grade: the event, the modal (chosen) class of a distribution question (secondary view), or every question so pooled' }),
    published: Type.Boolean(),
    n: Type.Integer({ minimum: 0 }),
    n_floor: Type.Integer({ minimum: 0 }),
    note: Type.String(),
    scores: Nullable(
      Type.Object(
        {
          scored_as: StringEnum(SCORED_AS),
          n: Type.Integer({ minimum: 1 }),
          brier: Type.Number({ minimum: 0 }),
          logloss: Type.Number({ minimum: 0 }),
          skill_vs_reference: NullableNumber,
          reference_brier: Type.Number({ minimum: 0 }),
          ece: Type.Number({ minimum: 0 }),
        },
        { additionalProperties: false, description: 'null: no realized claim' },
      ),
    ),
    classes: Nullable(
      Type.Array(
        Type.Object(
          { class: Type.String(), n: Type.Integer({ minimum: 0 }), published: Type.Boolean(), buckets: CALIBRATION_BUCKETS },
          { additionalProperties: false },
        ),
        { description: 'distribution questions: one-vs-rest reliability per class (p = the class probability, realized = it is the realized class)' },
      ),
    ),
  },
  { additionalProperties: false },
)
export type CalibrationReport = Static<typeof CALIBRATION>
export type CalibrationBucket = CalibrationReport['buckets'][number]

const Interval = Nullable(Type.Array(Probability, { minItems: 2, maxItems: 2 }))

/**
 * Spec, Computation rule 5: "per question the pooled rate, Wilson interval, n, successes, verdict; S01 carries its
 * label histogram; where no prior exists the field is null with the reason. A prior is a base rate, not a forecast."
 */
export const QUESTION_PRIOR = Type.Object(
  {
    question_id: Type.String(),
    label: Type.String(),
    answer: StringEnum(['probability', 'choice']),
    prior: Nullable(
      Type.Object(
        {
          rate: Probability,
          interval: Interval,
          method: Type.Literal('wilson-95'),
          n: Type.Integer({ minimum: 1 }),
          successes: Type.Integer({ minimum: 0 }),
          verdict: StringEnum(['published', 'insufficient_sample']),
          window: Type.Object({ start: NullableString, end: NullableString }, { additionalProperties: false }),
        },
        { additionalProperties: false },
      ),
    ),
    /** Choice questions: realized-class counts with their rates and Wilson intervals. */
    label_histogram: Nullable(
      Type.Record(Type.String(), Type.Object({ count: Type.Integer({ minimum: 0 }), rate: Probability, interval: Interval }, { additionalProperties: false })),
    ),
    reason: NullableString,
  },
  { additionalProperties: false },
)
export type QuestionPrior = Static<typeof QUESTION_PRIOR>

export const PRIORS = Type.Object(
  { priors: Type.Array(QUESTION_PRIOR), n_floor: Type.Integer({ minimum: 1 }), note: Type.String() },
  { additionalProperties: false },
)

// ---------------------------------------------------------------- intelligence measures

const NullableProbability = Nullable(Probability)
/** A Brier score: a binary one is at most 1, a multi-class one Σ_k (p_k − o_k)² at most 2. */
const NullableBrier = Nullable(Type.Number({ minimum: 0, maximum: 2 }))
const Interval2 = Nullable(Type.Array(Type.Number(), { minItems: 2, maxItems: 2 }))

/** Spec, Intelligence measures: active_release { version, activated_at, delta_brier, delta_brier_ci: [low, high] }. */
export const ACTIVE_RELEASE = Type.Object(
  { version: Type.String(), activated_at: Type.String(), delta_brier: NullableNumber, delta_brier_ci: Interval2 },
  { additionalProperties: false },
)

/**
 * Spec, Intelligence measures, Snapshot: "index_version; composite (null below the floor); insufficient_note;
 * components { brier, logloss, skill_vs_reference (may be negative), reliability, resolution, uncertainty, ece,
 * resolution_rate }; evidence { n_decisions, n_realized, n_unresolvable, n_refused, window_start, window_end };
 * benchmarks { reference_brier, crowd: { brier, n } }; active_release {…}; release_delta; published_bands; rung;
 * taken_at; prev_hash; row_hash". seq numbers the chain. crowd is absent below its floor (spec: "below
 * its floor the line is absent"): it comes from the duel through RecordJobOptions.crowd.
 */
export const INTELLIGENCE_SNAPSHOT = Type.Object(
  {
    seq: Type.Integer({ minimum: 1 }),
    index_version: Type.String(),
    composite: Nullable(Type.Number({ minimum: 0, maximum: 100 })),
    insufficient_note: NullableString,
    components: Type.Object(
      {
        brier: NullableBrier,
        logloss: Nullable(Type.Number({ minimum: 0 })),
        skill_vs_reference: NullableNumber,
        reliability: NullableNumber,
        resolution: NullableNumber,
        uncertainty: NullableNumber,
        ece: NullableNumber,
        resolution_rate: NullableProbability,
      },
      { additionalProperties: false },
    ),
    evidence: Type.Object(
      {
        n_decisions: Type.Integer({ minimum: 0 }),
        n_realized: Type.Integer({ minimum: 0 }),
        n_unresolvable: Type.Integer({ minimum: 0 }),
        n_refused: Type.Integer({ minimum: 0 }),
        window_start: NullableString,
        window_end: NullableString,
      },
      { additionalProperties: false },
    ),
    /**
     * Secondary (index 1.1.0 on; absent on 1.0.0 snapshots): every claim graded as one binary event, a distribution
     * question by its modal (chosen) class only, as index 1.0.0 scored the record. Not in the composite.
     */
    modal_class: Type.Optional(
      Type.Object(
        { n: Type.Integer({ minimum: 0 }), brier: NullableProbability, logloss: Nullable(Type.Number({ minimum: 0 })), skill_vs_reference: NullableNumber, ece: NullableNumber },
        { additionalProperties: false },
      ),
    ),
    benchmarks: Type.Object(
      {
        reference_brier: NullableNumber,
        /** house_brier: the house's Brier on the same resolved pairs the crowd is scored on (docs/decisions.md). */
        crowd: Type.Optional(Type.Object({ brier: Type.Number(), n: Type.Integer({ minimum: 0 }), house_brier: Type.Optional(Type.Number()) }, { additionalProperties: false })),
      },
      { additionalProperties: false },
    ),
    active_release: Nullable(ACTIVE_RELEASE),
    release_delta: NullableNumber,
    published_bands: Type.Integer({ minimum: 0 }),
    rung: Type.Integer({ minimum: 0 }),
    taken_at: Type.String(),
    prev_hash: Nullable(Type.String({ pattern: '^[0-9a-f]{64}$' })),
    row_hash: Type.String({ pattern: '^[0-9a-f]{64}$' }),
  },
  { additionalProperties: false },
)
export type IntelligenceSnapshot = Static<typeof INTELLIGENCE_SNAPSHOT>

/** Spec, Curve: points [{ n_cum, brier, logloss, ece, release?, taken_at, index_version }]. */
export const CURVE_POINT = Type.Object(
  {
    n_cum: Type.Integer({ minimum: 0 }),
    brier: NullableBrier,
    logloss: NullableNumber,
    ece: NullableNumber,
    release: Type.Optional(Type.String()),
    taken_at: Type.String(),
    index_version: Type.String(),
  },
  { additionalProperties: false },
)

/** Spec, Curve: "{ index_version, points, fit: { a, b, c, b_ci } or null, note }". */
export const CURVE = Type.Object(
  {
    index_version: Type.String(),
    window: Type.String(),
    from: NullableString,
    points: Type.Array(CURVE_POINT),
    fit: Nullable(Type.Object({ a: Type.Number(), b: Type.Number(), c: Type.Number(), b_ci: Interval2 }, { additionalProperties: false })),
    note: Type.String(),
  },
  { additionalProperties: false },
)
export type Curve = Static<typeof CURVE>

/** A published answer key (issue 29): its address and the window [valid_from, valid_until) its signatures count in. */
export const PUBLISHED_ANSWER_KEY = Type.Object(
  {
    address: Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' }),
    valid_from: Instant,
    valid_until: Type.Union([Instant, Type.Null()], { description: 'null: the key in force' }),
  },
  { additionalProperties: false },
)
export type PublishedAnswerKey = Static<typeof PUBLISHED_ANSWER_KEY>

/** The deployment key's signature of one served decision record (meta.signatures[]; a receipt's `signature`). */
export const ANSWER_SIGNATURE = Type.Object(
  {
    decision_id: Uuid,
    scheme: Type.Literal('eip191-jcs-v1'),
    signer: Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' }),
    signature: Type.String({ pattern: '^0x[0-9a-fA-F]{130}$' }),
    signed_at: Instant,
  },
  { additionalProperties: false, description: 'EIP-191 personal_sign over JCS({ record, signed_at }), record = the decision record as served in data' },
)
export type AnswerSignature = Static<typeof ANSWER_SIGNATURE>

/** GET /v1/answer-keys: every answer key with its window, and what they sign. */
export const ANSWER_KEYS = Type.Object(
  { scheme: Type.Literal('eip191-jcs-v1'), signed_text: Type.String(), keys: Type.Array(PUBLISHED_ANSWER_KEY) },
  { additionalProperties: false },
)

/**
 * Spec, Claim checker: "returns valid (boolean) with the recomputed id beside the claimed one". Issue 29 adds the
 * signature and ledger checks beside it: valid needs all three.
 */
export const VERIFY_RESULT = Type.Object(
  {
    valid: Type.Boolean(),
    claimed_id: Type.String(),
    recomputed_id: NullableString,
    scheme: Type.String(),
    note: Type.String(),
    id_ok: Type.Boolean({ description: 'the claimed id follows from the body\'s identity fields' }),
    signature: Nullable(
      Type.Object(
        {
          ok: Type.Boolean(),
          reason: StringEnum(['ok', 'unrecoverable', 'unknown_signer', 'outside_window', 'signer_mismatch']),
          claimed_signer: Type.String(),
          recovered_signer: NullableString,
          signed_at: Type.String(),
          key: Nullable(PUBLISHED_ANSWER_KEY),
        },
        { additionalProperties: false, description: 'null: the receipt carries no signature' },
      ),
    ),
    ledger: Type.Object(
      {
        status: StringEnum(['match', 'differs', 'not_found', 'unavailable']),
        differences: Type.Array(
          Type.Object({ path: Type.String({ description: 'JSON Pointer into body' }), claimed: Type.Unknown(), recorded: Type.Unknown() }, { additionalProperties: false }),
        ),
      },
      { additionalProperties: false, description: 'the body against the record the ledger holds under the claimed id' },
    ),
  },
  { additionalProperties: false },
)
export type VerifyResult = Static<typeof VERIFY_RESULT>
