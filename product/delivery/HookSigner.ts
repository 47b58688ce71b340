/**
 * Hook secrets and signatures.
 *
 * Spec, Authentication 5: "Hook deliveries are signed with header X-Svc-Signature (HMAC-SHA256). Outcome hook
 * endpoints have a per-endpoint secret, returned once and stored encrypted at rest when the deployment configures a
 * key, otherwise the deployment-wide signing secret is used."
 *
 * The signature follows the Standard Webhooks specification (standardwebhooks.com), so its reference libraries verify
 * our deliveries unchanged:
 *
 *   signed string  = <delivery id> + "." + <unix seconds> + "." + <raw body>
 *   X-Svc-Signature = "v1," + base64(HMAC-SHA256(key, signed string))
 *   key            = base64-decode(secret without its "whsec_" prefix)
 *
 * sent with X-Svc-Delivery-Id and X-Svc-Timestamp, and the same three values as webhook-id, webhook-timestamp and
 * webhook-signature. A receiver refuses a timestamp far from its clock (replays) and dedupes on the delivery id (a
 * retry or a re-delivery after a crash carries the same id).
 *
 * Every hook and endpoint has its own secret (so one receiver can never forge another's deliveries):
 * - with a key (SVC_DELIVERY_KEY): 32 random bytes, stored AES-256-GCM encrypted in the registration record with the
 *   target id as additional data (a ciphertext moved to another target does not decrypt);
 * - without one: HMAC-SHA256(deployment signing secret, target id): derived on demand, nothing secret is stored.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto'
import { mkdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { writeFileAtomic } from '../../pipeline/log/atomicFile.ts'

export type StoredSecret = { alg: 'A256GCM'; iv: string; ct: string; tag: string } | { alg: 'derived' }

export interface SignedHeaders extends Record<string, string> {
  'x-svc-delivery-id': string
  'x-svc-timestamp': string
  'x-svc-signature': string
  'webhook-id': string
  'webhook-timestamp': string
  'webhook-signature': string
}

const SECRET_PREFIX = 'whsec_'

/** Reads a 32-byte key given as 64 hex digits, base64 or whsec_<base64>; null when it is not one. */
export function keyBytes(text: string): Buffer | null {
  const t = text.trim()
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, 'hex')
  const b = Buffer.from(t.startsWith(SECRET_PREFIX) ? t.slice(SECRET_PREFIX.length) : t, 'base64')
  return b.length === 32 ? b : null
}

export function signedContent(deliveryId: string, timestampS: number, body: string | Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${deliveryId}.${timestampS}.`), Buffer.isBuffer(body) ? body : Buffer.from(body)])
}

export class HookSigner {
  private constructor(
    /** The deployment-wide signing secret (32 bytes). */
    private readonly deploymentSecret: Buffer,
    /** The at-rest encryption key; null: secrets are derived. */
    private readonly key: Buffer | null,
  ) {}

  /**
   * The deployment secret comes from configuration, or is made once and kept in <dir>/signing-secret (mode 0600), so a
   * restart signs with the same secrets (derived ones included).
   */
  static async open(options: { dir: string; signingSecret?: string | null; key?: string | null }): Promise<HookSigner> {
    const key = options.key ? keyBytes(options.key) : null
    if (options.key && !key) throw new Error('SVC_DELIVERY_KEY must be 32 bytes: 64 hex digits or base64')
    let secret = options.signingSecret ? keyBytes(options.signingSecret) : null
    if (options.signingSecret && !secret) throw new Error('SVC_SIGNING_SECRET must be 32 bytes: 64 hex digits, base64 or whsec_<base64>')
    if (!secret) {
      const file = join(options.dir, 'signing-secret')
      try {
        secret = keyBytes(await readFile(file, 'utf8'))
        if (!secret) throw new Error(`${file} does not hold a 32-byte secret`)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
        secret = randomBytes(32)
        await mkdir(options.dir, { recursive: true, mode: 0o700 })
        await writeFileAtomic(file, secret.toString('base64'), { mode: 0o600 })
      }
    }
    return new HookSigner(secret, key)
  }

  /** A new target's secret: the whsec_ text shown once, and what its registration record stores. */
  newSecret(targetId: string): { secret: string; stored: StoredSecret } {
    if (!this.key) return { secret: this.derived(targetId), stored: { alg: 'derived' } }
    const raw = randomBytes(32)
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.key, iv)
    cipher.setAAD(Buffer.from(targetId))
    const ct = Buffer.concat([cipher.update(raw), cipher.final()])
    return {
      secret: SECRET_PREFIX + raw.toString('base64'),
      stored: { alg: 'A256GCM', iv: iv.toString('base64'), ct: ct.toString('base64'), tag: cipher.getAuthTag().toString('base64') },
    }
  }

  /** The secret a stored record stands for (throws when the ciphertext does not decrypt with this key and target). */
  secretOf(targetId: string, stored: StoredSecret): string {
    if (stored.alg === 'derived') return this.derived(targetId)
    if (!this.key) throw new Error(`target ${targetId} has an encrypted secret but no SVC_DELIVERY_KEY is configured`)
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(stored.iv, 'base64'))
    decipher.setAAD(Buffer.from(targetId))
    decipher.setAuthTag(Buffer.from(stored.tag, 'base64'))
    const raw = Buffer.concat([decipher.update(Buffer.from(stored.ct, 'base64')), decipher.final()])
    return SECRET_PREFIX + raw.toString('base64')
  }

  private derived(targetId: string): string {
    return SECRET_PREFIX + createHmac('sha256', this.deploymentSecret).update(`svc.delivery.secret.v1|${targetId}`).digest('base64')
  }

  /** The headers of one signed delivery. */
  static sign(secret: string, deliveryId: string, timestampS: number, body: string | Buffer): SignedHeaders {
    const key = keyBytes(secret)
    if (!key) throw new Error('a hook secret is 32 bytes')
    const signature = `v1,${createHmac('sha256', key).update(signedContent(deliveryId, timestampS, body)).digest('base64')}`
    const ts = String(timestampS)
    return {
      'x-svc-delivery-id': deliveryId,
      'x-svc-timestamp': ts,
      'x-svc-signature': signature,
      'webhook-id': deliveryId,
      'webhook-timestamp': ts,
      'webhook-signature': signature,
    }
  }
}
