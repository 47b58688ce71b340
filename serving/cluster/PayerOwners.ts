/**
 * The transport half of payer ownership (issue 32): a request scoped to a payer another instance owns
 * (product/billing/PayerOwnership.ts) is forwarded to that owner with a peer token and its answer relayed unchanged
 * (PeerForwarder.ts); one for a partition this instance has just taken waits for its catch-up. Which requests are
 * payer-scoped is the route registry's (Dispatcher.payerScope), not a list here.
 *
 * One hop: a request carrying a valid peer token is served by the instance it reached, even if the partition moved
 * on meanwhile (the lease's overlap window, docs/decisions.md); an invalid token is refused. An owner that cannot be
 * reached, or a partition with no known owner (a rebalance in progress), is a typed 503 PROVIDER_DOWN with
 * retry_after_ms: about the time a rebalance takes, after which the client's retry reaches the new owner.
 */
import type { Logger } from 'pino'
import { ServiceError } from '../../common/ServiceError.ts'
import type { ReasonCode } from '../../common/errors.ts'
import type { PayerOwnership } from '../../product/billing/PayerOwnership.ts'
import type { IncomingRequest } from '../http/UwsAdapter.ts'
import { PEER_HEADER, type ForwardedAnswer, type PeerForwarder } from './PeerForwarder.ts'

/** The wait a 503 for an unreachable or unknown owner asks for: a rebalance's few heartbeats. */
export const OWNER_RETRY_AFTER_MS = 2_000

export class PayerOwners {
  constructor(
    private readonly ownership: PayerOwnership,
    private readonly peers: PeerForwarder,
    private readonly logger: Logger,
  ) {}

  /** True when `req` carries a valid peer token: another instance forwarded it (and rate-limited it already). */
  fromPeer(req: IncomingRequest, nowMs: number): boolean {
    const token = req.header ? req.header(PEER_HEADER) : req.headers[PEER_HEADER]
    return token !== undefined && this.peers.verify(token, req.method, req.query ? `${req.path}?${req.query}` : req.path, nowMs)
  }

  /**
   * Where a request for `payer` is answered: null (here, now), after `ready` (here, once a takeover caught up), or
   * `answer` (the owner's, relayed). Reads the request's headers synchronously (before any await: uWS discipline).
   */
  at(payer: string, req: IncomingRequest, nowMs: number): null | { kind: 'ready'; ready: Promise<void> } | { kind: 'relay'; answer: Promise<ForwardedAnswer> } {
    const token = req.header ? req.header(PEER_HEADER) : req.headers[PEER_HEADER]
    const route = this.ownership.route(payer)
    if (token !== undefined) {
      if (!this.peers.verify(token, req.method, req.query ? `${req.path}?${req.query}` : req.path, nowMs)) {
        throw new ServiceError('OPS_FORBIDDEN', {
          message: 'The peer token of this forwarded request is not valid (wrong signing secret, another request line, or too old).',
          detail: { reason: 'PEER_TOKEN_REJECTED' satisfies ReasonCode, field: `/headers/${PEER_HEADER}` },
        })
      }
      // Forwarded once: served here (never forwarded again), after this instance's catch-up if it is the new owner.
      return route.kind === 'here' && route.ready ? { kind: 'ready', ready: route.ready } : null
    }
    if (route.kind === 'here') return route.ready ? { kind: 'ready', ready: route.ready } : null
    if (route.kind === 'unowned') {
      void this.ownership.refresh().catch(() => undefined)
      throw this.unreachable(payer, route.partition, null)
    }
    const owner = route.owner
    const answer = this.peers.forward(req, owner.url, nowMs).catch(async (err: unknown) => {
      this.logger.warn({ err, owner: owner.instance, url: owner.url }, 'forwarding to the payer\'s owner failed')
      // The owner may have died: who owns what is read again, so the client's retry goes to the new owner.
      await this.ownership.refresh().catch(() => undefined)
      throw this.unreachable(payer, this.ownership.partitionOf(payer), owner.instance)
    })
    return { kind: 'relay', answer }
  }

  private unreachable(payer: string, partition: number, owner: string | null): ServiceError {
    return new ServiceError('PROVIDER_DOWN', {
      message: owner
        ? `The instance that serves this payer's credits (${owner}) cannot be reached; retry after retry_after_ms (another instance takes the payer over when it is gone).`
        : 'No instance serves this payer\'s credits right now (the cluster is rebalancing); retry after retry_after_ms.',
      retryAfterMs: OWNER_RETRY_AFTER_MS,
      detail: { reason: 'PAYER_OWNER_UNREACHABLE' satisfies ReasonCode, payer: payer.toLowerCase(), partition, ...(owner ? { owner } : {}) },
    })
  }
}
