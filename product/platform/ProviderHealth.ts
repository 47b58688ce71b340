/**
 * Provider inventory and health for GET /v1/providers, /healthz and /readyz.
 *
 * Spec (/readyz): "{ status, uptime_s, providers: [{ slug, kind, status, last_success_at, latency_ms, error_class }] };
 * status degraded when any provider is degraded; 503 when down". The rollup itself is rollupStatus() in the route
 * registry: a critical provider down makes the service down; a non-critical one down only degrades it.
 *
 * Two kinds of entries:
 * - call-tracked (venue APIs): every real call reports success or failure through a CallRecorder;
 *   the last call succeeded → ok; it failed but a call succeeded within downAfterMs → degraded; otherwise down.
 *   Never called yet → degraded with error_class NOT_YET_CHECKED. An optional probe keeps the status current
 *   when no request drives calls (run every probeIntervalMs once start() is called).
 * - computed (the tick feed, the event log: EventLogHealth): status derived on each read from the owner's own state.
 *
 * Times here are wall-clock (this is the service's own health, not market event time).
 */
import { childLogger } from '../../common/logger.ts'
import type { Clock } from '../../common/Clock.ts'
import type { ProviderHealthRow, ProviderStatus } from './schemas.ts'
import { systemClock } from '../../common/Clock.ts'
import { type ProviderRegistry } from './schemas.ts'
const log = childLogger('provider-health')

export interface CallRecorder {
  success(latencyMs: number): void
  failure(error: unknown, latencyMs?: number | null): void
}

export type ComputedHealth = Pick<ProviderHealthRow, 'status' | 'last_success_at' | 'latency_ms' | 'error_class'>

interface Tracked {
  type: 'calls'
  slug: string
  kind: string
  critical: boolean
  lastOk: boolean | null
  lastSuccessAt: number | null
  latencyMs: number | null
  errorClass: string | null
  probe: (() => Promise<unknown>) | null
  probeIntervalMs: number
}

interface Computed {
  type: 'computed'
  slug: string
  kind: string
  critical: boolean
  compute: () => ComputedHealth
}

export interface ProviderHealthOptions {
  clock?: Clock
  /** A failing provider with no success within this window is down (default 5 min). */
  downAfterMs?: number
}

/** The machine class of an error: a typed code when it has one (HL_TIMEOUT, CG_HTTP_STATUS, LOG_IO), else its name. */
export function errorClassOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code
  if (typeof code === 'string' && /^[A-Za-z0-9_]+$/.test(code)) return code
  if (err instanceof Error) return err.name
  return 'UnknownError'
}

export class ProviderHealth implements ProviderRegistry {
  readonly #entries: Array<Tracked | Computed> = []
  readonly #clock: Clock
  readonly #downAfterMs: number
  readonly #timers: NodeJS.Timeout[] = []
  #closed = false

  constructor(options: ProviderHealthOptions = {}) {
    this.#clock = options.clock ?? systemClock
    this.#downAfterMs = options.downAfterMs ?? 5 * 60_000
  }

  /** Registers a call-tracked provider; its adapters report through the returned recorder. */
  track(
    slug: string,
    kind: string,
    opts: { critical?: boolean; probe?: () => Promise<unknown>; probeIntervalMs?: number } = {},
  ): CallRecorder {
    if (this.#entries.some((e) => e.slug === slug)) throw new Error(`provider ${slug} is already registered`)
    const t: Tracked = {
      type: 'calls', slug, kind, critical: opts.critical ?? false, lastOk: null, lastSuccessAt: null, latencyMs: null,
      errorClass: null, probe: opts.probe ?? null, probeIntervalMs: opts.probeIntervalMs ?? 15_000,
    }
    this.#entries.push(t)
    return {
      success: (latencyMs) => {
        t.lastOk = true
        t.lastSuccessAt = this.#clock.now()
        t.latencyMs = Math.round(latencyMs * 10) / 10
        t.errorClass = null
      },
      failure: (error, latencyMs = null) => {
        t.lastOk = false
        t.latencyMs = latencyMs === null ? null : Math.round(latencyMs * 10) / 10
        t.errorClass = errorClassOf(error)
      },
    }
  }

  /** Registers a provider whose health is computed on each read. */
  computed(slug: string, kind: string, compute: () => ComputedHealth, opts: { critical?: boolean } = {}): void {
    if (this.#entries.some((e) => e.slug === slug)) throw new Error(`provider ${slug} is already registered`)
    this.#entries.push({ type: 'computed', slug, kind, critical: opts.critical ?? false, compute })
  }

  /** Runs every probe once (awaits them all; failures are recorded, not thrown). */
  async probeAll(): Promise<void> {
    await Promise.all(this.#entries.map((e) => (e.type === 'calls' && e.probe ? this.#probe(e) : undefined)))
  }

  /** Probes once now, then on each provider's interval (timers unref'd) until close(). */
  async start(): Promise<this> {
    await this.probeAll()
    for (const e of this.#entries) {
      if (e.type !== 'calls' || !e.probe) continue
      const timer = setInterval(() => void this.#probe(e), e.probeIntervalMs)
      timer.unref()
      this.#timers.push(timer)
    }
    return this
  }

  async #probe(e: Tracked): Promise<void> {
    if (this.#closed || !e.probe) return
    try {
      await e.probe()
    } catch (err) {
      // The adapter's recorder already counted the failure; the log says why.
      log.debug({ err, provider: e.slug }, 'provider probe failed')
    }
  }

  list(): ProviderHealthRow[] {
    const now = this.#clock.now()
    return this.#entries.map((e): ProviderHealthRow => {
      if (e.type === 'computed') return { slug: e.slug, kind: e.kind, ...e.compute(), critical: e.critical }
      let status: ProviderStatus
      if (e.lastOk === true) status = 'ok'
      else if (e.lastOk === null) status = 'degraded'
      else status = e.lastSuccessAt !== null && now - e.lastSuccessAt <= this.#downAfterMs ? 'degraded' : 'down'
      return {
        slug: e.slug,
        kind: e.kind,
        status,
        last_success_at: e.lastSuccessAt === null ? null : new Date(e.lastSuccessAt).toISOString(),
        latency_ms: e.latencyMs,
        error_class: e.lastOk === null ? 'NOT_YET_CHECKED' : e.errorClass,
        critical: e.critical,
      }
    })
  }

  close(): void {
    this.#closed = true
    for (const t of this.#timers) clearInterval(t)
    this.#timers.length = 0
  }
}
