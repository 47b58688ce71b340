/**
 * The live venue connector: one stream processor that turns Hyperliquid into ticks, in event-time order, written in
 * units to a sink (the event log's ticks topic for `svc start`, a tape for `svc tape record`).
 *
 * - Start: resume after what the sink already holds (`resume.watermark`, the newest event time written), or on a
 *   first start backfill `historyMs` over REST: candleSnapshot of the bar interval and paginated fundingHistory per
 *   coin, in chunks, merged in event-time order; then metaAndAssetCtxs and predictedFundings. A restart repairs the
 *   span since the watermark the same way. Idempotent: nothing at or before the watermark is written again.
 * - Live: the websocket's trades, l2Book, activeAssetCtx and candle channels, plus REST polls of metaAndAssetCtxs,
 *   predictedFundings and l2Book every `pollMs`, all through one reorder buffer. Bars come from the candle channel
 *   (BarAssembler: final once the venue moved past the close on the same connection) or, when the stream did not
 *   finish one within `candleGraceMs`, from candleSnapshot; funding settlements from fundingHistory after each hour.
 *   A barrier holds the release below the next bar and settlement of every coin until they are in, so a bar or
 *   settlement fetched seconds late still lands in order and the engine sees the bar before it decides at its close.
 * - Gaps: a websocket drop or silence opens an episode; bars the stream could not finish are fetched over REST and
 *   settlements as always; the episode is recorded (venue.gaps) when everything in its span is in or known missing.
 *   A bar or settlement the venue answers without (retention, a hole) is recorded missing, never invented; so is one
 *   REST could not deliver while live ticks waited longer than `maxHoldMs`.
 * - Bad input: frames that do not parse, and ticks VenueInputGuard refuses, are counted by reason and never written.
 * - Limits: REST through the shared RestWeightBudget (the client's), 429 backs off; websocket caps in the stream.
 *
 * Two clocks: event time and the present come from `clock` (the service's clock; a compressed session's scaled one);
 * network timing (polls, retries, pings, reconnects) is wall time.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from 'pino'
import { childLogger } from '../../common/logger.ts'
import type { Clock } from '../../common/Clock.ts'
import { validateOptions } from '../../common/validation.ts'
import { isoMs, tickTime, type Tick } from '../../ingest/Tick.ts'
import { TickReorderBuffer } from '../../ingest/TickReorderBuffer.ts'
import { BarAssembler } from '../../ingest/hyperliquid/BarAssembler.ts'
import { HyperliquidError } from '../../ingest/hyperliquid/HyperliquidError.ts'
import type { HyperliquidInfoClient } from '../../ingest/hyperliquid/HyperliquidInfoClient.ts'
import { HyperliquidStream, type HlStreamMessage, type HyperliquidStreamOptions } from '../../ingest/hyperliquid/HyperliquidStream.ts'
import { VenueInputGuard } from '../../ingest/hyperliquid/VenueInputGuard.ts'
import type { HlCandle, HlFundingRow } from '../../ingest/hyperliquid/parseInfo.ts'
import {
  activeAssetCtxToTicks,
  candlesToBars,
  fundingHistoryToTicks,
  bookTopToTick,
  l2BookToTick,
  metaAndAssetCtxsToTicks,
  predictedFundingsToTicks,
  tradesToTicks,
  type HlProvider,
  type HlTickContext,
} from '../../ingest/hyperliquid/toTicks.ts'
import { intervalMs } from '../features/FeatureState.ts'
import type { VenueGapCause, VenueGapRecord } from '../records/venueGapRecord.ts'
import type { VenueStage, VenueStatus } from './VenueStatus.ts'
import { HOUR_MS } from '../../common/time.ts'

export const HL_VENUE_SOURCE = 'hyperliquid'
/** REST weight a poll round leaves for due bars and settlements (a round weighs about 46 for three coins). */
const POLL_HEADROOM = 200
/** Candles per candleSnapshot request: well under the venue's 5000, and one page of the 500-element ranges. */
const CANDLES_PER_REQUEST = 500

/** What a unit of work writes: ticks in event-time order (all after the previous unit's), and settled gap episodes. */
export interface VenueUnit {
  ticks: Tick[]
  gaps: VenueGapRecord[]
}

/** Where the connector writes. write() resolves once the unit is durable; a rejection is retried with the same unit. */
export interface VenueSink {
  write(unit: VenueUnit): Promise<void>
}

export interface VenueResume {
  /** Event time of the newest tick the sink holds; null: nothing yet (a first start backfills). */
  watermark: number | null
  /** Gap episodes already recorded (for the counts /readyz shows). */
  gaps: readonly VenueGapRecord[]
}

export interface BackfillProgress {
  /** Requests done and planned (the plan grows when a page is full). */
  done: number
  total: number
  ticks: number
}

export interface HyperliquidConnectorOptions {
  /** Venue coin names (the canonical assets: BTC, ETH, SOL). */
  coins: string[]
  /** Bar interval of the candle channel and candleSnapshot (the models' bars). Default '1h'. */
  barInterval?: string
  /** First start: how much history to backfill, clock ms (0: none, stream from now). */
  historyMs: number
  client: HyperliquidInfoClient
  wsUrl: string
  clock: Clock
  sink: VenueSink
  resume?: VenueResume | null
  /** Reorder window, clock ms. Default 2000. */
  reorderWindowMs?: number
  /** A bar the stream has not finished this long after its close is fetched over REST, clock ms. Default 3000. */
  candleGraceMs?: number
  /** First fundingHistory poll this long after the hour, clock ms. Default 2000. */
  fundingDelayMs?: number
  /** Give up waiting for a bar or settlement once live ticks have waited behind it this long, clock ms. Default 300 000. */
  maxHoldMs?: number
  /**
   * Or once this many ticks are held back by a barrier. Default 500 000. Also the buffer's size past which new live
   * ticks are dropped (counted) while the sink is behind, so a sink outage costs live data, never memory.
   */
  maxHeld?: number
  /** The stage is 'stale' once the newest written event is older than this, clock ms. Default 120 000. */
  staleAfterMs?: number
  /** REST poll period, wall ms. Default 5000. */
  pollMs?: number
  /** Universe snapshot period, wall ms (0: every poll). Default 60 000. */
  universeEveryMs?: number
  /** Release and schedule loop period, wall ms. Default 100. */
  tickMs?: number
  /** First retry of a failed REST fetch, wall ms (doubling to retryCapMs). Default 1000 / 30 000. */
  retryBaseMs?: number
  retryCapMs?: number
  /** History fetched per chunk of the backfill, clock ms. Default 500 bar intervals. */
  chunkMs?: number
  stream?: Pick<HyperliquidStreamOptions, 'pingAfterMs' | 'pongTimeoutMs' | 'backoffBaseMs' | 'backoffCapMs' | 'connectTimeoutMs'>
  /** Backfill progress (a bar on a TTY, lines off it: the caller's choice). */
  onProgress?: (progress: BackfillProgress) => void
  /** Ticks too late to place in order (default: counted and dropped). */
  late?: (tick: Tick) => void
  logger?: Logger
}

const OPTIONS_SCHEMA = {
  type: 'object',
  required: ['coins', 'historyMs', 'client', 'wsUrl', 'clock', 'sink'],
  additionalProperties: false,
  properties: {
    coins: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', pattern: '^[A-Za-z0-9]{1,20}$' } },
    barInterval: { type: 'string', pattern: '^\\d+[mhd]$' },
    historyMs: { type: 'number', minimum: 0 },
    client: {},
    wsUrl: { type: 'string', pattern: '^wss?://[^\\s]+$' },
    clock: {},
    sink: {},
    resume: {},
    reorderWindowMs: { type: 'number', minimum: 0 },
    candleGraceMs: { type: 'number', minimum: 0 },
    fundingDelayMs: { type: 'number', minimum: 0 },
    maxHoldMs: { type: 'number', exclusiveMinimum: 0 },
    maxHeld: { type: 'integer', minimum: 1 },
    staleAfterMs: { type: 'number', exclusiveMinimum: 0 },
    pollMs: { type: 'integer', minimum: 50 },
    universeEveryMs: { type: 'integer', minimum: 0 },
    tickMs: { type: 'integer', minimum: 5 },
    retryBaseMs: { type: 'integer', minimum: 1 },
    retryCapMs: { type: 'integer', minimum: 1 },
    chunkMs: { type: 'number', exclusiveMinimum: 0 },
    stream: { type: 'object' },
    onProgress: {},
    late: {},
    logger: {},
  },
} as const

/** A series item (a bar close or a settlement hour) the connector is waiting for. */
interface Due {
  /** The next expected item's time: the bar's close, or the settlement's hour. */
  next: number
  /** Items obtained (or known missing) ahead of `next`. */
  ahead: Set<number>
  inFlight: boolean
  /** Wall time before which no new fetch starts (backoff). */
  retryAt: number
  failures: number
}

interface Episode {
  cause: VenueGapCause
  from: number
  /** Null while the websocket is still down. */
  to: number | null
  barsRepaired: number
  fundingRepaired: number
  missing: Array<{ asset: string; kind: 'bar' | 'funding'; at: number }>
  note: string | null
  /** The first start's backfill: recorded only when the venue lacked something. */
  quietWhenComplete?: boolean
}

/** The reorder buffer's key of a tick: the venue's identity of the record, where it has one. */
function tickKey(tick: Tick): string | null {
  switch (tick.kind) {
    case 'trade':
      return tick.trade_id === null ? null : `t|${tick.asset}|${tick.trade_id}|${tick.provenance.timestamp}`
    case 'bar':
      return `b|${tick.asset}|${tick.interval}|${tick.provenance.timestamp}`
    case 'funding':
      return `f|${tick.asset}|${tick.provenance.timestamp}`
    case 'book_top':
      // The venue's book at one block is one book, whether the stream or a REST poll brought it.
      return `k|${tick.asset}|${tick.provenance.timestamp}`
    default:
      return null
  }
}

export class HyperliquidConnector {
  readonly #o: HyperliquidConnectorOptions
  readonly #log: Logger
  readonly #clock: Clock
  readonly #iv: number
  readonly #buffer: TickReorderBuffer
  readonly guard: VenueInputGuard
  readonly #bars = new Map<string, Due>()
  readonly #funding = new Map<string, Due>()
  /** Recent bars written per coin (close → candle), to tell a correction from a repeat. */
  readonly #recentBars = new Map<string, Map<number, HlCandle>>()
  readonly #assembler: BarAssembler
  #episodes: Episode[] = []
  #settled: VenueGapRecord[] = []
  #stream: HyperliquidStream | null = null
  #stage: VenueStage = 'starting'
  #reached = false
  #lastMessageAt: number | null = null
  #written = -Infinity
  #writing: Promise<void> = Promise.resolve()
  #unitsQueued = 0
  #writeFailure: unknown = null
  #lastUniverseAt = -Infinity
  #pollErrorsLogged = new Set<string>()
  #backfill = { from: null as number | null, to: null as number | null, done: false, ticks: 0 }
  #gapCounts = { repaired: 0, unrepairable: 0, missing: 0 }
  #stats = { late: 0, duplicates: 0, dropped: 0, restRequests: 0, restFailures: 0, lastRestError: null as string | null, corrections: 0, written: 0, units: 0 }
  #stopped = false

  private constructor(o: HyperliquidConnectorOptions) {
    this.#o = o
    this.#log = o.logger ?? childLogger('venue-connector')
    this.#clock = o.clock
    this.#iv = intervalMs(o.barInterval ?? '1h')
    this.#buffer = new TickReorderBuffer(o.reorderWindowMs ?? 2000)
    this.guard = new VenueInputGuard({ logger: this.#log })
    this.#assembler = new BarAssembler(o.barInterval ?? '1h', {
      final: (candle) => this.#obtainBars([candle], 'hyperliquid-ws', this.#clock.now()),
      unconfirmed: () => {
        // The bar's REST fetch follows from its due time; nothing else to do here.
      },
    })
    for (const r of o.resume?.gaps ?? []) this.#count(r)
    const watermark = o.resume?.watermark ?? null
    if (watermark !== null) {
      this.#written = watermark
      this.#buffer.resumeAfter(watermark + 1)
    }
  }

  static create(options: HyperliquidConnectorOptions): HyperliquidConnector {
    const o = validateOptions<HyperliquidConnectorOptions>('HyperliquidConnector options', OPTIONS_SCHEMA, options)
    return new HyperliquidConnector(o)
  }

  // ---------------------------------------------------------------- status

  status(): VenueStatus {
    const now = this.#clock.now()
    const stream = this.#stream?.stats
    const waiting = this.#waitingFor()
    return {
      source: HL_VENUE_SOURCE,
      url: this.#o.client.baseUrl,
      ws_url: this.#o.wsUrl,
      stage: this.#currentStage(now),
      connected: this.#stream?.connected ?? false,
      last_message_at: this.#lastMessageAt === null ? null : isoMs(this.#lastMessageAt),
      event_time: Number.isFinite(this.#written) ? isoMs(this.#written) : null,
      lag_ms: Number.isFinite(this.#written) ? Math.max(0, now - this.#written) : null,
      held: this.#buffer.size,
      waiting_for: waiting,
      backfill: {
        from: this.#backfill.from === null ? null : isoMs(this.#backfill.from),
        to: this.#backfill.to === null ? null : isoMs(this.#backfill.to),
        done: this.#backfill.done,
        ticks: this.#backfill.ticks,
      },
      gaps: { open: this.#episodes.length, ...this.#gapCounts },
      rejected: this.guard.counts(),
      late: this.#stats.late,
      duplicates: this.#stats.duplicates,
      dropped: this.#stats.dropped,
      rest: {
        requests: this.#stats.restRequests,
        failures: this.#stats.restFailures,
        throttled: this.#o.client.budget?.stats.throttled ?? 0,
        last_error: this.#stats.lastRestError,
      },
      websocket: { connects: stream?.connects ?? 0, reconnects: stream?.reconnectsScheduled ?? 0, frames: stream?.frames ?? 0 },
    }
  }

  /** The stage now, cheaply (every answer's x-svc-data-time says whether the data is real or degraded). */
  stage(): VenueStage {
    return this.#currentStage(this.#clock.now())
  }

  /**
   * The status of an instance that reads the venue from the log while another instance feeds it (several instances,
   * issue 32): the newest venue event time it has read (`eventTime`, null before any) decides the stage, on the
   * connector's own staleness budget (streaming within it, stale past it, starting before any tick), and what it
   * counts is its own (this connector's, which feeds nothing while another does); `connected` is false: no websocket
   * of its own is open.
   */
  statusFromLog(eventTime: number | null): VenueStatus {
    const now = this.#clock.now()
    return {
      ...this.status(),
      stage: this.stageFromLog(eventTime),
      connected: false,
      held: 0,
      waiting_for: null,
      event_time: eventTime === null ? null : isoMs(eventTime),
      lag_ms: eventTime === null ? null : Math.max(0, now - eventTime),
    }
  }

  /** statusFromLog's stage, cheaply. */
  stageFromLog(eventTime: number | null): VenueStage {
    if (eventTime === null) return 'starting'
    return this.#clock.now() - eventTime > this.#staleAfterMs ? 'stale' : 'streaming'
  }

  get #staleAfterMs(): number {
    return this.#o.staleAfterMs ?? 120_000
  }

  /** The stage now (the stream state and the age of what was written decide between streaming, reconnecting and stale). */
  #currentStage(now: number): VenueStage {
    if (this.#stage !== 'streaming') return this.#stage
    if (!this.#reached) return 'unreachable'
    const stale = !Number.isFinite(this.#written) || now - this.#written > this.#staleAfterMs
    if (stale) return 'stale'
    return this.#stream?.connected ? 'streaming' : 'reconnecting'
  }

  /** The last REST failure, while the venue has not answered since ('what: message'), else the last one seen. */
  lastError(): string | null {
    return this.#stats.lastRestError
  }

  /** Event time of the newest tick written (the sink holds everything up to it); -Infinity before any. */
  get written(): number {
    return this.#written
  }

  get stats() {
    return { ...this.#stats, held: this.#buffer.size, rejected: this.guard.total }
  }

  // ---------------------------------------------------------------- run

  /**
   * Backfills (or repairs since the watermark), then streams until `signal` aborts; resolves once every tick that can
   * be placed is written. `onLive` is called once, when the backfill is written and the stream starts.
   */
  async run(signal: AbortSignal, onLive?: () => void): Promise<void> {
    try {
      await this.#catchUp(signal)
      if (signal.aborted) return
      this.#backfill.done = true
      this.#stage = 'streaming'
      this.#stream = await HyperliquidStream.open({
        ...(this.#o.stream ?? {}),
        url: this.#o.wsUrl,
        coins: this.#o.coins,
        candleInterval: this.#o.barInterval ?? '1h',
        clock: this.#clock,
        onMessage: (m) => this.#onMessage(m),
        onReject: (reason, detail) => this.guard.reject(reason, detail),
      })
      this.#stream.on('close', ({ connection }: { connection: number }) => this.#onStreamClosed(connection, false))
      this.#stream.on('silent', (connection: number) => this.#onStreamClosed(connection, true))
      onLive?.()
      await Promise.all([this.#loop(signal), this.#polls(signal)])
    } finally {
      this.#stopped = true
      await this.#stream?.stop()
      // Everything below the barriers can be placed: write it, so a stop loses nothing the next start could not repair.
      this.#enqueue(this.#buffer.releaseAll())
      await this.#writing
      this.#stage = 'stopped'
    }
  }

  // ---------------------------------------------------------------- backfill and repair

  /**
   * Fetches bars and settlements after the watermark (restart) or over the history window (first start), chunk by
   * chunk in event-time order, retrying failed requests until they succeed or the signal aborts.
   */
  async #catchUp(signal: AbortSignal): Promise<void> {
    this.#stage = 'backfilling'
    const now = this.#clock.now()
    const resumeAt = this.#o.resume?.watermark ?? null
    const start = resumeAt ?? Math.floor((now - this.#o.historyMs) / this.#iv) * this.#iv
    // The first bar close after `start`, and the first settlement hour after it; on a resume, the hour the watermark
    // falls in: a settlement's time is its hour plus the venue's jitter, so that hour's may or may not be written yet
    // (one at or before the watermark is; #obtainFunding counts it without writing it again).
    const firstBar = (Math.floor(start / this.#iv) + 1) * this.#iv
    const firstHour = (Math.floor(start / HOUR_MS) + (resumeAt === null ? 1 : 0)) * HOUR_MS
    for (const coin of this.#o.coins) {
      this.#bars.set(coin, { next: firstBar, ahead: new Set(), inFlight: false, retryAt: 0, failures: 0 })
      this.#funding.set(coin, { next: firstHour, ahead: new Set(), inFlight: false, retryAt: 0, failures: 0 })
    }
    this.#backfill.from = start
    this.#backfill.to = now
    const episode: Episode | null = resumeAt === null
      ? (this.#o.historyMs > 0 ? { cause: 'history', from: start, to: now, barsRepaired: 0, fundingRepaired: 0, missing: [], note: null, quietWhenComplete: true } : null)
      : { cause: 'restart', from: resumeAt, to: now, barsRepaired: 0, fundingRepaired: 0, missing: [], note: null }
    if (episode) this.#episodes.push(episode)
    if (now - start <= 0 || (this.#o.historyMs === 0 && resumeAt === null)) return
    const chunkMs = this.#o.chunkMs ?? CANDLES_PER_REQUEST * this.#iv
    const chunks = Math.max(1, Math.ceil((now - start) / chunkMs))
    const progress = { done: 0, total: chunks * this.#o.coins.length * 2 + 2, ticks: 0 }
    this.#o.onProgress?.(progress)
    for (let from = start; from < now && !signal.aborted; from += chunkMs) {
      const to = Math.min(now, from + chunkMs)
      for (const coin of this.#o.coins) {
        await this.#retrying(signal, `candleSnapshot ${coin}`, () => this.#fetchBars(coin, from, to, now))
        progress.done++
        await this.#retrying(signal, `fundingHistory ${coin}`, () => this.#fetchFunding(coin, from, to))
        progress.done++
        this.#o.onProgress?.({ ...progress, ticks: this.#backfill.ticks })
      }
      // Everything of the chunk is in: write it (no barrier is needed while nothing live is held).
      this.#enqueue(this.#buffer.release(Infinity))
    }
    if (signal.aborted) return
    await this.#retrying(signal, 'metaAndAssetCtxs', () => this.#pollContexts(true))
    await this.#retrying(signal, 'predictedFundings', () => this.#pollPredicted())
    progress.done = progress.total
    this.#o.onProgress?.({ ...progress, ticks: this.#backfill.ticks })
    // The snapshots just polled are stamped now, which may be past bars and settlements the chunks did not reach (the
    // retries took time): they wait behind the barriers for the live loop to fetch those.
    this.#setBarriers()
    this.#enqueue(this.#buffer.release(this.#clock.now()))
    await this.#writing
    this.#settleEpisodes()
    this.#log.info({ from: isoMs(start), to: isoMs(now), ticks: this.#backfill.ticks, resumed: resumeAt !== null }, resumeAt === null ? 'backfill done' : 'repaired the span since the last run')
  }

  /** Runs `fetch` until it succeeds (retryable failures back off) or the signal aborts. */
  async #retrying(signal: AbortSignal, what: string, fetch: () => Promise<void>): Promise<void> {
    let delay = this.#o.retryBaseMs ?? 1000
    for (;;) {
      if (signal.aborted) return
      try {
        await fetch()
        return
      } catch (err) {
        this.#restFailed(what, err)
        if (!this.#reached) this.#stage = 'unreachable'
        await sleep(delay * (0.5 + Math.random() / 2), undefined, { signal }).catch(() => undefined)
        delay = Math.min(delay * 2, this.#o.retryCapMs ?? 30_000)
      } finally {
        if (this.#stage === 'unreachable' && this.#reached) this.#stage = 'backfilling'
      }
    }
  }

  #restFailed(what: string, err: unknown): void {
    this.#stats.restFailures++
    if (!(err instanceof HyperliquidError && err.status === 429)) {
      this.#failing = true
      const b = this.#restBackoff
      const delay = Math.min((this.#o.retryBaseMs ?? 1000) * 2 ** b.failures, this.#o.retryCapMs ?? 30_000)
      b.failures++
      b.until = Math.max(b.until, Date.now() + delay * (0.5 + Math.random() / 2))
    }
    const code = err instanceof HyperliquidError ? err.code : (err as Error)?.name ?? 'Error'
    this.#stats.lastRestError = `${what}: ${(err as Error)?.message ?? String(err)}`
    // One line per request kind and error code a minute at most: an outage would otherwise log every retry.
    const key = `${what.split(' ')[0]}|${code}|${Math.floor(Date.now() / 60_000)}`
    if (!this.#pollErrorsLogged.has(key)) {
      this.#pollErrorsLogged.add(key)
      if (this.#pollErrorsLogged.size > 256) this.#pollErrorsLogged.clear()
      this.#log.warn({ request: what, code, retryable: err instanceof HyperliquidError ? err.retryable : null, err: (err as Error)?.message }, 'venue request failed')
    }
  }

  #reachedVenue(at: number): void {
    this.#reached = true
    this.#lastMessageAt = at
  }

  /**
   * REST answers again after failures (or the websocket is back after an outage): what was backing off is due now, not
   * at the end of its backoff, since live ticks may already be waiting behind it. A 429 is not "back": its pause is the
   * budget's.
   */
  #venueBack(reconnected = false): void {
    if (reconnected || this.#failing) this.#backAt = this.#clock.now()
    if (!this.#failing) return
    this.#failing = false
    this.#restBackoff = { until: 0, failures: 0 }
    for (const due of [...this.#bars.values(), ...this.#funding.values()]) {
      due.retryAt = 0
      due.failures = 0
    }
  }

  /**
   * A venue that fails REST requests (5xx, timeouts, refused connections) is backed off as a whole: polls stop, and
   * one due fetch at a time probes it on one schedule doubling to retryCapMs, so an outage costs a request every few
   * seconds rather than one per series, and the REST budget is left for the repair when it is back (an answer, or the
   * websocket reconnecting, ends it). A 429 pauses the budget itself.
   */
  #restBackoff = { until: 0, failures: 0 }

  #restBackingOff(): boolean {
    return Date.now() < this.#restBackoff.until
  }

  /** A REST request failed since the venue last answered. */
  #failing = false
  /** The clock's time the venue was last back (a REST answer after failures, or the websocket reconnected). */
  #backAt = -Infinity

  /** Candles of `coin` closing in (from, to], as of `now`: pushed, and any the venue skipped recorded missing. */
  async #fetchBars(coin: string, from: number, to: number, now: number): Promise<void> {
    this.#stats.restRequests++
    const iv = this.#iv
    const res = await this.#o.client.candleSnapshot(coin, this.#o.barInterval ?? '1h', { startTime: from, endTime: to - 1 })
    this.#reachedVenue(res.receivedAt)
    this.#venueBack()
    const closed = res.data.filter((c) => c.coin === coin && c.closeTime + 1 <= Math.min(to, now) && c.closeTime + 1 > from)
    this.#obtainBars(closed, 'hyperliquid-info', res.receivedAt)
    // A close on the grid with a later candle served but none for it: the venue does not have it.
    const newest = res.data.reduce((m, c) => Math.max(m, c.closeTime + 1), -Infinity)
    const due = this.#bars.get(coin)!
    for (let close = (Math.floor(from / iv) + 1) * iv; close <= Math.min(to, now) && close < newest; close += iv) {
      if (close >= due.next && !due.ahead.has(close)) this.#markMissing(coin, 'bar', close, 'the venue served later candles but not this one')
    }
  }

  /** Settlements of `coin` with time in (from, to]: pushed, and hours the venue skipped recorded missing. */
  async #fetchFunding(coin: string, from: number, to: number): Promise<void> {
    this.#stats.restRequests++
    // From the settlement still expected, which can be the one of the hour `from` falls in (see #catchUp).
    const res = await this.#o.client.fundingHistory(coin, { startTime: Math.min(from + 1, this.#funding.get(coin)!.next), endTime: to })
    this.#reachedVenue(res.receivedAt)
    this.#venueBack()
    this.#obtainFunding(res.data.filter((r) => r.coin === coin), res.receivedAt)
    const newestHour = res.data.reduce((m, r) => Math.max(m, Math.floor(r.time / HOUR_MS) * HOUR_MS), -Infinity)
    const due = this.#funding.get(coin)!
    for (let hour = (Math.floor(from / HOUR_MS) + 1) * HOUR_MS; hour <= to && hour < newestHour; hour += HOUR_MS) {
      if (hour >= due.next && !due.ahead.has(hour)) this.#markMissing(coin, 'funding', hour, 'the venue served later settlements but not this one')
    }
  }

  // ---------------------------------------------------------------- obtaining bars and settlements

  #ctx(receivedAt: number, provider: HlProvider): HlTickContext {
    return { receivedAt, provider }
  }

  /** Closed candles (from the stream or REST) → bar ticks, each once, in the buffer; the due bar advances. */
  #obtainBars(candles: readonly HlCandle[], provider: HlProvider, receivedAt: number): void {
    const now = this.#clock.now()
    for (const candle of candles) {
      const close = candle.closeTime + 1
      const due = this.#bars.get(candle.coin)
      if (!due || close > now) continue
      if (close < due.next || due.ahead.has(close)) {
        this.#checkCorrection(candle)
        continue
      }
      if (close % this.#iv !== 0) continue
      const [tick] = candlesToBars([candle], this.#ctx(receivedAt, provider))
      if (!tick || !this.guard.admit(tick, now)) continue
      if (!this.#hold(tick)) continue
      this.#remember(candle)
      due.ahead.add(close)
      // A bar fetched over REST repairs the episode around it (a new 'stream' episode when none holds it). A bar the
      // stream delivered inside an open episode's span counts too: the episode closes once every expected bar of its
      // span is in the log, whichever way it came (a bar late on the stream for one coin while the other coins' bars
      // arrived live made bars_repaired < bars_expected on a closed episode, depending on timing).
      // A REST bar outside every episode opens a one-bar 'stream' episode; the other coins' bars of that close may
      // already be in from the stream (a busy machine lets them arrive first), and they count as in the log.
      const holding = this.#episodeHolding(close)
      if (holding) holding.barsRepaired++
      else if (provider === 'hyperliquid-info') this.#episodeFor(close, 'stream').barsRepaired = this.#barsObtainedAt(close)
      this.#advance(due)
    }
  }

  /** Coins whose bar closing at `close` is in the log or held for it (the due bar is past it, or it is held ahead). */
  #barsObtainedAt(close: number): number {
    let n = 0
    for (const due of this.#bars.values()) if (close < due.next || due.ahead.has(close)) n++
    return n
  }

  #obtainFunding(rows: readonly HlFundingRow[], receivedAt: number): void {
    const now = this.#clock.now()
    const ticks = fundingHistoryToTicks(rows, this.#ctx(receivedAt, 'hyperliquid-info'))
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!
      const tick = ticks[i]
      const due = this.#funding.get(row.coin)
      const hour = Math.floor(row.time / HOUR_MS) * HOUR_MS
      if (!due || !tick || hour < due.next || due.ahead.has(hour)) continue
      if (row.time <= this.#written) {
        // Written before the restart (the watermark is past it): in the log already, expected no more.
        due.ahead.add(hour)
        this.#advance(due, HOUR_MS)
        continue
      }
      if (!this.guard.admit(tick, now)) continue
      if (!this.#hold(tick)) continue
      due.ahead.add(hour)
      // Settlements always come over REST: one counts as repaired only inside a gap (a restart, a lost websocket).
      const episode = this.#episodeHolding(hour)
      if (episode) episode.fundingRepaired++
      this.#advance(due, HOUR_MS)
    }
  }

  /** Moves `next` past every item obtained or known missing, and keeps the barrier on the next one. */
  #advance(due: Due, step = this.#iv): void {
    while (due.ahead.has(due.next)) {
      due.ahead.delete(due.next)
      due.next += step
    }
    due.failures = 0
    due.retryAt = 0
  }

  #markMissing(coin: string, kind: 'bar' | 'funding', at: number, why: string, cause: VenueGapCause = 'stream'): void {
    const due = (kind === 'bar' ? this.#bars : this.#funding).get(coin)!
    if (at < due.next || due.ahead.has(at)) return
    due.ahead.add(at)
    const episode = this.#episodeFor(at, cause, kind === 'funding')
    episode.missing.push({ asset: coin.toUpperCase(), kind, at })
    this.#log.warn({ coin, kind, at: isoMs(at), why }, 'venue data missing: recorded as a gap, not filled in')
    this.#advance(due, kind === 'bar' ? this.#iv : HOUR_MS)
  }

  #episodeHolding(at: number): Episode | undefined {
    return this.#episodes.find((e) => at > e.from && (e.to === null || at <= e.to))
  }

  /** The open episode whose span holds `at`, or a new one of `cause` around it. */
  #episodeFor(at: number, cause: VenueGapCause, funding = false): Episode {
    const inside = this.#episodeHolding(at)
    if (inside) return inside
    const span = funding ? HOUR_MS : this.#iv
    const episode: Episode = { cause, from: at - span, to: at, barsRepaired: 0, fundingRepaired: 0, missing: [], note: null }
    this.#episodes.push(episode)
    return episode
  }

  #remember(candle: HlCandle): void {
    let recent = this.#recentBars.get(candle.coin)
    if (!recent) this.#recentBars.set(candle.coin, (recent = new Map()))
    recent.set(candle.closeTime + 1, candle)
    if (recent.size > 48) recent.delete(recent.keys().next().value!)
  }

  /** A bar already written came again with other values: the first stays (append-only); the correction is counted. */
  #checkCorrection(candle: HlCandle): void {
    const first = this.#recentBars.get(candle.coin)?.get(candle.closeTime + 1)
    if (!first) return
    const same = first.open === candle.open && first.high === candle.high && first.low === candle.low && first.close === candle.close && first.volume === candle.volume
    if (same) return
    this.#stats.corrections++
    this.#log.warn(
      { coin: candle.coin, close: isoMs(candle.closeTime + 1), written: { o: first.open, h: first.high, l: first.low, c: first.close, v: first.volume }, now: { o: candle.open, h: candle.high, l: candle.low, c: candle.close, v: candle.volume } },
      'the venue corrected a bar already written: the first version stays (the log is append-only)',
    )
  }

  /** Into the reorder buffer; false (counted) when late, a repeat, or the buffer is full while the sink is behind. */
  #hold(tick: Tick): boolean {
    if (this.#buffer.size >= (this.#o.maxHeld ?? 500_000) && this.#backfill.done) {
      if (this.#stats.dropped++ === 0) this.#log.error({ held: this.#buffer.size }, 'the sink is behind and the buffer is full: live ticks are dropped (counted) until it catches up')
      return false
    }
    const r = this.#buffer.push(tick, tickKey(tick))
    if (r === 'held') {
      if (!this.#backfill.done) this.#backfill.ticks++
      return true
    }
    if (r === 'late') {
      this.#stats.late++
      this.#o.late?.(tick)
    } else this.#stats.duplicates++
    return false
  }

  // ---------------------------------------------------------------- live

  #onMessage(m: HlStreamMessage): void {
    this.#reachedVenue(m.receivedAt)
    this.#closeEpisodeOnReconnect(m.connection, m.receivedAt)
    const ctx = this.#ctx(m.receivedAt, 'hyperliquid-ws')
    const now = m.receivedAt
    switch (m.channel) {
      case 'trades':
        for (const tick of tradesToTicks(m.data, ctx)) if (this.guard.admit(tick, now)) this.#hold(tick)
        return
      case 'l2Book': {
        const tick = m.data && bookTopToTick(m.data, ctx)
        if (tick && this.guard.admit(tick, now)) this.#hold(tick)
        return
      }
      case 'activeAssetCtx':
        for (const tick of activeAssetCtxToTicks(m.data, ctx)) if (this.guard.admit(tick, now)) this.#hold(tick)
        return
      case 'candle':
        if (m.data.openTime > now + 60_000) {
          this.guard.reject('future_time', `candle ${m.data.coin} opening ${isoMs(m.data.openTime)}`)
          return
        }
        this.#assembler.update(m.data, m.connection)
        return
    }
  }

  #connectionOfEpisode = new Map<Episode, number>()

  #onStreamClosed(connection: number, silent: boolean): void {
    if (this.#stopped) return
    // The episode starts at the last message of the lost connection (or now, if it never sent one).
    const from = this.#lastMessageAt ?? this.#clock.now()
    const open = this.#episodes.find((e) => e.to === null)
    if (open) return
    const episode: Episode = { cause: silent ? 'silence' : 'disconnect', from, to: null, barsRepaired: 0, fundingRepaired: 0, missing: [], note: null }
    this.#episodes.push(episode)
    this.#connectionOfEpisode.set(episode, connection)
    this.#log.warn({ connection, cause: episode.cause, from: isoMs(from) }, 'websocket lost: bars and settlements of the gap will be fetched over REST')
  }

  /** The first message of a later connection ends the open episode's span (and the venue is back). */
  #closeEpisodeOnReconnect(connection: number, at: number): void {
    for (const e of this.#episodes) {
      if (e.to !== null) continue
      const lost = this.#connectionOfEpisode.get(e)
      if (lost !== undefined && connection > lost) {
        e.to = at
        this.#connectionOfEpisode.delete(e)
        this.#venueBack(true)
      }
    }
  }

  /** Records every episode whose span is behind every coin's next bar and settlement. */
  #settleEpisodes(): void {
    const now = this.#clock.now()
    const keep: Episode[] = []
    for (const e of this.#episodes) {
      const to = e.to
      const done = to !== null &&
        [...this.#bars.values()].every((d) => d.next > to) &&
        [...this.#funding.values()].every((d) => d.next > Math.floor(to / HOUR_MS) * HOUR_MS)
      if (!done) {
        keep.push(e)
        continue
      }
      if (e.quietWhenComplete && e.missing.length === 0) continue
      const record = this.#record(e, to!, now)
      this.#settled.push(record)
      this.#count(record)
    }
    this.#episodes = keep
  }

  #record(e: Episode, to: number, now: number): VenueGapRecord {
    const coins = this.#o.coins.length
    const bars = Math.max(0, Math.floor(to / this.#iv) - Math.floor(e.from / this.#iv)) * coins
    const hours = Math.max(0, Math.floor(to / HOUR_MS) - Math.floor(e.from / HOUR_MS)) * coins
    const missing = [...e.missing].sort((a, b) => a.at - b.at || a.asset.localeCompare(b.asset)).map((m) => ({ asset: m.asset, kind: m.kind, at: isoMs(m.at) }))
    return {
      v: 1,
      gap_id: `${HL_VENUE_SOURCE}|${e.cause}|${isoMs(e.from)}`,
      source: HL_VENUE_SOURCE,
      cause: e.cause,
      span_start: isoMs(e.from),
      span_end: isoMs(to),
      bar_interval: this.#o.barInterval ?? '1h',
      bars_expected: bars,
      bars_repaired: e.barsRepaired,
      funding_expected: hours,
      funding_repaired: e.fundingRepaired,
      missing,
      status: missing.length === 0 ? 'repaired' : 'unrepairable',
      recorded_at: isoMs(now),
      note: e.note,
    }
  }

  #count(r: VenueGapRecord): void {
    if (r.status === 'repaired') this.#gapCounts.repaired++
    else this.#gapCounts.unrepairable++
    this.#gapCounts.missing += r.missing.length
  }

  // ---------------------------------------------------------------- the loop: due items, holds, release

  async #loop(signal: AbortSignal): Promise<void> {
    const tickMs = this.#o.tickMs ?? 100
    while (!signal.aborted) {
      this.#step(signal)
      await sleep(tickMs, undefined, { signal }).catch(() => undefined)
    }
  }

  #step(signal: AbortSignal): void {
    const now = this.#clock.now()
    this.#setBarriers()
    for (const coin of this.#o.coins) {
      const bar = this.#bars.get(coin)!
      const funding = this.#funding.get(coin)!
      if (now >= bar.next + (this.#o.candleGraceMs ?? 3000)) this.#fetchDue(signal, bar, `candleSnapshot ${coin}`, () => this.#fetchBars(coin, bar.next - this.#iv, Math.min(now, bar.next - this.#iv + CANDLES_PER_REQUEST * this.#iv), now))
      if (now >= funding.next + (this.#o.fundingDelayMs ?? 2000)) this.#fetchDue(signal, funding, `fundingHistory ${coin}`, () => this.#fetchFunding(coin, funding.next - 1, now))
    }
    this.#giveUpLongHolds(now)
    this.#settleEpisodes()
    // Backpressure: while the sink is behind, ticks stay in the buffer (bounded by maxHeld) rather than in a queue.
    if (this.#unitsQueued < 2) this.#enqueue(this.#buffer.release(now))
  }

  #fetchDue(signal: AbortSignal, due: Due, what: string, fetch: () => Promise<void>): void {
    if (due.inFlight || Date.now() < due.retryAt || signal.aborted || this.#restBackingOff()) return
    // While the venue fails, one request at a time probes it; the rest follow once it answers.
    if (this.#failing && this.#probing) return
    due.inFlight = true
    const probe = this.#failing
    if (probe) this.#probing = true
    fetch().then(
      () => {
        // Answered but the item is not there yet (the venue has not published it): ask again shortly.
        due.retryAt = Date.now() + (this.#o.retryBaseMs ?? 1000)
      },
      (err: unknown) => {
        this.#restFailed(what, err)
        due.failures++
        const backoff = Math.min((this.#o.retryBaseMs ?? 1000) * 2 ** (due.failures - 1), this.#o.retryCapMs ?? 30_000)
        due.retryAt = Date.now() + backoff * (0.5 + Math.random() / 2)
      },
    ).finally(() => {
      due.inFlight = false
      if (probe) this.#probing = false
    })
  }

  /** A due fetch is probing a failing venue (see #fetchDue). */
  #probing = false

  /**
   * A barrier that has held live ticks back for longer than maxHoldMs (or more than maxHeld ticks are held) gives up
   * its item: recorded missing (cause hold), so the live data flows again. Waiting on only costs lateness while
   * nothing is held (an outage), so the hold is measured from the arrival of the first tick it holds back.
   */
  #giveUpLongHolds(now: number): void {
    // While the venue is down (the websocket reconnecting, REST failing) nothing can be fetched and no live tick can
    // arrive: waiting costs nothing new, and giving up would record as missing what the venue will serve again. The hold
    // is measured from when the venue was last back, not from before an outage.
    if (!this.#stream?.connected || this.#failing) return
    const held = this.#buffer.heldBehindBarrierSince()
    const since = held === null ? null : Math.max(held, this.#backAt)
    const tooLong = since !== null && now - since > (this.#o.maxHoldMs ?? 300_000)
    // Only what the barrier holds back counts: ticks below it wait for the sink, not for the bar or settlement.
    const tooMany = since !== null && this.#buffer.heldBehindBarrierCount() > (this.#o.maxHeld ?? 500_000)
    if (!tooLong && !tooMany) return
    const barrier = this.#buffer.barrier
    const why = tooLong ? `live ticks waited more than ${this.#o.maxHoldMs ?? 300_000} ms for it` : `more than ${this.#o.maxHeld ?? 500_000} live ticks waited for it`
    for (const [coin, due] of this.#bars) if (due.next === barrier) this.#markMissing(coin, 'bar', due.next, why, 'hold')
    for (const [coin, due] of this.#funding) if (due.next === barrier) this.#markMissing(coin, 'funding', due.next, why, 'hold')
    this.#setBarriers()
  }

  /** Nothing at or after a coin's next bar close or settlement hour is released before it is in (or known missing). */
  #setBarriers(): void {
    for (const coin of this.#o.coins) {
      this.#buffer.setBarrier(`bar ${coin}`, this.#bars.get(coin)!.next)
      this.#buffer.setBarrier(`funding ${coin}`, this.#funding.get(coin)!.next)
    }
  }

  #waitingFor(): string | null {
    if (this.#buffer.heldBehindBarrierSince() === null) return null
    const barrier = this.#buffer.barrier
    for (const [coin, due] of this.#bars) if (due.next === barrier) return `bar ${coin} ${isoMs(barrier)}`
    for (const [coin, due] of this.#funding) if (due.next === barrier) return `funding ${coin} ${isoMs(barrier)}`
    return null
  }

  /** Queues a unit (the released ticks and the settled episodes) behind the previous write; a failed write is retried. */
  #enqueue(ticks: Tick[]): void {
    const gaps = this.#settled
    if (ticks.length === 0 && gaps.length === 0) return
    this.#settled = []
    const unit: VenueUnit = { ticks, gaps }
    this.#unitsQueued++
    this.#writing = this.#writing.then(async () => {
      let delay = this.#o.retryBaseMs ?? 1000
      for (;;) {
        try {
          await this.#o.sink.write(unit)
          break
        } catch (err) {
          this.#writeFailure = err
          this.#log.error({ err, ticks: unit.ticks.length }, 'writing venue ticks failed; retrying the same unit')
          await sleep(delay)
          delay = Math.min(delay * 2, this.#o.retryCapMs ?? 30_000)
        }
      }
      this.#writeFailure = null
      this.#unitsQueued--
      this.#stats.units++
      this.#stats.written += unit.ticks.length
      const last = unit.ticks.at(-1)
      if (last) this.#written = Math.max(this.#written, tickTime(last))
    })
  }

  /** The last write error while it is being retried (the sink is down), else null. */
  get writeFailure(): unknown {
    return this.#writeFailure
  }

  // ---------------------------------------------------------------- REST polls

  async #polls(signal: AbortSignal): Promise<void> {
    const pollMs = this.#o.pollMs ?? 5000
    while (!signal.aborted) {
      const started = Date.now()
      // Polls are best effort: when the REST budget is short they give way to the bars and settlements that are due.
      const budget = this.#o.client.budget
      if (this.#restBackingOff() || (budget && (budget.available < POLL_HEADROOM || budget.pausedForMs > 0))) {
        await sleep(pollMs, undefined, { signal }).catch(() => undefined)
        continue
      }
      if (this.#failing) {
        // The venue fails: one request probes it (unless a due fetch already does); the polls resume once it answers.
        if (!this.#probing) {
          this.#probing = true
          await this.#pollContexts(false).catch((err: unknown) => this.#restFailed('metaAndAssetCtxs', err)).finally(() => (this.#probing = false))
        }
        await sleep(pollMs, undefined, { signal }).catch(() => undefined)
        continue
      }
      await Promise.all([
        this.#pollContexts(false).catch((err: unknown) => this.#restFailed('metaAndAssetCtxs', err)),
        this.#pollPredicted().catch((err: unknown) => this.#restFailed('predictedFundings', err)),
        ...this.#o.coins.map((coin) => this.#pollBook(coin).catch((err: unknown) => this.#restFailed(`l2Book ${coin}`, err))),
      ])
      await sleep(Math.max(0, pollMs - (Date.now() - started)), undefined, { signal }).catch(() => undefined)
    }
  }

  async #pollContexts(forceUniverse: boolean): Promise<void> {
    this.#stats.restRequests++
    const universe = forceUniverse || Date.now() - this.#lastUniverseAt >= (this.#o.universeEveryMs ?? 60_000)
    const res = await this.#o.client.metaAndAssetCtxs()
    this.#reachedVenue(res.receivedAt)
    this.#venueBack()
    if (universe) this.#lastUniverseAt = Date.now()
    const now = this.#clock.now()
    for (const tick of metaAndAssetCtxsToTicks(res.data, this.#ctx(res.receivedAt, 'hyperliquid-info'), { coins: this.#o.coins, universe })) {
      if (this.guard.admit(tick, now)) this.#hold(tick)
    }
  }

  async #pollPredicted(): Promise<void> {
    this.#stats.restRequests++
    const res = await this.#o.client.predictedFundings()
    this.#reachedVenue(res.receivedAt)
    const now = this.#clock.now()
    for (const tick of predictedFundingsToTicks(res.data, this.#ctx(res.receivedAt, 'hyperliquid-info'), this.#o.coins)) {
      if (this.guard.admit(tick, now)) this.#hold(tick)
    }
  }

  async #pollBook(coin: string): Promise<void> {
    this.#stats.restRequests++
    const res = await this.#o.client.l2Book(coin)
    this.#reachedVenue(res.receivedAt)
    const tick = l2BookToTick(res.data, this.#ctx(res.receivedAt, 'hyperliquid-info'))
    if (tick && this.guard.admit(tick, this.#clock.now())) this.#hold(tick)
  }
}

