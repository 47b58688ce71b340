/**
 * The public shapes of releases (spec, Intelligence measures: "Release feed item: { version, parent, status,
 * created_at, activated_at, dataset: { window_start, window_end, n_realized, dataset_hash }, evaluation: { folds,
 * incumbent, delta_brier, delta_brier_ci, delta_logloss, delta_logloss_ci, per_family }, gates: sealed rows { gate,
 * met, measured, reason? }, gate_verdicts: { evidence, improvement, no_regression, reproducible } each { met, measured,
 * reason? }, measured_at }. The release detail adds body (the sealed body verbatim) and per-family details.").
 * A candidate not yet evaluated has evaluation, gate_verdicts and measured_at null and no gate rows.
 */
import { Hex64, Instant, JsonObject, Nullable, NullableInstant, NullableNumber, NullableString, Open, StringEnum, Type } from '../../common/schema.ts'
import { GATES } from './evaluate.ts'

export const RELEASE_STATUSES = ['candidate', 'active', 'superseded', 'rejected'] as const
export type ReleaseStatus = (typeof RELEASE_STATUSES)[number]

export const ReleaseStatusSchema = StringEnum(RELEASE_STATUSES, { description: 'derived at read time from the sealed rows' })
const Version = Type.String({ pattern: '^\\d+\\.\\d+\\.\\d+$' })
const Interval = Nullable(Type.Array(Type.Number(), { minItems: 2, maxItems: 2, description: '95 % day-block bootstrap interval [low, high]' }))

const Verdict = Type.Object({ met: Type.Boolean(), measured: JsonObject, reason: Type.Optional(Type.String()) }, { additionalProperties: false })
const GateRow = Type.Object({ gate: StringEnum(GATES), met: Type.Boolean(), measured: JsonObject, reason: Type.Optional(Type.String()) }, { additionalProperties: false })

const Evaluation = Type.Object(
  {
    folds: Type.Array(
      Type.Object(
        { fold: Type.Integer({ minimum: 1 }), window_start: Instant, window_end: Instant, n_realized: Type.Integer({ minimum: 0 }), delta_brier: NullableNumber, delta_logloss: NullableNumber },
        { additionalProperties: false },
      ),
    ),
    incumbent: Type.Object({ version: NullableString, kind: StringEnum(['release', 'base_rate']) }, { additionalProperties: false }),
    delta_brier: NullableNumber,
    delta_brier_ci: Interval,
    delta_logloss: NullableNumber,
    delta_logloss_ci: Interval,
    per_family: Type.Record(
      Type.String(),
      Type.Object({ n_realized: Type.Integer({ minimum: 0 }), delta_brier: NullableNumber, delta_brier_ci: Interval, delta_logloss: NullableNumber }, { additionalProperties: false }),
    ),
    holdout: Type.Object({ window_start: Instant, window_end: NullableInstant, n_decisions: Type.Integer({ minimum: 0 }), n_realized: Type.Integer({ minimum: 0 }) }, { additionalProperties: false }),
    bootstrap: JsonObject,
    candidate_checksum: Hex64,
  },
  { additionalProperties: false },
)

const FEED_ITEM_PROPERTIES = {
  version: Version,
  parent: Nullable(Version),
  status: ReleaseStatusSchema,
  created_at: Instant,
  activated_at: NullableInstant,
  dataset: Type.Object({ window_start: Instant, window_end: Instant, n_realized: Type.Integer({ minimum: 0 }), dataset_hash: Hex64 }, { additionalProperties: false }),
  evaluation: Nullable(Evaluation),
  gates: Type.Array(GateRow),
  gate_verdicts: Nullable(Type.Object({ evidence: Verdict, improvement: Verdict, no_regression: Verdict, reproducible: Verdict }, { additionalProperties: false })),
  measured_at: NullableInstant,
}

export const RELEASE_FEED_ITEM = Type.Object(FEED_ITEM_PROPERTIES, { additionalProperties: false })

export const RELEASE_LIST = Type.Object({ releases: Type.Array(RELEASE_FEED_ITEM) }, { additionalProperties: false })

export const RELEASE_DETAIL = Type.Object(
  {
    ...FEED_ITEM_PROPERTIES,
    /** SHA-256 of the JCS of body. */
    checksum: Hex64,
    /** The sealed body verbatim. */
    body: JsonObject,
    /** Per-family details of the evaluation (null until evaluated). */
    families: Nullable(Type.Record(Type.String(), JsonObject)),
  },
  { additionalProperties: false },
)

export const RELEASES_QUERY = Open({ status: Type.Optional(ReleaseStatusSchema) })
export const RELEASE_PARAMS = Type.Object({ version: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false })
