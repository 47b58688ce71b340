/**
 * Delivery's push channel (spec, States: Push device): a payer's push devices (Web Push subscriptions, registered
 * through the URL guard, their endpoint and keys sealed at rest with a key) and the push deliveries a follow or an
 * alert watch makes to them, one per active device. A push service answering gone disables the device.
 */
import { deliveryId } from '../../pipeline/records/deliveryRecord.ts'
import { Attempts } from './Attempts.ts'
import type { DeliveryBook, DeviceState } from './DeliveryBook.ts'
import type { PushSender, PushSubscription, UrlChecker } from './ports.ts'
import { hash, type Registrations } from './Registrations.ts'
import type { DeviceView, PushConfig } from './schemas.ts'
import { WebPushSender } from './WebPushSender.ts'

export class PushDevices {
  constructor(
    private readonly book: DeliveryBook,
    private readonly registrations: Registrations,
    private readonly attempts: Attempts,
    private readonly guard: UrlChecker,
    /** null: push is not configured on this deployment (its channel fails visibly). */
    private readonly push: PushSender | null,
  ) {}

  /** Spec, Delivery resources: "Push config | { configured: boolean, vapid_public_key: string or null }". */
  pushConfig(): PushConfig {
    return { configured: this.push !== null, vapid_public_key: this.push?.publicKey ?? null }
  }

  deviceId(payer: string, endpoint: string): string {
    return `pd_${hash([payer.toLowerCase(), endpoint])}`
  }

  async registerDevice(payer: string, sub: PushSubscription): Promise<{ created: boolean; device: DeviceView }> {
    const p = payer.toLowerCase()
    // Keys that could never decrypt (a point off the curve, a short auth secret) are refused now, naming the field.
    WebPushSender.assertSubscription(sub, '/body/subscription')
    await this.guard.check(sub.endpoint, 'push')
    const id = this.deviceId(p, sub.endpoint)
    const had = this.book.devices.get(id)
    await this.registrations.record(this.registrations.row('device', id, p, 'registered', sub.endpoint, { keys: { p256dh: sub.keys.p256dh, auth: sub.keys.auth } }))
    return { created: !had, device: this.deviceView(this.book.devices.get(id)!) }
  }

  private deviceView(d: DeviceState): DeviceView {
    // The endpoint passed the guard at registration, so it parses.
    return { device_id: d.device_id, host: new URL(d.endpoint).host, created_at: d.created_at, updated_at: d.updated_at, disabled_at: d.disabled_at, active: d.disabled_at === null }
  }

  listDevices(payer: string): DeviceView[] {
    return (this.book.devicesByPayer.get(payer.toLowerCase()) ?? []).map((d) => this.deviceView(d))
  }

  async disableDevice(payer: string, deviceId: string): Promise<DeviceView> {
    const d = this.book.devices.get(deviceId)
    if (!d || d.payer !== payer.toLowerCase()) return { device_id: deviceId, found: false, active: false }
    await this.disable(d, 'deleted by its owner')
    return { ...this.deviceView(d), found: true }
  }

  private async disable(d: DeviceState, why: string): Promise<void> {
    if (d.disabled_at !== null) return
    await this.registrations.record(this.registrations.row('device', d.device_id, d.payer, 'disabled', d.endpoint, { why }))
  }

  /**
   * One push per device active at the event's time; none active is one final failed row (no_device); push not
   * configured on the deployment is one final failed row (channel_unconfigured).
   */
  planPush(kind: 'follow' | 'alert', targetId: string, payer: string, decisionId: string, eventAt: string, payload: Record<string, unknown>): void {
    const push = this.push
    if (!push) return this.attempts.planUnconfigured(kind, targetId, payer, 'push', decisionId, eventAt)
    const at = Date.parse(eventAt)
    const devices = (this.book.devicesByPayer.get(payer) ?? []).filter((d) => d.disabled_at === null && d.active_since <= at)
    if (devices.length === 0) {
      this.attempts.plan(this.attempts.failedJob(deliveryId(kind, targetId, decisionId, 'push'), kind, targetId, payer, 'push', decisionId, eventAt, 'no_device'))
      return
    }
    for (const device of devices) {
      const id = deliveryId(kind, targetId, decisionId, device.device_id)
      this.attempts.plan({
        delivery_id: id, target_kind: kind, target_id: targetId, payer, channel: 'push', decision_id: decisionId, event_at: eventAt, attempt: 1,
        run: async () => {
          if (device.disabled_at !== null) return { status: 'failed', http_status: null, latency_ms: null, error_class: 'target_inactive', retry: false }
          const result = await push.send({ endpoint: device.endpoint, keys: device.keys } satisfies PushSubscription, { ...payload, delivery_id: id })
          if (result.error_class === 'gone') await this.disable(device, 'the push service answered gone')
          return Attempts.outcomeOf(result)
        },
      })
    }
  }
}
