/**
 * The operator funnel's snapshots: one append-only record per computed funnel on the `ops.funnel` topic (key
 * 'funnel', so every snapshot keeps its order on one partition), so the trend survives restarts
 * (product/funnel/FunnelService.ts appends, GET /v1/admin/economy-funnel reads).
 *
 * Spec (Operator funnel): "{ funnel: { at, window_calls, xp_by_kind, steps: [...] } or null, activation: {
 * activated_payers, graded_calls, first_lock_to_first_grade: { median_ms, n, window_calls } }, ... }. Step item: {
 * step, count (null when unmeasured, never zero), measurable, derivation or note }". A snapshot is the funnel and the
 * activation as of `at`; counts are cumulative over everything the sources held at `at` (docs/decisions.md).
 */
import { IsoMs, Nullable, NullableString, Type, type Static } from '../../common/schema.ts'
import { JournalDef } from '../journal/JournalDef.ts'

export const FUNNEL_RECORD_VERSION = 1

/** A count is a non-negative integer when measured, null when not (never 0 for "unknown"). */
const Count = Nullable(Type.Integer({ minimum: 0 }))

export const FUNNEL_STEP_SCHEMA = Type.Object(
  {
    step: Type.String({ minLength: 1 }),
    count: Count,
    measurable: Type.Boolean(),
    /** How the count is computed (measured steps). */
    derivation: Type.Optional(Type.String()),
    /** Why there is no count (unmeasured steps). */
    note: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
)

export const FUNNEL_ACTIVATION_SCHEMA = Type.Object(
  {
    activated_payers: Count,
    graded_calls: Count,
    first_lock_to_first_grade: Type.Object(
      { median_ms: Nullable(Type.Number({ minimum: 0 })), n: Count, window_calls: Count },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
)

export const FUNNEL_SNAPSHOT_SCHEMA = Type.Object(
  {
    v: Type.Literal(FUNNEL_RECORD_VERSION),
    snapshot_id: Type.String({ minLength: 1 }),
    /** When the snapshot was computed (the service clock); served as `at` (AT is a DuckDB keyword, so not a column name). */
    taken_at: IsoMs,
    window_calls: Type.Integer({ minimum: 0 }),
    /** XP awards by kind from the Arena; null when the Arena is not wired. */
    xp_by_kind: Nullable(Type.Record(Type.String(), Type.Integer({ minimum: 0 }))),
    steps: Type.Array(FUNNEL_STEP_SCHEMA),
    activation: FUNNEL_ACTIVATION_SCHEMA,
    /** Which sources were wired when it was computed (e.g. 'ledger,billing'); says why a step is null. */
    sources: NullableString,
  },
  { additionalProperties: false },
)

export type FunnelSnapshot = Static<typeof FUNNEL_SNAPSHOT_SCHEMA>
export type FunnelStep = Static<typeof FUNNEL_STEP_SCHEMA>
export type FunnelActivation = Static<typeof FUNNEL_ACTIVATION_SCHEMA>

export const FUNNEL_SNAPSHOTS = new JournalDef({
  name: 'ops.funnel',
  schema: FUNNEL_SNAPSHOT_SCHEMA,
  key: () => 'funnel',
  id: (s) => s.snapshot_id,
  time: (s) => Date.parse(s.taken_at),
  table: {
    rows: 'funnel_snapshot_rows',
    first: 'funnel_snapshots',
    dir: 'ops.funnel',
    version: { field: 'v', column: 'record_version' },
  },
})
