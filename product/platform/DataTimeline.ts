/**
 * Which time the served data lives in, said on every answer (x-svc-data-time) and in /readyz (data_time), and the
 * warm-up gate the market routes consult.
 *
 * Issue 14: "A dated tape stays as the fast demo and regression mode; there, responses and /readyz say that the
 * service is replaying and at what virtual time … Simulated data says simulated everywhere. Until the first ticks after
 * a (re)start, market routes answer the spec's typed 503, not old prices."
 */
import type { Clock } from '../../common/Clock.ts'
import type { VenueStage, VenueStatus } from '../../pipeline/venue/VenueStatus.ts'
import type { DataQuality, DataTime, DataTimeSource } from './schemas.ts'

export interface DataTimelineOptions {
  mode: DataTime['mode']
  /** 'simulated' for the built-in generator, 'hyperliquid' for the live venue, else the tape's file name. */
  source: string
  simulated: boolean
  /** The live venue connector (live mode only): its stage makes the data's quality real or degraded. */
  venue?: { status(): VenueStatus; stage(): VenueStage }
  /** Event time per wall time (1 in the present). */
  speed: number
  /** The newest venue event time the service holds (the market state's), or null before any. */
  eventTime: () => number | null
  /** The wall clock (lag in the present). */
  clock: Clock
}

export class DataTimeline implements DataTimeSource {
  #warmingUp = true
  readonly #o: DataTimelineOptions
  /** The header is rebuilt only when the event time moves (once per tick), not per request. */
  #headerAt: number | null | undefined = undefined
  #header = ''

  constructor(options: DataTimelineOptions) {
    this.#o = options
  }

  get warmingUp(): boolean {
    return this.#warmingUp
  }

  /** The market state has caught up with the venue after the (re)start: market routes answer again. */
  markWarm(): void {
    this.#warmingUp = false
    this.#headerAt = undefined
  }

  venue(): VenueStatus | null {
    return this.#o.venue?.status() ?? null
  }

  /** Simulated data says so; live venue data is real while the connector streams, degraded otherwise; a tape's is real. */
  quality(): DataQuality {
    if (this.#o.simulated) return 'simulated'
    const stage = this.#o.venue?.stage()
    return stage === undefined || stage === 'streaming' ? 'real' : 'degraded'
  }

  status(): DataTime {
    const { mode, source, simulated, speed, eventTime, clock } = this.#o
    const at = eventTime()
    return {
      mode,
      source,
      simulated,
      quality: this.quality(),
      event_time: at === null ? null : new Date(at).toISOString(),
      lag_ms: mode === 'present' && at !== null ? Math.max(0, clock.now() - at) : null,
      speed,
      warming_up: this.#warmingUp,
    }
  }

  header(): string {
    const at = this.#o.eventTime()
    const quality = this.quality()
    if (at !== this.#headerAt || quality !== this.#headerQuality) {
      this.#headerAt = at
      this.#headerQuality = quality
      const { mode, source, speed } = this.#o
      const time = at === null ? 'none' : new Date(at).toISOString()
      const base = mode === 'present' ? `present; event_time=${time}; source=${source}` : `replay; virtual_time=${time}; speed=${speed}; source=${source}`
      const withQuality = `${base}; quality=${quality}`
      this.#header = this.#warmingUp ? `${withQuality}; warming_up` : withQuality
    }
    return this.#header
  }

  #headerQuality: DataQuality | null = null
}
