/**
 * Delivery's contact capture (POST /v1/contacts): "201 recorded, 200 already recorded (idempotent), 503
 * CONTACTS_UNWIRED when this deployment does not record contacts; never claims a message was sent". One record of
 * delivery.contacts per contact, its id derived from the normalized contact (keyed, and the contact sealed, when the
 * deployment has a key: sealing.ts).
 */
import type { AtRestCipher } from '../../common/AtRestCipher.ts'
import type { Clock } from '../../common/Clock.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import type { Journal } from '../../pipeline/journal/Journal.ts'
import { contactId, type ContactRow, type DELIVERY_CONTACTS } from '../../pipeline/records/deliveryRecord.ts'
import { iso } from './Attempts.ts'
import type { DeliveryBook } from './DeliveryBook.ts'
import type { ContactView } from './schemas.ts'
import { contactAad } from './sealing.ts'

export class Contacts {
  constructor(
    private readonly book: DeliveryBook,
    private readonly contacts: Journal<typeof DELIVERY_CONTACTS.schema>,
    private readonly cipher: AtRestCipher | null,
    private readonly clock: Clock,
    /** false: 503 CONTACTS_UNWIRED. */
    private readonly recordContacts: boolean,
  ) {}

  async recordContact(input: { contact: string; consent: true; source: string | null; seat: string | null }): Promise<{ created: boolean; contact: ContactView }> {
    if (!this.recordContacts) throw new ServiceError('CONTACTS_UNWIRED')
    const normalized = input.contact.trim()
    const kind: ContactRow['contact_kind'] = normalized.startsWith('@') ? 'telegram' : 'email'
    const value = kind === 'email' ? normalized.toLowerCase() : normalized
    const cipher = this.cipher
    const id = contactId(value, cipher)
    // A contact recorded before the deployment had a key carries the unkeyed id: it is still "already recorded".
    const have = this.book.contacts.get(id) ?? (cipher ? this.book.contacts.get(contactId(value, null)) : undefined)
    const view = (r: ContactRow): ContactView => ({ contact_id: r.contact_id, contact_kind: r.contact_kind, status: 'recorded', recorded_at: r.recorded_at, message_sent: false })
    if (have) return { created: false, contact: view(have) }
    const row: ContactRow = {
      contact_id: id, contact: cipher ? cipher.sealText(value, contactAad(id)) : value, contact_kind: kind, consent: true, source: input.source, seat: input.seat,
      recorded_at: iso(this.clock.now()),
    }
    await this.contacts.append([row])
    this.book.applyContact(row)
    return { created: true, contact: view(this.book.contacts.get(id)!) }
  }
}
