/**
 * A notification held in a payer's feed (issue 31, Bounded memory): the row's fields, its payload kept as its JSON
 * text and parsed when read. A feed holds the hot window's rows (a third of a million at a million calls over 35
 * days), and a parsed payload cost several times its text: ~850 bytes a row held as parsed objects. Readers see a
 * NotificationRow (`payload` a fresh object per read, so no reader can change what is held); JSON.stringify sees the
 * plain row (toJSON).
 */
import type { NotificationRow } from '../../pipeline/records/notificationRecord.ts'

export class HotNotification implements NotificationRow {
  constructor(
    readonly key: string,
    readonly payer: string,
    readonly id: number,
    readonly kind: string,
    readonly ref: string,
    /** The payload's JSON text, keys in the order stored (canonical: the journal's and the snapshot's bytes). */
    readonly payloadText: string,
    readonly created_at: string,
  ) {}

  /** Held from a row as the journal or the Arena's own write gives it (its payload in canonical key order). */
  static of(row: NotificationRow): HotNotification {
    return new HotNotification(row.key, row.payer, row.id, row.kind, row.ref, JSON.stringify(row.payload), row.created_at)
  }

  get payload(): Record<string, unknown> {
    return JSON.parse(this.payloadText) as Record<string, unknown>
  }

  toJSON(): NotificationRow {
    return { key: this.key, payer: this.payer, id: this.id, kind: this.kind, ref: this.ref, payload: this.payload, created_at: this.created_at }
  }
}
