/**
 * The simulated venue in the present: the seeded synthetic market (SyntheticMarket.ts) run from a fixed origin with no
 * end, as a stream of tape records. Everything up to now is history a replay can push through at full speed; the
 * rest is the future, handed over as the wall clock reaches it (ingest/Replay.ts liveClock), so `npm start` serves
 * the present instead of a dated tape.
 *
 * Resumable like a tape: the same origin and seed give the same records with the same sequence numbers, so after a
 * restart the producer skips what the log already holds and only the gap since the stop is new. The origin is chosen
 * once per data folder (app/ServiceApp.ts keeps it) and never moves: moving it would rewrite history.
 *
 * Resumable in O(gap) (issue 31): regenerating the history only to skip it cost 10.6 s at 35 days and grew with every
 * day, so entries() can start from a checkpoint (the generator's whole state at a minute boundary, with the line number
 * reached) and yields exactly the records a run from the origin yields after it.
 */
import { SyntheticMarket, checkpointProblem, type MarketCheckpoint } from './SyntheticMarket.ts'
import { tickLine, tickTime, type CanonicalAsset } from './Tick.ts'
import type { TapeEntry } from './TapeReader.ts'
import { DAY_MS, MINUTE_MS } from '../common/time.ts'

/** SyntheticMarket's longest run: five years of minutes past the origin (its options schema's bound). */
const RUN_HOURS = 24 * 366 * 5

export interface SimulatedVenueOptions {
  seed: number
  assets: readonly CanonicalAsset[]
  /** Epoch ms on a whole minute: the first simulated minute starts here. */
  originMs: number
}

/** The generator's state at a minute boundary, with what fixes the venue: a checkpoint of another venue is refused. */
export interface VenueCheckpoint {
  seed: number
  /** The origin, ISO-8601. */
  origin: string
  assets: CanonicalAsset[]
  /** market.ticks is the line of the last record at or before the checkpoint's minute. */
  market: MarketCheckpoint
}

export interface VenueRun {
  /** Go on from this checkpoint (one this venue's checkpointProblem() accepts) instead of from the origin. */
  from?: VenueCheckpoint
  /** Sees each minute's checkpoint before that minute's records are yielded. */
  onCheckpoint?: (checkpoint: VenueCheckpoint) => void
}

export class SimulatedVenue {
  readonly seed: number
  readonly assets: readonly CanonicalAsset[]
  readonly originMs: number

  constructor(options: SimulatedVenueOptions) {
    if (!Number.isSafeInteger(options.originMs) || options.originMs % MINUTE_MS !== 0) {
      throw new RangeError(`SimulatedVenue origin must be an epoch ms on a whole minute, got ${options.originMs}`)
    }
    this.seed = options.seed
    this.assets = options.assets
    this.originMs = options.originMs
  }

  /**
   * The origin `historyMs` before `nowMs`, floored to the UTC day: what a first start in an empty folder picks. On a
   * whole day, every first start sees the same history relative to its origin (the same seed, the same hours of the
   * day), so the training window, the bootstrap release it fits and its gates' verdict do not depend on the minute it
   * started: on the minute, some starts' windows fell where no family beat the base rate with confidence, and the demo
   * sold nothing.
   */
  static originBefore(nowMs: number, historyMs: number): number {
    return Math.floor((nowMs - historyMs) / DAY_MS) * DAY_MS
  }

  /** Names this venue's records in the log (the tape id of TickEnvelope): seed and origin fix every record. */
  get tapeId(): string {
    return `sim-s${this.seed}-${new Date(this.originMs).toISOString().replace(/[-:]|\.000/g, '')}`
  }

  /** The seed and origin a tape id of this venue names (the tapeId getter's inverse), or null for another tape. */
  static parseTapeId(tapeId: string): { seed: number; originMs: number } | null {
    const m = /^sim-s(\d+)-(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(tapeId)
    if (!m) return null
    const originMs = Date.parse(`${m[2]}-${m[3]}-${m[4]}T${m[5]}:${m[6]}:${m[7]}.000Z`)
    return Number.isFinite(originMs) ? { seed: Number(m[1]), originMs } : null
  }

  /** Event time of the last record the run can make (five years past the origin). */
  get endMs(): number {
    return this.originMs + RUN_HOURS * 3_600_000
  }

  /** Why `value` is not a checkpoint of this venue (another seed, origin or asset list, schema, shape), or null. */
  checkpointProblem(value: unknown): string | null {
    if (value === null || typeof value !== 'object') return 'not an object'
    const c = value as Partial<VenueCheckpoint>
    if (c.seed !== this.seed) return `seed ${String(c.seed)}, this venue's is ${this.seed}`
    if (typeof c.origin !== 'string' || Date.parse(c.origin) !== this.originMs) return `origin ${String(c.origin)}, this venue's is ${new Date(this.originMs).toISOString()}`
    if (!Array.isArray(c.assets) || c.assets.join() !== this.assets.join()) return `assets ${String(c.assets)}, this venue's are ${this.assets.join()}`
    return checkpointProblem(c.market, this.assets, RUN_HOURS * 60)
  }

  /** Event time of the end of a checkpoint's minute: every record at or before it is at or before its line. */
  checkpointTime(checkpoint: VenueCheckpoint): number {
    return this.originMs + checkpoint.market.minute * MINUTE_MS
  }

  /**
   * The records in event-time order, numbered from 1 like tape lines; lazily generated, so the future costs nothing.
   * From a checkpoint, the records after it, with the same lines.
   */
  *entries(run: VenueRun = {}): Generator<TapeEntry> {
    if (run.from) {
      const problem = this.checkpointProblem(run.from)
      if (problem !== null) throw new RangeError(`SimulatedVenue checkpoint: ${problem}`)
    }
    const market = new SyntheticMarket({ seed: this.seed, hours: RUN_HOURS, assets: [...this.assets], start: new Date(this.originMs).toISOString() })
    const { onCheckpoint } = run
    const venue = { seed: this.seed, origin: new Date(this.originMs).toISOString(), assets: [...this.assets] }
    let line = run.from?.market.ticks ?? 0
    const ticks = market.ticks(undefined, {
      ...(run.from ? { from: run.from.market } : {}),
      ...(onCheckpoint ? { onCheckpoint: (state: MarketCheckpoint) => onCheckpoint({ ...venue, market: state }) } : {}),
    })
    for (const tick of ticks) {
      // The line text only when asked: after a restart most of the history is skipped unread.
      yield { line: ++line, tick, time: tickTime(tick), get raw() { return tickLine(tick) } }
    }
  }
}
