/**
 * A notification held in a payer's feed (issue 31, Bounded memory): the row's fields, its payload kept as its JSON
 * text and parsed when read. A feed holds the hot window's rows (a third of a million at a million calls over 35
 * days), and a parsed payload cost several times its text: ~850 bytes a row held as parsed objects. Readers see a
 * NotificationRow (`payload` a fresh object per read, so no reader can change what is held); JSON.stringify sees the
 * plain row (toJSON).
 *
 * The journal identity `key` is not held: every row the Arena writes has the key kind|ref|payer, so it is derived when
 * read (a string of ~70 characters a row was 33 MB of the restored heap at a million calls, README). A row read back
 * with another key (KeyedNotification) keeps its own.
 *
 * Nor is its payload text held whole: a call's payload names the call (its ref) and otherwise repeats what every call
 * on the same clock says (asset, decision, question, outcome), so the text is held as the part before the quoted ref
 * and the part after it, each one string shared by every row with the same text (`share`: 360,000 rows of a million
 * calls have fewer than 2,000 such parts; README), and joined again when read. The text read is the same, byte for
 * byte.
 */
import type { NotificationRow } from '../../pipeline/records/notificationRecord.ts'

/** The text as given: no sharing. */
const asIs = (text: string) => text

export class HotNotification implements NotificationRow {
  /** The payload's text before the first occurrence of the quoted ref, or the whole text when it has none. */
  private readonly head: string
  /** The text after that occurrence; null: the ref is not in the text. */
  private readonly tail: string | null

  constructor(
    readonly payer: string,
    readonly id: number,
    readonly kind: string,
    readonly ref: string,
    /** The payload's JSON text, keys in the order stored (canonical: the journal's and the snapshot's bytes). */
    payloadText: string,
    readonly created_at: string,
    /** Returns one held copy of each text (the parts repeat across rows). */
    share: (text: string) => string = asIs,
  ) {
    const quoted = JSON.stringify(ref)
    const at = payloadText.indexOf(quoted)
    if (at < 0) {
      this.head = share(payloadText)
      this.tail = null
    } else {
      this.head = share(payloadText.slice(0, at))
      this.tail = share(payloadText.slice(at + quoted.length))
    }
  }

  /** The payload's JSON text as stored. */
  get payloadText(): string {
    return this.tail === null ? this.head : this.head + JSON.stringify(this.ref) + this.tail
  }

  /** Held from a row as the journal or the Arena's own write gives it (its payload in canonical key order). */
  static of(row: NotificationRow, share: (text: string) => string = asIs): HotNotification {
    return HotNotification.held(row.key, row.payer, row.id, row.kind, row.ref, JSON.stringify(row.payload), row.created_at, share)
  }

  /** Held from a snapshot's tuple: `key` null (or equal to it) when it is the derived one. */
  static held(key: string | null, payer: string, id: number, kind: string, ref: string, payloadText: string, created_at: string, share: (text: string) => string = asIs): HotNotification {
    return key === null || key === derivedKey(kind, ref, payer)
      ? new HotNotification(payer, id, kind, ref, payloadText, created_at, share)
      : new KeyedNotification(key, payer, id, kind, ref, payloadText, created_at, share)
  }

  /** The journal identity: kind|ref|payer (the Arena's writer, Arena.notify). */
  get key(): string {
    return derivedKey(this.kind, this.ref, this.payer)
  }

  /** Whether the key is the derived one (false: a row read back with a key of its own). */
  get keyDerived(): boolean {
    return true
  }

  get payload(): Record<string, unknown> {
    return JSON.parse(this.payloadText) as Record<string, unknown>
  }

  toJSON(): NotificationRow {
    return { key: this.key, payer: this.payer, id: this.id, kind: this.kind, ref: this.ref, payload: this.payload, created_at: this.created_at }
  }
}

/** A row whose key is not kind|ref|payer (not one the Arena writes): it holds the key it came with. */
export class KeyedNotification extends HotNotification {
  constructor(
    private readonly ownKey: string,
    payer: string,
    id: number,
    kind: string,
    ref: string,
    payloadText: string,
    created_at: string,
    share: (text: string) => string,
  ) {
    super(payer, id, kind, ref, payloadText, created_at, share)
  }

  override get key(): string {
    return this.ownKey
  }

  override get keyDerived(): boolean {
    return false
  }
}

export function derivedKey(kind: string, ref: string, payer: string): string {
  return `${kind}|${ref}|${payer}`
}
