/**
 * Browser push (spec, Delivery resources: "Push config | { configured: boolean, vapid_public_key: string or null }";
 * "Push endpoint | request { subscription: { endpoint (https URL), keys: { p256dh, auth } } }"; States, Push device:
 * a disabled device comes back when the same endpoint is posted again; Authentication 7: "Push endpoints must be
 * https"): one push message to one subscription, as RFC 8030 (Web Push), RFC 8292 (VAPID) and RFC 8291 (aes128gcm
 * message encryption) define it.
 *
 *   const push = await WebPushSender.open({ dir, subject: 'mailto:ops@example.com', transport })
 *   push.publicKey                                  // GET /v1/push/config's vapid_public_key
 *   const problems = WebPushSender.validateSubscription(body.subscription, '/body/subscription')  // 400 naming the field
 *   const r = await push.send(subscription, { kind: 'call_resolved', ... })   // r.error_class 'gone': disable the device
 *   await push.close()
 *
 * Why it is built this way:
 * - the VAPID key pair is an identity: a browser binds each subscription to the public key it was created with, so a
 *   new key silently orphans every registered device. Deployment config wins; without it the pair is generated once
 *   and kept in <dir>/vapid.json (0600, temp file + fsync + rename), and a key file that cannot be read is an error,
 *   never a reason to generate a new pair over it;
 * - web-push builds the request (JWT, encryption, headers) but never sends it: its own sendNotification would connect
 *   wherever DNS says, past the URL guard. The bytes go through the injected PushTransport, which the composition root
 *   fills with the guarded, address-pinned client (UrlGuard, PinnedHttpClient);
 * - send never throws for something about one target (a dead subscription, a refused status, an unreachable host): it
 *   answers { status, latency_ms, error_class }, one delivery-record row per attempt, and the caller decides (404/410
 *   'gone' disables the device). It throws only for a caller's mistake (bad send options) or after close.
 */
import { ECDH, createECDH } from 'node:crypto'
import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { childLogger } from '../../common/logger.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import type { ReasonCode } from '../../common/errors.ts'
import { OptionsError, validateOptions, type FieldError } from '../../common/validation.ts'
import { writeFileAtomic } from '../../pipeline/log/atomicFile.ts'
import { DATA_FILE_MODE, mkdirData } from '../../pipeline/log/dataModes.ts'

const log = childLogger('push')

/** How the bytes leave the process: the guarded, address-pinned HTTP client in the service, a local one in tests. */
export interface PushTransport {
  post(url: string, body: Buffer, headers: Record<string, string>): Promise<{ status: number | null; latency_ms: number; error_class: string | null }>
}

/** A browser's PushSubscription.toJSON() as registered (other fields, such as expirationTime, are ignored). */
export interface PushSubscriptionInput {
  endpoint: string
  keys: { p256dh: string; auth: string }
}

export type PushUrgency = 'very-low' | 'low' | 'normal' | 'high'

export interface PushSendOptions {
  /** How long the push service keeps an undelivered message (s); default: the sender's ttlSeconds. */
  ttlSeconds?: number
  /** RFC 8030 §5.3; default 'normal'. */
  urgency?: PushUrgency
  /** RFC 8030 §5.4: a newer message with the same topic replaces an undelivered older one (≤ 32 base64url chars). */
  topic?: string
}

/**
 * One attempt. error_class: null on a 2xx; 'gone' on 404/410 (the subscription expired or was unsubscribed); 'http_status'
 * on another answer; 'invalid_subscription' or 'payload_too_large' when nothing was sent; the transport's own class
 * (connect, timeout, unsafe url, ...) when no answer came.
 */
export interface PushResult {
  status: number | null
  latency_ms: number
  error_class: string | null
}

export interface VapidKeys {
  /** base64url (no padding) of the 65-byte uncompressed P-256 point. */
  publicKey: string
  /** base64url (no padding) of the 32-byte P-256 scalar. */
  privateKey: string
}

export interface WebPushSenderOptions {
  /** Where vapid.json lives when no keys are configured (created if missing). */
  dir: string
  /** The VAPID contact (RFC 8292 §2.1): a mailto: or https: URL the push service can reach the operator at. */
  subject: string
  /** Deployment-configured keys; when present, vapid.json is neither read nor written. */
  vapid?: VapidKeys
  transport: PushTransport
  /** Default TTL of a message (s); default PUSH_DEFAULT_TTL_SECONDS. */
  ttlSeconds?: number
}

/** A resolution or alert sentence older than a day is news nobody wants: the push service may drop it after that. */
export const PUSH_DEFAULT_TTL_SECONDS = 86_400
/** The longest TTL the large push services keep (FCM: 4 weeks); a larger value would be silently cut. */
export const PUSH_MAX_TTL_SECONDS = 2_419_200
/**
 * RFC 8291 §4: push services must accept 4096 bytes of encrypted body; aes128gcm in one record spends 86 of them on the
 * header (salt 16, rs 4, idlen 1, keyid 65), 16 on the tag and 1 on the padding delimiter.
 */
export const PUSH_MAX_PAYLOAD_BYTES = 4096 - 86 - 16 - 1
/** Longer endpoints than any push service issues are refused rather than stored. */
export const PUSH_MAX_ENDPOINT_LENGTH = 2048

const ROOT = 'WebPushSender options'
const SEND_ROOT = 'WebPushSender.send options'
const KEY_FILE = 'vapid.json'
const URGENCIES: readonly PushUrgency[] = ['very-low', 'low', 'normal', 'high']
const BASE64URL = /^[A-Za-z0-9_-]+$/
/** Browsers send unpadded base64url; a padded one is still the same key. */
const BASE64URL_PADDED = /^[A-Za-z0-9_-]+={0,2}$/

const OPTIONS_SCHEMA = {
  type: 'object',
  required: ['dir', 'subject', 'transport'],
  properties: {
    dir: { type: 'string', minLength: 1 },
    subject: { type: 'string', minLength: 1 },
    vapid: {
      type: 'object',
      required: ['publicKey', 'privateKey'],
      additionalProperties: false,
      properties: { publicKey: { type: 'string' }, privateKey: { type: 'string' } },
    },
    transport: { type: 'object' },
    ttlSeconds: { type: 'integer', minimum: 0, maximum: PUSH_MAX_TTL_SECONDS },
  },
} as const

export class WebPushSender {
  private closed = false

  private constructor(
    private readonly keys: VapidKeys,
    private readonly subject: string,
    private readonly transport: PushTransport,
    private readonly ttlSeconds: number,
  ) {}

  static async open(options: WebPushSenderOptions): Promise<WebPushSender> {
    const o = validateOptions<WebPushSenderOptions>(ROOT, OPTIONS_SCHEMA, options)
    if (typeof o.transport.post !== 'function') throw OptionsError.at(ROOT, '/transport/post', 'must be a function')
    checkSubject(o.subject)
    let keys: VapidKeys
    if (o.vapid) {
      keys = checkVapidKeys(ROOT, '/vapid', o.vapid)
    } else {
      keys = await loadOrCreateKeys(o.dir)
    }
    return new WebPushSender(keys, o.subject, o.transport, o.ttlSeconds ?? PUSH_DEFAULT_TTL_SECONDS)
  }

  /** base64url of the VAPID public key: what a browser passes to pushManager.subscribe as applicationServerKey. */
  get publicKey(): string {
    return this.keys.publicKey
  }

  /**
   * Encrypts `payload` (an object is sent as its JSON) for one subscription, signs the VAPID JWT for the endpoint's
   * origin and posts both through the transport.
   */
  async send(subscription: PushSubscriptionInput, payload: object | string, options: PushSendOptions = {}): Promise<PushResult> {
    if (this.closed) throw new Error('WebPushSender is closed')
    const ttl = options.ttlSeconds ?? this.ttlSeconds
    checkSendOptions(ttl, options)
    // Registration validated it; a row written before a rule tightened, or by hand, must not reach web-push's throws.
    const problems = WebPushSender.validateSubscription(subscription)
    if (problems.length > 0) {
      log.warn({ problems }, 'push subscription is not valid: nothing sent')
      return { status: null, latency_ms: 0, error_class: 'invalid_subscription' }
    }
    const plaintext = Buffer.from(typeof payload === 'string' ? payload : JSON.stringify(payload), 'utf8')
    if (plaintext.length > PUSH_MAX_PAYLOAD_BYTES) {
      log.warn({ bytes: plaintext.length, max: PUSH_MAX_PAYLOAD_BYTES }, 'push payload too large: nothing sent')
      return { status: null, latency_ms: 0, error_class: 'payload_too_large' }
    }
    const details = (await webPush()).generateRequestDetails(
      { endpoint: subscription.endpoint, keys: { p256dh: subscription.keys.p256dh, auth: subscription.keys.auth } },
      plaintext,
      {
        vapidDetails: { subject: this.subject, publicKey: this.keys.publicKey, privateKey: this.keys.privateKey },
        TTL: ttl,
        contentEncoding: 'aes128gcm',
        urgency: options.urgency ?? 'normal',
        ...(options.topic === undefined ? {} : { topic: options.topic }),
      },
    )
    // Lower-case names: a transport that adds its own (content-length, host) replaces rather than duplicates them.
    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(details.headers)) headers[name.toLowerCase()] = String(value)
    const answer = await this.transport.post(details.endpoint, details.body, headers)
    const result: PushResult = { status: answer.status, latency_ms: answer.latency_ms, error_class: classify(answer) }
    const host = new URL(subscription.endpoint).host // the path is the subscription's secret: never logged
    if (result.error_class === null) log.debug({ host, ...result }, 'push delivered')
    else log.info({ host, ...result }, 'push not delivered')
    return result
  }

  /**
   * The field errors of a registered subscription, [] when it is valid. Paths are JSON pointers under `root`
   * ('/subscription/keys/p256dh'), so a route answers 400 VALIDATION naming the field.
   */
  static validateSubscription(sub: unknown, root = '/subscription'): FieldError[] {
    if (!isRecord(sub)) return [{ path: root, message: 'must be an object', keyword: 'type' }]
    const errors: FieldError[] = []
    const endpoint = sub.endpoint
    if (endpoint === undefined) errors.push({ path: `${root}/endpoint`, message: 'is required', keyword: 'required' })
    else if (typeof endpoint !== 'string') errors.push({ path: `${root}/endpoint`, message: 'must be a string', keyword: 'type' })
    else {
      const problem = endpointProblem(endpoint)
      if (problem) errors.push({ path: `${root}/endpoint`, message: problem, keyword: 'format' })
    }
    const keys = sub.keys
    if (keys === undefined) errors.push({ path: `${root}/keys`, message: 'is required', keyword: 'required' })
    else if (!isRecord(keys)) errors.push({ path: `${root}/keys`, message: 'must be an object', keyword: 'type' })
    else {
      for (const [field, check] of [['p256dh', p256dhProblem], ['auth', authProblem]] as const) {
        const value = keys[field]
        const path = `${root}/keys/${field}`
        if (value === undefined) errors.push({ path, message: 'is required', keyword: 'required' })
        else if (typeof value !== 'string') errors.push({ path, message: 'must be a string', keyword: 'type' })
        else {
          const problem = check(value)
          if (problem) errors.push({ path, message: problem, keyword: 'format' })
        }
      }
    }
    return errors
  }

  /** validateSubscription as a route wants it: the typed subscription, or 400 VALIDATION naming the first bad field. */
  static assertSubscription(sub: unknown, root = '/subscription'): PushSubscriptionInput {
    const errors = WebPushSender.validateSubscription(sub, root)
    const first = errors[0]
    if (first) {
      throw new ServiceError('VALIDATION', {
        message: errors.map((e) => `${e.path}: ${e.message}`).join('; '),
        detail: { reason: 'REQUEST_VALIDATION_FAILED' satisfies ReasonCode, field: first.path, errors: errors.map((e) => ({ field: e.path, message: e.message })) },
      })
    }
    const s = sub as PushSubscriptionInput
    return { endpoint: s.endpoint, keys: { p256dh: s.keys.p256dh, auth: s.keys.auth } }
  }

  /** Holds no connection (the transport is the caller's); a send after close is a wiring bug and throws. */
  async close(): Promise<void> {
    this.closed = true
  }
}

function classify(answer: { status: number | null; error_class: string | null }): string | null {
  const { status } = answer
  if (status === null) return answer.error_class ?? 'transport'
  if (status >= 200 && status < 300) return null
  // RFC 8030 §7.3: the subscription expired or was removed; the push service will never take it again.
  if (status === 404 || status === 410) return 'gone'
  return 'http_status'
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * Decoded bytes of a base64url string, or null: Buffer.from skips characters it does not know, so the alphabet is
 * checked first, and a length of 4n+1 characters cannot be base64 at all. A truncated key decodes to its (wrong) length,
 * which names the problem better than "not base64url".
 */
function decodeBase64url(value: string, padded: boolean): Buffer | null {
  if (!(padded ? BASE64URL_PADDED : BASE64URL).test(value)) return null
  const bare = value.replace(/=+$/, '')
  return bare.length % 4 === 1 ? null : Buffer.from(bare, 'base64url')
}

/** An uncompressed P-256 point (0x04 ‖ X ‖ Y) that is on the curve: anything else fails ECDH at the first send. */
function pointProblem(bytes: Buffer): string | null {
  if (bytes.length !== 65) return `must decode to 65 bytes (an uncompressed P-256 point), not ${bytes.length}`
  if (bytes[0] !== 0x04) return 'must be an uncompressed P-256 point (first byte 0x04)'
  try {
    ECDH.convertKey(bytes, 'prime256v1')
  } catch {
    return 'is not a point on the P-256 curve'
  }
  return null
}

function p256dhProblem(value: string): string | null {
  const bytes = decodeBase64url(value, true)
  return bytes ? pointProblem(bytes) : 'must be base64url'
}

function authProblem(value: string): string | null {
  const bytes = decodeBase64url(value, true)
  if (!bytes) return 'must be base64url'
  return bytes.length === 16 ? null : `must decode to 16 bytes (RFC 8291 auth secret), not ${bytes.length}`
}

function endpointProblem(endpoint: string): string | null {
  if (endpoint.length > PUSH_MAX_ENDPOINT_LENGTH) return `must be at most ${PUSH_MAX_ENDPOINT_LENGTH} characters`
  let url: URL
  try {
    url = new URL(endpoint)
  } catch {
    return 'must be an absolute URL'
  }
  return url.protocol === 'https:' ? null : 'must be an https URL'
}

/** RFC 8292 §2.1: the contact is a mailto: or https: URI. */
function checkSubject(subject: string): void {
  let url: URL | null = null
  try {
    url = new URL(subject)
  } catch {
    // reported below
  }
  if (!url || (url.protocol !== 'mailto:' && url.protocol !== 'https:')) {
    throw OptionsError.at(ROOT, '/subject', 'must be a mailto: or https: URL (RFC 8292 contact)')
  }
}

/**
 * Both keys well formed, and the public key the one of the private key: a mismatched pair signs JWTs every push service
 * refuses, which would only show as 403s at the first send.
 */
function checkVapidKeys(root: string, at: string, value: unknown): VapidKeys {
  if (!isRecord(value)) throw OptionsError.at(root, at, 'must be an object { publicKey, privateKey }')
  const errors: FieldError[] = []
  const field = (name: 'publicKey' | 'privateKey'): Buffer | null => {
    const path = `${at}/${name}`
    const v = value[name]
    if (v === undefined) errors.push({ path, message: 'is required', keyword: 'required' })
    else if (typeof v !== 'string') errors.push({ path, message: 'must be a string', keyword: 'type' })
    else {
      const bytes = decodeBase64url(v, false)
      if (!bytes) errors.push({ path, message: 'must be base64url without padding', keyword: 'format' })
      else return bytes
    }
    return null
  }
  const pub = field('publicKey')
  if (pub) {
    const problem = pointProblem(pub)
    if (problem) errors.push({ path: `${at}/publicKey`, message: problem, keyword: 'format' })
  }
  const priv = field('privateKey')
  let derived: Buffer | null = null
  if (priv) {
    if (priv.length !== 32) errors.push({ path: `${at}/privateKey`, message: `must decode to 32 bytes (a P-256 private key), not ${priv.length}`, keyword: 'format' })
    else {
      try {
        const ecdh = createECDH('prime256v1')
        ecdh.setPrivateKey(priv)
        derived = ecdh.getPublicKey()
      } catch {
        errors.push({ path: `${at}/privateKey`, message: 'is not a valid P-256 private key', keyword: 'format' })
      }
    }
  }
  if (errors.length === 0 && pub && derived && !derived.equals(pub)) {
    errors.push({ path: `${at}/publicKey`, message: 'is not the public key of privateKey', keyword: 'check' })
  }
  if (errors.length > 0) throw new OptionsError(root, errors)
  return { publicKey: value.publicKey as string, privateKey: value.privateKey as string }
}

function checkSendOptions(ttl: number, options: PushSendOptions): void {
  if (!Number.isInteger(ttl) || ttl < 0 || ttl > PUSH_MAX_TTL_SECONDS) {
    throw OptionsError.at(SEND_ROOT, '/ttlSeconds', `must be an integer between 0 and ${PUSH_MAX_TTL_SECONDS}`)
  }
  if (options.urgency !== undefined && !URGENCIES.includes(options.urgency)) {
    throw OptionsError.at(SEND_ROOT, '/urgency', `must be one of ${URGENCIES.join(', ')}`)
  }
  if (options.topic !== undefined && !(BASE64URL.test(options.topic) && options.topic.length <= 32)) {
    throw OptionsError.at(SEND_ROOT, '/topic', 'must be 1 to 32 base64url characters (RFC 8030 §5.4)')
  }
}

/**
 * web-push, loaded at its first use (a first push or the first start's key pair), not when `svc start` loads this
 * module: nothing before serving needs it (bench/startup.ts).
 */
async function webPush(): Promise<typeof import('web-push')> {
  return (await import('web-push')).default
}

async function loadOrCreateKeys(dir: string): Promise<VapidKeys> {
  const path = join(dir, KEY_FILE)
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    const keys = (await webPush()).generateVAPIDKeys()
    await writeKeyFile(dir, path, keys)
    log.info({ path }, 'generated the VAPID key pair')
    return keys
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw OptionsError.at(path, '', 'is not JSON (a corrupt key file is not replaced: subscriptions are bound to its key)')
  }
  const keys = checkVapidKeys(path, '', parsed)
  if (((await stat(path)).mode & 0o077) !== 0) log.warn({ path }, 'the VAPID key file is readable by others than its owner')
  return keys
}

/** Created 0600 from the first byte (the private key is never readable by others), replaced atomically. */
async function writeKeyFile(dir: string, path: string, keys: VapidKeys): Promise<void> {
  await mkdirData(dir)
  await writeFileAtomic(path, JSON.stringify({ ...keys, created_at: new Date().toISOString() }, null, 2) + '\n', { mode: DATA_FILE_MODE })
}
