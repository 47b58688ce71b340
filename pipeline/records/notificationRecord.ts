/**
 * The Arena's notification feed: one append-only record per notification on the `arena.notifications` topic (key =
 * payer). Spec (Arena resources): "Notification: { id: integer, kind, ref, payload, created_at, read_at (null while
 * unread) }"; read_at is never stored here: it is derived from the read marks (arenaSettingRecord.ts).
 *
 * `id` is the payer's own ordinal (1, 2, 3 …), assigned by the one writer and stored, so it is the same after every
 * restart; `key` (kind|ref|payer) is the journal identity that keeps a replayed event from notifying twice.
 */
import { Instant, JsonObject, Type, type Static } from '../../common/schema.ts'
import { JournalDef } from '../journal/JournalDef.ts'

export const NOTIFICATION_RECORD_SCHEMA = Type.Object(
  {
    key: Type.String({ minLength: 1, maxLength: 300 }),
    payer: Type.String({ minLength: 1 }),
    id: Type.Integer({ minimum: 1 }),
    kind: Type.String({ pattern: '^[a-z_]{1,40}$' }),
    /** Provenance: the call_id, quest key and period, badge key or rank name the notification comes from. */
    ref: Type.String(),
    payload: JsonObject,
    created_at: Instant,
  },
  { additionalProperties: false },
)

export type NotificationRow = Static<typeof NOTIFICATION_RECORD_SCHEMA>

export const NOTIFICATIONS = new JournalDef({
  name: 'arena.notifications',
  schema: NOTIFICATION_RECORD_SCHEMA,
  key: (r) => r.payer,
  id: (r) => r.key,
  time: (r) => Date.parse(r.created_at),
  table: { rows: 'arena_notification_rows', first: 'arena_notifications', dir: 'arena.notifications' },
})
