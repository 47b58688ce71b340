/**
 * Encryption at rest under the deployment key (SVC_DELIVERY_KEY): the one cipher for every secret, personal datum and
 * capability URL the service writes to its journals (hook and endpoint secrets, hook and endpoint URLs, push
 * endpoints and keys, contacts). AES-256-GCM with a fresh 96-bit IV per value and additional data naming what the
 * value is and whose it is (`url|<target id>`), so a ciphertext copied into another record or field does not decrypt.
 *
 * Two spellings of one sealed value, because the records hold both shapes:
 * - an object { alg: 'A256GCM', iv, ct, tag } (base64), where a record already had a JSON field for it (hook secrets);
 * - a text `sealed:A256GCM:<iv>.<ct>.<tag>` (base64), where the record's field is a string column (url, contact), so
 *   the journal schemas and their Parquet/DuckDB views keep their columns and show the ciphertext, never the value.
 *
 * Ids derived from a sealed value (a contact's id) use keyedId: an unkeyed hash of an e-mail address is a pseudonym
 * anyone can test guesses against; an HMAC under the key is not.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto'

export type Sealed = { alg: 'A256GCM'; iv: string; ct: string; tag: string }

const SEALED_TEXT = 'sealed:A256GCM:'
const WHSEC = 'whsec_'

/** Reads a 32-byte key given as 64 hex digits, base64 or whsec_<base64>; null when it is not one. */
export function keyBytes(text: string): Buffer | null {
  const t = text.trim()
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, 'hex')
  const b = Buffer.from(t.startsWith(WHSEC) ? t.slice(WHSEC.length) : t, 'base64')
  return b.length === 32 ? b : null
}

/** A text written by sealText (what a reader without the key can tell apart from a plain value). */
export function isSealedText(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(SEALED_TEXT)
}

/** A stored object written by seal. */
export function isSealed(value: unknown): value is Sealed {
  return typeof value === 'object' && value !== null && (value as { alg?: unknown }).alg === 'A256GCM'
}

export class AtRestCipher {
  private constructor(private readonly key: Buffer) {}

  /** null when no key is configured; throws when one is configured but is not 32 bytes. */
  static fromKey(text: string | null | undefined): AtRestCipher | null {
    if (!text) return null
    const key = keyBytes(text)
    if (!key) throw new Error('SVC_DELIVERY_KEY must be 32 bytes: 64 hex digits or base64')
    return new AtRestCipher(key)
  }

  seal(plain: Buffer | string, aad: string): Sealed {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.key, iv)
    cipher.setAAD(Buffer.from(aad))
    const ct = Buffer.concat([cipher.update(typeof plain === 'string' ? Buffer.from(plain) : plain), cipher.final()])
    return { alg: 'A256GCM', iv: iv.toString('base64'), ct: ct.toString('base64'), tag: cipher.getAuthTag().toString('base64') }
  }

  /** Throws when the value was sealed under another key or other additional data (GCM authenticates both). */
  open(sealed: Sealed, aad: string): Buffer {
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(sealed.iv, 'base64'))
    decipher.setAAD(Buffer.from(aad))
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'))
    return Buffer.concat([decipher.update(Buffer.from(sealed.ct, 'base64')), decipher.final()])
  }

  sealText(plain: string, aad: string): string {
    const s = this.seal(plain, aad)
    return `${SEALED_TEXT}${s.iv}.${s.ct}.${s.tag}`
  }

  openText(text: string, aad: string): string {
    const [iv, ct, tag] = text.slice(SEALED_TEXT.length).split('.')
    if (!isSealedText(text) || iv === undefined || ct === undefined || tag === undefined) throw new Error('not a sealed text')
    return this.open({ alg: 'A256GCM', iv, ct, tag }, aad).toString('utf8')
  }

  /** A stable id for a value that must not be guessable from the id (hex, 64 digits). */
  keyedId(purpose: string, value: string): string {
    return createHmac('sha256', this.key).update(`${purpose}|${value}`).digest('hex')
  }
}
