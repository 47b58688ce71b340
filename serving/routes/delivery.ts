/**
 * Delivery routes (spec, Delivery endpoint table; POST /v1/hooks; POST /v1/contacts). Transport only; the delivery
 * domain is product/delivery/. Identity-keyed deletes (a gap of the spec, docs/decisions.md): DELETE
 * /v1/hook-endpoints/{endpoint_id}, /v1/push/endpoints/{device_id}, /v1/follows/{follow_id}, /v1/alerts/{alert_id},
 * each with the owner's x-svc-payer.
 */
import { ServiceError } from '../../common/ServiceError.ts'
import { ADDRESS_PATTERN, CANONICAL_ASSETS, Strict } from '../../common/schema.ts'
import {
  ALERT_DELETED, ALERT_ID, ALERT_REQUEST, ALERT_VIEW, CONTACT_REQUEST, CONTACT_VIEW, DEFAULT_ALERT_COOLDOWN_S, DEVICE_ID, DEVICE_VIEW, ENDPOINT_ID,
  ENDPOINT_REQUEST, ENDPOINT_VIEW, FOLLOW_ID, FOLLOW_REMOVED, FOLLOW_REQUEST, FOLLOW_VIEW, HOOK_ARMED, HOOK_REQUEST, PUSH_CONFIG, PUSH_REGISTRATION_REQUEST,
  listOf, type AlertKind, type SubjectKind,
} from '../../product/delivery/schemas.ts'
import { FREE, PAYER_HEADER, PAYER_IN_HEADER, env, notFound, paid } from './define.ts'
import type { HandlerContext, RouteDef } from './types.ts'

const payerOf = (ctx: HandlerContext) => (ctx.headers['x-svc-payer'] as string).toLowerCase()
const list = (items: unknown[]) => ({ data: { items, count: items.length } })

/** subject must fit subject_kind (one rule for follows and alerts). */
function subjectOf(ctx: HandlerContext): { subject_kind: SubjectKind; subject: string } {
  const kind = ctx.body.subject_kind as SubjectKind
  const subject = String(ctx.body.subject)
  const ok = kind === 'asset' ? (CANONICAL_ASSETS as readonly string[]).includes(subject) : ADDRESS_PATTERN.test(subject)
  if (!ok) {
    throw new ServiceError('VALIDATION', {
      message: kind === 'asset' ? `subject must be one of ${CANONICAL_ASSETS.join(', ')} when subject_kind is 'asset'.` : "subject must be a 0x-prefixed 20-byte hex address when subject_kind is 'wallet'.",
      detail: { reason: 'REQUEST_VALIDATION_FAILED', field: '/body/subject', value: subject },
    })
  }
  return { subject_kind: kind, subject }
}

export const DELIVERY_ROUTES: readonly RouteDef[] = [
  {
    id: 'hooks.create',
    method: 'POST',
    path: '/v1/hooks',
    summary: 'Arm a signed resolution hook for one decision',
    description:
      'On resolution the service POSTs the resolution record to the url, signed (Standard Webhooks: X-Svc-Signature = v1,base64(HMAC-SHA256(secret, "<delivery id>.<timestamp>.<body>")), with X-Svc-Delivery-Id and X-Svc-Timestamp), 5 s timeout, one retry. The secret is returned once. The url is checked against loopback, private, link-local and metadata addresses now and before each delivery. A terminal clock is 409 pointing at the resolution route.',
    tags: ['delivery'],
    pay: paid('decision.deep'),
    needs: ['delivery'],
    request: { body: HOOK_REQUEST },
    response: env(HOOK_ARMED, 201),
    errors: ['DECISION_NOT_FOUND', 'HOOK_CLOCK_TERMINAL', 'UNSAFE_URL'],
    precheck: async (ctx) => {
      const d = await ctx.need('delivery').checkHook({ decision_id: String(ctx.body.decision_id), url: String(ctx.body.url) })
      if (!d) notFound('DECISION_NOT_FOUND', '/body/decision_id', ctx.body.decision_id)
    },
    handler: async (ctx) => {
      const r = await ctx.need('delivery').armHook({ decision_id: String(ctx.body.decision_id), url: String(ctx.body.url) }, ctx.payment!, ctx.unit!)
      return r ? { data: r, status: 201 } : notFound('DECISION_NOT_FOUND', '/body/decision_id', ctx.body.decision_id)
    },
  },
  {
    id: 'hook_endpoints.create',
    method: 'POST',
    path: '/v1/hook-endpoints',
    summary: 'Register an outcome hook endpoint (49,000-credit add-on, 30-day window)',
    description:
      "Every resolution of a decision this payer paid for is POSTed to the url, signed with the endpoint's own secret (shown once). One debit of the add-on price with ref = the endpoint id; at most 10 active endpoints per payer (409 HOOK_ENDPOINT_CAP); re-registering an active URL within its 30-day window replays it without a charge and without the secret.",
    tags: ['delivery'],
    pay: paid('delivery.hook_endpoint'),
    payer: PAYER_IN_HEADER,
    needs: ['delivery'],
    request: { headers: PAYER_HEADER, body: ENDPOINT_REQUEST },
    response: env(ENDPOINT_VIEW, 201),
    errors: ['HOOK_ENDPOINT_CAP', 'UNSAFE_URL'],
    paymentRef: (ctx) => ctx.need('delivery').newEndpointId(),
    // A replay is known before the payment, so it is answered there: no charge and no challenge (a payer whose balance
    // no longer covers the add-on still gets its endpoint back). The handler's replay covers a registration that
    // became durable between the two.
    precheck: async (ctx) => {
      const delivery = ctx.need('delivery')
      const same = await delivery.checkEndpoint(payerOf(ctx), String(ctx.body.url))
      if (same) return { data: delivery.endpointReplay(same), status: 200, headers: { 'cache-control': 'private, no-store' } }
    },
    handler: async (ctx) => {
      const r = await ctx.need('delivery').registerEndpoint(payerOf(ctx), String(ctx.body.url), ctx.paymentRef!, ctx.payment!, ctx.unit!)
      return r.replayed ? { data: r.endpoint, status: 200, charge: false } : { data: r.endpoint, status: 201 }
    },
  },
  {
    id: 'hook_endpoints.list',
    method: 'GET',
    path: '/v1/hook-endpoints',
    summary: "This payer's outcome hook endpoints with delivery counts",
    tags: ['delivery'],
    pay: FREE,
    payer: PAYER_IN_HEADER,
    needs: ['delivery'],
    request: { headers: PAYER_HEADER },
    response: env(listOf(ENDPOINT_VIEW)),
    errors: [],
    handler: (ctx) => list(ctx.need('delivery').listEndpoints(payerOf(ctx))),
  },
  {
    id: 'hook_endpoints.delete',
    method: 'DELETE',
    path: '/v1/hook-endpoints/{endpoint_id}',
    summary: 'Pause an outcome hook endpoint (owner only; history kept)',
    tags: ['delivery'],
    pay: FREE,
    payer: PAYER_IN_HEADER,
    needs: ['delivery'],
    request: { headers: PAYER_HEADER, params: Strict({ endpoint_id: ENDPOINT_ID }) },
    response: env(ENDPOINT_VIEW),
    errors: ['HOOK_ENDPOINT_NOT_FOUND'],
    handler: async (ctx) => {
      const r = await ctx.need('delivery').pauseEndpoint(payerOf(ctx), String(ctx.params.endpoint_id))
      if (!r) throw new ServiceError('HOOK_ENDPOINT_NOT_FOUND', { detail: { field: '/params/endpoint_id', value: ctx.params.endpoint_id } })
      return { data: r }
    },
  },
  {
    id: 'push.config',
    method: 'GET',
    path: '/v1/push/config',
    summary: 'Whether browser push is configured, and its VAPID public key',
    tags: ['delivery'],
    pay: FREE,
    request: {},
    response: env(PUSH_CONFIG),
    errors: [],
    handler: (ctx) => ({ data: ctx.services.delivery?.pushConfig() ?? { configured: false, vapid_public_key: null } }),
  },
  {
    id: 'push.register',
    method: 'POST',
    path: '/v1/push/endpoints',
    summary: 'Register or refresh a push device (a Web Push subscription)',
    tags: ['delivery'],
    pay: FREE,
    payer: PAYER_IN_HEADER,
    needs: ['delivery'],
    request: {
      headers: PAYER_HEADER,
      body: PUSH_REGISTRATION_REQUEST,
    },
    response: env(DEVICE_VIEW, 201),
    errors: ['UNSAFE_URL'],
    handler: async (ctx) => {
      const sub = ctx.body.subscription as { endpoint: string; keys: { p256dh: string; auth: string } }
      const r = await ctx.need('delivery').registerDevice(payerOf(ctx), sub)
      return { data: r.device, status: r.created ? 201 : 200 }
    },
  },
  {
    id: 'push.list',
    method: 'GET',
    path: '/v1/push/endpoints',
    summary: "This payer's push devices (host, timestamps, active flag; never keys)",
    tags: ['delivery'],
    pay: FREE,
    payer: PAYER_IN_HEADER,
    needs: ['delivery'],
    request: { headers: PAYER_HEADER },
    response: env(listOf(DEVICE_VIEW)),
    errors: [],
    handler: (ctx) => list(ctx.need('delivery').listDevices(payerOf(ctx))),
  },
  {
    id: 'push.delete',
    method: 'DELETE',
    path: '/v1/push/endpoints/{device_id}',
    summary: 'Disable a push device (disabled_at set; the row survives)',
    tags: ['delivery'],
    pay: FREE,
    payer: PAYER_IN_HEADER,
    needs: ['delivery'],
    request: { headers: PAYER_HEADER, params: Strict({ device_id: DEVICE_ID }) },
    response: env(DEVICE_VIEW),
    errors: [],
    handler: async (ctx) => ({ data: await ctx.need('delivery').disableDevice(payerOf(ctx), String(ctx.params.device_id)) }),
  },
  {
    id: 'follows.set',
    method: 'POST',
    path: '/v1/follows',
    summary: 'Follow a question on a subject (idempotent; updates channels)',
    description: 'channels is a bitmask: 1 push, 2 email, 4 telegram. A channel this deployment has not configured fails visibly in the delivery record (channels_unconfigured names it now).',
    tags: ['delivery'],
    pay: FREE,
    payer: PAYER_IN_HEADER,
    needs: ['delivery'],
    request: {
      headers: PAYER_HEADER,
      body: FOLLOW_REQUEST,
    },
    response: env(FOLLOW_VIEW, 201),
    errors: [],
    handler: async (ctx) => {
      const r = await ctx.need('delivery').setFollow(payerOf(ctx), { question_id: String(ctx.body.question_id), ...subjectOf(ctx), channels: Number(ctx.body.channels) })
      return { data: r.follow, status: r.created ? 201 : 200 }
    },
  },
  {
    id: 'follows.list',
    method: 'GET',
    path: '/v1/follows',
    summary: "This payer's follows",
    tags: ['delivery'],
    pay: FREE,
    payer: PAYER_IN_HEADER,
    needs: ['delivery'],
    request: { headers: PAYER_HEADER },
    response: env(listOf(FOLLOW_VIEW)),
    errors: [],
    handler: (ctx) => list(ctx.need('delivery').listFollows(payerOf(ctx))),
  },
  {
    id: 'follows.delete',
    method: 'DELETE',
    path: '/v1/follows/{follow_id}',
    summary: 'Unfollow (an absent follow is data: removed false)',
    tags: ['delivery'],
    pay: FREE,
    payer: PAYER_IN_HEADER,
    needs: ['delivery'],
    request: { headers: PAYER_HEADER, params: Strict({ follow_id: FOLLOW_ID }) },
    response: env(FOLLOW_REMOVED),
    errors: [],
    handler: async (ctx) => ({ data: await ctx.need('delivery').removeFollow(payerOf(ctx), String(ctx.params.follow_id)) }),
  },
  {
    id: 'alerts.create',
    method: 'POST',
    path: '/v1/alerts',
    summary: 'Create an alert watch (push; dedupe and cooldown; 50 active per payer)',
    description:
      "kind probability: a new decision on the subject whose probability is at or above threshold (required); refusal: a new refusal decision on the subject; resolution: a clock on the subject resolved. threshold gates notifications only. One notification per watch per decision; none within cooldown_s (default 900) of the watch's last, in the service's event time.",
    tags: ['delivery'],
    pay: FREE,
    payer: PAYER_IN_HEADER,
    needs: ['delivery'],
    request: {
      headers: PAYER_HEADER,
      body: ALERT_REQUEST,
    },
    response: env(ALERT_VIEW, 201),
    errors: ['ALERT_CAP'],
    handler: async (ctx) => {
      const kind = ctx.body.kind as AlertKind
      const threshold = typeof ctx.body.threshold === 'number' ? ctx.body.threshold : null
      if ((kind === 'probability') !== (threshold !== null)) {
        throw new ServiceError('VALIDATION', {
          message: kind === 'probability' ? 'A probability watch needs a threshold.' : 'threshold applies to probability watches only.',
          detail: { reason: 'REQUEST_VALIDATION_FAILED', field: '/body/threshold' },
        })
      }
      const r = await ctx.need('delivery').createAlert(payerOf(ctx), {
        kind, question_id: typeof ctx.body.question_id === 'string' ? ctx.body.question_id : null, ...subjectOf(ctx), threshold,
        cooldown_s: typeof ctx.body.cooldown_s === 'number' ? ctx.body.cooldown_s : DEFAULT_ALERT_COOLDOWN_S,
      })
      return { data: r.alert, status: r.created ? 201 : 200 }
    },
  },
  {
    id: 'alerts.list',
    method: 'GET',
    path: '/v1/alerts',
    summary: "This payer's alert watches",
    tags: ['delivery'],
    pay: FREE,
    payer: PAYER_IN_HEADER,
    needs: ['delivery'],
    request: { headers: PAYER_HEADER },
    response: env(listOf(ALERT_VIEW)),
    errors: [],
    handler: (ctx) => list(ctx.need('delivery').listAlerts(payerOf(ctx))),
  },
  {
    id: 'alerts.delete',
    method: 'DELETE',
    path: '/v1/alerts/{alert_id}',
    summary: 'Delete an alert watch (an absent one is data: deleted false)',
    tags: ['delivery'],
    pay: FREE,
    payer: PAYER_IN_HEADER,
    needs: ['delivery'],
    request: { headers: PAYER_HEADER, params: Strict({ alert_id: ALERT_ID }) },
    response: env(ALERT_DELETED),
    errors: [],
    handler: async (ctx) => ({ data: await ctx.need('delivery').deleteAlert(payerOf(ctx), String(ctx.params.alert_id)) }),
  },
  {
    id: 'contacts.create',
    method: 'POST',
    path: '/v1/contacts',
    summary: 'Record a contact (201 recorded, 200 already recorded; never sends a message)',
    tags: ['delivery'],
    pay: FREE,
    request: {
      body: CONTACT_REQUEST,
    },
    response: env(CONTACT_VIEW, 201),
    errors: ['CONTACTS_UNWIRED'],
    handler: async (ctx) => {
      const delivery = ctx.services.delivery
      if (!delivery) throw new ServiceError('CONTACTS_UNWIRED')
      const r = await delivery.recordContact({
        contact: String(ctx.body.contact), consent: true,
        source: typeof ctx.body.source === 'string' ? ctx.body.source : null, seat: typeof ctx.body.seat === 'string' ? ctx.body.seat : null,
      })
      return { data: r.contact, status: r.created ? 201 : 200 }
    },
  },
]
