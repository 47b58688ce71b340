/**
 * What a model sees at event time `at`, as the live features (FeatureState) build it and the ledger journals it:
 * named numeric features plus the freshness of each input they came from. Values are plain JSON (numbers or null),
 * so a snapshot is its own journal entry and replays to the same answer (input_hash = JCS SHA-256 of the snapshot).
 */
import { Nullable, NullableInstant, NullableNumber, StringEnum, Type, type Static } from '../../common/schema.ts'

/** Spec (Response envelope): meta.freshness is a "list of per-input { ok, staleness_budget_ms, age_ms, last_success_at }". */
export const FRESHNESS = Type.Object(
  {
    /** Input name, e.g. 'bars', 'funding'. */
    input: Type.String(),
    ok: Type.Boolean(),
    staleness_budget_ms: Type.Number(),
    age_ms: NullableNumber,
    last_success_at: NullableInstant,
  },
  { additionalProperties: false },
)
export type Freshness = Static<typeof FRESHNESS>

/** One input's freshness as journaled: the published fields plus the quality of the data it came from. */
export const INPUT_FRESHNESS = Type.Object(
  { ...FRESHNESS.properties, quality: Nullable(StringEnum(['real', 'degraded', 'simulated'])) },
  { additionalProperties: false },
)
export type InputFreshness = Static<typeof INPUT_FRESHNESS>

export const FEATURE_SNAPSHOT = Type.Object(
  {
    asset: Type.String(),
    /** Event time, epoch ms. */
    at: Type.Number(),
    features: Type.Record(Type.String(), NullableNumber),
    freshness: Type.Array(INPUT_FRESHNESS),
    /** Provenance sources of the inputs (e.g. 'okx:swap'), for lineage and meta.data_sources. */
    sources: Type.Array(Type.String()),
  },
  { additionalProperties: false },
)
export type FeatureSnapshot = Static<typeof FEATURE_SNAPSHOT>
