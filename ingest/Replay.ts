/**
 * Replays a tape to a consumer in event-time order, paced by a virtual clock.
 *
 * The clock moves to each record's event time just before the consumer sees it, so downstream code that reads
 * clock.now() sees the tape's time, not the machine's. `speed` is event time per wall time: 1 replays in real
 * time, 60 plays one event-minute per wall second, 0 goes as fast as the consumer allows. Pacing is scheduled
 * against the wall instant of the first paced record (target = paceStart + Δevent / speed), so sleep overshoot
 * and consumer time do not accumulate as drift. `paceFrom` lets a replay catch up on history at full speed and
 * pace only from an event time on (svc start's warm-up). Replay knows nothing of the event log; a consumer wires it
 * there.
 *
 * Live (`liveClock`): instead of a file, a generated `source` of records whose times run into the future (the
 * simulated venue in the present). Records at or before liveClock.now() go as fast as the consumer allows (the history
 * up to the present); each later record is handed over when liveClock reaches its event time, so event time tracks
 * that clock (the wall clock in service) at 1x, with no drift accumulated from sleep overshoot.
 */
import type { Clock } from '../common/Clock.ts'
import { OptionsError, validateOptions } from '../common/validation.ts'
import { openTapeStream, readTape, type TapeEntry } from './TapeReader.ts'
import { VirtualClock } from './VirtualClock.ts'
import { setImmediate } from 'node:timers/promises'

/** Skipped records between two turns of the event loop (a turn costs microseconds; 2,000 records a few ms). */
const SKIP_YIELD_EVERY = 2_000
export interface ReplayProgress {
  /** Records handed to the consumer. */
  emitted: number
  /** Records passed over by fromLine / skip. */
  skipped: number
  /** Line of the last record read (emitted or skipped); 0 before the first. */
  line: number
  /** Event time of the last emitted record, epoch ms; null before the first. */
  eventTime: number | null
  /** Wall time since the first emitted record, ms. */
  wallElapsedMs: number
  /** How far behind its wall schedule the last record was emitted, ms (0 at speed 0). */
  lagMs: number
}

export interface ReplayResult extends ReplayProgress {
  /** True when the signal stopped the replay before the tape ended. */
  aborted: boolean
}

export type ReplayConsumer = (entry: TapeEntry, clock: VirtualClock) => void | Promise<void>

export interface ReplayOptions {
  /** Tape file (NDJSON, optionally gzip); exactly one of tape and source. */
  tape?: string
  /** Records generated in event-time order (line = their sequence number), instead of a tape file. */
  source?: () => AsyncIterable<TapeEntry> | Iterable<TapeEntry>
  /** Live pacing: hand each record over when this clock reaches its event time (`speed` and `paceFrom` then unused). */
  liveClock?: Clock
  /** Event ms per wall ms; 0 = as fast as possible (default). */
  speed?: number
  /**
   * Event time (epoch ms) from which `speed` applies: earlier records go as fast as the consumer allows, and pacing
   * is anchored at the first emitted record at or after it. Default: pace from the first emitted record.
   */
  paceFrom?: number
  /** Resume: records with line <= fromLine are skipped. */
  fromLine?: number
  /** Resume by predicate: records for which skip(entry) is true are skipped (and do not move the clock). */
  skip?: (entry: TapeEntry) => boolean
  /** Stops the replay; run() then resolves with aborted: true. */
  signal?: AbortSignal
  /** The clock to drive; a fresh one by default. */
  clock?: VirtualClock
  onProgress?: (progress: ReplayProgress) => void
  /** Call onProgress after every this many emitted records (default 10,000), and once at the end. */
  progressEvery?: number
  /** Longest single sleep, ms (default 250): long waits are slept in chunks so an abort lands promptly. */
  maxSleepMs?: number
  /**
   * Called before the replay waits for a record's time (paced or live): a consumer that batches sends what it holds,
   * so the last instant is not kept back until the next one is due.
   */
  beforeWait?: () => void | Promise<void>
}

const OPTIONS_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    tape: { type: 'string', minLength: 1 },
    source: {},
    liveClock: {},
    speed: { type: 'number', minimum: 0, maximum: 1e9 },
    paceFrom: { type: 'number' },
    fromLine: { type: 'integer', minimum: 0 },
    skip: {},
    signal: {},
    clock: {},
    onProgress: {},
    progressEvery: { type: 'integer', minimum: 1 },
    maxSleepMs: { type: 'number', exclusiveMinimum: 0 },
    beforeWait: {},
  },
} as const
const ROOT = 'Replay options'

/** Validates in place (the options hold a clock, a signal and functions); errors name the field path. */
function checkOptions(options: ReplayOptions): void {
  validateOptions(ROOT, OPTIONS_SCHEMA, options)
  const fail = (path: string, message: string) => OptionsError.at(ROOT, path, message)
  if ((options.tape === undefined) === (options.source === undefined)) throw fail('', 'needs exactly one of tape and source')
  if (options.source !== undefined && typeof options.source !== 'function') throw fail('/source', 'must be a function returning the records')
  if (options.liveClock !== undefined && typeof (options.liveClock as { now?: unknown }).now !== 'function') throw fail('/liveClock', 'must be a clock')
  if (options.skip !== undefined && typeof options.skip !== 'function') throw fail('/skip', 'must be a function')
  if (options.onProgress !== undefined && typeof options.onProgress !== 'function') throw fail('/onProgress', 'must be a function')
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) throw fail('/signal', 'must be an AbortSignal')
  if (options.clock !== undefined && !(options.clock instanceof VirtualClock)) throw fail('/clock', 'must be a VirtualClock')
}

/** Sleeps up to `ms`; returns early (without throwing) when the signal aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve()
    const onAbort = () => {
      clearTimeout(timer)
      resolve()
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

export class Replay {
  readonly clock: VirtualClock
  readonly #options: ReplayOptions

  constructor(options: ReplayOptions) {
    checkOptions(options)
    this.#options = options
    this.clock = options.clock ?? new VirtualClock()
  }

  /** Reads the tape and hands each record not skipped to `consumer`, awaiting it before the next. */
  async run(consumer: ReplayConsumer): Promise<ReplayResult> {
    const { tape, source, liveClock, signal, skip, onProgress, beforeWait } = this.#options
    const speed = this.#options.speed ?? 0
    const paceFrom = this.#options.paceFrom ?? -Infinity
    const fromLine = this.#options.fromLine ?? 0
    const progressEvery = this.#options.progressEvery ?? 10_000
    const maxSleepMs = this.#options.maxSleepMs ?? 250

    const state: ReplayProgress = { emitted: 0, skipped: 0, line: 0, eventTime: null, wallElapsedMs: 0, lagMs: 0 }
    let wallStart = 0
    // Wall and event instants pacing is scheduled against; null until the first paced record.
    let paceWall: number | null = null
    let paceEvent = 0
    const snapshot = (): ReplayProgress => ({
      ...state,
      wallElapsedMs: state.emitted > 0 ? performance.now() - wallStart : 0,
    })

    let aborted = false
    const stream = tape !== undefined ? await openTapeStream(tape) : null
    try {
      for await (const entry of stream ? readTape(tape!, stream) : source!()) {
        if (signal?.aborted) {
          aborted = true
          break
        }
        state.line = entry.line
        if (entry.line <= fromLine || (skip !== undefined && skip(entry))) {
          state.skipped++
          // A generated source skipped on a resume runs on microtasks only: without a turn of the event loop now and
          // then, a stop signal waited until the whole skipped history was regenerated (13 s on 12 days; issue 31).
          if (state.skipped % SKIP_YIELD_EVERY === 0) await setImmediate()
          continue
        }
        if (state.emitted === 0) wallStart = performance.now()
        if (liveClock) {
          if (beforeWait && entry.time > liveClock.now()) await beforeWait()
          // Polled in chunks rather than one long timer, so a clock that is moved by hand (tests) is followed too.
          for (let remaining = entry.time - liveClock.now(); remaining > 0; remaining = entry.time - liveClock.now()) {
            await sleep(Math.min(remaining, maxSleepMs), signal)
            if (signal?.aborted) break
          }
          if (signal?.aborted) {
            aborted = true
            break
          }
          state.lagMs = Math.max(0, liveClock.now() - entry.time)
        } else if (speed > 0 && entry.time >= paceFrom && paceWall === null) {
          paceWall = performance.now()
          paceEvent = entry.time
        } else if (speed > 0 && paceWall !== null) {
          const target = paceWall + (entry.time - paceEvent) / speed
          if (beforeWait && target > performance.now()) await beforeWait()
          for (let remaining = target - performance.now(); remaining > 0; remaining = target - performance.now()) {
            await sleep(Math.min(remaining, maxSleepMs), signal)
            if (signal?.aborted) break
          }
          if (signal?.aborted) {
            aborted = true
            break
          }
          state.lagMs = Math.max(0, performance.now() - target)
        }
        this.clock.advanceTo(entry.time)
        state.eventTime = entry.time
        await consumer(entry, this.clock)
        state.emitted++
        if (onProgress && state.emitted % progressEvery === 0) onProgress(snapshot())
      }
    } finally {
      stream?.destroy()
    }
    const result = snapshot()
    onProgress?.(result)
    return { ...result, aborted }
  }
}
