/**
 * What delivery seals at rest when the deployment has a key (SVC_DELIVERY_KEY), and under which additional data:
 * - a registration's url (hook and endpoint URLs often carry capability tokens; push endpoints are capability URLs),
 *   under `url|<target id>`; the host stays plain in spec.host so the record still says where deliveries go (the
 *   delivery_registration_rows view: which receivers, without their tokens);
 * - a push device's keys (spec.keys: the subscription's p256dh and auth secret), under `keys|<target id>`;
 * - a contact (an e-mail address or Telegram handle), under `contact|<contact id>`; its id is keyed too
 *   (deliveryRecord.ts contactId) so it cannot be tested against guessed addresses.
 * Hook and endpoint secrets are sealed by the HookSigner with the same cipher. Ids, payers, kinds, times, follows'
 * and alerts' subjects (public assets and addresses) stay plain: they are what the book and the views query.
 * Without a key nothing is sealed (records as before); a record written with a key is opened by the DeliveryBook.
 */
import type { AtRestCipher } from '../../common/AtRestCipher.ts'
import type { RegistrationRow } from '../../pipeline/records/deliveryRecord.ts'

export const urlAad = (targetId: string): string => `url|${targetId}`
export const keysAad = (targetId: string): string => `keys|${targetId}`
export const contactAad = (contactId: string): string => `contact|${contactId}`

/** The record as stored: the row as given without a cipher; with one, its url and push keys sealed. */
export function sealRegistration(row: RegistrationRow, cipher: AtRestCipher | null): RegistrationRow {
  if (!cipher || (row.url === null && row.spec.keys === undefined)) return row
  const spec: Record<string, unknown> = { ...row.spec }
  if (spec.keys !== undefined) spec.keys = cipher.sealText(JSON.stringify(spec.keys), keysAad(row.target_id))
  // Every url here passed the URL guard, so it parses.
  if (row.url !== null) spec.host = new URL(row.url).host
  return { ...row, url: row.url === null ? null : cipher.sealText(row.url, urlAad(row.target_id)), spec }
}
