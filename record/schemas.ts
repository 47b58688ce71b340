/**
 * The public shapes of the measured record (spec, What the service does 7): calibration reports and base-rate priors,
 * each one TypeBox schema with its type inferred from it.
 */
import { Nullable, NullableNumber, NullableString, Probability, StringEnum, Type, type Static } from '../common/schema.ts'

/** Spec, Calibration report: "{ buckets: [...], published: boolean, n: integer, n_floor: integer, note: string }". */
export const CALIBRATION = Type.Object(
  {
    question_id: NullableString,
    subject: NullableString,
    buckets: Type.Array(
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
    ),
    published: Type.Boolean(),
    n: Type.Integer({ minimum: 0 }),
    n_floor: Type.Integer({ minimum: 0 }),
    note: Type.String(),
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
