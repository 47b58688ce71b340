/**
 * Delivery's dispatch: what each event of the engine's outcome bus becomes (spec, Events 1-4). A resolution goes to
 * (b) each armed resolution hook of its decision, (c) every active outcome hook endpoint of the payer who paid for
 * the decision, (d) each follow of its question and subject on the channels of its bitmask, and resolution alert
 * watches; a new decision goes to probability and refusal alert watches. Each becomes one planned delivery per target
 * (Attempts), with a stable delivery id.
 *
 * The bus replays every resolution and decision on subscribe, so dispatch also runs at every start over the whole
 * history: follows, endpoints and alert watches apply only to events at or after the service event time they were made
 * at (clock_at), and the record decides what was already delivered, so a replay never notifies about the past twice.
 */
import type { Clock } from '../../common/Clock.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import type { ResolutionEvent } from '../../engine/LedgerBus.ts'
import type { LedgerDecision } from '../../pipeline/records/decisionRecord.ts'
import { deliveryId } from '../../pipeline/records/deliveryRecord.ts'
import { Attempts, iso, type Job } from './Attempts.ts'
import type { DeliveryBook } from './DeliveryBook.ts'
import { HookSigner, type StoredSecret } from './HookSigner.ts'
import type { CheckedUrl, HookTransport, UrlChecker } from './ports.ts'
import type { PushDevices } from './PushDevices.ts'
import type { Registrations } from './Registrations.ts'
import { CHANNEL_EMAIL, CHANNEL_PUSH, CHANNEL_TELEGRAM, type AlertKind } from './schemas.ts'

export class Dispatch {
  /** Decisions whose clock is terminal (resolved): hooks on them are refused. */
  private readonly resolved = new Set<string>()

  constructor(
    private readonly book: DeliveryBook,
    private readonly attempts: Attempts,
    private readonly registrations: Registrations,
    private readonly push: PushDevices,
    private readonly deps: { guard: UrlChecker; http: HookTransport; signer: HookSigner; clock: Clock },
  ) {}

  isResolved(decisionId: string): boolean {
    return this.resolved.has(decisionId)
  }

  onResolution(e: ResolutionEvent): void {
    const d = e.decision
    const o = e.outcome
    this.resolved.add(d.decision_id)
    const at = Date.parse(o.resolved_at)
    const body = JSON.stringify({ status: 'resolved', decision_id: o.decision_id, outcome: o.outcome, resolved_at: o.resolved_at, statistic: o.statistic })
    // (b) each armed resolution hook of this decision
    for (const h of this.book.hooksByDecision.get(d.decision_id) ?? []) {
      this.attempts.plan(this.httpJob('hook', h.hook_id, h.payer, h.url, h.secret, d.decision_id, o.resolved_at, body))
    }
    // (c) every outcome hook endpoint whose payer matches (the payer who paid for the decision)
    const payer = this.book.asks.get(d.decision_id)
    if (payer) {
      for (const ep of this.book.endpointsByPayer.get(payer) ?? []) {
        // A paused or expired endpoint receives nothing (and records nothing): its window is over.
        if (ep.clock_at > at || !this.registrations.endpointActive(ep)) continue
        this.attempts.plan(this.httpJob('endpoint', ep.endpoint_id, ep.payer, ep.url, ep.secret, d.decision_id, o.resolved_at, body, () => this.registrations.endpointActive(ep)))
      }
    }
    // (d) a resolution sentence to each follow, on the channels of its bitmask; and resolution alerts
    const sentence = `${d.question_id} on ${d.subject ?? d.asset} resolved ${o.outcome} (the house said ${d.probability}).`
    const payload = { type: 'resolution', decision_id: d.decision_id, question_id: d.question_id, asset: d.asset, subject: d.subject, outcome: o.outcome, resolved_at: o.resolved_at, text: sentence }
    for (const f of this.book.watchersOf(this.book.followsBySubject, d)) {
      if (f.removed_at !== null || f.clock_at > at || f.question_id !== d.question_id) continue
      if (f.channels & CHANNEL_PUSH) this.push.planPush('follow', f.follow_id, f.payer, d.decision_id, o.resolved_at, payload)
      if (f.channels & CHANNEL_EMAIL) this.attempts.planUnconfigured('follow', f.follow_id, f.payer, 'email', d.decision_id, o.resolved_at)
      if (f.channels & CHANNEL_TELEGRAM) this.attempts.planUnconfigured('follow', f.follow_id, f.payer, 'telegram', d.decision_id, o.resolved_at)
    }
    this.alertsFor('resolution', d, at, { ...payload, type: 'alert.resolution' })
  }

  onDecision(d: LedgerDecision): void {
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
      if (!this.book.deliveries.has(first) && !this.attempts.isQueued(first)) {
        const last = this.book.alertLastSent.get(a.alert_id) ?? -Infinity
        if (at - last < a.cooldown_s * 1000) continue
        this.book.alertLastSent.set(a.alert_id, at)
      }
      this.push.planPush('alert', a.alert_id, a.payer, d.decision_id, iso(at), { ...payload, alert_id: a.alert_id, kind: a.kind, threshold: a.threshold })
    }
  }

  /** A signed POST of `body` to a hook or endpoint: the URL re-checked by the guard before each attempt. */
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
          target = await this.deps.guard.check(url, 'hook')
        } catch (err) {
          if (err instanceof ServiceError && err.code === 'UNSAFE_URL') return { status: 'failed', http_status: null, latency_ms: null, error_class: 'unsafe_url', retry: true }
          throw err
        }
        const secret = this.deps.signer.secretOf(targetId, stored)
        const headers = {
          'content-type': 'application/json',
          ...HookSigner.sign(secret, id, Math.floor(this.deps.clock.now() / 1000), body),
        }
        return Attempts.outcomeOf(await this.deps.http.post(target, body, headers))
      },
    }
  }
}
