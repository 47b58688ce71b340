/**
 * What delivery needs from outside its folder, as narrow ports the composition root fills (app/ServiceApp.ts): the
 * ledger's reads and outcome bus, and the transports. The URL guard, the pinned HTTP client and the push sender in
 * this folder implement the transport ports; tests give them local receivers.
 */
import type { Channel, ResolutionEvent } from '../../engine/LedgerBus.ts'
import type { LedgerDecision } from '../../pipeline/records/decisionRecord.ts'

import type { CheckedUrl } from './UrlGuard.ts'

/** A URL that passed the guard, with the address it resolved to: deliveries connect to that address and no other. */
export type { CheckedUrl }

export interface UrlChecker {
  /** Throws ServiceError UNSAFE_URL naming the reason; `push` requires https. */
  check(rawUrl: string, purpose: 'hook' | 'push'): Promise<CheckedUrl>
}

export interface PostResult {
  status: number | null
  latency_ms: number
  /** null: a 2xx answer. */
  error_class: string | null
  location?: string
}

export interface HookTransport {
  post(target: CheckedUrl, body: Buffer | string, headers: Record<string, string>): Promise<PostResult>
}

export interface PushSubscription {
  endpoint: string
  keys: { p256dh: string; auth: string }
}

export interface PushSender {
  readonly publicKey: string
  send(subscription: PushSubscription, payload: object): Promise<PostResult>
}

export interface DeliveryLedger {
  decision(decisionId: string): LedgerDecision | null
  /** The service's event time now (ms): registrations are stamped with it. */
  clockNow(): number
  readonly resolutions: Pick<Channel<ResolutionEvent>, 'subscribe'>
  readonly decisions: Pick<Channel<LedgerDecision>, 'subscribe'>
}
