/**
 * Delivery's registrations: what a payer arms, registers, follows and watches (spec, Delivery resources; States:
 * Resolution hook, Outcome hook endpoint), each change one record of delivery.registrations (sealed at rest with a
 * key: sealing.ts), and which payer paid for which decision (delivery.asks). Push devices are registered by
 * PushDevices through the same writer (record). Paid registrations (hooks, endpoints) and asks are staged in the
 * paid call's unit of work, so they are durable exactly when the payment is.
 */
import { createHash, randomUUID } from 'node:crypto'
import type { Clock } from '../../common/Clock.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import type { Journal } from '../../pipeline/journal/Journal.ts'
import type { PaidCall } from '../../pipeline/journal/PaidCall.ts'
import type { UnitOfWork } from '../../pipeline/journal/UnitOfWork.ts'
import type { LedgerDecision } from '../../pipeline/records/decisionRecord.ts'
import type { DELIVERY_ASKS, DELIVERY_REGISTRATIONS, RegistrationEvent, RegistrationRow, TargetKind } from '../../pipeline/records/deliveryRecord.ts'
import { iso } from './Attempts.ts'
import { ENDPOINT_WINDOW_MS, type AlertState, type DeliveryBook, type EndpointState, type FollowState } from './DeliveryBook.ts'
import type { HookSigner } from './HookSigner.ts'
import type { DeliveryLedger, UrlChecker } from './ports.ts'
import {
  CHANNEL_EMAIL, CHANNEL_PUSH, CHANNEL_TELEGRAM, SIGNATURE_DOC,
  type AlertDeleted, type AlertKind, type AlertView, type EndpointView, type FollowRemoved, type FollowView, type HookArmed, type HookRequest, type SubjectKind,
} from './schemas.ts'
import { sealRegistration } from './sealing.ts'

/** Limits: "Outcome hook endpoints | 10 active per payer"; "Alert watches | 50 active per payer". */
export const ENDPOINT_CAP = 10
export const ALERT_CAP = 50

/** A short stable id from its parts (follows, alerts, devices: the same request is the same target). */
export const hash = (parts: string[]) => createHash('sha256').update(parts.join('|')).digest('hex').slice(0, 24)
const signatureDoc = () => ({ ...SIGNATURE_DOC, headers: [...SIGNATURE_DOC.headers] })

export interface RegistrationDeps {
  ledger: DeliveryLedger
  guard: UrlChecker
  signer: HookSigner
  /** Wall clock (registration stamps, the 30-day window). */
  clock: Clock
  /** Whether a decision's clock is resolved (Dispatch knows, from the outcome bus). */
  isResolved: (decisionId: string) => boolean
  /** Whether this deployment sends push (a follow's push channel is otherwise unconfigured). */
  pushConfigured: boolean
}

export class Registrations {
  /** Endpoints (payer|url) staged in a paid unit and not durable yet: they count toward the cap, and a concurrent twin is refused. */
  private readonly pendingUrls = new Set<string>()

  constructor(
    private readonly book: DeliveryBook,
    private readonly registrations: Journal<typeof DELIVERY_REGISTRATIONS.schema>,
    private readonly asks: Journal<typeof DELIVERY_ASKS.schema>,
    private readonly deps: RegistrationDeps,
  ) {}

  // ------------------------------------------------------------ the writer

  /** A registration record as stored (sealing.ts: with a key, its url and push keys sealed). */
  row(kind: TargetKind, targetId: string, payer: string | null, event: RegistrationEvent, url: string | null, spec: Record<string, unknown>, paymentId: string | null = null): RegistrationRow {
    const row: RegistrationRow = {
      v: 1, id: `reg_${randomUUID()}`, target_kind: kind, target_id: targetId, payer, event, url, spec, payment_id: paymentId,
      recorded_at: iso(this.deps.clock.now()), clock_at: iso(this.deps.ledger.clockNow()),
    }
    return sealRegistration(row, this.deps.signer.cipher)
  }

  async record(row: RegistrationRow): Promise<void> {
    await this.registrations.append([row])
    this.book.applyRegistration(row)
  }

  // ------------------------------------------------------------ resolution hooks

  /**
   * POST /v1/hooks refusals, before the payment (States, Resolution hook): unknown decision (null), a terminal clock
   * (409 HOOK_CLOCK_TERMINAL pointing at the resolution route), a URL the guard refuses (400 UNSAFE_URL).
   */
  async checkHook(input: HookRequest): Promise<LedgerDecision | null> {
    const d = this.deps.ledger.decision(input.decision_id.toLowerCase())
    if (!d) return null
    if (this.deps.isResolved(d.decision_id)) {
      throw new ServiceError('HOOK_CLOCK_TERMINAL', { detail: { decision_id: d.decision_id, resolution: `/v1/resolutions/${d.decision_id}` } })
    }
    await this.deps.guard.check(input.url, 'hook')
    return d
  }

  async armHook(input: HookRequest, payment: PaidCall, unit: UnitOfWork): Promise<HookArmed | null> {
    const d = await this.checkHook(input)
    if (!d) return null
    const hookId = `hk_${randomUUID().replaceAll('-', '')}`
    const { secret, stored } = this.deps.signer.newSecret(hookId)
    const row = this.row('hook', hookId, payment.payer?.toLowerCase() ?? null, 'armed', input.url, { decision_id: d.decision_id, secret: stored }, payment.payment_id)
    unit.add(this.registrations, [row], { applied: () => this.book.applyRegistration(row) })
    return {
      hook_id: hookId,
      decision_id: d.decision_id,
      url: input.url,
      status: 'armed',
      horizon_end: d.horizon_end,
      secret,
      signature: signatureDoc(),
      delivery_record: 'every attempt is one row of the delivery record (DuckDB view delivery_attempts); this response does not mean the receiver is live',
    }
  }

  // ------------------------------------------------------------ outcome hook endpoints

  endpointActive(ep: EndpointState): boolean {
    return ep.paused_at === null && Date.parse(ep.expires_at) > this.deps.clock.now()
  }

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
    await this.deps.guard.check(url, 'hook')
    return null
  }

  newEndpointId(): string {
    return `he_${randomUUID().replaceAll('-', '')}`
  }

  /** Registers (charged: the payment's debit carries ref = endpoint_id) or replays (not charged, no secret). */
  async registerEndpoint(payer: string, url: string, endpointId: string, payment: PaidCall, unit: UnitOfWork): Promise<{ replayed: boolean; endpoint: EndpointView }> {
    const p = payer.toLowerCase()
    const same = await this.checkEndpoint(p, url)
    if (same) return { replayed: true, endpoint: this.endpointReplay(same) }
    const key = `${p}|${url}`
    if (this.pendingUrls.has(key)) throw new ServiceError('RATE_LIMITED', { message: 'This URL is being registered by a concurrent request.', retryAfterMs: 1000 })
    const { secret, stored } = this.deps.signer.newSecret(endpointId)
    const now = this.deps.clock.now()
    const row = this.row('endpoint', endpointId, p, 'registered', url, { expires_at: iso(now + ENDPOINT_WINDOW_MS), secret: stored }, payment.payment_id)
    this.pendingUrls.add(key)
    unit.add(this.registrations, [row], {
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
    return {
      replayed: false,
      endpoint: {
        ...this.endpointView(state), secret, signature: signatureDoc(),
        secret_storage: stored.alg === 'A256GCM' ? 'encrypted (AES-256-GCM)' : 'derived from the deployment signing secret',
      },
    }
  }

  /** The answer to re-registering an active URL: the endpoint as registered, without its secret. */
  endpointReplay(e: EndpointState): EndpointView {
    return { ...this.endpointView(e), replayed: true }
  }

  private endpointView(e: EndpointState): EndpointView {
    const now = this.deps.clock.now()
    const status = e.paused_at !== null ? 'paused' : Date.parse(e.expires_at) <= now ? 'expired' : 'registered'
    return {
      endpoint_id: e.endpoint_id, url: e.url, status, registered_at: e.registered_at, expires_at: e.expires_at, paused_at: e.paused_at,
      deliveries: this.book.countsOf(e.endpoint_id),
    }
  }

  listEndpoints(payer: string): EndpointView[] {
    // Newest first; the log interleaves targets' partitions, so the order is set here, not by arrival.
    return [...(this.book.endpointsByPayer.get(payer.toLowerCase()) ?? [])]
      .sort((a, b) => (a.registered_at < b.registered_at ? 1 : a.registered_at > b.registered_at ? -1 : a.endpoint_id < b.endpoint_id ? -1 : 1))
      .map((e) => this.endpointView(e))
  }

  /** DELETE by the owner only: a foreign or unknown id is null (404). Pausing keeps the history; a second delete is data. */
  async pauseEndpoint(payer: string, endpointId: string): Promise<EndpointView | null> {
    const e = this.book.endpoints.get(endpointId)
    if (!e || e.payer !== payer.toLowerCase()) return null
    if (e.paused_at === null) await this.record(this.row('endpoint', e.endpoint_id, e.payer, 'paused', e.url, {}))
    return this.endpointView(e)
  }

  // ------------------------------------------------------------ follows

  followId(payer: string, q: { question_id: string; subject_kind: SubjectKind; subject: string }): string {
    return `fl_${hash([payer.toLowerCase(), q.question_id, q.subject_kind, q.subject])}`
  }

  /** Idempotent: the same (question, subject) is the same follow; a POST changing channels updates them. */
  async setFollow(payer: string, q: { question_id: string; subject_kind: SubjectKind; subject: string; channels: number }): Promise<{ created: boolean; follow: FollowView }> {
    const p = payer.toLowerCase()
    const subject = q.subject_kind === 'wallet' ? q.subject.toLowerCase() : q.subject
    const id = this.followId(p, { ...q, subject })
    const have = this.book.follows.get(id)
    const created = !have || have.removed_at !== null
    if (created || have.channels !== q.channels) {
      await this.record(this.row('follow', id, p, 'set', null, { question_id: q.question_id, subject_kind: q.subject_kind, subject, channels: q.channels }))
    }
    return { created, follow: this.followView(this.book.follows.get(id)!) }
  }

  private followView(f: FollowState): FollowView {
    const unconfigured: FollowView['channels_unconfigured'] = [
      ...(f.channels & CHANNEL_PUSH && !this.deps.pushConfigured ? (['push'] as const) : []),
      ...(f.channels & CHANNEL_EMAIL ? (['email'] as const) : []),
      ...(f.channels & CHANNEL_TELEGRAM ? (['telegram'] as const) : []),
    ]
    return {
      follow_id: f.follow_id, question_id: f.question_id, subject_kind: f.subject_kind, subject: f.subject, channels: f.channels,
      channels_unconfigured: unconfigured, created_at: f.created_at, updated_at: f.updated_at, active: f.removed_at === null,
      deliveries: this.book.countsOf(f.follow_id),
    }
  }

  listFollows(payer: string): FollowView[] {
    return (this.book.followsByPayer.get(payer.toLowerCase()) ?? []).filter((f) => f.removed_at === null).map((f) => this.followView(f))
  }

  /** Spec: "deleting a follow that is absent is data, not an error". */
  async removeFollow(payer: string, followId: string): Promise<FollowRemoved> {
    const f = this.book.follows.get(followId)
    if (!f || f.payer !== payer.toLowerCase() || f.removed_at !== null) return { follow_id: followId, removed: false, was_following: false }
    await this.record(this.row('follow', f.follow_id, f.payer, 'removed', null, {}))
    return { follow_id: followId, removed: true, was_following: true }
  }

  // ------------------------------------------------------------ alert watches

  alertId(payer: string, a: { kind: AlertKind; question_id: string | null; subject_kind: SubjectKind; subject: string; threshold: number | null }): string {
    return `al_${hash([payer.toLowerCase(), a.kind, a.question_id ?? '*', a.subject_kind, a.subject, String(a.threshold)])}`
  }

  async createAlert(
    payer: string,
    a: { kind: AlertKind; question_id: string | null; subject_kind: SubjectKind; subject: string; threshold: number | null; cooldown_s: number },
  ): Promise<{ created: boolean; alert: AlertView }> {
    const p = payer.toLowerCase()
    const subject = a.subject_kind === 'wallet' ? a.subject.toLowerCase() : a.subject
    const id = this.alertId(p, { ...a, subject })
    const have = this.book.alerts.get(id)
    if (have && have.deleted_at === null) return { created: false, alert: this.alertView(have) }
    const active = (this.book.alertsByPayer.get(p) ?? []).filter((x) => x.deleted_at === null).length
    if (active >= ALERT_CAP) throw new ServiceError('ALERT_CAP', { detail: { active, cap: ALERT_CAP } })
    await this.record(this.row('alert', id, p, 'created', null, { kind: a.kind, question_id: a.question_id, subject_kind: a.subject_kind, subject, threshold: a.threshold, cooldown_s: a.cooldown_s }))
    return { created: true, alert: this.alertView(this.book.alerts.get(id)!) }
  }

  private alertView(a: AlertState): AlertView {
    return {
      alert_id: a.alert_id, kind: a.kind, question_id: a.question_id, subject_kind: a.subject_kind, subject: a.subject, threshold: a.threshold,
      cooldown_s: a.cooldown_s, created_at: a.created_at, active: a.deleted_at === null, deliveries: this.book.countsOf(a.alert_id),
    }
  }

  listAlerts(payer: string): AlertView[] {
    return (this.book.alertsByPayer.get(payer.toLowerCase()) ?? []).filter((a) => a.deleted_at === null).map((a) => this.alertView(a))
  }

  async deleteAlert(payer: string, alertId: string): Promise<AlertDeleted> {
    const a = this.book.alerts.get(alertId)
    if (!a || a.payer !== payer.toLowerCase() || a.deleted_at !== null) return { alert_id: alertId, deleted: false }
    await this.record(this.row('alert', a.alert_id, a.payer, 'deleted', null, {}))
    return { alert_id: alertId, deleted: true }
  }

  // ------------------------------------------------------------ asks

  /** The payer of a paid decision, staged with it, so outcome hook endpoints whose payer matches find it at resolution. */
  recordAskIn(unit: UnitOfWork, payment: PaidCall, decisionId: string): void {
    if (!payment.payer) return
    const row = { decision_id: decisionId, payer: payment.payer.toLowerCase(), payment_id: payment.payment_id, recorded_at: iso(this.deps.clock.now()) }
    unit.add(this.asks, [row], { applied: () => this.book.applyAsk(row) })
  }
}
