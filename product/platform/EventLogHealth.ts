/**
 * The event log as a provider row (`event-log`, critical): down while the log cannot be reached or a consumer of
 * this process has crashed and is being revived, ok once a probe reads the log again and every consumer is back.
 *
 * Why not a call-tracked entry of ProviderHealth: there a failure after a recent success is only `degraded` for
 * five minutes, and a probe of the Kafka log waits out kafkajs' retries (tens of seconds) before it fails. On a broker
 * restart /readyz stayed 200 with `event-log: ok` for 15 s (issue 31). Here a probe runs every `probeIntervalMs`, one
 * at a time, and a probe still unanswered after `timeoutMs` counts as a failure at once (LOG_TIMEOUT), so /readyz
 * turns 503 within probeIntervalMs + timeoutMs of an outage and back to 200 at the first probe after it.
 *
 * The probe reads the last record of each partition of one topic: a real read of the log (disk or broker), not
 * cached metadata. Consumer faults come from EventLog.consumerFaults (Kafka: a crashed consumer until it re-joined).
 */
import type { Clock } from '../../common/Clock.ts'
import { childLogger } from '../../common/logger.ts'
import { systemClock } from '../../common/Clock.ts'
import type { EventLog } from '../../pipeline/log/EventLog.ts'
import { errorClassOf, type ComputedHealth } from './ProviderHealth.ts'

const log = childLogger('event-log-health')

/** The provider's one name: the row on /readyz and the gate of paid calls (serving/Dispatcher.ts). */
export const EVENT_LOG_PROVIDER = 'event-log'
/** Default probe cadence and bound: an outage shows on /readyz within their sum. */
export const EVENT_LOG_PROBE_INTERVAL_MS = 2_000
export const EVENT_LOG_PROBE_TIMEOUT_MS = 3_000
/** A probe unanswered this long is given up and a fresh one starts (a read stuck on a dead connection must not hold the row down after the log is back). */
const ABANDON_AFTER_PROBES = 5
/** When a paid call refused for an unreachable log should try again (retry_after_ms): a few probes later. */
export const EVENT_LOG_RETRY_AFTER_MS = 5_000

export interface EventLogHealthOptions {
  log: EventLog
  /** The topic whose tail the probe reads. */
  topic: string
  /** Wall clock of last_success_at (default system). */
  clock?: Clock
  probeIntervalMs?: number
  timeoutMs?: number
}

export class EventLogHealth {
  readonly #log: EventLog
  readonly #topic: string
  readonly #clock: Clock
  readonly #intervalMs: number
  readonly #timeoutMs: number
  #lastSuccessAt: number | null = null
  #latencyMs: number | null = null
  /** The error class of the last probe when it failed, else null. */
  #failure: string | null = null
  /** performance.now() when the probe in flight began, else null. */
  #probeStartedAt: number | null = null
  #timer: NodeJS.Timeout | null = null
  /** Which probe may record its result: an abandoned one's late answer is ignored. */
  #generation = 0

  constructor(options: EventLogHealthOptions) {
    this.#log = options.log
    this.#topic = options.topic
    this.#clock = options.clock ?? systemClock
    this.#intervalMs = options.probeIntervalMs ?? EVENT_LOG_PROBE_INTERVAL_MS
    this.#timeoutMs = options.timeoutMs ?? EVENT_LOG_PROBE_TIMEOUT_MS
  }

  /** Probes once (bounded by the timeout), then every probeIntervalMs (unref'd) until close(). */
  async start(): Promise<this> {
    const first = this.probe()
    await Promise.race([first, new Promise((resolve) => setTimeout(resolve, this.#timeoutMs).unref())])
    this.#timer ??= setInterval(() => void this.probe(), this.#intervalMs)
    this.#timer.unref()
    return this
  }

  /**
   * One probe; a no-op while the previous one is still waiting (its age is what compute() judges), unless that one
   * has waited ABANDON_AFTER_PROBES timeouts: it is then given up (counted as LOG_TIMEOUT) and a fresh one starts.
   */
  async probe(): Promise<void> {
    const t0 = performance.now()
    if (this.#probeStartedAt !== null) {
      if (t0 - this.#probeStartedAt < ABANDON_AFTER_PROBES * this.#timeoutMs) return
      if (this.#failure === null) log.warn({ waitedMs: Math.round(t0 - this.#probeStartedAt) }, 'an event-log probe got no answer; starting a fresh one')
      this.#failure = 'LOG_TIMEOUT'
    }
    const generation = ++this.#generation
    this.#probeStartedAt = t0
    try {
      await this.#log.lastRecords(this.#topic)
      if (generation !== this.#generation) return
      if (this.#failure !== null) log.info({ was: this.#failure }, 'the event log answers again')
      this.#lastSuccessAt = this.#clock.now()
      this.#latencyMs = Math.round((performance.now() - t0) * 10) / 10
      this.#failure = null
    } catch (err) {
      if (generation !== this.#generation) return
      this.#latencyMs = Math.round((performance.now() - t0) * 10) / 10
      if (this.#failure === null) log.warn({ err }, 'the event log cannot be read; readiness is down until it answers')
      this.#failure = errorClassOf(err)
    } finally {
      if (generation === this.#generation) this.#probeStartedAt = null
    }
  }

  /** The row's status now (ProviderHealth.computed). */
  readonly compute = (): ComputedHealth => {
    const last = this.#lastSuccessAt === null ? null : new Date(this.#lastSuccessAt).toISOString()
    const waiting = this.#probeStartedAt === null ? 0 : performance.now() - this.#probeStartedAt
    if (waiting > this.#timeoutMs) return { status: 'down', last_success_at: last, latency_ms: Math.round(waiting), error_class: 'LOG_TIMEOUT' }
    if (this.#failure !== null) return { status: 'down', last_success_at: last, latency_ms: this.#latencyMs, error_class: this.#failure }
    const faults = this.#log.consumerFaults?.() ?? []
    if (faults.length > 0) return { status: 'down', last_success_at: last, latency_ms: this.#latencyMs, error_class: 'CONSUMER_CRASHED' }
    if (this.#lastSuccessAt === null) return { status: 'degraded', last_success_at: null, latency_ms: null, error_class: 'NOT_YET_CHECKED' }
    return { status: 'ok', last_success_at: last, latency_ms: this.#latencyMs, error_class: null }
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
  }
}
