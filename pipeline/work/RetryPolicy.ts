/**
 * The one retry policy: bounded attempts, a wait that grows by `factor` per attempt up to `capMs`, with jitter, and
 * the decision whether to retry at all taken from the closed error union (common/CodedError.ts: every stage error
 * carries `retryable` from its code table, e.g. LOG_IO from a timed-out Kafka wait, never LOG_FENCED). Abortable by an
 * AbortSignal: an abort ends a wait at once and rejects with the signal's reason.
 *
 *   const policy = new RetryPolicy({ attempts: 5, baseMs: 200, capMs: 5_000 })
 *   await policy.run(() => admin.createTopics(...), { signal, onRetry: (err, attempt, waitMs) => log.warn(...) })
 *
 * Jitter is "equal jitter" scaled by `jitter`: the wait is d × (1 − jitter × U), U uniform in [0, 1), so concurrent
 * retriers spread out and none waits longer than the schedule says.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { CodedError } from '../../common/CodedError.ts'

export interface RetryPolicyOptions {
  /** Most attempts, the first included (≥ 1); Infinity retries until success, a non-retryable error or an abort. */
  attempts: number
  /** Wait before the second attempt, ms. */
  baseMs: number
  /** Growth of the wait per further attempt (2: doubles; 1: constant). Default 2. */
  factor?: number
  /** Longest wait, ms. Default unbounded. */
  capMs?: number
  /** Fraction of each wait drawn at random, 0..1. Default 0.5. */
  jitter?: number
}

export interface RetryRun {
  signal?: AbortSignal
  /** Whether a failure may succeed on a later attempt. Default: the error's `retryable` flag (RetryPolicy.retryable). */
  retryable?: (err: unknown, attempt: number) => boolean
  /** Called before each wait (logging). */
  onRetry?: (err: unknown, attempt: number, waitMs: number) => void
}

export class RetryPolicy {
  readonly attempts: number
  private readonly factor: number
  private readonly capMs: number
  private readonly jitter: number

  constructor(private readonly options: RetryPolicyOptions, private readonly random: () => number = Math.random) {
    if (!(options.attempts >= 1)) throw new RangeError('RetryPolicy attempts: must be at least 1')
    if (!(options.baseMs >= 0)) throw new RangeError('RetryPolicy baseMs: must be at least 0')
    this.attempts = options.attempts
    this.factor = options.factor ?? 2
    this.capMs = options.capMs ?? Number.POSITIVE_INFINITY
    this.jitter = Math.min(1, Math.max(0, options.jitter ?? 0.5))
  }

  /** Whether the closed error union says this failure may succeed later (an error that is not a CodedError: no). */
  static retryable(err: unknown): boolean {
    return err instanceof CodedError && err.retryable
  }

  /** The wait before attempt `attempt` (≥ 2), ms. */
  waitBefore(attempt: number): number {
    const planned = Math.min(this.capMs, this.options.baseMs * this.factor ** Math.max(0, attempt - 2))
    return Math.round(planned * (1 - this.jitter * this.random()))
  }

  /** Whether `attempt` is the last this policy allows. */
  isLast(attempt: number): boolean {
    return attempt >= this.attempts
  }

  /**
   * Runs `fn` until it resolves, throws what may not be retried, or the attempts are spent (the last error is thrown).
   * An abort before an attempt or during a wait rejects with the signal's reason.
   */
  async run<T>(fn: (attempt: number) => Promise<T>, options: RetryRun = {}): Promise<T> {
    const retryable = options.retryable ?? ((err: unknown) => RetryPolicy.retryable(err))
    for (let attempt = 1; ; attempt++) {
      options.signal?.throwIfAborted()
      try {
        return await fn(attempt)
      } catch (err) {
        if (this.isLast(attempt) || options.signal?.aborted || !retryable(err, attempt)) throw err
        const waitMs = this.waitBefore(attempt + 1)
        options.onRetry?.(err, attempt, waitMs)
        await this.wait(waitMs, options.signal)
      }
    }
  }

  /** A wait that an abort ends at once (rejecting with the signal's reason). */
  async wait(ms: number, signal?: AbortSignal): Promise<void> {
    try {
      await sleep(ms, undefined, signal ? { signal } : undefined)
    } catch (err) {
      if (signal?.aborted) throw signal.reason
      throw err
    }
  }
}
