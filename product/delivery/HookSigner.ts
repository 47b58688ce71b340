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
 * - with a key (SVC_DELIVERY_KEY): 32 random bytes, stored sealed by the at-rest cipher (common/AtRestCipher.ts,
 *   AES-256-GCM) in the registration record with the target id as additional data (a ciphertext moved to another
 *   target does not decrypt);
 * - without one: HMAC-SHA256(deployment signing secret, target id): derived on demand, nothing secret is stored.
 */
import { createHmac, randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { AtRestCipher, keyBytes, type Sealed } from '../../common/AtRestCipher.ts'
import { writeFileAtomic } from '../../pipeline/log/atomicFile.ts'
import { DATA_FILE_MODE, mkdirData } from '../../pipeline/log/dataModes.ts'

export type StoredSecret = Sealed | { alg: 'derived' }

export interface SignedHeaders extends Record<string, string> {
  'x-svc-delivery-id': string
  'x-svc-timestamp': string
  'x-svc-signature': string
  'webhook-id': string
  'webhook-timestamp': string
  'webhook-signature': string
}

const SECRET_PREFIX = 'whsec_'

export function signedContent(deliveryId: string, timestampS: number, body: string | Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${deliveryId}.${timestampS}.`), Buffer.isBuffer(body) ? body : Buffer.from(body)])
}

export class HookSigner {
  private constructor(
    /** The deployment-wide signing secret (32 bytes). */
    private readonly deploymentSecret: Buffer,
    /** The at-rest cipher (the deployment key); null: secrets are derived, nothing is sealed. */
    readonly cipher: AtRestCipher | null,
  ) {}

  /**
   * The deployment secret comes from configuration, or is made once and kept in <dir>/signing-secret (mode 0600), so a
   * restart signs with the same secrets (derived ones included).
   */
  static async open(options: { dir: string; signingSecret?: string | null; key?: string | null }): Promise<HookSigner> {
    const cipher = AtRestCipher.fromKey(options.key)
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
        await mkdirData(options.dir)
        await writeFileAtomic(file, secret.toString('base64'), { mode: DATA_FILE_MODE })
      }
    }
    return new HookSigner(secret, cipher)
  }

  /** A new target's secret: the whsec_ text shown once, and what its registration record stores. */
  newSecret(targetId: string): { secret: string; stored: StoredSecret } {
    if (!this.cipher) return { secret: this.derived(targetId), stored: { alg: 'derived' } }
    const raw = randomBytes(32)
    return { secret: SECRET_PREFIX + raw.toString('base64'), stored: this.cipher.seal(raw, targetId) }
  }

  /** The secret a stored record stands for (throws when the ciphertext does not decrypt with this key and target). */
  secretOf(targetId: string, stored: StoredSecret): string {
    if (stored.alg === 'derived') return this.derived(targetId)
    if (!this.cipher) throw new Error(`target ${targetId} has an encrypted secret but no SVC_DELIVERY_KEY is configured`)
    return SECRET_PREFIX + this.cipher.open(stored, targetId).toString('base64')
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
