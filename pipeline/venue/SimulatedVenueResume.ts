/**
 * The simulated venue's resume in O(gap) (issue 31): a restart used to regenerate the seeded history from the origin
 * only to skip it (10.6 s at 35 days, about 110 s at a year). This keeps the generator's checkpoint of the newest minute
 * the log holds in <data>/state (StateSnapshots: versioned schema, content hash, temp file + fsync + rename), and a
 * start goes on from it, generating only the gap; the producer skips the few records the log already holds after it.
 *
 * A checkpoint is kept only once every record up to its line is durable (TapeProducer's onDurable), so it is never
 * ahead of the log it was written beside. A start refuses one that is missing, corrupt, of another schema, of another
 * venue (seed, origin, assets) or ahead of the log (a replaced or truncated log) and regenerates from the origin as
 * before: one log line says why. Written every `everyMs` of wall time while records are appended, and by save() at stop.
 */
import type { Logger } from 'pino'
import { childLogger } from '../../common/logger.ts'
import { partitionForKey } from '../../common/murmur2.ts'
import type { SimulatedVenue, VenueCheckpoint } from '../../ingest/SimulatedVenue.ts'
import { MARKET_CHECKPOINT_SCHEMA } from '../../ingest/SyntheticMarket.ts'
import type { TapeEntry } from '../../ingest/TapeReader.ts'
import { tickKey } from '../../ingest/Tick.ts'
import type { EventLog } from '../log/EventLog.ts'
import { decodeNumbers, encodeNumbers } from '../state/jsonNumbers.ts'
import type { SnapshotRefusal, StateSnapshots } from '../state/StateSnapshots.ts'
import { highWaterMarks } from '../TapeProducer.ts'

/** The store name of the checkpoint in the state folder: <data>/state/simulated-venue.snapshot. */
export const SIMULATED_VENUE_STORE = 'simulated-venue'

/** Why a start regenerates from the origin: the snapshot's own refusals, or a checkpoint of another venue or shape. */
export type VenueResumeRefusal = SnapshotRefusal | 'mismatch'

export interface SimulatedVenueResumeOptions {
  venue: SimulatedVenue
  snapshots: StateSnapshots
  log: EventLog
  /** The ticks topic the venue's records go to. */
  topic: string
  /** Least wall time between two checkpoint writes while records are appended; 0: only save() (at stop). */
  everyMs: number
  logger?: Logger
  /** Wall clock for `everyMs` (default Date.now). */
  now?: () => number
}

/**
 * Checkpoints kept waiting for the log at most. While the producer skips what the log already holds (a start without a
 * checkpoint regenerates the whole history), one checkpoint a minute piles up with none durable yet: 526,000 at a year,
 * 2 GiB, and taking them from the front one at a time was quadratic (a full rebuild of 365 days never became ready,
 * its event loop stuck here). Past this many, every other one is dropped, the newest kept: the checkpoint saved is
 * then a few hundred minutes older than the log at most, which the next start regenerates in milliseconds.
 */
export const MAX_PENDING_CHECKPOINTS = 1024

export class SimulatedVenueResume {
  /** Checkpoints generated but not yet durable in the log, oldest first (thinned past MAX_PENDING_CHECKPOINTS). */
  #pending: VenueCheckpoint[] = []
  #newest: VenueCheckpoint | null
  #savedLine: number
  #savedAt: number

  private constructor(
    private readonly options: SimulatedVenueResumeOptions,
    /** Where this start resumes generating; null: from the origin. */
    readonly from: VenueCheckpoint | null,
    /** Why no checkpoint was used (null when one was). */
    readonly refusal: { reason: VenueResumeRefusal; detail: string } | null,
    private readonly logger: Logger,
  ) {
    this.#newest = from
    this.#savedLine = from?.market.ticks ?? 0
    this.#savedAt = this.#now()
  }

  /** Reads the kept checkpoint and decides where generation starts; logs one line either way. */
  static async open(options: SimulatedVenueResumeOptions): Promise<SimulatedVenueResume> {
    const logger = options.logger ?? childLogger('simulated-venue')
    const { venue, snapshots, log, topic } = options
    const read = await snapshots.read(SIMULATED_VENUE_STORE, MARKET_CHECKPOINT_SCHEMA)
    let refusal: { reason: VenueResumeRefusal; detail: string } | null = read.ok ? null : { reason: read.reason, detail: read.detail }
    let from: VenueCheckpoint | null = null
    if (read.ok) {
      let checkpoint: unknown = null
      try {
        if (read.rows.length !== 1) throw new Error(`${read.rows.length} rows, a checkpoint is one`)
        checkpoint = decodeNumbers(read.rows[0])
      } catch (err) {
        refusal = { reason: 'corrupt', detail: (err as Error).message }
      }
      const problem = refusal === null ? venue.checkpointProblem(checkpoint) : null
      if (problem !== null) refusal = { reason: 'mismatch', detail: problem }
      if (refusal === null) {
        const ahead = await aheadOfLog(checkpoint as VenueCheckpoint, log, topic, venue.tapeId)
        if (ahead === null) from = checkpoint as VenueCheckpoint
        else refusal = { reason: 'ahead_of_log', detail: ahead }
      }
    }
    if (from) {
      logger.info({ line: from.market.ticks, minute: new Date(venue.checkpointTime(from)).toISOString() }, 'simulated venue: resuming from its checkpoint; generating only the gap')
    } else if (refusal!.reason === 'missing') {
      logger.info({ reason: refusal!.reason }, 'simulated venue: no checkpoint yet; generating from the origin')
    } else {
      logger.warn({ reason: refusal!.reason, detail: refusal!.detail }, 'simulated venue: checkpoint not used; regenerating the history from the origin')
    }
    return new SimulatedVenueResume(options, from, refusal, logger)
  }

  /** The venue's records from where this start resumes, each minute's checkpoint kept until it is durable. */
  source(): () => Iterable<TapeEntry> {
    return () => {
      this.#pending = []
      return this.options.venue.entries({ ...(this.from ? { from: this.from } : {}), onCheckpoint: (c) => this.keep(c) })
    }
  }

  /** Checkpoints generated and not yet durable (bounded: MAX_PENDING_CHECKPOINTS). */
  get pending(): number {
    return this.#pending.length
  }

  private keep(checkpoint: VenueCheckpoint): void {
    const pending = this.#pending
    pending.push(checkpoint)
    if (pending.length > MAX_PENDING_CHECKPOINTS) this.#pending = pending.filter((_, i) => (pending.length - 1 - i) % 2 === 0)
  }

  /** TapeProducer's onDurable: every record up to `line` is in the log; the newest checkpoint at or before it is kept. */
  async onDurable(line: number): Promise<void> {
    const pending = this.#pending
    let durable = 0
    while (durable < pending.length && pending[durable]!.market.ticks <= line) durable++
    if (durable > 0) {
      this.#newest = pending[durable - 1]!
      this.#pending = pending.slice(durable)
    }
    if (this.options.everyMs > 0 && this.#now() - this.#savedAt >= this.options.everyMs) {
      // A failed write costs only a longer resume next time: the records go on.
      await this.save().catch((err: unknown) => this.logger.warn({ err }, 'simulated venue: checkpoint not written; the next start resumes from an older one'))
    }
  }

  /** Line of the newest durable checkpoint (0: none). */
  get line(): number {
    return this.#newest?.market.ticks ?? 0
  }

  /** Writes the newest durable checkpoint if it moved since the last write (atomically: a crash keeps the old one). */
  async save(): Promise<void> {
    this.#savedAt = this.#now()
    const newest = this.#newest
    if (newest === null || newest.market.ticks === this.#savedLine) return
    await this.options.snapshots.write(SIMULATED_VENUE_STORE, MARKET_CHECKPOINT_SCHEMA, [], [encodeNumbers(newest)])
    this.#savedLine = newest.market.ticks
  }

  #now(): number {
    return (this.options.now ?? Date.now)()
  }
}

/**
 * Why the checkpoint is ahead of the log, or null: every asset's last record at or before it must be in the log, i.e.
 * at or below the tape's high-water mark of that asset's partition (records are appended in line order per partition).
 */
async function aheadOfLog(checkpoint: VenueCheckpoint, log: EventLog, topic: string, tapeId: string): Promise<string | null> {
  const partitions = await log.partitionsOf(topic)
  const marks = await highWaterMarks(log, topic, tapeId)
  for (const asset of checkpoint.market.assets) {
    const partition = partitionForKey(tickKey(asset), partitions)
    const mark = marks[partition] ?? 0
    if (asset.lastTick > mark) return `the checkpoint is at line ${checkpoint.market.ticks} (${asset.asset}: line ${asset.lastTick}), the log holds ${asset.asset}'s records of ${tapeId} up to line ${mark} (partition ${partition})`
  }
  return null
}
