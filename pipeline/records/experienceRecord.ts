/**
 * The Arena's experience journal: every XP award as one append-only record on the `arena.experience` topic (key =
 * payer, so one payer's awards keep their order). XP, rank, quests-completed and badges are folds over it
 * (product/arena/ArenaProjection.ts); billing data plays no part (spec, Arena resources: "XP is derived from an
 * append-only experience journal; billing data plays no part in rank").
 *
 * The id is deterministic (kind + source id: ask:<decision_id>, call:<call_id>, quest:<quest>:<period>:<payer>,
 * badge:<badge>:<payer>), so a replayed or duplicated event can never award twice: the projection keeps the first
 * record per id and the writer never stages an id it already holds.
 */
import { Instant, Nullable, StringEnum, Type, type Static } from '../../common/schema.ts'
import { JournalDef } from '../journal/JournalDef.ts'

export const EXPERIENCE_KINDS = ['ask', 'correct_call', 'quest', 'badge'] as const
export type ExperienceKind = (typeof EXPERIENCE_KINDS)[number]

export const EXPERIENCE_RECORD_SCHEMA = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 200 }),
    /** Lower-case payer address. */
    payer: Type.String({ minLength: 1 }),
    kind: StringEnum(EXPERIENCE_KINDS),
    xp: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
    /** Provenance: the decision_id (ask), call_id (correct_call), quest key and period (quest), badge key (badge). */
    ref: Type.String(),
    /** The Intelligence Level the award was priced at (ask, correct_call); null for quests and badges. */
    level: Nullable(Type.Integer({ minimum: 1 })),
    /** The instant of the event that earned it (ask time, graded_at, the completing event's time): seasons use it. */
    created_at: Instant,
  },
  { additionalProperties: false },
)

export type ExperienceRow = Static<typeof EXPERIENCE_RECORD_SCHEMA>

export const EXPERIENCE = new JournalDef({
  name: 'arena.experience',
  schema: EXPERIENCE_RECORD_SCHEMA,
  key: (r) => r.payer,
  id: (r) => r.id,
  time: (r) => Date.parse(r.created_at),
  table: { rows: 'arena_experience_rows', first: 'arena_experience', dir: 'arena.experience' },
})
