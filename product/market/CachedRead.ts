/**
 * A provider read behind a bounded cache: one fetch in flight at a time; a value younger than ttlMs is served
 * as is; a failed refresh serves the last good value marked stale with its TRUE as_of; with no good value the
 * failure is thrown. After a failure the provider is not asked again for retryMs, so a down provider is not
 * hammered by every request.
 *
 * Spec (Limits): "Universe | top 50 by default; cache at most 15 seconds". Universe rules: "degraded quality means
 * a failed refresh served the last good snapshot with its true as_of".
 */
import type { Clock } from '../../common/Clock.ts'
import type { CallRecorder } from '../platform/ProviderHealth.ts'

export interface Fetched<T> {
  value: T
  /** When the provider's answer was observed, epoch ms (the true as_of). */
  asOf: number
}

export interface CachedValue<T> extends Fetched<T> {
  /** False when a refresh failed and this is the last good value. */
  fresh: boolean
}

export interface CachedReadOptions<T> {
  fetch: () => Promise<Fetched<T>>
  ttlMs: number
  /** Quiet period after a failure; default min(ttlMs, 5 s). */
  retryMs?: number
  clock: Clock
  recorder?: CallRecorder
}

export class CachedRead<T> {
  #last: (Fetched<T> & { fetchedAt: number }) | null = null
  #lastFailure: { at: number; error: unknown } | null = null
  #inFlight: Promise<Fetched<T>> | null = null
  readonly #o: CachedReadOptions<T>
  readonly #retryMs: number

  constructor(options: CachedReadOptions<T>) {
    if (!(options.ttlMs > 0)) throw new RangeError('CachedRead ttlMs must be > 0')
    this.#o = options
    this.#retryMs = options.retryMs ?? Math.min(options.ttlMs, 5_000)
  }

  /** The last good value without any I/O (null before the first success). */
  peek(): CachedValue<T> | null {
    const l = this.#last
    if (!l) return null
    return { value: l.value, asOf: l.asOf, fresh: this.#lastFailure === null || this.#lastFailure.at < l.fetchedAt }
  }

  /** Cached value when younger than ttlMs, else a refresh; last good (fresh false) when the refresh fails. */
  async read(): Promise<CachedValue<T>> {
    const now = this.#o.clock.now()
    const l = this.#last
    if (l && now - l.fetchedAt < this.#o.ttlMs) return { value: l.value, asOf: l.asOf, fresh: true }
    const f = this.#lastFailure
    if (f && now - f.at < this.#retryMs && (!l || f.at >= l.fetchedAt)) {
      if (l) return { value: l.value, asOf: l.asOf, fresh: false }
      throw f.error
    }
    try {
      const got = await this.refresh()
      return { ...got, fresh: true }
    } catch (err) {
      const last = this.#last
      if (last) return { value: last.value, asOf: last.asOf, fresh: false }
      throw err
    }
  }

  /** Asks the provider now (joining a fetch in flight); throws its error. Probes call this to keep the cache warm. */
  refresh(): Promise<Fetched<T>> {
    this.#inFlight ??= this.#fetch().finally(() => {
      this.#inFlight = null
    })
    return this.#inFlight
  }

  async #fetch(): Promise<Fetched<T>> {
    const started = performance.now()
    try {
      const got = await this.#o.fetch()
      this.#last = { ...got, fetchedAt: this.#o.clock.now() }
      this.#lastFailure = null
      this.#o.recorder?.success(performance.now() - started)
      return got
    } catch (err) {
      this.#lastFailure = { at: this.#o.clock.now(), error: err }
      this.#o.recorder?.failure(err, performance.now() - started)
      throw err
    }
  }
}
