/**
 * The one retrying worker: keyed jobs run at most `concurrency` at a time, each attempt by `attempt(job, n, last)`,
 * which says whether the job is done or wants another attempt; the next attempt waits as the RetryPolicy says and
 * the policy's attempts bound them. A job's key is held from submit() until it is done, so the same job is never
 * queued twice. close() aborts the waits, drops what has not started and waits for the attempts in flight.
 *
 * The attempt decides what "retry" means, since it knows what failed and what it recorded (delivery writes one
 * durable row per attempt and retries a failed POST, never a row it could not write); an attempt that throws is
 * retried when RetryPolicy.retryable(err) says so, else the job ends and `onError` hears of it.
 */
import { RetryPolicy } from './RetryPolicy.ts'

export type AttemptVerdict = 'done' | 'retry'

export interface RetryingWorkerOptions<J> {
  policy: RetryPolicy
  /** Attempts in flight at once. */
  concurrency: number
  key: (job: J) => string
  /** One attempt (`n` from 1; `last` when the policy allows no further one). */
  attempt: (job: J, n: number, last: boolean) => Promise<AttemptVerdict>
  /** An attempt threw and is not retried (not retryable, last attempt, or closing). */
  onError?: (err: unknown, job: J, n: number) => void
}

interface Queued<J> {
  job: J
  key: string
  n: number
}

export class RetryingWorker<J> {
  private readonly keys = new Set<string>()
  private readonly ready: Queued<J>[] = []
  private inflight = 0
  private waits = 0
  private readonly abort = new AbortController()
  private idleWaiters: Array<() => void> = []

  constructor(private readonly options: RetryingWorkerOptions<J>) {}

  /** Whether a job with this key is queued, running or waiting for its next attempt. */
  has(key: string): boolean {
    return this.keys.has(key)
  }

  /**
   * Queues a job unless one with its key is held or the worker is closed (false then). `fromAttempt` > 1 resumes a
   * job whose earlier attempts were made elsewhere (before a restart): it waits as before that attempt first.
   */
  submit(job: J, fromAttempt = 1): boolean {
    const key = this.options.key(job)
    if (this.abort.signal.aborted || this.keys.has(key)) return false
    this.keys.add(key)
    if (fromAttempt > 1) this.later({ job, key, n: fromAttempt })
    else {
      this.ready.push({ job, key, n: 1 })
      this.pump()
    }
    return true
  }

  /** Resolves once nothing is queued, running or waiting. */
  async idle(): Promise<void> {
    if (this.isIdle()) return
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve))
  }

  /** Stops: waits are aborted and queued jobs dropped (their keys released); resolves once the attempts in flight ended. */
  async close(): Promise<void> {
    if (!this.abort.signal.aborted) this.abort.abort(new Error('the worker is closed'))
    for (const q of this.ready.splice(0)) this.keys.delete(q.key)
    await this.idle()
  }

  get closed(): boolean {
    return this.abort.signal.aborted
  }

  private later(q: Queued<J>): void {
    this.waits++
    void this.options.policy.wait(this.options.policy.waitBefore(q.n), this.abort.signal).then(
      () => {
        this.waits--
        this.ready.push(q)
        this.pump()
      },
      () => {
        this.waits--
        this.keys.delete(q.key)
        this.checkIdle()
      },
    )
  }

  private pump(): void {
    while (!this.abort.signal.aborted && this.inflight < this.options.concurrency && this.ready.length > 0) {
      const q = this.ready.shift()!
      this.inflight++
      void this.run(q).finally(() => {
        this.inflight--
        this.pump()
      })
    }
    this.checkIdle()
  }

  private async run(q: Queued<J>): Promise<void> {
    const { policy } = this.options
    const last = policy.isLast(q.n)
    let verdict: AttemptVerdict
    try {
      verdict = await this.options.attempt(q.job, q.n, last)
    } catch (err) {
      verdict = RetryPolicy.retryable(err) && !last ? 'retry' : 'done'
      if (verdict === 'done') this.options.onError?.(err, q.job, q.n)
    }
    if (verdict === 'retry' && !last && !this.abort.signal.aborted) {
      this.later({ ...q, n: q.n + 1 })
    } else {
      this.keys.delete(q.key)
    }
  }

  private isIdle(): boolean {
    return this.inflight === 0 && this.ready.length === 0 && this.waits === 0
  }

  private checkIdle(): void {
    if (!this.isIdle()) return
    const waiters = this.idleWaiters
    this.idleWaiters = []
    for (const resolve of waiters) resolve()
  }
}
