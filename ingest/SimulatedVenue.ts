/**
 * The simulated venue in the present: the seeded synthetic market (SyntheticMarket.ts) run from a fixed origin with no
 * end, as a stream of tape records. Everything up to now is history a replay can push through at full speed; the
 * rest is the future, handed over as the wall clock reaches it (ingest/Replay.ts liveClock), so `npm start` serves
 * the present instead of a dated tape.
 *
 * Resumable like a tape: the same origin and seed give the same records with the same sequence numbers, so after a
 * restart the producer skips what the log already holds and only the gap since the stop is new. The origin is chosen
 * once per data folder (app/ServiceApp.ts keeps it) and never moves: moving it would rewrite history.
 */
import { SyntheticMarket } from './SyntheticMarket.ts'
import { tickLine, tickTime, type CanonicalAsset } from './Tick.ts'
import type { TapeEntry } from './TapeReader.ts'
import { MINUTE_MS } from '../common/time.ts'

/** SyntheticMarket's longest run: five years of minutes past the origin (its options schema's bound). */
const RUN_HOURS = 24 * 366 * 5

export interface SimulatedVenueOptions {
  seed: number
  assets: readonly CanonicalAsset[]
  /** Epoch ms on a whole minute: the first simulated minute starts here. */
  originMs: number
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

  /** The origin `historyMs` before `nowMs`, floored to the minute: what a first start in an empty folder picks. */
  static originBefore(nowMs: number, historyMs: number): number {
    return Math.floor((nowMs - historyMs) / MINUTE_MS) * MINUTE_MS
  }

  /** Names this venue's records in the log (the tape id of TickEnvelope): seed and origin fix every record. */
  get tapeId(): string {
    return `sim-s${this.seed}-${new Date(this.originMs).toISOString().replace(/[-:]|\.000/g, '')}`
  }

  /** Event time of the last record the run can make (five years past the origin). */
  get endMs(): number {
    return this.originMs + RUN_HOURS * 3_600_000
  }

  /** The records in event-time order, numbered from 1 like tape lines; lazily generated, so the future costs nothing. */
  *entries(): Generator<TapeEntry> {
    const market = new SyntheticMarket({ seed: this.seed, hours: RUN_HOURS, assets: [...this.assets], start: new Date(this.originMs).toISOString() })
    let line = 0
    for (const tick of market.ticks()) {
      // The line text only when asked: after a restart most of the history is skipped unread.
      yield { line: ++line, tick, time: tickTime(tick), get raw() { return tickLine(tick) } }
    }
  }
}
