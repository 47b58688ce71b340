/**
 * What a payer tells the Arena, as append-only records on the `arena.settings` topic (key = payer, so one payer's
 * settings keep their order and the last one wins): board visibility (POST /v1/arena/opt-in), the agent track (POST
 * /v1/arena/agent), notification preferences (PUT …/preferences) and read marks (POST …/notifications/read). A
 * setting is never updated in place: a change is a new record, and history is kept (a frozen season board uses the
 * visibility in force at the season's end).
 */
import { Instant, Nullable, StringEnum, Type, type Static } from '../../common/schema.ts'
import { JournalDef } from '../journal/JournalDef.ts'

export const ARENA_SETTING_KINDS = ['opt_in', 'agent', 'preferences', 'read'] as const
export type ArenaSettingKind = (typeof ARENA_SETTING_KINDS)[number]

export const ARENA_SETTING_RECORD_SCHEMA = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    payer: Type.String({ minLength: 1 }),
    kind: StringEnum(ARENA_SETTING_KINDS),
    /** opt_in and agent: the flag set; other kinds: null. */
    value: Nullable(Type.Boolean()),
    /** preferences: the toggles given (merged over earlier ones); other kinds: null. */
    preferences: Nullable(Type.Record(Type.String(), Type.Boolean())),
    /** read: the notification ids marked, or null for "every unread one up to `through`". */
    ids: Nullable(Type.Array(Type.Integer({ minimum: 1 }))),
    /** read with ids null: the newest notification id when the mark was made (later ones stay unread). */
    through: Nullable(Type.Integer({ minimum: 0 })),
    created_at: Instant,
  },
  { additionalProperties: false },
)

export type ArenaSettingRow = Static<typeof ARENA_SETTING_RECORD_SCHEMA>

export const ARENA_SETTINGS = new JournalDef({
  name: 'arena.settings',
  schema: ARENA_SETTING_RECORD_SCHEMA,
  key: (r) => r.payer,
  id: (r) => r.id,
  time: (r) => Date.parse(r.created_at),
  table: { rows: 'arena_setting_rows', dir: 'arena.settings' },
})
