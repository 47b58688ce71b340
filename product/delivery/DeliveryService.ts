/**
 * Delivery (spec, What the service does 8; Delivery resources; Events 1-4; Authentication 5 and 7; States: Resolution
 * hook, Outcome hook endpoint, Push device; Limits): resolution hooks, outcome hook endpoints, push devices, follows,
 * alert watches and contact capture, with one append-only record row per delivery attempt.
 *
 *   const delivery = await DeliveryService.open({ log, ledger, guard, http, push, signer, clock })
 *   Server.start({ ..., services: { delivery } })
 *   await delivery.close()
 *
 * How a resolution reaches a receiver:
 * - registrations, asks (which payer paid for which decision) and attempts are journals (pipeline/records/
 *   deliveryRecord.ts) rebuilt into the DeliveryBook at every start, before the outcome bus is subscribed;
 * - delivery consumes the outcome bus (engine/LedgerBus.ts), which replays every resolution on subscribe: each
 *   resolution maps to deliveries with stable ids (deliveryId(target, decision)); one whose record already says final
 *   is skipped, one with a failed first attempt gets its retry, one with no row is attempted. So a resolution written
 *   while the service was down is delivered after restart, and a crash between a POST and its row re-sends the same
 *   attempt under the same delivery id (the receiver dedupes on it) while the record keeps one row per attempt (the id
 *   `<delivery_id>#<attempt>` admits the first);
 * - every attempt re-checks its URL with the guard and connects to the checked address; one retry after
 *   retryDelayMs (Limits: "Hook retries | one retry").
 * Follows and alert watches apply to events at or after the service event time they were made at (clock_at), so a
 * replay never notifies about the past.
 */
import { createHash, randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Clock } from '../../common/Clock.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import { childLogger } from '../../common/logger.ts'
import type { ResolutionEvent, Subscription } from '../../engine/LedgerBus.ts'
import { Journal, type JournalFollower } from '../../pipeline/journal/Journal.ts'
import type { PaidCall } from '../../pipeline/journal/PaidCall.ts'
import type { EventLog } from '../../pipeline/log/EventLog.ts'
import type { LedgerDecision } from '../../pipeline/records/decisionRecord.ts'
import {
  ATTEMPT_ERROR_CLASSES, DELIVERY_ASKS, DELIVERY_ATTEMPTS, DELIVERY_CONTACTS, DELIVERY_REGISTRATIONS, contactId, deliveryId,
  type AttemptChannel, type AttemptErrorClass, type AttemptRow, type ContactRow, type RegistrationEvent, type RegistrationRow, type TargetKind,
} from '../../pipeline/records/deliveryRecord.ts'
import { DEFAULT_PARTITIONS } from '../../pipeline/topics.ts'
import {
  DeliveryBook, ENDPOINT_WINDOW_MS, type AlertKind, type AlertState, type DeviceState, type EndpointState, type FollowState, type SubjectKind,
} from './DeliveryBook.ts'
import { HookSigner, type StoredSecret } from './HookSigner.ts'
import { contactAad, sealRegistration } from './sealing.ts'
import { WebPushSender } from './WebPushSender.ts'
import type { CheckedUrl, DeliveryLedger, HookTransport, PostResult, PushSender, PushSubscription, UrlChecker } from './ports.ts'

const log = childLogger('delivery')

/** Limits: "Outcome hook endpoints | 10 active per payer"; "Alert watches | 50 active per payer". */
export const ENDPOINT_CAP = 10
export const ALERT_CAP = 50
export const CHANNEL_PUSH = 1
export const CHANNEL_EMAIL = 2
export const CHANNEL_TELEGRAM = 4
export const DEFAULT_ALERT_COOLDOWN_S = 900
const ERROR_CLASSES = new Set<string>(ATTEMPT_ERROR_CLASSES)

export interface DeliveryOptions {
  log: EventLog
  ledger: DeliveryLedger
  guard: UrlChecker
  http: HookTransport
  /** null: push is not configured on this deployment (its channel fails visibly). */
  push: PushSender | null
  signer: HookSigner
  /** Wall clock (registration stamps, the 30-day window, signature timestamps). */
  clock: Clock
  /** Contacts are recorded (POST /v1/contacts); false: 503 CONTACTS_UNWIRED. */
  recordContacts?: boolean
  /** Wait before the one retry (ms). Default 2000. */
  retryDelayMs?: number
  /** Attempts in flight at once. Default 64. */
  concurrency?: number
  partitions?: number
  groupId?: string
}

/** One delivery to make: what it is, and how to make one attempt of it. */
interface Job {
  delivery_id: string
  target_kind: TargetKind
  target_id: string
  payer: string | null
  channel: AttemptChannel
  decision_id: string | null
  event_at: string
  attempt: number
  /** Makes the attempt; null result fields mean the attempt could not even start (recorded as failed). */
  run: () => Promise<{ status: 'delivered' | 'failed'; http_status: number | null; latency_ms: number | null; error_class: AttemptErrorClass | null; retry: boolean }>
}

const hash = (parts: string[]) => createHash('sha256').update(parts.join('|')).digest('hex').slice(0, 24)
const iso = (ms: number) => new Date(ms).toISOString()

/**
 * The deployment has records sealed under a key it was not given (SVC_DELIVERY_KEY unset or changed): delivery cannot
 * sign, reach or list them, so it does not start (docs/decisions.md); the composition root keeps serving without it.
 */
export class DeliveryKeyMissing extends Error {
  readonly code = 'DELIVERY_KEY_MISSING'
  constructor(readonly unreadable: number, readonly first: string | null, keyConfigured: boolean) {
    super(
      `${unreadable} delivery record(s) (first: ${first}) are sealed under a key this start ${keyConfigured ? 'does not have: SVC_DELIVERY_KEY differs from the one they were written with' : 'lacks: set SVC_DELIVERY_KEY to the key they were written with'}`,
    )
    this.name = 'DeliveryKeyMissing'
  }
}

export class DeliveryService {
  readonly book: DeliveryBook
  private followers: JournalFollower[] = []
  private subscriptions: Subscription[] = []
  private readonly queued = new Set<string>()
  private readonly waiting: Job[] = []
  private inflight = 0
  private readonly timers = new Set<NodeJS.Timeout>()
  private idleWaiters: Array<() => void> = []
  private closed = false
  /** Decisions whose clock is terminal (resolved): hooks on them are refused. */
  private readonly resolved = new Set<string>()
  private readonly retryDelayMs: number
  private readonly concurrency: number
  /** Endpoints (payer|url) staged in a paid unit and not durable yet: they count toward the cap, and a concurrent twin is refused. */
  private readonly pendingUrls = new Set<string>()

  private constructor(
    private readonly options: DeliveryOptions,
    private readonly registrations: Journal<typeof DELIVERY_REGISTRATIONS.schema>,
    private readonly asks: Journal<typeof DELIVERY_ASKS.schema>,
    private readonly attempts: Journal<typeof DELIVERY_ATTEMPTS.schema>,
    private readonly contacts: Journal<typeof DELIVERY_CONTACTS.schema>,
  ) {
    this.book = new DeliveryBook(options.signer.cipher)
    this.retryDelayMs = options.retryDelayMs ?? 2000
    this.concurrency = options.concurrency ?? 64
  }

  static async open(options: DeliveryOptions): Promise<DeliveryService> {
    const partitions = { partitions: options.partitions ?? DEFAULT_PARTITIONS }
    const [registrations, asks, attempts, contacts] = await Promise.all([
      Journal.open({ log: options.log, def: DELIVERY_REGISTRATIONS, ...partitions }),
      Journal.open({ log: options.log, def: DELIVERY_ASKS, ...partitions }),
      Journal.open({ log: options.log, def: DELIVERY_ATTEMPTS, ...partitions }),
      Journal.open({ log: options.log, def: DELIVERY_CONTACTS, ...partitions }),
    ])
    const s = new DeliveryService(options, registrations, asks, attempts, contacts)
    const group = options.groupId ?? 'svc.delivery'
    const onInvalid = (what: string) => (err: Error, r: { partition: number; offset: number }) =>
      log.warn({ partition: r.partition, offset: r.offset, err: err.message }, `undecodable ${what} record ignored`)
    try {
      s.followers.push(
        await registrations.follow(`${group}.registrations`, (r) => s.book.applyRegistration(r), { skipOwnWrites: true, onInvalid: onInvalid('registration') }),
        await asks.follow(`${group}.asks`, (r) => s.book.applyAsk(r), { skipOwnWrites: true, onInvalid: onInvalid('ask') }),
        await attempts.follow(`${group}.attempts`, (r) => s.book.applyAttempt(r), { skipOwnWrites: true, onInvalid: onInvalid('attempt') }),
        await contacts.follow(`${group}.contacts`, (r) => s.book.applyContact(r), { skipOwnWrites: true, onInvalid: onInvalid('contact') }),
      )
    } catch (err) {
      await s.close()
      throw err
    }
    if (s.book.unreadable > 0) {
      await s.close()
      throw new DeliveryKeyMissing(s.book.unreadable, s.book.firstUnreadable, options.signer.cipher !== null)
    }
    // After the book is whole: the bus replays every resolution and decision, and what the record lacks is delivered.
    s.subscriptions.push(
      options.ledger.resolutions.subscribe('delivery', (e) => s.onResolution(e)),
      options.ledger.decisions.subscribe('delivery.alerts', (d) => s.onDecision(d)),
    )
    log.info({ hooks: s.book.hooks.size, endpoints: s.book.endpoints.size, devices: s.book.devices.size, deliveries: s.book.deliveries.size }, 'delivery book rebuilt from the log')
    return s
  }

  get pushConfigured(): boolean {
    return this.options.push !== null
  }

  /** Spec, Delivery resources: "Push config | { configured: boolean, vapid_public_key: string or null }". */
  pushConfig(): { configured: boolean; vapid_public_key: string | null } {
    return { configured: this.options.push !== null, vapid_public_key: this.options.push?.publicKey ?? null }
  }

  // ------------------------------------------------------------ events

  private onResolution(e: ResolutionEvent): void {
    const d = e.decision
    const o = e.outcome
    this.resolved.add(d.decision_id)
    const at = Date.parse(o.resolved_at)
    const body = JSON.stringify({ status: 'resolved', decision_id: o.decision_id, outcome: o.outcome, resolved_at: o.resolved_at, statistic: o.statistic })
    // (b) each armed resolution hook of this decision
    for (const h of this.book.hooksByDecision.get(d.decision_id) ?? []) {
      this.plan(this.httpJob('hook', h.hook_id, h.payer, h.url, h.secret, d.decision_id, o.resolved_at, body))
    }
    // (c) every outcome hook endpoint whose payer matches (the payer who paid for the decision)
    const payer = this.book.asks.get(d.decision_id)
    if (payer) {
      for (const ep of this.book.endpointsByPayer.get(payer) ?? []) {
        // A paused or expired endpoint receives nothing (and records nothing): its window is over.
        if (ep.clock_at > at || !this.endpointActive(ep)) continue
        this.plan(this.httpJob('endpoint', ep.endpoint_id, ep.payer, ep.url, ep.secret, d.decision_id, o.resolved_at, body, () => this.endpointActive(ep)))
      }
    }
    // (d) a resolution sentence to each follow, on the channels of its bitmask; and resolution alerts
    const sentence = `${d.question_id} on ${d.subject ?? d.asset} resolved ${o.outcome} (the house said ${d.probability}).`
    const payload = { type: 'resolution', decision_id: d.decision_id, question_id: d.question_id, asset: d.asset, subject: d.subject, outcome: o.outcome, resolved_at: o.resolved_at, text: sentence }
    for (const f of this.book.watchersOf(this.book.followsBySubject, d)) {
      if (f.removed_at !== null || f.clock_at > at || f.question_id !== d.question_id) continue
      if (f.channels & CHANNEL_PUSH) this.planPush('follow', f.follow_id, f.payer, d.decision_id, o.resolved_at, payload)
      if (f.channels & CHANNEL_EMAIL) this.planUnconfigured('follow', f.follow_id, f.payer, 'email', d.decision_id, o.resolved_at)
      if (f.channels & CHANNEL_TELEGRAM) this.planUnconfigured('follow', f.follow_id, f.payer, 'telegram', d.decision_id, o.resolved_at)
    }
    this.alertsFor('resolution', d, at, { ...payload, type: 'alert.resolution' })
  }

  private onDecision(d: LedgerDecision): void {
    const at = Date.parse(d.created_at)
    const refusal = d.refusal_reason !== null || d.confidence === 0
    const payload = {
      decision_id: d.decision_id, question_id: d.question_id, asset: d.asset, subject: d.subject, probability: d.probability,
      decision: d.decision, horizon_end: d.horizon_end, refusal_reason: d.refusal_reason,
    }
    if (refusal) this.alertsFor('refusal', d, at, { type: 'alert.refusal', ...payload, text: `${d.question_id} on ${d.subject ?? d.asset}: the house refused (${d.refusal_reason ?? d.decision}).` })
    else this.alertsFor('probability', d, at, { type: 'alert.probability', ...payload, text: `${d.question_id} on ${d.subject ?? d.asset}: probability ${d.probability}.` })
  }

  /**
   * Spec, Events 4: "Alert watches emit notifications to the payer's push devices under the alert engine's dedupe and
   * cooldown rules; a threshold gates notifications only." Dedupe: one notification per (watch, decision), by its
   * delivery id. Cooldown: none within cooldown_s of the watch's last one, in the service's event time (so a replay
   * decides exactly as the live run did: the last-sent times come from the delivery record).
   */
  private alertsFor(kind: AlertKind, d: LedgerDecision, at: number, payload: Record<string, unknown>): void {
    for (const a of this.book.watchersOf(this.book.alertsBySubject, d)) {
      if (a.kind !== kind || a.deleted_at !== null || a.clock_at > at) continue
      if (a.question_id !== null && a.question_id !== d.question_id) continue
      if (kind === 'probability' && (a.threshold === null || d.probability < a.threshold)) continue
      const first = deliveryId('alert', a.alert_id, d.decision_id)
      if (!this.book.deliveries.has(first) && !this.queued.has(first)) {
        const last = this.book.alertLastSent.get(a.alert_id) ?? -Infinity
        if (at - last < a.cooldown_s * 1000) continue
        this.book.alertLastSent.set(a.alert_id, at)
      }
      this.planPush('alert', a.alert_id, a.payer, d.decision_id, iso(at), { ...payload, alert_id: a.alert_id, kind: a.kind, threshold: a.threshold })
    }
  }

  private endpointActive(ep: EndpointState): boolean {
    return ep.paused_at === null && Date.parse(ep.expires_at) > this.options.clock.now()
  }

  // ------------------------------------------------------------ jobs

  private httpJob(
    kind: 'hook' | 'endpoint', targetId: string, payer: string | null, url: string, stored: StoredSecret, decisionId: string, eventAt: string, body: string,
    active?: () => boolean,
  ): Job {
    const id = deliveryId(kind, targetId, decisionId)
    return {
      delivery_id: id, target_kind: kind, target_id: targetId, payer, channel: 'http', decision_id: decisionId, event_at: eventAt, attempt: 1,
      run: async () => {
        if (active && !active()) return { status: 'failed', http_status: null, latency_ms: null, error_class: 'target_inactive', retry: false }
        let target: CheckedUrl
        try {
          target = await this.options.guard.check(url, 'hook')
        } catch (err) {
          if (err instanceof ServiceError && err.code === 'UNSAFE_URL') return { status: 'failed', http_status: null, latency_ms: null, error_class: 'unsafe_url', retry: true }
          throw err
        }
        const secret = this.options.signer.secretOf(targetId, stored)
        const headers = {
          'content-type': 'application/json',
          ...HookSigner.sign(secret, id, Math.floor(this.options.clock.now() / 1000), body),
        }
        return this.outcomeOf(await this.options.http.post(target, body, headers))
      },
    }
  }

  private planPush(kind: 'follow' | 'alert', targetId: string, payer: string, decisionId: string, eventAt: string, payload: Record<string, unknown>): void {
    const push = this.options.push
    if (!push) return this.planUnconfigured(kind, targetId, payer, 'push', decisionId, eventAt)
    const at = Date.parse(eventAt)
    const devices = (this.book.devicesByPayer.get(payer) ?? []).filter((d) => d.disabled_at === null && d.active_since <= at)
    if (devices.length === 0) {
      this.plan(this.failedJob(deliveryId(kind, targetId, decisionId, 'push'), kind, targetId, payer, 'push', decisionId, eventAt, 'no_device'))
      return
    }
    for (const device of devices) {
      const id = deliveryId(kind, targetId, decisionId, device.device_id)
      this.plan({
        delivery_id: id, target_kind: kind, target_id: targetId, payer, channel: 'push', decision_id: decisionId, event_at: eventAt, attempt: 1,
        run: async () => {
          if (device.disabled_at !== null) return { status: 'failed', http_status: null, latency_ms: null, error_class: 'target_inactive', retry: false }
          const result = await push.send({ endpoint: device.endpoint, keys: device.keys } satisfies PushSubscription, { ...payload, delivery_id: id })
          if (result.error_class === 'gone') await this.disable(device, 'the push service answered gone')
          return this.outcomeOf(result)
        },
      })
    }
  }

  /** Spec, Events 1: "A channel not configured on the deployment fails visibly" (one final failed row). */
  private planUnconfigured(kind: 'follow' | 'alert', targetId: string, payer: string, channel: AttemptChannel, decisionId: string, eventAt: string): void {
    this.plan(this.failedJob(deliveryId(kind, targetId, decisionId, channel), kind, targetId, payer, channel, decisionId, eventAt, 'channel_unconfigured'))
  }

  private failedJob(id: string, kind: TargetKind, targetId: string, payer: string, channel: AttemptChannel, decisionId: string, eventAt: string, error: AttemptErrorClass): Job {
    return {
      delivery_id: id, target_kind: kind, target_id: targetId, payer, channel, decision_id: decisionId, event_at: eventAt, attempt: 1,
      run: async () => ({ status: 'failed', http_status: null, latency_ms: null, error_class: error, retry: false }),
    }
  }

  private outcomeOf(r: PostResult): Awaited<ReturnType<Job['run']>> {
    if (r.error_class === null) return { status: 'delivered', http_status: r.status, latency_ms: Math.round(r.latency_ms), error_class: null, retry: false }
    const cls = (ERROR_CLASSES.has(r.error_class) ? r.error_class : 'error') as AttemptErrorClass
    // A redirect is never followed and a gone device is disabled: retrying either changes nothing.
    return { status: 'failed', http_status: r.status, latency_ms: Math.round(r.latency_ms), error_class: cls, retry: cls !== 'redirect' && cls !== 'gone' }
  }

  /** Queues a delivery unless the record says it is done or it is already queued; a failed first attempt resumes at its retry. */
  private plan(job: Job): void {
    if (this.closed || this.queued.has(job.delivery_id)) return
    const progress = this.book.deliveries.get(job.delivery_id)
    if (progress?.final) return
    this.queued.add(job.delivery_id)
    if (progress) {
      job.attempt = progress.attempts + 1
      this.later(job)
    } else {
      this.waiting.push(job)
      this.pump()
    }
  }

  private later(job: Job): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer)
      this.waiting.push(job)
      this.pump()
    }, this.retryDelayMs * job.attempt)
    this.timers.add(timer)
  }

  private pump(): void {
    while (!this.closed && this.inflight < this.concurrency && this.waiting.length > 0) {
      const job = this.waiting.shift()!
      this.inflight++
      void this.attempt(job).finally(() => {
        this.inflight--
        this.pump()
        this.checkIdle()
      })
    }
    this.checkIdle()
  }

  private async attempt(job: Job): Promise<void> {
    let r: Awaited<ReturnType<Job['run']>>
    try {
      r = await job.run()
    } catch (err) {
      log.warn({ err, delivery_id: job.delivery_id }, 'delivery attempt failed unexpectedly')
      r = { status: 'failed', http_status: null, latency_ms: null, error_class: 'error', retry: true }
    }
    // Limits: one retry. The second attempt is the last, whatever it gives.
    const final = r.status === 'delivered' || !r.retry || job.attempt >= 2
    const row: AttemptRow = {
      v: 1, id: `${job.delivery_id}#${job.attempt}`, delivery_id: job.delivery_id, attempt: job.attempt, target_kind: job.target_kind, target_id: job.target_id,
      payer: job.payer, channel: job.channel, decision_id: job.decision_id, status: r.status, final, http_status: r.http_status, latency_ms: r.latency_ms,
      error_class: r.error_class, event_at: job.event_at, attempted_at: iso(this.options.clock.now()),
    }
    if (this.closed) return
    try {
      await this.attempts.append([row])
    } catch (err) {
      // Not recorded: the next start re-makes this attempt under the same delivery id.
      log.error({ err, delivery_id: job.delivery_id, attempt: job.attempt }, 'delivery attempt not recorded')
      this.queued.delete(job.delivery_id)
      return
    }
    this.book.applyAttempt(row)
    if (final) {
      this.queued.delete(job.delivery_id)
    } else {
      job.attempt++
      this.later(job)
    }
  }

  private checkIdle(): void {
    if (this.inflight === 0 && this.waiting.length === 0 && this.timers.size === 0) {
      const w = this.idleWaiters
      this.idleWaiters = []
      for (const f of w) f()
    }
  }

  /** Resolves once nothing is queued, in flight or waiting for its retry (tests and benchmarks). */
  async idle(): Promise<void> {
    for (const s of this.subscriptions) await s.idle()
    if (this.inflight === 0 && this.waiting.length === 0 && this.timers.size === 0) return
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve))
  }

  // ------------------------------------------------------------ registrations

  /** A registration record as stored (sealing.ts: with a key, its url and push keys sealed). */
  private registration(kind: TargetKind, targetId: string, payer: string | null, event: RegistrationEvent, url: string | null, spec: Record<string, unknown>, paymentId: string | null = null): RegistrationRow {
    const row: RegistrationRow = {
      v: 1, id: `reg_${randomUUID()}`, target_kind: kind, target_id: targetId, payer, event, url, spec, payment_id: paymentId,
      recorded_at: iso(this.options.clock.now()), clock_at: iso(this.options.ledger.clockNow()),
    }
    return sealRegistration(row, this.options.signer.cipher)
  }

  private async record(row: RegistrationRow): Promise<void> {
    await this.registrations.append([row])
    this.book.applyRegistration(row)
  }

  // ------------------------------------------------------------ resolution hooks

  /**
   * POST /v1/hooks refusals, before the payment (States, Resolution hook): unknown decision (null), a terminal clock
   * (409 HOOK_CLOCK_TERMINAL pointing at the resolution route), a URL the guard refuses (400 UNSAFE_URL).
   */
  async checkHook(input: { decision_id: string; url: string }): Promise<LedgerDecision | null> {
    const d = this.options.ledger.decision(input.decision_id.toLowerCase())
    if (!d) return null
    if (this.resolved.has(d.decision_id)) {
      throw new ServiceError('HOOK_CLOCK_TERMINAL', { detail: { decision_id: d.decision_id, resolution: `/v1/resolutions/${d.decision_id}` } })
    }
    await this.options.guard.check(input.url, 'hook')
    return d
  }

  async armHook(input: { decision_id: string; url: string }, payment: PaidCall): Promise<Record<string, unknown> | null> {
    const d = await this.checkHook(input)
    if (!d) return null
    const hookId = `hk_${randomUUID().replaceAll('-', '')}`
    const { secret, stored } = this.options.signer.newSecret(hookId)
    const row = this.registration('hook', hookId, payment.payer?.toLowerCase() ?? null, 'armed', input.url, { decision_id: d.decision_id, secret: stored }, payment.payment_id)
    payment.unit.add(this.registrations, [row], { applied: () => this.book.applyRegistration(row) })
    return {
      hook_id: hookId,
      decision_id: d.decision_id,
      url: input.url,
      status: 'armed',
      horizon_end: d.horizon_end,
      secret,
      signature: SIGNATURE_DOC,
      delivery_record: 'every attempt is one row of the delivery record (DuckDB view delivery_attempts); this response does not mean the receiver is live',
    }
  }

  // ------------------------------------------------------------ outcome hook endpoints

  private activeEndpoints(payer: string): EndpointState[] {
    return (this.book.endpointsByPayer.get(payer) ?? []).filter((e) => this.endpointActive(e))
  }

  /** The replay of an active registration of this URL, or the cap; the URL guard. Run before the payment. */
  async checkEndpoint(payer: string, url: string): Promise<EndpointState | null> {
    const p = payer.toLowerCase()
    const active = this.activeEndpoints(p)
    const same = active.find((e) => e.url === url)
    if (same) return same
    if (active.length + [...this.pendingUrls].filter((k) => k.startsWith(`${p}|`)).length >= ENDPOINT_CAP) {
      throw new ServiceError('HOOK_ENDPOINT_CAP', { detail: { active: active.length, cap: ENDPOINT_CAP } })
    }
    await this.options.guard.check(url, 'hook')
    return null
  }

  newEndpointId(): string {
    return `he_${randomUUID().replaceAll('-', '')}`
  }

  /** Registers (charged: the payment's debit carries ref = endpoint_id) or replays (not charged, no secret). */
  async registerEndpoint(payer: string, url: string, endpointId: string, payment: PaidCall): Promise<{ replayed: boolean; endpoint: Record<string, unknown> }> {
    const p = payer.toLowerCase()
    const same = await this.checkEndpoint(p, url)
    if (same) return { replayed: true, endpoint: this.endpointReplay(same) }
    const key = `${p}|${url}`
    if (this.pendingUrls.has(key)) throw new ServiceError('RATE_LIMITED', { message: 'This URL is being registered by a concurrent request.', retryAfterMs: 1000 })
    const { secret, stored } = this.options.signer.newSecret(endpointId)
    const now = this.options.clock.now()
    const row = this.registration('endpoint', endpointId, p, 'registered', url, { expires_at: iso(now + ENDPOINT_WINDOW_MS), secret: stored }, payment.payment_id)
    this.pendingUrls.add(key)
    payment.unit.add(this.registrations, [row], {
      applied: () => {
        this.pendingUrls.delete(key)
        this.book.applyRegistration(row)
      },
      aborted: () => this.pendingUrls.delete(key),
    })
    const state = {
      endpoint_id: endpointId, payer: p, url, secret: stored, registered_at: row.recorded_at, expires_at: iso(now + ENDPOINT_WINDOW_MS),
      paused_at: null, clock_at: Date.parse(row.clock_at), payment_id: payment.payment_id,
    }
    return { replayed: false, endpoint: { ...this.endpointView(state), secret, signature: SIGNATURE_DOC, secret_storage: stored.alg === 'A256GCM' ? 'encrypted (AES-256-GCM)' : 'derived from the deployment signing secret' } }
  }

  /** The answer to re-registering an active URL: the endpoint as registered, without its secret. */
  endpointReplay(e: EndpointState): Record<string, unknown> {
    return { ...this.endpointView(e), replayed: true }
  }

  private endpointView(e: EndpointState): Record<string, unknown> {
    const now = this.options.clock.now()
    const status = e.paused_at !== null ? 'paused' : Date.parse(e.expires_at) <= now ? 'expired' : 'registered'
    return {
      endpoint_id: e.endpoint_id, url: e.url, status, registered_at: e.registered_at, expires_at: e.expires_at, paused_at: e.paused_at,
      deliveries: this.book.countsOf(e.endpoint_id),
    }
  }

  listEndpoints(payer: string): Record<string, unknown>[] {
    // Newest first; the log interleaves targets' partitions, so the order is set here, not by arrival.
    return [...(this.book.endpointsByPayer.get(payer.toLowerCase()) ?? [])]
      .sort((a, b) => (a.registered_at < b.registered_at ? 1 : a.registered_at > b.registered_at ? -1 : a.endpoint_id < b.endpoint_id ? -1 : 1))
      .map((e) => this.endpointView(e))
  }

  /** DELETE by the owner only: a foreign or unknown id is null (404). Pausing keeps the history; a second delete is data. */
  async pauseEndpoint(payer: string, endpointId: string): Promise<Record<string, unknown> | null> {
    const e = this.book.endpoints.get(endpointId)
    if (!e || e.payer !== payer.toLowerCase()) return null
    if (e.paused_at === null) await this.record(this.registration('endpoint', e.endpoint_id, e.payer, 'paused', e.url, {}))
    return this.endpointView(e)
  }

  // ------------------------------------------------------------ push devices

  deviceId(payer: string, endpoint: string): string {
    return `pd_${hash([payer.toLowerCase(), endpoint])}`
  }

  async registerDevice(payer: string, sub: PushSubscription): Promise<{ created: boolean; device: Record<string, unknown> }> {
    const p = payer.toLowerCase()
    // Keys that could never decrypt (a point off the curve, a short auth secret) are refused now, naming the field.
    WebPushSender.assertSubscription(sub, '/body/subscription')
    await this.options.guard.check(sub.endpoint, 'push')
    const id = this.deviceId(p, sub.endpoint)
    const had = this.book.devices.get(id)
    await this.record(this.registration('device', id, p, 'registered', sub.endpoint, { keys: { p256dh: sub.keys.p256dh, auth: sub.keys.auth } }))
    return { created: !had, device: this.deviceView(this.book.devices.get(id)!) }
  }

  private deviceView(d: DeviceState): Record<string, unknown> {
    // The endpoint passed the guard at registration, so it parses.
    return { device_id: d.device_id, host: new URL(d.endpoint).host, created_at: d.created_at, updated_at: d.updated_at, disabled_at: d.disabled_at, active: d.disabled_at === null }
  }

  listDevices(payer: string): Record<string, unknown>[] {
    return (this.book.devicesByPayer.get(payer.toLowerCase()) ?? []).map((d) => this.deviceView(d))
  }

  async disableDevice(payer: string, deviceId: string): Promise<Record<string, unknown>> {
    const d = this.book.devices.get(deviceId)
    if (!d || d.payer !== payer.toLowerCase()) return { device_id: deviceId, found: false, active: false }
    await this.disable(d, 'deleted by its owner')
    return { ...this.deviceView(d), found: true }
  }

  private async disable(d: DeviceState, why: string): Promise<void> {
    if (d.disabled_at !== null) return
    await this.record(this.registration('device', d.device_id, d.payer, 'disabled', d.endpoint, { why }))
  }

  // ------------------------------------------------------------ follows

  followId(payer: string, q: { question_id: string; subject_kind: SubjectKind; subject: string }): string {
    return `fl_${hash([payer.toLowerCase(), q.question_id, q.subject_kind, q.subject])}`
  }

  /** Idempotent: the same (question, subject) is the same follow; a POST changing channels updates them. */
  async setFollow(payer: string, q: { question_id: string; subject_kind: SubjectKind; subject: string; channels: number }): Promise<{ created: boolean; follow: Record<string, unknown> }> {
    const p = payer.toLowerCase()
    const subject = q.subject_kind === 'wallet' ? q.subject.toLowerCase() : q.subject
    const id = this.followId(p, { ...q, subject })
    const have = this.book.follows.get(id)
    const created = !have || have.removed_at !== null
    if (created || have.channels !== q.channels) {
      await this.record(this.registration('follow', id, p, 'set', null, { question_id: q.question_id, subject_kind: q.subject_kind, subject, channels: q.channels }))
    }
    return { created, follow: this.followView(this.book.follows.get(id)!) }
  }

  private followView(f: FollowState): Record<string, unknown> {
    const unconfigured = [
      ...(f.channels & CHANNEL_PUSH && !this.pushConfigured ? ['push'] : []),
      ...(f.channels & CHANNEL_EMAIL ? ['email'] : []),
      ...(f.channels & CHANNEL_TELEGRAM ? ['telegram'] : []),
    ]
    return {
      follow_id: f.follow_id, question_id: f.question_id, subject_kind: f.subject_kind, subject: f.subject, channels: f.channels,
      channels_unconfigured: unconfigured, created_at: f.created_at, updated_at: f.updated_at, active: f.removed_at === null,
      deliveries: this.book.countsOf(f.follow_id),
    }
  }

  listFollows(payer: string): Record<string, unknown>[] {
    return (this.book.followsByPayer.get(payer.toLowerCase()) ?? []).filter((f) => f.removed_at === null).map((f) => this.followView(f))
  }

  /** Spec: "deleting a follow that is absent is data, not an error". */
  async removeFollow(payer: string, followId: string): Promise<Record<string, unknown>> {
    const f = this.book.follows.get(followId)
    if (!f || f.payer !== payer.toLowerCase() || f.removed_at !== null) return { follow_id: followId, removed: false, was_following: false }
    await this.record(this.registration('follow', f.follow_id, f.payer, 'removed', null, {}))
    return { follow_id: followId, removed: true, was_following: true }
  }

  // ------------------------------------------------------------ alert watches

  alertId(payer: string, a: { kind: AlertKind; question_id: string | null; subject_kind: SubjectKind; subject: string; threshold: number | null }): string {
    return `al_${hash([payer.toLowerCase(), a.kind, a.question_id ?? '*', a.subject_kind, a.subject, String(a.threshold)])}`
  }

  async createAlert(
    payer: string,
    a: { kind: AlertKind; question_id: string | null; subject_kind: SubjectKind; subject: string; threshold: number | null; cooldown_s: number },
  ): Promise<{ created: boolean; alert: Record<string, unknown> }> {
    const p = payer.toLowerCase()
    const subject = a.subject_kind === 'wallet' ? a.subject.toLowerCase() : a.subject
    const id = this.alertId(p, { ...a, subject })
    const have = this.book.alerts.get(id)
    if (have && have.deleted_at === null) return { created: false, alert: this.alertView(have) }
    const active = (this.book.alertsByPayer.get(p) ?? []).filter((x) => x.deleted_at === null).length
    if (active >= ALERT_CAP) throw new ServiceError('ALERT_CAP', { detail: { active, cap: ALERT_CAP } })
    await this.record(this.registration('alert', id, p, 'created', null, { kind: a.kind, question_id: a.question_id, subject_kind: a.subject_kind, subject, threshold: a.threshold, cooldown_s: a.cooldown_s }))
    return { created: true, alert: this.alertView(this.book.alerts.get(id)!) }
  }

  private alertView(a: AlertState): Record<string, unknown> {
    return {
      alert_id: a.alert_id, kind: a.kind, question_id: a.question_id, subject_kind: a.subject_kind, subject: a.subject, threshold: a.threshold,
      cooldown_s: a.cooldown_s, created_at: a.created_at, active: a.deleted_at === null, deliveries: this.book.countsOf(a.alert_id),
    }
  }

  listAlerts(payer: string): Record<string, unknown>[] {
    return (this.book.alertsByPayer.get(payer.toLowerCase()) ?? []).filter((a) => a.deleted_at === null).map((a) => this.alertView(a))
  }

  async deleteAlert(payer: string, alertId: string): Promise<Record<string, unknown>> {
    const a = this.book.alerts.get(alertId)
    if (!a || a.payer !== payer.toLowerCase() || a.deleted_at !== null) return { alert_id: alertId, deleted: false }
    await this.record(this.registration('alert', a.alert_id, a.payer, 'deleted', null, {}))
    return { alert_id: alertId, deleted: true }
  }

  // ------------------------------------------------------------ asks

  /** The payer of a paid decision, staged with it, so outcome hook endpoints whose payer matches find it at resolution. */
  recordAskIn(payment: PaidCall, decisionId: string): void {
    if (!payment.payer) return
    const row = { decision_id: decisionId, payer: payment.payer.toLowerCase(), payment_id: payment.payment_id, recorded_at: iso(this.options.clock.now()) }
    payment.unit.add(this.asks, [row], { applied: () => this.book.applyAsk(row) })
  }

  // ------------------------------------------------------------ contacts

  /**
   * POST /v1/contacts: "201 recorded, 200 already recorded (idempotent), 503 CONTACTS_UNWIRED when this deployment
   * does not record contacts; never claims a message was sent".
   */
  async recordContact(input: { contact: string; consent: true; source: string | null; seat: string | null }): Promise<{ created: boolean; contact: Record<string, unknown> }> {
    if (this.options.recordContacts === false) throw new ServiceError('CONTACTS_UNWIRED')
    const normalized = input.contact.trim()
    const kind: ContactRow['contact_kind'] = normalized.startsWith('@') ? 'telegram' : 'email'
    const value = kind === 'email' ? normalized.toLowerCase() : normalized
    const cipher = this.options.signer.cipher
    const id = contactId(value, cipher)
    // A contact recorded before the deployment had a key carries the unkeyed id: it is still "already recorded".
    const have = this.book.contacts.get(id) ?? (cipher ? this.book.contacts.get(contactId(value, null)) : undefined)
    const view = (r: ContactRow) => ({ contact_id: r.contact_id, contact_kind: r.contact_kind, status: 'recorded', recorded_at: r.recorded_at, message_sent: false })
    if (have) return { created: false, contact: view(have) }
    const row: ContactRow = {
      contact_id: id, contact: cipher ? cipher.sealText(value, contactAad(id)) : value, contact_kind: kind, consent: true, source: input.source, seat: input.seat,
      recorded_at: iso(this.options.clock.now()),
    }
    await this.contacts.append([row])
    this.book.applyContact(row)
    return { created: true, contact: view(this.book.contacts.get(id)!) }
  }

  // ------------------------------------------------------------ lifecycle

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    for (const s of this.subscriptions) s.unsubscribe()
    for (const t of this.timers) clearTimeout(t)
    this.timers.clear()
    this.waiting.length = 0
    while (this.inflight > 0) await sleep(10)
    for (const f of this.followers) await f.stop()
  }
}

/** How a receiver verifies a delivery (also in README, "Delivery"). */
export const SIGNATURE_DOC = {
  scheme: 'Standard Webhooks v1 (HMAC-SHA256)',
  headers: ['X-Svc-Delivery-Id', 'X-Svc-Timestamp', 'X-Svc-Signature', 'webhook-id', 'webhook-timestamp', 'webhook-signature'],
  signed_string: '<X-Svc-Delivery-Id>.<X-Svc-Timestamp>.<raw body>',
  signature: "'v1,' + base64(HMAC-SHA256(base64-decode(secret without 'whsec_'), signed_string))",
  replay: 'refuse a timestamp more than 5 minutes from your clock; dedupe on X-Svc-Delivery-Id (a retry or re-delivery keeps it)',
} as const

