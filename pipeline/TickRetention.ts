/**
 * Issue 31, Deliver 3: "Retention: ticks leave the log once sealed in Parquet and older than the longest feature window
 * (embedded log: segment deletion; Kafka: retention configured on the topic the service creates)".
 *
 * The embedded log's half, run periodically by `svc start` (SVC_RETENTION_INTERVAL_S). Per partition of the ticks
 * topic, whole segments are deleted below the lowest of three floors:
 * - sealed: the Parquet sink's committed offset. The sink commits only after sealing, and only up to the first record
 *   still buffered in any of the partition's groups (ParquetSink's resume rule), so every record below it is in a sealed
 *   file. A sink that never committed holds the floor at 0.
 * - window: the end of the last segment whose newest record is older than `keepMs` (the longest feature window plus a
 *   margin) behind the newest tick of the topic, in event time (a replayed history has event times far from the wall
 *   clock). Ticks reach a partition in event-time order, so a segment's last record is its newest.
 * - committed: the lowest position any consumer group committed on the partition (a stream processor that resumes
 *   from a committed position after its state snapshot must find its tail in the log). A group that commits nothing
 *   is not a floor: it rebuilds from the log start.
 * On Kafka the broker deletes by retention.ms instead (KafkaLog, topics.ts); this job does nothing there.
 */
import type { Logger } from 'pino'
import { childLogger } from '../common/logger.ts'
import type { EmbeddedLog, SegmentDeletion } from './log/EmbeddedLog.ts'

export interface TickRetentionOptions {
  log: EmbeddedLog
  ticksTopic: string
  /** The Parquet sink's consumer group (Pipeline's sinkGroup). */
  sinkGroup: string
  /** Ticks this far behind the newest one (event time) may go: the longest feature window plus a margin. */
  keepMs: number
}

/** One partition's floors and what was deleted below the lowest. */
export interface PartitionRetention {
  partition: number
  sealed: number
  window: number
  /** Lowest committed position of any group, with the group (null: no group committed on this partition). */
  committed: { offset: number; groupId: string } | null
  floor: number
  /** Which floor bound it. */
  boundBy: 'sealed' | 'window' | 'committed'
  deletion: SegmentDeletion
}

export interface TickRetentionReport {
  topic: string
  /** Newest tick time of the topic (event time, epoch ms), null for an empty topic. */
  newestMs: number | null
  cutoffMs: number | null
  partitions: PartitionRetention[]
  deletedSegments: number
  deletedBytes: number
}

export class TickRetention {
  readonly #o: TickRetentionOptions
  readonly #log: Logger

  constructor(options: TickRetentionOptions) {
    if (!(Number.isSafeInteger(options.keepMs) && options.keepMs > 0)) throw new RangeError('keepMs must be a positive integer')
    this.#o = options
    this.#log = childLogger('tick-retention')
  }

  async run(): Promise<TickRetentionReport> {
    const { log, ticksTopic: topic, sinkGroup, keepMs } = this.#o
    const n = await log.partitionsOf(topic)
    const segments = await Promise.all(Array.from({ length: n }, (_, p) => log.segments(topic, p)))
    let newestMs: number | null = null
    for (const list of segments) {
      const last = list.at(-1)?.lastTimestamp ?? null
      if (last !== null && (newestMs === null || last > newestMs)) newestMs = last
    }
    const cutoffMs = newestMs === null ? null : newestMs - keepMs
    const committed = await log.committedPositions(topic)
    const partitions: PartitionRetention[] = []
    for (let partition = 0; partition < n; partition++) {
      const sealed = committed.find((c) => c.groupId === sinkGroup && c.partition === partition)?.next ?? 0
      let window = segments[partition]![0]?.baseOffset ?? 0
      if (cutoffMs !== null) {
        for (const s of segments[partition]!) {
          if (s.lastTimestamp === null || s.lastTimestamp >= cutoffMs) break
          window = s.endOffset
        }
      }
      let lowest: { offset: number; groupId: string } | null = null
      for (const c of committed) if (c.partition === partition && (lowest === null || c.next < lowest.offset)) lowest = { offset: c.next, groupId: c.groupId }
      const floors: Array<[PartitionRetention['boundBy'], number]> = [['sealed', sealed], ['window', window], ['committed', lowest?.offset ?? Infinity]]
      const [boundBy, floor] = floors.reduce((a, b) => (b[1] < a[1] ? b : a))
      const deletion = await log.deleteSegmentsBelow(topic, partition, floor)
      partitions.push({ partition, sealed, window, committed: lowest, floor, boundBy, deletion })
    }
    const report: TickRetentionReport = {
      topic,
      newestMs,
      cutoffMs,
      partitions,
      deletedSegments: partitions.reduce((s, p) => s + p.deletion.deletedSegments, 0),
      deletedBytes: partitions.reduce((s, p) => s + p.deletion.deletedBytes, 0),
    }
    this.#log.info(
      {
        topic,
        deletedSegments: report.deletedSegments,
        deletedBytes: report.deletedBytes,
        cutoff: cutoffMs === null ? null : new Date(cutoffMs).toISOString(),
        floors: partitions.map((p) => ({ partition: p.partition, floor: p.floor, boundBy: p.boundBy, group: p.boundBy === 'committed' ? p.committed?.groupId : undefined, logStart: p.deletion.logStart })),
      },
      'tick retention run',
    )
    return report
  }
}
