/**
 * Delivery's attempts: the queue every planned delivery goes through, one append-only row per attempt in the delivery
 * record (delivery.attempts), and the one retry (spec, Limits: "Hook retries | one retry").
 *
 * A delivery has a stable id (deliveryId(target, event)); planning one the record already says is final does nothing,
 * one with a failed first attempt resumes at its retry (after retryDelayMs), one with no row is attempted now. So a
 * restart that replays the outcome bus re-makes exactly what the record lacks, and a crash between a POST and its row
 * re-sends the same attempt under the same delivery id (the receiver dedupes on it) while the record keeps one row per
 * attempt (the id `<delivery_id>#<attempt>` admits the first written).
 */
import type { Clock } from '../../common/Clock.ts'
import { childLogger } from '../../common/logger.ts'
import type { Journal } from '../../pipeline/journal/Journal.ts'
import { RetryPolicy } from '../../pipeline/work/RetryPolicy.ts'
import { RetryingWorker, type AttemptVerdict } from '../../pipeline/work/RetryingWorker.ts'
import {
  ATTEMPT_ERROR_CLASSES, deliveryId, type DELIVERY_ATTEMPTS, type AttemptChannel, type AttemptErrorClass, type AttemptRow, type TargetKind,
} from '../../pipeline/records/deliveryRecord.ts'
import type { DeliveryBook } from './DeliveryBook.ts'
import type { PostResult } from './ports.ts'

const log = childLogger('delivery')
const ERROR_CLASSES = new Set<string>(ATTEMPT_ERROR_CLASSES)
export const iso = (ms: number) => new Date(ms).toISOString()

/** What one attempt gave; `retry` false makes a failure final at once. */
export type AttemptResult = { status: 'delivered' | 'failed'; http_status: number | null; latency_ms: number | null; error_class: AttemptErrorClass | null; retry: boolean }

/** One delivery to make: what it is, and how to make one attempt of it. */
export interface Job {
  delivery_id: string
  target_kind: TargetKind
  target_id: string
  payer: string | null
  channel: AttemptChannel
  decision_id: string | null
  event_at: string
  attempt: number
  /** Makes the attempt; null result fields mean the attempt could not even start (recorded as failed). */
  run: () => Promise<AttemptResult>
}

export class Attempts {
  /** Limits: one retry (two attempts), after the configured wait; no jitter, so the wait is the documented one. */
  private readonly worker: RetryingWorker<Job>

  constructor(
    private readonly book: DeliveryBook,
    private readonly attempts: Journal<typeof DELIVERY_ATTEMPTS.schema>,
    private readonly clock: Clock,
    /** Wait before the one retry (ms). */
    retryDelayMs: number,
    /** Attempts in flight at once. */
    concurrency: number,
  ) {
    this.worker = new RetryingWorker<Job>({
      policy: new RetryPolicy({ attempts: 2, baseMs: retryDelayMs, jitter: 0 }),
      concurrency,
      key: (job) => job.delivery_id,
      attempt: (job, n, last) => this.attempt(job, n, last),
    })
  }

  /** Whether a delivery is queued, in flight or waiting for its retry (alert cooldowns count those as sent). */
  isQueued(deliveryIdOf: string): boolean {
    return this.worker.has(deliveryIdOf)
  }

  /** Queues a delivery unless the record says it is done or it is already queued; a failed first attempt resumes at its retry. */
  plan(job: Job): void {
    if (this.worker.closed || this.worker.has(job.delivery_id)) return
    const progress = this.book.deliveries.get(job.delivery_id)
    if (progress?.final) return
    this.worker.submit(job, progress ? progress.attempts + 1 : 1)
  }

  /** A delivery that fails without trying (one final failed row): a channel not configured, no device. */
  failedJob(id: string, kind: TargetKind, targetId: string, payer: string, channel: AttemptChannel, decisionId: string, eventAt: string, error: AttemptErrorClass): Job {
    return {
      delivery_id: id, target_kind: kind, target_id: targetId, payer, channel, decision_id: decisionId, event_at: eventAt, attempt: 1,
      run: async () => ({ status: 'failed', http_status: null, latency_ms: null, error_class: error, retry: false }),
    }
  }

  /** Spec, Events 1: "A channel not configured on the deployment fails visibly" (one final failed row). */
  planUnconfigured(kind: 'follow' | 'alert', targetId: string, payer: string, channel: AttemptChannel, decisionId: string, eventAt: string): void {
    this.plan(this.failedJob(deliveryId(kind, targetId, decisionId, channel), kind, targetId, payer, channel, decisionId, eventAt, 'channel_unconfigured'))
  }

  /** A transport's answer as an attempt result. */
  static outcomeOf(r: PostResult): AttemptResult {
    if (r.error_class === null) return { status: 'delivered', http_status: r.status, latency_ms: Math.round(r.latency_ms), error_class: null, retry: false }
    const cls = (ERROR_CLASSES.has(r.error_class) ? r.error_class : 'error') as AttemptErrorClass
    // A redirect is never followed and a gone device is disabled: retrying either changes nothing.
    return { status: 'failed', http_status: r.status, latency_ms: Math.round(r.latency_ms), error_class: cls, retry: cls !== 'redirect' && cls !== 'gone' }
  }

  /** One attempt and its row; a failure that may be retried (and was recorded) asks the worker for the next attempt. */
  private async attempt(job: Job, n: number, last: boolean): Promise<AttemptVerdict> {
    job.attempt = n
    let r: AttemptResult
    try {
      r = await job.run()
    } catch (err) {
      log.warn({ err, delivery_id: job.delivery_id }, 'delivery attempt failed unexpectedly')
      r = { status: 'failed', http_status: null, latency_ms: null, error_class: 'error', retry: true }
    }
    // Limits: one retry. The second attempt is the last, whatever it gives.
    const final = r.status === 'delivered' || !r.retry || last
    const row: AttemptRow = {
      v: 1, id: `${job.delivery_id}#${job.attempt}`, delivery_id: job.delivery_id, attempt: job.attempt, target_kind: job.target_kind, target_id: job.target_id,
      payer: job.payer, channel: job.channel, decision_id: job.decision_id, status: r.status, final, http_status: r.http_status, latency_ms: r.latency_ms,
      error_class: r.error_class, event_at: job.event_at, attempted_at: iso(this.clock.now()),
    }
    if (this.worker.closed) return 'done'
    try {
      await this.attempts.append([row])
    } catch (err) {
      // Not recorded: the next start re-makes this attempt under the same delivery id.
      log.error({ err, delivery_id: job.delivery_id, attempt: job.attempt }, 'delivery attempt not recorded')
      return 'done'
    }
    this.book.applyAttempt(row)
    return final ? 'done' : 'retry'
  }

  /** Resolves once nothing is queued, in flight or waiting for its retry. */
  idle(): Promise<void> {
    return this.worker.idle()
  }

  /** Stops planning and retrying, and waits for the attempts in flight (their rows are not written once closed). */
  close(): Promise<void> {
    return this.worker.close()
  }
}
