/**
 * Delivery's public shapes (spec, Delivery resources and the Delivery endpoint table), each one TypeBox schema with
 * its type inferred from it: what the routes accept (serving/routes/delivery.ts declares these) and what the delivery
 * domain answers (its views are typed by these, so a view that drifts from its schema does not compile). The spec
 * leaves most response bodies open; each choice is a line of docs/decisions.md (the delivery lines under "Browser push").
 *
 * Privacy: no view carries a push key, a contact or a hook secret except the one answer that shows the secret once.
 */
import { HttpsUrl, Instant, Nullable, NullableString, Probability, Strict, StringEnum, Type, Uuid, type Static } from '../../common/schema.ts'
import { QUESTION_IDS } from '../../models/QuestionModel.ts'

export const SUBJECT_KINDS = ['asset', 'wallet'] as const
export type SubjectKind = (typeof SUBJECT_KINDS)[number]

export const ALERT_KINDS = ['probability', 'refusal', 'resolution'] as const
export type AlertKind = (typeof ALERT_KINDS)[number]

/** Follow channels, a bitmask (spec: "channels is a bitmask: 1 push, 2 email, 4 telegram"). */
export const CHANNEL_PUSH = 1
export const CHANNEL_EMAIL = 2
export const CHANNEL_TELEGRAM = 4
/** An alert watch's cooldown when the request names none (s). */
export const DEFAULT_ALERT_COOLDOWN_S = 900

const Question = StringEnum(QUESTION_IDS as unknown as readonly string[], { description: 'a catalog question id' })
const Subject = Type.String({ minLength: 1, maxLength: 42, description: "an asset (BTC, ETH, SOL) when subject_kind is 'asset'; a 0x address when 'wallet'" })
const Count = Type.Integer({ minimum: 0 })

// ------------------------------------------------------------ requests

/** POST /v1/hooks. */
export const HOOK_REQUEST = Strict({ decision_id: Uuid, url: HttpsUrl })
export type HookRequest = Static<typeof HOOK_REQUEST>

/** POST /v1/hook-endpoints. */
export const ENDPOINT_REQUEST = Strict({ url: HttpsUrl })
export type EndpointRequest = Static<typeof ENDPOINT_REQUEST>

/** A Web Push subscription as the browser's PushSubscription.toJSON() gives it. */
export const PUSH_SUBSCRIPTION = Type.Object(
  {
    endpoint: Type.String({ format: 'uri', maxLength: 2048, pattern: '^https://' }),
    keys: Strict({
      p256dh: Type.String({ pattern: '^[A-Za-z0-9_-]{87}=?$', description: 'the P-256 public key, base64url (65 bytes)' }),
      auth: Type.String({ pattern: '^[A-Za-z0-9_-]{22}(==)?$', description: 'the auth secret, base64url (16 bytes)' }),
    }),
    expirationTime: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()])),
  },
  { additionalProperties: false },
)
export type PushSubscriptionRequest = Static<typeof PUSH_SUBSCRIPTION>

/** POST /v1/push/endpoints. */
export const PUSH_REGISTRATION_REQUEST = Strict({ subscription: PUSH_SUBSCRIPTION })

/** POST /v1/follows (subject must fit subject_kind: checked by the route, one rule for follows and alerts). */
export const FOLLOW_REQUEST = Strict({ question_id: Question, subject_kind: StringEnum(SUBJECT_KINDS), subject: Subject, channels: Type.Integer({ minimum: 1, maximum: 7 }) })
export type FollowRequest = Static<typeof FOLLOW_REQUEST>

/** POST /v1/alerts (threshold is required for, and only for, a probability watch: checked by the route). */
export const ALERT_REQUEST = Strict({
  kind: StringEnum(ALERT_KINDS),
  question_id: Type.Optional(Question),
  subject_kind: StringEnum(SUBJECT_KINDS),
  subject: Subject,
  threshold: Type.Optional(Probability),
  cooldown_s: Type.Optional(Type.Integer({ minimum: 60, maximum: 604_800, default: DEFAULT_ALERT_COOLDOWN_S })),
})
export type AlertRequest = Static<typeof ALERT_REQUEST>

/** POST /v1/contacts. */
export const CONTACT_REQUEST = Strict({
  contact: Type.Union([
    Type.String({ format: 'email', maxLength: 254 }),
    Type.String({ pattern: '^@[A-Za-z0-9_]{5,32}$', description: 'a Telegram @handle' }),
  ]),
  consent: Type.Literal(true, { description: 'the person agreed to be contacted; nothing is recorded without it' }),
  source: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.:-]{1,64}$' })),
  seat: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.:-]{1,64}$' })),
})
export type ContactRequest = Static<typeof CONTACT_REQUEST>

/** The ids in DELETE paths (owner-only deletes, docs/decisions.md). */
export const ENDPOINT_ID = Type.String({ pattern: '^he_[0-9a-f]{32}$' })
export const DEVICE_ID = Type.String({ pattern: '^pd_[0-9a-f]{24}$' })
export const FOLLOW_ID = Type.String({ pattern: '^fl_[0-9a-f]{24}$' })
export const ALERT_ID = Type.String({ pattern: '^al_[0-9a-f]{24}$' })

// ------------------------------------------------------------ answers

/** Per target: deliveries recorded, delivered, and those whose latest attempt failed. */
export const TARGET_COUNTS = Strict({ registered: Count, delivered: Count, failing: Count })
export type TargetCounts = Static<typeof TARGET_COUNTS>

/** How a receiver verifies a delivery (also in README, "Delivery"). */
export const SIGNATURE_DOC = {
  scheme: 'Standard Webhooks v1 (HMAC-SHA256)',
  headers: ['X-Svc-Delivery-Id', 'X-Svc-Timestamp', 'X-Svc-Signature', 'webhook-id', 'webhook-timestamp', 'webhook-signature'],
  signed_string: '<X-Svc-Delivery-Id>.<X-Svc-Timestamp>.<raw body>',
  signature: "'v1,' + base64(HMAC-SHA256(base64-decode(secret without 'whsec_'), signed_string))",
  replay: 'refuse a timestamp more than 5 minutes from your clock; dedupe on X-Svc-Delivery-Id (a retry or re-delivery keeps it)',
} as const
const SIGNATURE = Strict({ scheme: Type.String(), headers: Type.Array(Type.String()), signed_string: Type.String(), signature: Type.String(), replay: Type.String() })

/** POST /v1/hooks (201): the secret is shown here once. */
export const HOOK_ARMED = Strict({
  hook_id: Type.String(),
  decision_id: Type.String(),
  url: Type.String(),
  status: Type.Literal('armed'),
  horizon_end: Type.String(),
  secret: Type.String({ pattern: '^whsec_' }),
  signature: SIGNATURE,
  delivery_record: Type.String(),
})
export type HookArmed = Static<typeof HOOK_ARMED>

/** An outcome hook endpoint; on registration (201) also its secret, shown once; a replay (200) says replayed. */
export const ENDPOINT_VIEW = Strict({
  endpoint_id: Type.String(),
  url: Type.String(),
  status: StringEnum(['registered', 'paused', 'expired']),
  registered_at: Instant,
  expires_at: Instant,
  paused_at: Nullable(Instant),
  deliveries: TARGET_COUNTS,
  replayed: Type.Optional(Type.Literal(true)),
  secret: Type.Optional(Type.String({ pattern: '^whsec_' })),
  signature: Type.Optional(SIGNATURE),
  secret_storage: Type.Optional(Type.String()),
})
export type EndpointView = Static<typeof ENDPOINT_VIEW>

/** Spec, Delivery resources: "Push config | { configured: boolean, vapid_public_key: string or null }". */
export const PUSH_CONFIG = Strict({ configured: Type.Boolean(), vapid_public_key: NullableString })
export type PushConfig = Static<typeof PUSH_CONFIG>

/** A push device: its push service's host and timestamps, never its endpoint or keys; a DELETE adds found. */
export const DEVICE_VIEW = Strict({
  device_id: Type.String(),
  host: Type.Optional(Type.String()),
  created_at: Type.Optional(Instant),
  updated_at: Type.Optional(Instant),
  disabled_at: Type.Optional(Nullable(Instant)),
  active: Type.Boolean(),
  found: Type.Optional(Type.Boolean()),
})
export type DeviceView = Static<typeof DEVICE_VIEW>

export const FOLLOW_VIEW = Strict({
  follow_id: Type.String(),
  question_id: Type.String(),
  subject_kind: StringEnum(SUBJECT_KINDS),
  subject: Type.String(),
  channels: Type.Integer({ minimum: 1, maximum: 7 }),
  channels_unconfigured: Type.Array(StringEnum(['push', 'email', 'telegram'])),
  created_at: Instant,
  updated_at: Instant,
  active: Type.Boolean(),
  deliveries: TARGET_COUNTS,
})
export type FollowView = Static<typeof FOLLOW_VIEW>

/** DELETE /v1/follows/{follow_id}: "deleting a follow that is absent is data, not an error". */
export const FOLLOW_REMOVED = Strict({ follow_id: Type.String(), removed: Type.Boolean(), was_following: Type.Boolean() })
export type FollowRemoved = Static<typeof FOLLOW_REMOVED>

export const ALERT_VIEW = Strict({
  alert_id: Type.String(),
  kind: StringEnum(ALERT_KINDS),
  question_id: NullableString,
  subject_kind: StringEnum(SUBJECT_KINDS),
  subject: Type.String(),
  threshold: Nullable(Probability),
  cooldown_s: Type.Integer({ minimum: 0 }),
  created_at: Instant,
  active: Type.Boolean(),
  deliveries: TARGET_COUNTS,
})
export type AlertView = Static<typeof ALERT_VIEW>

export const ALERT_DELETED = Strict({ alert_id: Type.String(), deleted: Type.Boolean() })
export type AlertDeleted = Static<typeof ALERT_DELETED>

/** POST /v1/contacts: "never claims a message was sent". */
export const CONTACT_VIEW = Strict({
  contact_id: Type.String(),
  contact_kind: StringEnum(['email', 'telegram']),
  status: Type.Literal('recorded'),
  recorded_at: Instant,
  message_sent: Type.Literal(false),
})
export type ContactView = Static<typeof CONTACT_VIEW>

/** A payer's list of one kind of target. */
export const listOf = <T extends Parameters<typeof Type.Array>[0]>(item: T) => Strict({ items: Type.Array(item), count: Count })
