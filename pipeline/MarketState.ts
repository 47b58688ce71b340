/**
 * The latest market per asset, kept by a stream processor on the ticks topic (its own consumer group, fed through
 * the EventLog interface): mid, mark, index, bar (close and 24 h volume from bars), book top, settled funding,
 * predicted funding and open interest, each with its provenance and event time; plus the last universe snapshot,
 * the hourly liquidation observations of each market and its liquidation records of the trailing 48 h.
 *
 * Time is EVENT time: `now()` is the newest event time consumed (the virtual clock of a replay), unless a clock is
 * injected (live operation). Freshness of every input is measured against it with the published staleness budgets
 * (pipeline/features/stalenessBudgets.ts), so a snapshot read reports its age and a degraded input honestly.
 *
 * Spec (Response envelope): "A degraded snapshot is still served with its degraded freshness stated."
 *
 * The state lives in memory. Without `checkpoints` it is rebuilt at each start by reading the topic from the beginning
 * (the group never commits: a committed offset alone would skip the history the 24 h volume and liquidation hours
 * need). With `checkpoints` (issue 31) it is a checkpointed processor: the whole state, bar windows and liquidation
 * hours included, is a StateStore (`<groupId>`, MARKET_STATE_SCHEMA) written every interval and at close with the
 * positions it reflects (a batch folds in synchronously, so any instant between batches is consistent), positions
 * committed after it; a start loads it and reads only the ticks after it. The restored state is the rebuilt one, so the
 * service's warm-up ("no old prices" until caught up) behaves the same: it waits for the tail either way.
 */
import { childLogger } from '../common/logger.ts'
import { isoMs, tickTime, type Provenance, type Tick, type UniverseTick } from '../ingest/Tick.ts'
import { intervalMs } from './features/FeatureState.ts'
import { stalenessBudgetMs, type FeatureInput } from './features/stalenessBudgets.ts'
import type { EventLog, LogConsumer } from './log/EventLog.ts'
import { decodeTickRecord } from './TickEnvelope.ts'
import { HOUR_MS, DAY_MS } from '../common/time.ts'
import { Checkpointer } from './state/Checkpointer.ts'
import { decodeNumbers, encodeNumbers } from './state/jsonNumbers.ts'
import { restoreState } from './state/restoreState.ts'
import type { CheckpointSettings, StateStore } from './state/StateStore.ts'

const log = childLogger('market-state')

/** S02 readiness (spec Limits): "24 hourly observations per market". */
export const LIQ_HOURS_REQUIRED = 24

/** Inputs with a staleness budget; predicted funding has none (it is a forecast, not an observation). */
export type MarketInput = Extract<FeatureInput, 'mid' | 'mark' | 'index' | 'bars' | 'book' | 'funding' | 'open_interest'>

function observed<T>(value: T, time: number, provenance: Provenance): Observed<T> {
  return { value, time, provenance }
}

/** True when an observation at `time` is at least as new as `prev`. */
function isNewer(prev: Observed<unknown> | null, time: number): boolean {
  return prev === null || time >= prev.time
}

export interface Observed<T> {
  value: T
  /** Event time, epoch ms. */
  time: number
  provenance: Provenance
}

export interface BarValue {
  close: number
  interval: string
  /**
   * USD notional traded over the 24 h ending at the last bar (Σ volume × close for base units, Σ volume for quote
   * units); null until the bar series covers 24 h, or when the unit is contracts (no contract size on the tape).
   */
  volume_24h_usd: number | null
}

export interface BookValue {
  bid: number
  ask: number
  bid_size: number
  ask_size: number
  bid_depth_usd: number | null
  ask_depth_usd: number | null
}

export interface AssetMarket {
  asset: string
  mid: Observed<number> | null
  mark: Observed<number> | null
  index: Observed<number> | null
  bar: Observed<BarValue> | null
  book: Observed<BookValue> | null
  funding: Observed<{ rate: number; interval_hours: number; premium: number | null }> | null
  predicted_funding: Observed<{ rate: number; interval_hours: number; next_funding_at: string }> | null
  open_interest: Observed<{ value: number; unit: 'base' | 'usd' | 'contracts' }> | null
}

/** One liquidation-tape record: the side of the position that was liquidated and its USD notional. */
export interface LiquidationRecord {
  /** Event time, epoch ms. */
  time: number
  side: 'long' | 'short'
  notional_usd: number
  provenance: Provenance
}

/** Liquidations of one market over a window (from, to], summed by the side that was liquidated. */
export interface LiquidationWindow {
  from: number
  to: number
  count: number
  total_usd: number
  longs_usd: number
  shorts_usd: number
  /** The newest record in the window, or null when it holds none. */
  newest: LiquidationRecord | null
  /** Distinct provenance sources of the records in the window, sorted. */
  sources: string[]
}

export interface InputFreshness {
  input: MarketInput
  ok: boolean
  staleness_budget_ms: number
  age_ms: number
  last_success_at: string
  quality: Provenance['quality']
}

export interface MarketStateHealth {
  /** Records folded in. */
  consumed: number
  /** Records that failed to decode (skipped, logged). */
  rejected: number
  /** Wall time of the last consumed batch, epoch ms; null before the first. */
  lastConsumedAtWall: number | null
  /** Newest event time consumed; null before the first. */
  eventTime: number | null
  /** Set when the consumer stopped on an error. */
  error: Error | null
}

export interface MarketStateOptions {
  log: EventLog
  topic: string
  /** Consumer group (default 'svc.market-state'). */
  groupId?: string
  /** Time freshness is measured against; default: the newest event time consumed (replay's virtual clock). */
  clock?: { now(): number }
  /** Wall clock for health bookkeeping (default Date.now). */
  wallClock?: { now(): number }
  /** State snapshots: restore from the newest and read only the tail (absent: rebuild from the beginning). */
  checkpoints?: CheckpointSettings | null
}

/** The market state's snapshot schema: bump when AssetState or the header row changes shape or meaning. */
export const MARKET_STATE_SCHEMA = 1

interface BarWindow {
  key: string
  intervalMs: number
  firstTime: number
  /** Bars in the trailing 24 h: event time and USD notional (NaN when unconvertible). */
  times: number[]
  notionals: number[]
  head: number
  sum: number
  unconvertible: number
}

interface AssetState extends AssetMarket {
  barWindow: BarWindow | null
  /** Liquidation records per clock hour (hour index → newest event time in it), trailing 48 h. */
  liqHours: Map<number, number>
  /** Liquidation records of the trailing 48 h (before the newest), in arrival order. */
  liquidations: LiquidationRecord[]
  /** List length after the last prune (pruning runs when the list doubles). */
  liqKept: number
}

function newAsset(asset: string): AssetState {
  return {
    asset, mid: null, mark: null, index: null, bar: null, book: null, funding: null, predicted_funding: null,
    open_interest: null, barWindow: null, liqHours: new Map(), liquidations: [], liqKept: 1024,
  }
}

export class MarketState {
  readonly #assets = new Map<string, AssetState>()
  #universe: Observed<UniverseTick> | null = null
  #eventTime: number | null = null
  #consumed = 0
  #rejected = 0
  #lastConsumedAtWall: number | null = null
  #error: Error | null = null
  /** Next offset to read per partition (index = partition). */
  readonly #positions: number[] = []
  readonly #clock: { now(): number } | null
  readonly #wall: { now(): number }
  #consumer: LogConsumer | null = null
  #log: EventLog | null = null
  #topic: string | null = null
  #waiters: Array<() => void> = []
  /** Set by close(): a caughtUp() waiter gives up instead of polling a consumer that has stopped. */
  #closed = false
  #checkpointer: Checkpointer | null = null
  #restored: boolean | null = null

  /** A state fed by hand (no consumer); `start()` is the stream processor. */
  constructor(options: { clock?: { now(): number }; wallClock?: { now(): number } } = {}) {
    this.#clock = options.clock ?? null
    this.#wall = options.wallClock ?? { now: () => Date.now() }
  }

  /** Starts consuming the ticks topic from the beginning; resolves once the consumer is positioned. */
  static async start(options: MarketStateOptions): Promise<MarketState> {
    const state = new MarketState(options)
    const groupId = options.groupId ?? 'svc.market-state'
    const store = state.stateStore(groupId)
    const checkpoints = options.checkpoints ?? null
    let startAt: { topic: string; partition: number; next: number }[] | undefined
    if (checkpoints) {
      const restored = await restoreState({ log: options.log, snapshots: checkpoints.snapshots, store, topics: [options.topic], logger: log })
      startAt = restored.from
      state.#restored = restored.restored
      for (const p of startAt) state.#positions[p.partition] = p.next
    }
    const consumer = await options.log.createConsumer({
      groupId,
      topics: [options.topic],
      fromBeginning: true,
      ...(startAt ? { startAt } : {}),
    })
    if (checkpoints) {
      state.#checkpointer = new Checkpointer({
        snapshots: checkpoints.snapshots,
        store,
        everyMs: checkpoints.everyMs,
        // Batches fold in synchronously: between two of them the state reflects exactly the positions read so far.
        capture: () => state.#positions.map((next, partition) => ({ topic: options.topic, partition, next: next ?? 0 })),
        commit: async (positions) => {
          await consumer.commitPositions(positions)
        },
        logger: log,
      })
      state.#checkpointer.start()
    }
    state.#consumer = consumer
    state.#log = options.log
    state.#topic = options.topic
    const running = consumer.run(async (batch) => {
      for (const r of batch.records) {
        try {
          state.ingest(decodeTickRecord(r).tick)
        } catch (err) {
          state.#rejected++
          if (state.#rejected <= 10 || state.#rejected % 1000 === 0) {
            log.warn({ err, topic: r.topic, partition: r.partition, offset: r.offset, rejected: state.#rejected }, 'skipped an undecodable tick')
          }
        }
        state.#positions[r.partition] = r.offset + 1
      }
      state.#lastConsumedAtWall = state.#wall.now()
      state.#wake()
    })
    running.catch((err: unknown) => {
      state.#error = err instanceof Error ? err : new Error(String(err))
      log.error({ err }, 'market-state consumer stopped')
      state.#wake()
    })
    await running
    return state
  }

  /** Time freshness is measured against: the injected clock, else the newest event time consumed. */
  now(): number | null {
    return this.#clock ? this.#clock.now() : this.#eventTime
  }

  /** Folds one tick in. Within one asset, ticks arrive in event-time order (one key → one partition). */
  ingest(tick: Tick): void {
    const time = tickTime(tick)
    this.#consumed++
    if (this.#eventTime === null || time > this.#eventTime) this.#eventTime = time
    if (tick.kind === 'universe') {
      if (!this.#universe || time >= this.#universe.time) this.#universe = { value: tick, time, provenance: tick.provenance }
      return
    }
    if (tick.kind === 'trade') return
    let s = this.#assets.get(tick.asset)
    if (!s) {
      s = newAsset(tick.asset)
      this.#assets.set(tick.asset, s)
    }
    // No closures in here: this runs for every tick, and creating one costs more than the fold itself.
    const { provenance } = tick
    switch (tick.kind) {
      case 'mid':
      case 'mark':
      case 'index':
        if (isNewer(s[tick.kind], time)) s[tick.kind] = observed(tick.price, time, provenance)
        return
      case 'book_top':
        if (isNewer(s.book, time)) {
          s.book = observed({
            bid: tick.bid, ask: tick.ask, bid_size: tick.bid_size, ask_size: tick.ask_size,
            bid_depth_usd: tick.bid_depth_usd, ask_depth_usd: tick.ask_depth_usd,
          }, time, provenance)
        }
        return
      case 'funding':
        if (isNewer(s.funding, time)) s.funding = observed({ rate: tick.rate, interval_hours: tick.interval_hours, premium: tick.premium }, time, provenance)
        return
      case 'predicted_funding':
        if (isNewer(s.predicted_funding, time)) {
          s.predicted_funding = observed({ rate: tick.rate, interval_hours: tick.interval_hours, next_funding_at: tick.next_funding_at }, time, provenance)
        }
        return
      case 'open_interest':
        if (isNewer(s.open_interest, time)) s.open_interest = observed({ value: tick.value, unit: tick.unit }, time, provenance)
        return
      case 'liquidation': {
        const hour = Math.floor(time / HOUR_MS)
        s.liqHours.set(hour, Math.max(s.liqHours.get(hour) ?? time, time))
        for (const h of s.liqHours.keys()) if (h < hour - 48) s.liqHours.delete(h)
        s.liquidations.push({ time, side: tick.side, notional_usd: tick.notional_usd, provenance: tick.provenance })
        // Amortised pruning: drop what is more than 48 h older than this record once the list has doubled.
        if (s.liquidations.length >= 2 * s.liqKept) {
          s.liquidations = s.liquidations.filter((r) => r.time > time - 2 * DAY_MS)
          s.liqKept = Math.max(1024, s.liquidations.length)
        }
        return
      }
      case 'bar': {
        // As FeatureState: the first (source, interval) series seen is the asset's bar series; mixing would corrupt it.
        const key = `${tick.provenance.source}|${tick.interval}`
        if (s.barWindow === null) {
          s.barWindow = { key, intervalMs: intervalMs(tick.interval), firstTime: time, times: [], notionals: [], head: 0, sum: 0, unconvertible: 0 }
        } else if (s.barWindow.key !== key) return
        if (!isNewer(s.bar, time)) return
        const w = s.barWindow
        const notional = tick.volume_unit === 'base' ? tick.volume * tick.close : tick.volume_unit === 'quote' ? tick.volume : NaN
        w.times.push(time)
        w.notionals.push(notional)
        if (Number.isNaN(notional)) w.unconvertible++
        else w.sum += notional
        // Window (time − 24 h, time]: a bar closing exactly 24 h ago traded outside it.
        while (w.head < w.times.length && w.times[w.head]! <= time - DAY_MS) {
          const n = w.notionals[w.head]!
          if (Number.isNaN(n)) w.unconvertible--
          else w.sum -= n
          w.head++
        }
        if (w.head > 4096 && w.head * 2 > w.times.length) {
          w.times = w.times.slice(w.head)
          w.notionals = w.notionals.slice(w.head)
          w.head = 0
        }
        // Covered when the first bar's window opened at or before time − 24 h.
        const covered = w.firstTime - w.intervalMs <= time - DAY_MS
        s.bar = observed({ close: tick.close, interval: tick.interval, volume_24h_usd: covered && w.unconvertible === 0 ? w.sum : null }, time, provenance)
        return
      }
    }
  }

  /** Assets with any per-asset record, sorted. */
  assets(): string[] {
    return [...this.#assets.keys()].sort()
  }

  /** The latest values of one asset (upper-case symbol), or null when the stream never carried it. */
  asset(symbol: string): AssetMarket | null {
    const s = this.#assets.get(symbol)
    if (!s) return null
    const { barWindow: _w, liqHours: _l, liquidations: _q, liqKept: _k, ...market } = s
    return market
  }

  /** The newest universe record consumed, or null. */
  universe(): Observed<UniverseTick> | null {
    return this.#universe
  }

  /**
   * Freshness of the given inputs of `symbol` at now(): age = now − the input's event time; ok when within its
   * budget and not degraded. Inputs the stream never carried for the asset are left out.
   */
  freshness(symbol: string, inputs: readonly MarketInput[]): InputFreshness[] {
    const s = this.#assets.get(symbol)
    const now = this.now()
    if (!s || now === null) return []
    const out: InputFreshness[] = []
    for (const input of inputs) {
      const o = observedOf(s, input)
      if (!o) continue
      const budget = input === 'bars'
        ? stalenessBudgetMs('bars', s.barWindow!.intervalMs)
        : input === 'funding'
          ? stalenessBudgetMs('funding', s.funding!.value.interval_hours * HOUR_MS)
          : stalenessBudgetMs(input)
      const age = Math.max(0, now - o.time)
      out.push({
        input,
        ok: age <= budget && o.provenance.quality !== 'degraded',
        staleness_budget_ms: budget,
        age_ms: age,
        last_success_at: isoMs(o.time),
        quality: o.provenance.quality,
      })
    }
    return out
  }

  /**
   * Distinct clock hours in (now − 24 h, now] holding liquidation-tape records of `symbol` (the same count as
   * FeatureState's liq_hours_24h), or null when the stream never carried the asset.
   */
  liqHours(symbol: string): number | null {
    const s = this.#assets.get(symbol)
    const now = this.now()
    if (!s) return null
    if (now === null) return 0
    let n = 0
    for (const newest of s.liqHours.values()) if (newest > now - DAY_MS && newest <= now) n++
    return n
  }

  /**
   * Liquidation-tape records of `symbol` with event time in (now − windowMs, now], summed by the liquidated side
   * (windowMs at most 48 h: older records are dropped); null when the stream never carried the asset.
   */
  liquidations(symbol: string, windowMs: number): LiquidationWindow | null {
    const s = this.#assets.get(symbol)
    if (!s) return null
    if (!(windowMs > 0 && windowMs <= 2 * DAY_MS)) throw new RangeError(`liquidation window ${windowMs} ms: must be in (0, 48 h]`)
    const now = this.now()
    const to = now ?? -Infinity
    const from = to - windowMs
    let count = 0
    let longs = 0
    let shorts = 0
    let newest: LiquidationRecord | null = null
    const sources = new Set<string>()
    for (const r of s.liquidations) {
      if (r.time <= from || r.time > to) continue
      count++
      if (r.side === 'long') longs += r.notional_usd
      else shorts += r.notional_usd
      if (newest === null || r.time >= newest.time) newest = r
      sources.add(r.provenance.source)
    }
    return { from, to, count, total_usd: longs + shorts, longs_usd: longs, shorts_usd: shorts, newest, sources: [...sources].sort() }
  }

  /** With checkpoints: whether this start loaded a snapshot (else it rebuilt from the log); null without. */
  get restoredFromSnapshot(): boolean | null {
    return this.#restored
  }

  /** Ticks folded in so far: it changes whenever anything a read could return may have changed. */
  get consumedCount(): number {
    return this.#consumed
  }

  health(): MarketStateHealth {
    return {
      consumed: this.#consumed,
      rejected: this.#rejected,
      lastConsumedAtWall: this.#lastConsumedAtWall,
      eventTime: this.#eventTime,
      error: this.#error,
    }
  }

  /**
   * Resolves once every record in the topic at call time has been folded in (tests, startup). Rejects when `signal`
   * aborts or the state closes: a stopped consumer never catches up, and a waiter polling until its timeout kept a
   * stopped service's process alive for minutes (issue 31).
   */
  async caughtUp(timeoutMs = 60_000, signal?: AbortSignal): Promise<void> {
    if (!this.#log || !this.#topic) return
    const end = await this.#log.endOffsets(this.#topic)
    const deadline = this.#wall.now() + timeoutMs
    const done = () => end.every((e, p) => e === 0 || (this.#positions[p] ?? 0) >= e)
    const onAbort = () => this.#wake()
    signal?.addEventListener('abort', onAbort, { once: true })
    try {
      while (!done()) {
        if (this.#error) throw this.#error
        signal?.throwIfAborted()
        if (this.#closed) throw new Error(`market state closed before it caught up with ${this.#topic}`)
        const left = deadline - this.#wall.now()
        if (left <= 0) throw new Error(`market state did not catch up with ${this.#topic} within ${timeoutMs} ms`)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, 100))
          this.#waiters.push(() => {
            clearTimeout(timer)
            resolve()
          })
        })
      }
    } finally {
      signal?.removeEventListener('abort', onAbort)
    }
  }

  #wake(): void {
    const w = this.#waiters
    this.#waiters = []
    for (const f of w) f()
  }

  async close(): Promise<void> {
    this.#closed = true
    const c = this.#consumer
    this.#consumer = null
    if (c) await c.stop()
    // After the consumer stopped: the final snapshot reflects every batch it folded in (and commits its positions).
    await this.#checkpointer?.stop({ final: true })
    this.#wake()
  }

  /**
   * The state as a StateStore: a header row (event time, counts, the universe) then one row per asset, sorted. A bar
   * window is written from its head (the compaction of its arrays is layout, not state), liquidation hours sorted.
   * Counts are state too: consumedCount keys the read caches.
   */
  stateStore(name: string): StateStore {
    return {
      name,
      schema: MARKET_STATE_SCHEMA,
      rows: () => this.#rows(),
      load: (rows) => this.#load(rows),
    }
  }

  *#rows(): Iterable<unknown> {
    yield encodeNumbers({ eventTime: this.#eventTime, consumed: this.#consumed, rejected: this.#rejected, universe: this.#universe })
    for (const asset of [...this.#assets.keys()].sort()) {
      const { barWindow: w, liqHours, ...rest } = this.#assets.get(asset)!
      const barWindow = w && { ...w, times: w.times.slice(w.head), notionals: w.notionals.slice(w.head), head: 0 }
      yield encodeNumbers({ ...rest, barWindow, liqHours: [...liqHours].sort((a, b) => a[0] - b[0]) })
    }
  }

  #load(rows: readonly unknown[]): void {
    const [head, ...assetRows] = rows.map((r) => decodeNumbers(r) as Record<string, unknown>)
    if (!head || typeof head !== 'object' || typeof head.consumed !== 'number' || typeof head.rejected !== 'number') throw new Error('market state: the header row is malformed')
    const assets = new Map<string, AssetState>()
    for (const row of assetRows) {
      if (!row || typeof row.asset !== 'string' || !Array.isArray(row.liqHours) || !Array.isArray(row.liquidations) || typeof row.liqKept !== 'number') {
        throw new Error('market state: an asset row is malformed')
      }
      const w = row.barWindow as BarWindow | null
      if (w !== null && (typeof w !== 'object' || !Array.isArray(w.times) || !Array.isArray(w.notionals) || w.times.length !== w.notionals.length)) {
        throw new Error(`market state: ${row.asset}'s bar window is malformed`)
      }
      assets.set(row.asset, { ...(row as unknown as AssetState), barWindow: w, liqHours: new Map(row.liqHours as Array<[number, number]>) })
    }
    this.#assets.clear()
    for (const [k, v] of assets) this.#assets.set(k, v)
    this.#eventTime = (head.eventTime as number | null) ?? null
    this.#consumed = head.consumed
    this.#rejected = head.rejected
    this.#universe = (head.universe as Observed<UniverseTick> | null) ?? null
  }
}

function observedOf(s: AssetState, input: MarketInput): Observed<unknown> | null {
  switch (input) {
    case 'mid': return s.mid
    case 'mark': return s.mark
    case 'index': return s.index
    case 'bars': return s.bar
    case 'book': return s.book
    case 'funding': return s.funding
    case 'open_interest': return s.open_interest
  }
}
