/**
 * Delivery's wiring from the configuration (SVC_SIGNING_SECRET, SVC_DELIVERY_KEY, SVC_PUSH_SUBJECT, SVC_VAPID_*,
 * SVC_DELIVERY_ALLOW, SVC_HOOK_RETRY_MS, SVC_CONTACTS): one URL guard, used at registration and before every attempt;
 * one pinned HTTP client (hooks and push alike connect to the address the guard checked); the push sender only when
 * a VAPID subject is configured; secrets and state under <data dir>/delivery.
 */
import { join } from 'node:path'
import type { Clock } from '../common/Clock.ts'
import type { EventLog } from '../pipeline/log/EventLog.ts'
import { DeliveryService } from '../product/delivery/DeliveryService.ts'
import { guardedPushTransport } from '../product/delivery/guardedPushTransport.ts'
import { HookSigner } from '../product/delivery/HookSigner.ts'
import { PinnedHttpClient } from '../product/delivery/PinnedHttpClient.ts'
import type { DeliveryLedger, PushSender } from '../product/delivery/ports.ts'
import { UrlGuard } from '../product/delivery/UrlGuard.ts'
import { WebPushSender } from '../product/delivery/WebPushSender.ts'
import type { Lease } from '../pipeline/log/Lease.ts'
import type { CheckpointSettings } from '../pipeline/state/StateStore.ts'
import type { AppConfig } from './config.ts'

export type DeliveryConfig = Pick<
  AppConfig,
  'SVC_SIGNING_SECRET' | 'SVC_DELIVERY_KEY' | 'SVC_PUSH_SUBJECT' | 'SVC_VAPID_PUBLIC_KEY' | 'SVC_VAPID_PRIVATE_KEY' | 'SVC_DELIVERY_ALLOW' | 'SVC_HOOK_RETRY_MS' | 'SVC_CONTACTS'
>

export async function openDelivery(options: {
  config: DeliveryConfig
  dataDir: string
  log: EventLog
  ledger: DeliveryLedger
  clock: Clock
  partitions?: number
  /** The delivery book's snapshots (issue 31); absent: rebuilt from its journals at every start. */
  checkpoints?: CheckpointSettings | null
  /** Several instances: only this lease's holder delivers (DeliveryOptions.dispatchLease). */
  dispatchLease?: Lease | null
}): Promise<DeliveryService> {
  const { config } = options
  const dir = join(options.dataDir, 'delivery')
  const allow = config.SVC_DELIVERY_ALLOW ? config.SVC_DELIVERY_ALLOW.split(',').map((c) => c.trim()) : []
  const guard = UrlGuard.create({ allow })
  // NODE_EXTRA_CA_CERTS adds a private CA to the roots the client verifies receivers against.
  const http = PinnedHttpClient.create({ timeoutMs: 5000 })
  const signer = await HookSigner.open({ dir, signingSecret: config.SVC_SIGNING_SECRET ?? null, key: config.SVC_DELIVERY_KEY ?? null })
  let push: PushSender | null = null
  if (config.SVC_PUSH_SUBJECT) {
    push = await WebPushSender.open({
      dir,
      subject: config.SVC_PUSH_SUBJECT,
      ...(config.SVC_VAPID_PUBLIC_KEY && config.SVC_VAPID_PRIVATE_KEY ? { vapid: { publicKey: config.SVC_VAPID_PUBLIC_KEY, privateKey: config.SVC_VAPID_PRIVATE_KEY } } : {}),
      // Push services are delivered to like hooks: the guard (https only) before each send, the checked address only.
      transport: guardedPushTransport(guard, http),
    })
  }
  return DeliveryService.open({
    log: options.log,
    ledger: options.ledger,
    guard,
    http,
    push,
    signer,
    clock: options.clock,
    recordContacts: config.SVC_CONTACTS === 'record',
    retryDelayMs: config.SVC_HOOK_RETRY_MS,
    ...(options.partitions ? { partitions: options.partitions } : {}),
    checkpoints: options.checkpoints ?? null,
    dispatchLease: options.dispatchLease ?? null,
  })
}
