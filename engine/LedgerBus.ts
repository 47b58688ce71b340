/**
 * The ledger's events, for whoever reacts to them without reaching into the engine: a decision entered the ledger (the
 * resolvers start its clock), a clock resolved (the outcome bus: the duel grades calls, delivery fires hooks, the Arena
 * awards XP).
 *
 * Spec, States (Decision clock, pending → obtains | not | unresolvable): "resolution written; bound hooks fire; player
 * calls graded; feed gains a chip". Events 1: "when a clock writes its resolution, the service (a) grades bound player
 * calls, (b) fires each armed resolution hook, (c) fires every outcome hook endpoint whose payer matches, and (d)
 * delivers a resolution sentence to each follow".
 *
 * Delivery is at-least-once and subscribers are idempotent by decision_id:
 * - a subscriber gets every event already in the ledger when it subscribes (the ledger index is rebuilt from the log
 *   at every start, so after a restart it sees every resolution again, including one that happened while the service
 *   was down), then every new one;
 * - within one process an event reaches a subscriber once per decision_id (the index admits each id once);
 * - a handler that throws is retried (HANDLER_RETRY), then the failure is logged with the decision id and the
 *   subscriber moves on; its own journal is what tells it, at the next start, what it has already done.
 * A subscriber's events are handled one at a time, in the order the ledger learned them.
 */
import { childLogger } from '../common/logger.ts'
import { RetryPolicy } from '../pipeline/work/RetryPolicy.ts'
import type { LedgerDecision } from '../pipeline/records/decisionRecord.ts'
import type { LedgerOutcome } from '../pipeline/records/outcomeRecord.ts'

const log = childLogger('ledger-bus')

/** A clock resolved: the outcome and the decision it resolves. */
export interface ResolutionEvent {
  decision: LedgerDecision
  outcome: LedgerOutcome
}

export type Handler<E> = (event: E) => void | Promise<void>

/**
 * A failing handler: three retries within about 3 s (waits 100, 500, 2500 ms, jittered). Any error is retried while
 * the subscriber is active: a handler's failure is its domain's, not a code of the closed union.
 */
const HANDLER_RETRY = new RetryPolicy({ attempts: 4, baseMs: 100, factor: 5, capMs: 3000 })

export interface Subscription {
  readonly name: string
  /** Events whose handler failed every attempt. */
  readonly failures: number
  /** Resolves once every event delivered so far was handled. */
  idle(): Promise<void>
  unsubscribe(): void
}

/** One event stream with the bus semantics above; exported so product domains publish their own events the same way. */
export class Channel<E> {
  private readonly subscribers = new Set<Subscriber<E>>()

  constructor(
    readonly kind: string,
    private readonly existing: () => Iterable<E>,
    private readonly idOf: (e: E) => string,
  ) {}

  subscribe(name: string, handler: Handler<E>, options: { replay?: boolean } = {}): Subscription {
    const s = new Subscriber(`${this.kind}:${name}`, handler, this.idOf, () => this.subscribers.delete(s))
    this.subscribers.add(s)
    if (options.replay ?? true) for (const e of this.existing()) s.deliver(e)
    return s
  }

  publish(event: E): void {
    for (const s of this.subscribers) s.deliver(event)
  }
}

class Subscriber<E> implements Subscription {
  private readonly seen = new Set<string>()
  private readonly queue: E[] = []
  /** Set while an asynchronous handler (or a retry) is in flight; events queue behind it. */
  private busy: Promise<void> | null = null
  failures = 0
  private active = true

  constructor(
    readonly name: string,
    private readonly handler: Handler<E>,
    private readonly idOf: (e: E) => string,
    private readonly remove: () => void,
  ) {}

  deliver(event: E): void {
    const id = this.idOf(event)
    if (this.seen.has(id) || !this.active) return
    this.seen.add(id)
    this.queue.push(event)
    if (this.busy === null) this.drain()
  }

  /**
   * Runs queued events; a synchronous handler runs within deliver() itself (the engine's resolvers start a clock in
   * the same tick that staged its decision, so replay stays deterministic), an asynchronous one holds the queue until
   * it settled.
   */
  private drain(): void {
    while (this.queue.length > 0 && this.active) {
      const event = this.queue.shift()!
      let result: void | Promise<void>
      try {
        result = this.handler(event)
      } catch (err) {
        result = Promise.reject(err)
      }
      if (result instanceof Promise) {
        this.busy = result
          .catch((err: unknown) => this.retry(event, err))
          .then(() => {
            this.busy = null
            this.drain()
          })
        return
      }
    }
  }

  private async retry(event: E, first: unknown): Promise<void> {
    const id = this.idOf(event)
    let attempts = 1
    try {
      await HANDLER_RETRY.run(
        async (n) => {
          attempts = n
          if (n === 1) throw first // the first attempt already ran, in drain()
          await this.handler(event)
        },
        {
          retryable: () => this.active,
          onRetry: (err, n) => log.warn({ err, subscriber: this.name, decision_id: id, attempt: n }, 'ledger event handler failed; retrying'),
        },
      )
    } catch (err) {
      this.failures++
      log.error({ err, subscriber: this.name, decision_id: id, attempts }, 'ledger event handler failed; moving on')
    }
  }

  async idle(): Promise<void> {
    while (this.busy !== null) await this.busy
  }

  unsubscribe(): void {
    this.active = false
    this.queue.length = 0
    this.remove()
  }
}

export class LedgerBus {
  /** A decision entered the ledger (staged by this process, appended, or written by another writer). */
  readonly decisions: Channel<LedgerDecision>
  /** A clock resolved (its outcome is durable on the log). The outcome bus. */
  readonly resolutions: Channel<ResolutionEvent>
  /**
   * A paid record of a decision already in the ledger: identical inputs asked at once through two instances, each
   * writing its own (DecisionLedger). The ledger keeps the journal's first; this is a later one, whose payment the
   * spec does not charge ("a repeat is not charged"). One event per repeated payment.
   */
  readonly repeats: Channel<LedgerDecision>

  constructor(known: { decisions: () => Iterable<LedgerDecision>; resolutions: () => Iterable<ResolutionEvent>; repeats: () => Iterable<LedgerDecision> }) {
    this.decisions = new Channel('decision', known.decisions, (d) => d.decision_id)
    this.resolutions = new Channel('resolution', known.resolutions, (e) => e.outcome.decision_id)
    this.repeats = new Channel('repeat', known.repeats, (d) => `${d.decision_id} ${d.payment_id}`)
  }
}
