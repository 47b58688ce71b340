/**
 * Delivery's journals (product/delivery/), each one append-only record on its own topic, defined here beside the
 * other journals because the sink, the catalog's generated views (sql/002_journals.sql) and the delivery domain all
 * derive from the one definition.
 *
 * - delivery.registrations: every registration and every change of a delivery target (resolution hook, outcome hook
 *   endpoint, push device, follow, alert watch) as one record; the current state of a target is the fold of its
 *   records in log order. Kind-specific fields live in `spec` (a JSON column), so five target kinds share one table.
 * - delivery.asks: which payer paid for which decision (the decision record names no payer), staged in the paid call's
 *   unit of work, so outcome hook endpoints "whose payer matches" (spec, Events 1c) can be found at resolution.
 * - delivery.attempts: the delivery record. Spec, Events 2: "Delivery truth lives only in an append-only delivery
 *   record with one row per attempt; a registration response never claims a hook is live." The id is
 *   `<delivery_id>#<attempt>`, so an attempt re-made after a crash (same delivery id, same attempt number) keeps one
 *   row: the first written.
 * - delivery.contacts: POST /v1/contacts captures; the contact id is derived from the normalized contact, so a second
 *   capture of it is "already recorded".
 * With a deployment key (SVC_DELIVERY_KEY) registration urls, push keys and contacts are stored sealed
 * (product/delivery/sealing.ts): the views then show `sealed:A256GCM:...` in those columns, and spec.host beside a
 * sealed url.
 */
import { createHash } from 'node:crypto'
import type { AtRestCipher } from '../../common/AtRestCipher.ts'
import { Instant, IsoMs, JsonObject, Nullable, NullableString, StringEnum, Type, type Static } from '../../common/schema.ts'
import { JournalDef } from '../journal/JournalDef.ts'

export const TARGET_KINDS = ['hook', 'endpoint', 'device', 'follow', 'alert'] as const
export type TargetKind = (typeof TARGET_KINDS)[number]

/**
 * What a registration record says happened to its target: armed (a resolution hook), registered / paused (an outcome
 * hook endpoint), registered / disabled (a push device; registered again reactivates it), set / removed (a follow),
 * created / deleted (an alert watch).
 */
export const REGISTRATION_EVENTS = ['armed', 'registered', 'paused', 'disabled', 'set', 'removed', 'created', 'deleted'] as const
export type RegistrationEvent = (typeof REGISTRATION_EVENTS)[number]

const Payer = Type.String({ pattern: '^0x[0-9a-f]{40}$' })

export const REGISTRATION_RECORD_SCHEMA = Type.Object(
  {
    v: Type.Literal(1),
    /** A fresh id per record (reg_<uuid>): every change is a new record. */
    id: Type.String({ pattern: '^reg_[0-9a-f-]{36}$' }),
    target_kind: StringEnum(TARGET_KINDS),
    target_id: Type.String({ minLength: 1, maxLength: 100 }),
    /** The lower-case payer owning the target; null only for a hook paid by a rail that names no payer. */
    payer: Nullable(Payer),
    event: StringEnum(REGISTRATION_EVENTS),
    /**
     * Hooks and endpoints: the delivery URL; devices: the push service endpoint; null otherwise. Sealed
     * (`sealed:A256GCM:...`) when the deployment has a key, with the plain host in spec.host.
     */
    url: NullableString,
    /**
     * Kind-specific fields: hook { decision_id, secret }, endpoint { expires_at, secret }, device { keys } (sealed text
     * with a key), follow
     * { question_id, subject_kind, subject, channels }, alert { kind, subject_kind, subject, threshold, cooldown_s }.
     * `secret` is { alg: 'A256GCM', iv, ct, tag } when the deployment configures a key, else { alg: 'derived' }.
     */
    spec: JsonObject,
    /** The payment that bought it (hooks, endpoints); null for free registrations and for changes. */
    payment_id: NullableString,
    /** Wall clock of the record (the 30-day endpoint window and listings' timestamps). */
    recorded_at: Instant,
    /**
     * The service's event time when the record was made (the time clocks, horizons and resolutions are measured in):
     * a follow, endpoint or alert applies to resolutions and decisions at or after it, so a restart that replays old
     * resolutions never delivers one that happened before the target existed.
     */
    clock_at: IsoMs,
  },
  { additionalProperties: false },
)
export type RegistrationRow = Static<typeof REGISTRATION_RECORD_SCHEMA>

export const DELIVERY_REGISTRATIONS = new JournalDef({
  name: 'delivery.registrations',
  schema: REGISTRATION_RECORD_SCHEMA,
  key: (r) => r.target_id,
  id: (r) => r.id,
  time: (r) => Date.parse(r.recorded_at),
  table: { rows: 'delivery_registration_rows', dir: 'delivery.registrations', version: { field: 'v', column: 'record_version' } },
})

export const ASK_RECORD_SCHEMA = Type.Object(
  {
    decision_id: Type.String({ minLength: 1 }),
    payer: Payer,
    /** The payment of the ask (credits debit ref or x402 payment id). */
    payment_id: Type.String({ minLength: 1 }),
    recorded_at: Instant,
  },
  { additionalProperties: false },
)
export type AskRow = Static<typeof ASK_RECORD_SCHEMA>

export const DELIVERY_ASKS = new JournalDef({
  name: 'delivery.asks',
  schema: ASK_RECORD_SCHEMA,
  key: (r) => r.payer,
  id: (r) => r.decision_id,
  time: (r) => Date.parse(r.recorded_at),
  table: { rows: 'delivery_ask_rows', first: 'delivery_asks', dir: 'delivery.asks' },
})

export const ATTEMPT_CHANNELS = ['http', 'push', 'email', 'telegram'] as const
export type AttemptChannel = (typeof ATTEMPT_CHANNELS)[number]
export const ATTEMPT_STATUSES = ['delivered', 'failed'] as const

/**
 * Why an attempt failed, closed: the transport's classes (timeout, connect, tls, reset, redirect, http_status, gone),
 * a URL the guard refused at delivery time (unsafe_url), a channel this deployment has not configured
 * (channel_unconfigured), a follow or alert with no active push device (no_device), a target paused, expired or
 * disabled before its turn (target_inactive).
 */
export const ATTEMPT_ERROR_CLASSES = [
  'timeout', 'connect', 'tls', 'reset', 'redirect', 'http_status', 'gone', 'unsafe_url', 'channel_unconfigured', 'no_device', 'target_inactive', 'error',
] as const
export type AttemptErrorClass = (typeof ATTEMPT_ERROR_CLASSES)[number]

export const ATTEMPT_RECORD_SCHEMA = Type.Object(
  {
    v: Type.Literal(1),
    /** `<delivery_id>#<attempt>`. */
    id: Type.String({ minLength: 1, maxLength: 120 }),
    /** Stable per (target, event): the same on every attempt and after a restart; receivers dedupe on it. */
    delivery_id: Type.String({ pattern: '^dlv_[0-9a-f]{32}$' }),
    attempt: Type.Integer({ minimum: 1, maximum: 10 }),
    target_kind: StringEnum(TARGET_KINDS),
    target_id: Type.String({ minLength: 1, maxLength: 100 }),
    payer: Nullable(Payer),
    channel: StringEnum(ATTEMPT_CHANNELS),
    /** The decision whose resolution (hooks, endpoints, follows) or recording (alerts) this delivers. */
    decision_id: NullableString,
    status: StringEnum(ATTEMPT_STATUSES),
    /** True when no further attempt of this delivery will be made (delivered, or failed for the last time). */
    final: Type.Boolean(),
    http_status: Nullable(Type.Integer({ minimum: 100, maximum: 599 })),
    latency_ms: Nullable(Type.Integer({ minimum: 0 })),
    error_class: Nullable(StringEnum(ATTEMPT_ERROR_CLASSES)),
    /** The service event time of the event delivered (alert cooldowns are measured in it). */
    event_at: IsoMs,
    attempted_at: Instant,
  },
  { additionalProperties: false },
)
export type AttemptRow = Static<typeof ATTEMPT_RECORD_SCHEMA>

export const DELIVERY_ATTEMPTS = new JournalDef({
  name: 'delivery.attempts',
  schema: ATTEMPT_RECORD_SCHEMA,
  key: (r) => r.delivery_id,
  id: (r) => r.id,
  time: (r) => Date.parse(r.attempted_at),
  table: { rows: 'delivery_attempt_rows', first: 'delivery_attempts', dir: 'delivery.attempts', version: { field: 'v', column: 'record_version' } },
})

/** One id per delivered thing: the target and the event (a decision id, or for a push fan-out also the device). */
export function deliveryId(...parts: string[]): string {
  return `dlv_${createHash('sha256').update(`svc.delivery.v1|${parts.join('|')}`).digest('hex').slice(0, 32)}`
}

export const CONTACT_RECORD_SCHEMA = Type.Object(
  {
    contact_id: Type.String({ pattern: '^ct_[0-9a-f]{32}$' }),
    /**
     * As normalized: an e-mail address in lower case, or a Telegram @handle; sealed (`sealed:A256GCM:...`,
     * common/AtRestCipher.ts) when the deployment has a key, which is why it may be longer than an address.
     */
    contact: Type.String({ minLength: 3, maxLength: 512 }),
    contact_kind: StringEnum(['email', 'telegram']),
    consent: Type.Literal(true),
    source: NullableString,
    seat: NullableString,
    recorded_at: Instant,
  },
  { additionalProperties: false },
)
export type ContactRow = Static<typeof CONTACT_RECORD_SCHEMA>

/**
 * The contact's id from its normalized form: with the deployment's at-rest cipher an HMAC under its key (the id of an
 * e-mail address must not confirm a guess of it), without one a plain hash.
 */
export function contactId(normalized: string, cipher: AtRestCipher | null = null): string {
  const digest = cipher ? cipher.keyedId('svc.contact.v1', normalized) : createHash('sha256').update(`svc.contact.v1|${normalized}`).digest('hex')
  return `ct_${digest.slice(0, 32)}`
}

export const DELIVERY_CONTACTS = new JournalDef({
  name: 'delivery.contacts',
  schema: CONTACT_RECORD_SCHEMA,
  key: (r) => r.contact_id,
  id: (r) => r.contact_id,
  time: (r) => Date.parse(r.recorded_at),
  table: { rows: 'delivery_contact_rows', first: 'delivery_contacts', dir: 'delivery.contacts' },
})
