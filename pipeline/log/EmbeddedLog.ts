/**
 * The embedded event log: file-backed, durable, single-process (the default `SVC_LOG=embedded`).
 *
 * Layout under `dir`:
 *   LOCK                                   owner pid (DirLock); a second process gets LOG_LOCKED
 *   topics/<topic>/meta.json               {"name","partitions"} written atomically
 *   topics/<topic>/<partition>/<base>.log  segments named by their first offset (20 digits); roll at segmentBytes
 *   topics/<topic>/<partition>/start.json  {"logStart"} once retention deleted segments (absent: the log starts at 0)
 *   groups/<group>.json                    committed offsets, replaced atomically (GroupOffsetsFile)
 *   retired-tx.json                        {"ranges"}: atomic units retention deleted part of (complete by construction)
 * Each record is one frame (frame.ts): length + CRC32 + offset + timestamp + key + value. Offsets → file positions
 * are indexed in memory, rebuilt by scanning the segments on open (see "Clean shutdown" for which).
 *
 * Durability (fsync policy): send() writes all its records, then fdatasyncs every segment file it touched (and the
 * partition directory when a segment was created) before resolving. Syncs are group commits: sends whose writes
 * finish while a sync is running share the next one, so concurrent producers pay one fsync per round, not per send.
 * Consumers only see records up to the last completed sync (the "durable end", like Kafka's high watermark), so a
 * crash can lose nothing that was acknowledged or delivered. Writes to one partition are serialized, so the file is
 * always a contiguous prefix of frames.
 *
 * Reading: the newest `recentBytes` of each partition's records stay in memory as written (the role the page cache
 * plays for Kafka), so consumers that keep up — in one process, every stream processor reads every tick — get them
 * without a disk read and CRC check each, and all get the same record objects (read-only by contract). Older records
 * are read from the segment files.
 *
 * Clean shutdown (Kafka's clean-shutdown marker, issue 31: a year of ticks is gigabytes, and scanning all of it made
 * a restart's time grow with history): close(), once every write is fsynced and nothing failed, writes
 * `clean-shutdown.json` (every segment's name and byte size, the next transaction id, the last timestamp of segments
 * that can no longer grow). An open that finds it, with every segment file present at exactly the recorded size and no
 * other, deletes it (durably, before anything can be written) and scans only each partition's last segment; the older
 * segments are indexed on their first read (the same frame checks, CRC included; a mismatch is LOG_CORRUPT then). A
 * clean shutdown left no torn tail and no incomplete transaction, so the recovery below has nothing to do. No marker
 * (a crash, a kill, an older version) or one that does not match the files: every segment is scanned, as below.
 *
 * Recovery on open: the log is the longest valid prefix of each partition — the first frame that is incomplete,
 * fails its CRC, or is out of offset sequence marks a torn tail: that segment is truncated there (logged) and any
 * later segment is deleted (logged). Only unacknowledged writes can be there, because an acknowledgement needs every
 * earlier write of that partition to be fsynced first.
 *
 * Atomic units (sendAtomic) span partitions and topics. Units queued while the previous group is being written are
 * written together as one transaction: each partition's records of the whole group in one write, version-2 frames
 * carrying the transaction id and the transaction's frame count across all partitions (frame.ts), then one shared
 * fsync round. The all-or-nothing guarantee holds per transaction, hence per unit (no unit of a transaction is
 * acknowledged before all of it is durable); a transaction per group rather than per unit means fewer writes and fewer
 * ids for recovery to count. Three rules make it hold:
 * - Writing: a transaction takes the write chains of all its partitions at once (synchronously, so nothing can take
 *   one of them in between) and releases them only when all its frames are written, so no other write interleaves
 *   with it in any of its partitions, and every later write of those partitions starts after all of it is written.
 * - Visibility: each partition has a `completeEnd`, advanced only when a plain write or a whole transaction has been
 *   written; a sync round publishes (as durableEnd) the completeEnd it saw at its start, never nextOffset, so a round
 *   that starts while a transaction is half-written exposes none of it.
 * - Recovery: after the per-partition prefix scan, frames are counted per transaction id over every partition of every
 *   topic; a transaction with fewer frames than it declares is incomplete, and each partition is truncated at its
 *   first frame of an incomplete transaction. Nothing after that point was acknowledged: it was written after the
 *   incomplete transaction (by the chain rule), and an acknowledgement needs a sync round that started after the
 *   write, which would have made the whole transaction durable. Truncation can remove a complete transaction's frames
 *   from one partition, making it incomplete too, so this repeats until nothing is incomplete (logged). Offsets stay
 *   dense, so consumers and sinks see no difference.
 *
 * Retention (deleteSegmentsBelow, issue 31 item 3): whole segments whose records all lie below a given offset are
 * deleted, oldest first, never the segment holding the last durable record. The partition's log start (the first
 * offset still held) is written to start.json before any file goes, so a crash mid-deletion leaves only segments
 * wholly below it, which recovery deletes. Readers asking below the log start get records from it (like Kafka's
 * log-start offset); offsets are never renumbered, so endOffsets and committed positions mean what they meant. A read
 * in flight on a deleted segment finishes on its open handle (the file is unlinked; the handle closes after the read).
 * Atomic units span topics (a live venue unit holds ticks and venue.gaps), so deleting tick segments can leave a
 * transaction with fewer frames than it declares, which recovery would take for a torn one and cut the other
 * partitions at. Every frame retention deletes was durable, and a durable frame means its whole transaction was
 * (the visibility rule), so the ids in deleted segments are recorded in retired-tx.json first and recovery never calls
 * them incomplete; ids no longer found in any segment are dropped from the file at the next open.
 */
import { open, readdir, readFile, rm, stat, unlink, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import type { JSONSchemaType } from 'ajv'
import type { Logger } from 'pino'
import { childLogger } from '../../common/logger.ts'
import { partitionForKey } from '../../common/murmur2.ts'
import { fsyncDir, writeFileAtomic } from './atomicFile.ts'
import { DATA_FILE_MODE, mkdirData } from './dataModes.ts'
import { DirLock } from './DirLock.ts'
import { EmbeddedConsumer, type EmbeddedLogInternals, type WakeSignal } from './EmbeddedConsumer.ts'
import type { ConsumedRecord, ConsumerLag, ConsumerOptions, EventLog, LogConsumer, LogProducer, LogRecord, TopicRecords, TopicSpec } from './EventLog.ts'
import { FRAME_OVERHEAD_BYTES, MAX_TX_ID, checkFrame, decodeFrame, encodeFrame, frameTx, type FrameTx } from './frame.ts'
import { GroupOffsetsFile } from './GroupOffsetsFile.ts'
import { lagOf } from './consumerLag.ts'
import { GroupCommitQueue, type Pipelined } from '../work/GroupCommitQueue.ts'
import { LogError } from './LogError.ts'
import { assertPartitionOffset, assertRecords, assertTopicBatches, assertTopicName, assertTopicSpecs } from './validate.ts'
import { optionsValidator } from '../../common/validation.ts'

export interface EmbeddedLogOptions {
  /** A segment rolls when the next frame would take it past this many bytes. Default 64 MiB. */
  segmentBytes?: number
  /** Most records per delivered batch. Default 500. */
  maxBatchRecords?: number
  /** Soft cap on bytes per delivered batch (a batch always holds at least one record). Default 1 MiB. */
  maxBatchBytes?: number
  /** Bytes of each partition's newest records kept in memory for readers (0: every read goes to disk). Default 16 MiB. */
  recentBytes?: number
}

type ResolvedOptions = Required<EmbeddedLogOptions>

const validateOptions = optionsValidator<EmbeddedLogOptions>(
  {
    type: 'object',
    additionalProperties: false,
    properties: {
      segmentBytes: { type: 'integer', minimum: 64, maximum: 1024 ** 3, nullable: true, default: 64 * 1024 * 1024 },
      maxBatchRecords: { type: 'integer', minimum: 1, maximum: 100000, nullable: true, default: 500 },
      maxBatchBytes: { type: 'integer', minimum: 1024, maximum: 256 * 1024 * 1024, nullable: true, default: 1024 * 1024 },
      recentBytes: { type: 'integer', minimum: 0, maximum: 1024 ** 3, nullable: true, default: 16 * 1024 * 1024 },
    },
  } as JSONSchemaType<EmbeddedLogOptions>,
  'EmbeddedLog options',
  LogError.config,
)

interface Segment {
  baseOffset: number
  path: string
  fh: FileHandle
  /** Bytes written by completed writes. */
  size: number
  /** File position of record baseOffset + i (empty while `lazy`). */
  positions: number[]
  /** Not indexed yet (opened after a clean shutdown): its record count, and the scan in progress. */
  lazy: { records: number; indexing: Promise<void> | null } | null
  /** Reads in progress on fh: a segment deleted by retention closes its handle once they finish. */
  readers: number
  /** Deleted by retention (file unlinked, no longer in its partition's list). */
  retired: boolean
  /** Timestamp of the segment's last record, once read for a segment that can no longer grow. */
  lastTimestamp?: number
}

/** One segment as retention sees it (EmbeddedLog.segments). */
export interface SegmentInfo {
  baseOffset: number
  /** Offset after its last durable record. */
  endOffset: number
  bytes: number
  /** Timestamp of its last durable record (null: it holds none yet). */
  lastTimestamp: number | null
}

/** What deleteSegmentsBelow removed. */
export interface SegmentDeletion {
  topic: string
  partition: number
  deletedSegments: number
  deletedBytes: number
  /** The partition's first held offset afterwards. */
  logStart: number
}

/** A consumer group's committed position on one partition (EmbeddedLog.committedPositions). */
export interface CommittedPosition {
  groupId: string
  partition: number
  next: number
}

interface PartitionState {
  topic: string
  partition: number
  dir: string
  segments: Segment[]
  /** First offset still held (retention deleted the segments below it; 0 until it did). */
  logStart: number
  /** Offset the next write gets (= end of written frames). */
  nextOffset: number
  /** End of frames of finished writes: whole plain writes and whole transactions (never inside a transaction). */
  completeEnd: number
  /** End of fsynced complete records; consumers and endOffsets see only below it. */
  durableEnd: number
  writeChain: Promise<void>
  /** The newest records written by this process, in offset order: recent[recentHead] has offset recentFirst. */
  recent: ConsumedRecord[]
  recentHead: number
  recentFirst: number
  /** Frame bytes of recent[recentHead..]. */
  recentSize: number
}

interface TopicState {
  name: string
  partitions: PartitionState[]
}

/** A sendAtomic call waiting for its group's transaction. */
/** Consecutive frames of one transaction in one partition, found by the recovery scan. */
interface TxRun {
  id: number
  /** Frames the transaction declares across all partitions. */
  frames: number
  /** Offset of the run's first frame. */
  first: number
  count: number
}

const SEGMENT_FILE = /^(\d{20})\.log$/
/** Per partition directory: the log start once retention deleted segments. */
const START_FILE = 'start.json'
/** At the log root: transaction ids retention deleted frames of. */
const RETIRED_TX_FILE = 'retired-tx.json'
/** At the log root: written by a clean close, consumed by the next open (see the file comment). */
const CLEAN_SHUTDOWN_FILE = 'clean-shutdown.json'
const CLEAN_SHUTDOWN_VERSION = 1

/** What a clean close records per segment: its file name (under topics/), byte size, and final last timestamp. */
interface CleanSegment {
  file: string
  size: number
  lastTimestamp?: number
}

interface CleanShutdown {
  version: number
  nextTxId: number
  segments: CleanSegment[]
}

/** Records in a segment: indexed, or as a clean shutdown recorded them. */
function recordCount(s: Segment): number {
  return s.lazy ? s.lazy.records : s.positions.length
}

/** Sorted, merged inclusive ranges of transaction ids. */
type IdRanges = Array<[number, number]>

function mergeIds(ranges: IdRanges, ids: Iterable<number>): IdRanges {
  const all: IdRanges = [...ranges, ...[...ids].map((id): [number, number] => [id, id])].sort((a, b) => a[0] - b[0])
  const out: IdRanges = []
  for (const [lo, hi] of all) {
    const last = out[out.length - 1]
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi)
    else out.push([lo, hi])
  }
  return out
}

function inRanges(ranges: IdRanges, id: number): boolean {
  let lo = 0
  let hi = ranges.length - 1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    const [a, b] = ranges[mid]!
    if (id < a) hi = mid - 1
    else if (id > b) lo = mid + 1
    else return true
  }
  return false
}
const SCAN_CHUNK_BYTES = 4 * 1024 * 1024
/** A transaction takes queued units until it holds about this many value bytes (the rest wait for the next one). */
const TX_GROUP_BYTES = 8 * 1024 * 1024

function segmentName(baseOffset: number): string {
  return `${String(baseOffset).padStart(20, '0')}.log`
}

export class EmbeddedLog implements EventLog, EmbeddedLogInternals {
  readonly kind = 'embedded' as const
  readonly logger: Logger

  private readonly topics = new Map<string, TopicState>()
  private readonly groups = new Map<string, Promise<GroupOffsetsFile>>()
  private readonly claims = new Map<string, Map<string, EmbeddedConsumer>>()
  private readonly watchers = new Map<string, Set<WakeSignal>>()
  private readonly consumers = new Set<EmbeddedConsumer>()
  private readonly dirtySegments = new Set<Segment>()
  private readonly dirtyDirs = new Set<string>()
  private readonly dirtyPartitions = new Set<PartitionState>()
  /** fsync rounds, group-committed: a request joins the next round, which starts once the running one ended. */
  private readonly fsyncs = new GroupCommitQueue<null>({ maxBytes: 0, flush: () => this.syncNow() })
  private topicChain: Promise<void> = Promise.resolve()
  /** Atomic units, group-committed: one transaction per group (writeUnits). */
  private readonly units = new GroupCommitQueue<Map<PartitionState, LogRecord[]>>({ maxBytes: TX_GROUP_BYTES, flush: (group) => this.writeUnits(group) })
  /** Segment deletions run one at a time (each splices the front of a partition's segment list). */
  private retentionChain: Promise<unknown> = Promise.resolve()
  /** Transactions retention deleted frames of (see the file comment). */
  private retiredTx: IdRanges = []
  private nextTxId = 1
  private failure: LogError | null = null
  private closed = false
  private syncs = 0

  private constructor(
    readonly dir: string,
    private readonly options: ResolvedOptions,
    private readonly lock: DirLock,
  ) {
    this.logger = childLogger('embedded-log').child({ dir })
  }

  static async open(dir: string, options: EmbeddedLogOptions = {}): Promise<EmbeddedLog> {
    const resolved = validateOptions(options) as ResolvedOptions
    await mkdirData(join(dir, 'topics'))
    await mkdirData(join(dir, 'groups'))
    const lock = await DirLock.acquire(dir, childLogger('embedded-log'))
    const log = new EmbeddedLog(dir, resolved, lock)
    try {
      await log.recover()
    } catch (err) {
      await log.closeFiles()
      await lock.release()
      throw err
    }
    return log
  }

  // ---- EventLog ----

  async ensureTopics(specs: TopicSpec[]): Promise<void> {
    this.assertOpen()
    assertTopicSpecs(specs)
    const run = this.topicChain.catch(() => {}).then(async () => {
      for (const spec of specs) {
        const existing = this.topics.get(spec.name)
        if (existing) {
          if (existing.partitions.length !== spec.partitions) {
            throw new LogError('LOG_TOPIC_MISMATCH', `topic ${spec.name} has ${existing.partitions.length} partitions, not ${spec.partitions}`)
          }
          continue
        }
        const topicDir = join(this.dir, 'topics', spec.name)
        await mkdirData(topicDir)
        const partitions: PartitionState[] = []
        for (let p = 0; p < spec.partitions; p++) {
          const dir = join(topicDir, String(p))
          await mkdirData(dir)
          partitions.push(this.emptyPartition(spec.name, p, dir))
        }
        await fsyncDir(topicDir)
        await writeFileAtomic(join(topicDir, 'meta.json'), JSON.stringify({ name: spec.name, partitions: spec.partitions }) + '\n')
        await fsyncDir(join(this.dir, 'topics'))
        this.topics.set(spec.name, { name: spec.name, partitions })
      }
    })
    this.topicChain = run
    await run
  }

  async partitionsOf(topic: string): Promise<number> {
    return this.partitionCount(topic)
  }

  async endOffsets(topic: string): Promise<number[]> {
    return this.topic(topic).partitions.map((p) => p.durableEnd)
  }

  async lastRecords(topic: string): Promise<(ConsumedRecord | null)[]> {
    this.assertOpen()
    const t = this.topic(topic)
    return Promise.all(
      t.partitions.map(async (p) => {
        if (p.durableEnd === 0) return null
        const [record] = await this.readRange(p, p.durableEnd - 1, 1)
        return record ?? null
      }),
    )
  }

  async createProducer(): Promise<LogProducer> {
    this.assertOpen()
    let closed = false
    return {
      send: async (topic, records) => {
        if (closed) throw new LogError('LOG_CLOSED', 'producer is closed')
        await this.send(topic, records)
      },
      sendAtomic: async (batches) => {
        if (closed) throw new LogError('LOG_CLOSED', 'producer is closed')
        await this.sendAtomic(batches)
      },
      close: async () => {
        closed = true
      },
    }
  }

  async createConsumer(options: ConsumerOptions): Promise<LogConsumer> {
    this.assertOpen()
    if (typeof options?.groupId !== 'string' || options.groupId.length === 0) {
      throw new LogError('LOG_INVALID_ARGUMENT', 'groupId: must be a non-empty string')
    }
    if (!Array.isArray(options.topics) || options.topics.length === 0) throw new LogError('LOG_INVALID_ARGUMENT', 'topics: must be a non-empty array')
    for (const topic of options.topics) this.topic(topic)
    const consumer = new EmbeddedConsumer(this, options)
    this.consumers.add(consumer)
    return consumer
  }

  consumerLag(): Promise<ConsumerLag[]> {
    return lagOf(this.consumers, (topic) => this.endOffsets(topic))
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await Promise.all([...this.consumers].map((c) => c.stop()))
    // Units accepted before close are written (their callers get an answer), then the chains drain.
    await this.units.drained()
    for (const t of this.topics.values()) for (const p of t.partitions) await p.writeChain.catch(() => {})
    await this.fsyncs.drained()
    await this.retentionChain.catch(() => {})
    for (const g of this.groups.values()) await (await g.catch(() => null))?.settle()
    // Everything written is durable now: the next open may skip scanning (see the file comment). Best effort: without
    // the marker the next open scans every segment, as after a crash.
    if (!this.failure) await this.writeCleanShutdown().catch((err: unknown) => this.logger.warn({ err }, 'clean-shutdown marker not written; the next open scans every segment'))
    await this.closeFiles()
    await this.lock.release()
  }

  /** Completed fsync rounds since open (observability; shows group commit coalescing concurrent sends). */
  get syncRounds(): number {
    return this.syncs
  }

  // ---- retention (see the file comment) ----

  /** The first offset still held, per partition (index = partition); 0 until retention deleted something. */
  async logStartOffsets(topic: string): Promise<number[]> {
    this.assertOpen()
    return this.topic(topic).partitions.map((p) => p.logStart)
  }

  /** The partition's segments, oldest first, with the timestamp of each one's last durable record. */
  async segments(topic: string, partition: number): Promise<SegmentInfo[]> {
    this.assertOpen()
    const p = this.partitionState(topic, partition)
    const list = [...p.segments]
    const infos: SegmentInfo[] = []
    for (let i = 0; i < list.length; i++) {
      const s = list[i]!
      const endOffset = Math.min(i + 1 < list.length ? list[i + 1]!.baseOffset : Infinity, p.durableEnd, s.baseOffset + recordCount(s))
      let lastTimestamp: number | null = s.lastTimestamp ?? null
      if (lastTimestamp === null && endOffset > Math.max(s.baseOffset, p.logStart) && !s.retired) {
        const [last] = await this.readRange(p, endOffset - 1, 1)
        lastTimestamp = last?.timestamp ?? null
        // A segment followed by another can no longer grow: its last timestamp is final.
        if (last && i + 1 < list.length && endOffset === list[i + 1]!.baseOffset) s.lastTimestamp = last.timestamp
      }
      infos.push({ baseOffset: s.baseOffset, endOffset, bytes: s.size, lastTimestamp })
    }
    return infos
  }

  /**
   * Deletes, oldest first, the whole segments of a partition whose records all lie below `offset`, never one holding
   * a record at or past the durable end's last record (so lastRecords keeps answering). The log start moves to the
   * first remaining segment; it is durable before any file goes.
   */
  deleteSegmentsBelow(topic: string, partition: number, offset: number): Promise<SegmentDeletion> {
    this.assertOpen()
    const p = this.partitionState(topic, partition)
    if (!Number.isSafeInteger(offset) || offset < 0) throw new LogError('LOG_INVALID_ARGUMENT', `offset: ${offset} is not a non-negative integer`)
    const run = this.retentionChain.catch(() => {}).then(async (): Promise<SegmentDeletion> => {
      this.assertOpen()
      if (this.failure) throw this.failure
      const limit = Math.min(offset, p.durableEnd - 1)
      let k = 0
      // A segment still waiting for its fsync round stays (the round holds its handle).
      while (k + 1 < p.segments.length && p.segments[k + 1]!.baseOffset <= limit && !this.dirtySegments.has(p.segments[k]!)) k++
      if (k === 0) return { topic: p.topic, partition: p.partition, deletedSegments: 0, deletedBytes: 0, logStart: p.logStart }
      const logStart = p.segments[k]!.baseOffset
      const ids = new Set<number>()
      for (const s of p.segments.slice(0, k)) await this.collectTxIds(s, ids)
      if (ids.size > 0) {
        const merged = mergeIds(this.retiredTx, ids)
        await writeFileAtomic(join(this.dir, RETIRED_TX_FILE), JSON.stringify({ ranges: merged }) + '\n')
        this.retiredTx = merged
      }
      await writeFileAtomic(join(p.dir, START_FILE), JSON.stringify({ logStart }) + '\n')
      // Only writes append to the list and only this chain removes from it, so its first k are still the ones checked.
      const gone = p.segments.splice(0, k)
      p.logStart = logStart
      let deletedBytes = 0
      for (const s of gone) {
        s.retired = true
        deletedBytes += s.size
        await unlink(s.path).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'ENOENT') throw err
        })
        if (s.readers === 0) await s.fh.close().catch(() => {})
      }
      await fsyncDir(p.dir)
      this.logger.info({ topic: p.topic, partition: p.partition, deletedSegments: gone.length, deletedBytes, logStart }, 'retention deleted segments')
      return { topic: p.topic, partition: p.partition, deletedSegments: gone.length, deletedBytes, logStart }
    })
    this.retentionChain = run
    return run
  }

  /** Adds the transaction ids of a segment's version-2 frames to `ids` (one read of the whole file). */
  private async collectTxIds(s: Segment, ids: Set<number>): Promise<void> {
    await this.indexed(s)
    if (s.positions.length === 0) return
    const buf = Buffer.allocUnsafe(s.size)
    let read = 0
    s.readers++
    try {
      while (read < buf.length) {
        const { bytesRead } = await s.fh.read(buf, read, buf.length - read, read)
        if (bytesRead === 0) throw new LogError('LOG_CORRUPT', `${s.path}: unexpected end of file at ${read}`)
        read += bytesRead
      }
    } finally {
      s.readers--
    }
    for (const at of s.positions) {
      const tx = frameTx(buf, at)
      if (tx) ids.add(tx.id)
    }
  }

  /** Every consumer group's committed position on the topic's partitions (from the groups folder). */
  async committedPositions(topic: string): Promise<CommittedPosition[]> {
    this.assertOpen()
    const n = this.partitionCount(topic)
    const out: CommittedPosition[] = []
    for (const file of (await readdir(join(this.dir, 'groups'))).sort()) {
      if (!file.endsWith('.json') || file.includes('.tmp-')) continue
      const groupId = decodeURIComponent(file.slice(0, -'.json'.length))
      const group = await this.group(groupId)
      for (let partition = 0; partition < n; partition++) {
        const next = group.get(topic, partition)
        if (next !== undefined) out.push({ groupId, partition, next })
      }
    }
    return out
  }

  /** Bytes of every segment file of the topic (disk use reports). */
  async topicBytes(topic: string): Promise<number> {
    this.assertOpen()
    let bytes = 0
    for (const p of this.topic(topic).partitions) for (const s of p.segments) bytes += s.size
    return bytes
  }

  // ---- producing ----

  private async send(topic: string, records: LogRecord[]): Promise<void> {
    this.assertOpen()
    assertRecords(records)
    const t = this.topic(topic)
    if (records.length === 0) return
    const byPartition = new Map<PartitionState, LogRecord[]>()
    for (const r of records) {
      const p = t.partitions[partitionForKey(r.key, t.partitions.length)]!
      let list = byPartition.get(p)
      if (!list) byPartition.set(p, (list = []))
      list.push(r)
    }
    await Promise.all([...byPartition].map(([p, list]) => this.append(p, list)))
    await this.requestSync()
  }

  private append(p: PartitionState, records: LogRecord[]): Promise<void> {
    const run = p.writeChain.catch(() => {}).then(async () => {
      await this.write(p, records, null)
      this.markComplete(p)
    })
    p.writeChain = run
    return run
  }

  /**
   * Appends records to several topics as one unit (see the file comment): validated whole first, so a bad unit writes
   * nothing; then queued for the next transaction, and resolved once that transaction is fsynced.
   */
  private async sendAtomic(batches: ReadonlyArray<TopicRecords>): Promise<void> {
    this.assertOpen()
    assertTopicBatches(batches)
    const parts = new Map<PartitionState, LogRecord[]>()
    const resolved = batches.map((b) => ({ t: this.topic(b.topic), records: b.records })) // every topic known before any is used
    let bytes = 0
    for (const { t, records } of resolved) {
      for (const r of records) {
        const p = t.partitions[partitionForKey(r.key, t.partitions.length)]!
        let list = parts.get(p)
        if (!list) parts.set(p, (list = []))
        list.push(r)
        bytes += r.value.length + r.key.length
      }
    }
    if (parts.size === 0) return
    if (this.failure) throw this.failure
    await this.units.enqueue(parts, bytes)
  }

  /**
   * Group commit of units: while one transaction is being written, later units queue; the next transaction takes all
   * of them (up to TX_GROUP_BYTES). Its fsync round is requested but not awaited here, so the next transaction's
   * writes overlap the previous one's fsync and join the following round.
   */
  private async writeUnits(group: Array<Map<PartitionState, LogRecord[]>>): Promise<Pipelined> {
    const parts = new Map<PartitionState, LogRecord[]>()
    let frames = 0
    for (const unit of group) {
      for (const [p, records] of unit) {
        let list = parts.get(p)
        if (!list) parts.set(p, (list = []))
        for (const r of records) list.push(r)
        frames += records.length
      }
    }
    if (this.nextTxId > MAX_TX_ID) throw new LogError('LOG_IO', `embedded log ${this.dir}: transaction ids exhausted`)
    const tx: FrameTx = { id: this.nextTxId++, frames }
    await this.appendTransaction(parts, tx)
    return { settled: this.requestSync() }
  }

  /** Takes every partition's write chain at once, writes the transaction's frames to each, then marks them complete. */
  private appendTransaction(parts: Map<PartitionState, LogRecord[]>, tx: FrameTx): Promise<void> {
    const before = [...parts.keys()].map((p) => p.writeChain.catch(() => {}))
    const run = Promise.all(before).then(async () => {
      await Promise.all([...parts].map(([p, records]) => this.write(p, records, tx)))
      for (const p of parts.keys()) this.markComplete(p)
    })
    for (const p of parts.keys()) p.writeChain = run
    return run
  }

  /** Everything written to `p` so far belongs to finished writes: the next sync round may publish it. */
  private markComplete(p: PartitionState): void {
    p.completeEnd = p.nextOffset
    this.dirtyPartitions.add(p)
  }

  /** Writes frames (version 2 when `tx` is given) at the partition's end; the caller marks them complete. */
  private async write(p: PartitionState, records: LogRecord[], tx: FrameTx | null): Promise<void> {
    if (this.failure) throw this.failure
    let segment = p.segments[p.segments.length - 1] ?? (await this.createSegment(p, p.nextOffset))
    let frames: Buffer[] = []
    let framePositions: number[] = []
    let pending = 0
    let offset = p.nextOffset
    const flush = async (): Promise<void> => {
      if (frames.length === 0) return
      const buf = frames.length === 1 ? frames[0]! : Buffer.concat(frames, pending)
      try {
        let written = 0
        while (written < buf.length) {
          const { bytesWritten } = await segment.fh.write(buf, written, buf.length - written, segment.size + written)
          written += bytesWritten
        }
      } catch (err) {
        this.fail(err, `write to ${segment.path} failed`)
      }
      for (const pos of framePositions) segment.positions.push(segment.size + pos)
      segment.size += pending
      this.remember(p, frames)
      p.nextOffset += frames.length
      this.dirtySegments.add(segment)
      this.dirtyPartitions.add(p)
      frames = []
      framePositions = []
      pending = 0
    }
    for (const r of records) {
      const frame = encodeFrame(offset, r.key, r.value, r.timestamp, tx)
      if (segment.size + pending > 0 && segment.size + pending + frame.length > this.options.segmentBytes) {
        await flush()
        segment = await this.createSegment(p, offset)
      }
      framePositions.push(pending)
      frames.push(frame)
      pending += frame.length
      offset++
    }
    await flush()
  }

  /** Keeps the frames just written (offsets p.nextOffset...) as records, dropping the oldest beyond recentBytes. */
  private remember(p: PartitionState, frames: Buffer[]): void {
    const cap = this.options.recentBytes
    if (cap === 0) return
    if (p.recentFirst + (p.recent.length - p.recentHead) !== p.nextOffset) {
      // Not contiguous with what is held (nothing held yet): start over at this write.
      p.recent = []
      p.recentHead = 0
      p.recentFirst = p.nextOffset
      p.recentSize = 0
    }
    for (const frame of frames) {
      const f = decodeFrame(frame, 0)
      p.recent.push({ topic: p.topic, partition: p.partition, offset: f.offset, key: f.key, value: f.value, timestamp: f.timestamp })
      // The same estimate as when the record is dropped below (a version-2 frame is 12 bytes longer than it says),
      // so the running size never drifts.
      p.recentSize += FRAME_OVERHEAD_BYTES + Buffer.byteLength(f.key) + f.value.length
    }
    while (p.recentSize > cap && p.recentHead < p.recent.length) {
      const dropped = p.recent[p.recentHead]!
      p.recentSize -= FRAME_OVERHEAD_BYTES + Buffer.byteLength(dropped.key) + dropped.value.length
      p.recent[p.recentHead] = undefined as unknown as ConsumedRecord
      p.recentHead++
      p.recentFirst++
    }
    if (p.recentHead > 4096 && p.recentHead * 2 > p.recent.length) {
      p.recent = p.recent.slice(p.recentHead)
      p.recentHead = 0
    }
  }

  /** Records from `fromOffset` (< end) held in memory, within max records and about maxBatchBytes; null if not held. */
  private fromMemory(p: PartitionState, fromOffset: number, max: number, end: number): ConsumedRecord[] | null {
    if (fromOffset < p.recentFirst || fromOffset >= p.recentFirst + (p.recent.length - p.recentHead)) return null
    const first = p.recentHead + (fromOffset - p.recentFirst)
    const stop = Math.min(p.recent.length, first + max, first + (end - fromOffset))
    const records: ConsumedRecord[] = []
    let bytes = 0
    for (let i = first; i < stop && (i === first || bytes < this.options.maxBatchBytes); i++) {
      const r = p.recent[i]!
      records.push(r)
      bytes += FRAME_OVERHEAD_BYTES + r.key.length + r.value.length
    }
    return records
  }

  private async createSegment(p: PartitionState, baseOffset: number): Promise<Segment> {
    const path = join(p.dir, segmentName(baseOffset))
    let fh: FileHandle
    try {
      fh = await open(path, 'w+', DATA_FILE_MODE)
    } catch (err) {
      this.fail(err, `creating segment ${path} failed`)
    }
    const segment: Segment = { baseOffset, path, fh, size: 0, positions: [], lazy: null, readers: 0, retired: false }
    p.segments.push(segment)
    this.dirtyDirs.add(p.dir)
    return segment
  }

  /** Group commit: joins the next fsync round; resolves when everything written before the call is fsynced. */
  private requestSync(): Promise<void> {
    return this.fsyncs.enqueue(null, 0)
  }

  private async syncNow(): Promise<void> {
    if (this.failure) throw this.failure
    const segments = [...this.dirtySegments]
    const dirs = [...this.dirtyDirs]
    // completeEnd, not nextOffset: a transaction half-written when the round starts stays invisible.
    const ends = [...this.dirtyPartitions].map((p) => [p, p.completeEnd] as const)
    this.dirtySegments.clear()
    this.dirtyDirs.clear()
    this.dirtyPartitions.clear()
    try {
      await Promise.all([...segments.map((s) => s.fh.datasync()), ...dirs.map((d) => fsyncDir(d))])
    } catch (err) {
      this.fail(err, 'fsync failed')
    }
    this.syncs++
    const touched = new Set<string>()
    for (const [p, end] of ends) {
      if (end > p.durableEnd) {
        p.durableEnd = end
        touched.add(p.topic)
      }
    }
    for (const topic of touched) for (const signal of this.watchers.get(topic) ?? []) signal.wake()
  }

  /** After a failed write or fsync the page cache state is unknown, so the log refuses all further writes. */
  private fail(err: unknown, what: string): never {
    this.failure ??= new LogError('LOG_IO', `embedded log ${this.dir}: ${what}; reopen the log to recover`, { cause: err })
    this.logger.error({ err }, what)
    throw this.failure
  }

  // ---- reading (EmbeddedLogInternals) ----

  partitionCount(topic: string): number {
    return this.topic(topic).partitions.length
  }

  durableEnd(topic: string, partition: number): number {
    return this.partitionState(topic, partition).durableEnd
  }

  logStart(topic: string, partition: number): number {
    return this.partitionState(topic, partition).logStart
  }

  readBatch(topic: string, partition: number, fromOffset: number): Promise<ConsumedRecord[]> {
    if (this.closed) return Promise.reject(new LogError('LOG_CLOSED', 'embedded log is closed'))
    return this.readRange(this.partitionState(topic, partition), fromOffset, this.options.maxBatchRecords)
  }

  /** Up to `max` durable records from `fromOffset`, within one segment and about maxBatchBytes. */
  private async readRange(p: PartitionState, from: number, max: number): Promise<ConsumedRecord[]> {
    const end = p.durableEnd
    // Below the log start, reading starts at it (retention deleted what was there).
    const fromOffset = Math.max(from, p.logStart)
    if (fromOffset >= end) return []
    const held = this.fromMemory(p, fromOffset, max, end)
    if (held) return held
    const segment = this.segmentFor(p, fromOffset)
    await this.indexed(segment)
    const first = fromOffset - segment.baseOffset
    const limit = Math.min(end - segment.baseOffset, segment.positions.length, first + max)
    const start = segment.positions[first]!
    let last = first + 1
    while (last < limit && segment.positions[last]! - start < this.options.maxBatchBytes) last++
    const stop = last < segment.positions.length ? segment.positions[last]! : segment.size
    const buf = Buffer.allocUnsafe(stop - start)
    let read = 0
    segment.readers++
    try {
      while (read < buf.length) {
        const { bytesRead } = await segment.fh.read(buf, read, buf.length - read, start + read)
        if (bytesRead === 0) throw new LogError('LOG_CORRUPT', `${segment.path}: unexpected end of file at ${start + read}`)
        read += bytesRead
      }
    } finally {
      if (--segment.readers === 0 && segment.retired) await segment.fh.close().catch(() => {})
    }
    const records: ConsumedRecord[] = []
    let at = 0
    for (let i = first; i < last; i++) {
      const offset = segment.baseOffset + i
      const check = checkFrame(buf, at, offset)
      if (!check.ok) throw new LogError('LOG_CORRUPT', `${segment.path}: record ${offset} unreadable (${check.reason})`)
      const f = decodeFrame(buf, at)
      records.push({ topic: p.topic, partition: p.partition, offset, key: f.key, value: f.value, timestamp: f.timestamp })
      at += check.frameBytes
    }
    return records
  }

  private segmentFor(p: PartitionState, offset: number): Segment {
    let lo = 0
    let hi = p.segments.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (p.segments[mid]!.baseOffset <= offset) lo = mid
      else hi = mid - 1
    }
    return p.segments[lo]!
  }

  async committedOffset(groupId: string, topic: string, partition: number): Promise<number | undefined> {
    return (await this.group(groupId)).get(topic, partition)
  }

  async commitOffset(groupId: string, topic: string, partition: number, nextOffset: number): Promise<void> {
    this.assertOpen()
    assertPartitionOffset(this.partitionCount(topic), partition, nextOffset)
    await (await this.group(groupId)).commit(topic, partition, nextOffset)
  }

  claim(consumer: EmbeddedConsumer, groupId: string, topics: string[]): void {
    this.assertOpen()
    let owners = this.claims.get(groupId)
    if (!owners) this.claims.set(groupId, (owners = new Map()))
    for (const topic of topics) {
      const owner = owners.get(topic)
      if (owner && owner !== consumer) {
        throw new LogError('LOG_GROUP_BUSY', `group ${groupId} already has a running consumer of ${topic} (the embedded log is single-process)`)
      }
    }
    for (const topic of topics) owners.set(topic, consumer)
  }

  release(consumer: EmbeddedConsumer, groupId: string, topics: string[]): void {
    const owners = this.claims.get(groupId)
    for (const topic of topics) if (owners?.get(topic) === consumer) owners.delete(topic)
    this.consumers.delete(consumer)
  }

  watch(topics: string[], signal: WakeSignal): void {
    for (const topic of topics) {
      let set = this.watchers.get(topic)
      if (!set) this.watchers.set(topic, (set = new Set()))
      set.add(signal)
    }
  }

  unwatch(topics: string[], signal: WakeSignal): void {
    for (const topic of topics) this.watchers.get(topic)?.delete(signal)
  }

  // ---- helpers ----

  private assertOpen(): void {
    if (this.closed) throw new LogError('LOG_CLOSED', 'embedded log is closed')
  }

  private topic(name: string): TopicState {
    assertTopicName(name)
    const t = this.topics.get(name)
    if (!t) throw new LogError('LOG_UNKNOWN_TOPIC', `topic ${name} does not exist (create it with ensureTopics)`)
    return t
  }

  private partitionState(topic: string, partition: number): PartitionState {
    const t = this.topic(topic)
    const p = t.partitions[partition]
    if (!p) throw new LogError('LOG_INVALID_ARGUMENT', `partition: ${partition} is not in 0..${t.partitions.length - 1}`)
    return p
  }

  private group(groupId: string): Promise<GroupOffsetsFile> {
    let g = this.groups.get(groupId)
    if (!g) {
      g = GroupOffsetsFile.load(join(this.dir, 'groups'), groupId)
      g.catch(() => this.groups.delete(groupId))
      this.groups.set(groupId, g)
    }
    return g
  }

  private emptyPartition(topic: string, partition: number, dir: string): PartitionState {
    return { topic, partition, dir, segments: [], logStart: 0, nextOffset: 0, completeEnd: 0, durableEnd: 0, writeChain: Promise.resolve(), recent: [], recentHead: 0, recentFirst: 0, recentSize: 0 }
  }

  private async closeFiles(): Promise<void> {
    for (const t of this.topics.values()) {
      for (const p of t.partitions) {
        for (const s of p.segments) await s.fh.close().catch(() => {})
        p.recent = []
        p.recentHead = 0
        p.recentSize = 0
      }
    }
  }

  // ---- recovery ----

  private async recover(): Promise<void> {
    this.retiredTx = await this.readRetiredTx()
    const topicsDir = join(this.dir, 'topics')
    const clean = await this.takeCleanShutdown(topicsDir)
    const runs = new Map<PartitionState, TxRun[]>()
    for (const name of (await readdir(topicsDir)).sort()) {
      if (name.includes('.tmp-')) continue
      const topicDir = join(topicsDir, name)
      let meta: { name?: unknown; partitions?: unknown }
      try {
        meta = JSON.parse(await readFile(join(topicDir, 'meta.json'), 'utf8')) as typeof meta
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
          // ensureTopics crashed before writing meta.json; nothing was ever produced to it.
          this.logger.warn({ topic: name }, 'topic directory without meta.json ignored (interrupted ensureTopics)')
          continue
        }
        throw new LogError('LOG_CORRUPT', `${topicDir}/meta.json is unreadable`, { cause: err })
      }
      if (meta.name !== name || !Number.isInteger(meta.partitions) || (meta.partitions as number) < 1) {
        throw new LogError('LOG_CORRUPT', `${topicDir}/meta.json does not describe topic ${name}`)
      }
      const partitions: PartitionState[] = []
      for (let p = 0; p < (meta.partitions as number); p++) {
        const dir = join(topicDir, String(p))
        await mkdirData(dir)
        const found: TxRun[] = []
        const state = await this.recoverPartition(name, p, dir, found, clean?.segments ?? null)
        partitions.push(state)
        if (found.length > 0) runs.set(state, found)
      }
      this.topics.set(name, { name, partitions })
    }
    for (const list of runs.values()) for (const r of list) if (r.id >= this.nextTxId) this.nextTxId = r.id + 1
    for (const [lo, hi] of this.retiredTx) if (hi >= this.nextTxId) this.nextTxId = hi + 1
    if (clean) {
      // Nothing to recover after a clean close (and the runs cover only the last segments, so counting them would
      // take transactions reaching into older segments for incomplete ones).
      if (clean.nextTxId > this.nextTxId) this.nextTxId = clean.nextTxId
    } else {
      await this.dropIncompleteTransactions(runs)
      await this.pruneRetiredTx(runs)
    }
    for (const file of await readdir(join(this.dir, 'groups'))) {
      if (file.includes('.tmp-')) await unlink(join(this.dir, 'groups', file)).catch(() => {})
    }
  }

  private async readRetiredTx(): Promise<IdRanges> {
    const path = join(this.dir, RETIRED_TX_FILE)
    let text: string
    try {
      text = await readFile(path, 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
      throw err
    }
    let ranges: unknown
    try {
      ranges = (JSON.parse(text) as { ranges?: unknown }).ranges
    } catch (err) {
      throw new LogError('LOG_CORRUPT', `${path}: not valid JSON`, { cause: err })
    }
    const ok = Array.isArray(ranges) && ranges.every((r) => Array.isArray(r) && r.length === 2 && Number.isSafeInteger(r[0]) && Number.isSafeInteger(r[1]) && r[0] <= r[1])
    if (!ok) throw new LogError('LOG_CORRUPT', `${path}: bad ranges`)
    return mergeIds(ranges as IdRanges, [])
  }

  /** Keeps only the retired ids some segment still holds frames of (the others can no longer matter). */
  private async pruneRetiredTx(runs: Map<PartitionState, TxRun[]>): Promise<void> {
    if (this.retiredTx.length === 0) return
    const held = new Set<number>()
    for (const list of runs.values()) for (const r of list) if (inRanges(this.retiredTx, r.id)) held.add(r.id)
    const pruned = mergeIds([], held)
    if (pruned.length === this.retiredTx.length && pruned.every((r, i) => r[0] === this.retiredTx[i]![0] && r[1] === this.retiredTx[i]![1])) return
    await writeFileAtomic(join(this.dir, RETIRED_TX_FILE), JSON.stringify({ ranges: pruned }) + '\n')
    this.retiredTx = pruned
  }

  private async readLogStart(dir: string): Promise<number> {
    let text: string
    try {
      text = await readFile(join(dir, START_FILE), 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0
      throw err
    }
    let logStart: unknown
    try {
      logStart = (JSON.parse(text) as { logStart?: unknown }).logStart
    } catch (err) {
      throw new LogError('LOG_CORRUPT', `${join(dir, START_FILE)}: not valid JSON`, { cause: err })
    }
    if (!Number.isSafeInteger(logStart) || (logStart as number) < 0) throw new LogError('LOG_CORRUPT', `${join(dir, START_FILE)}: bad logStart`)
    return logStart as number
  }

  /**
   * Reads and deletes the clean-shutdown marker (durably: a crash after this open must scan everything), and returns
   * it when every segment file under `topicsDir` is one it lists, at its recorded size, and it lists no other; else null.
   */
  private async takeCleanShutdown(topicsDir: string): Promise<{ nextTxId: number; segments: Map<string, CleanSegment> } | null> {
    const path = join(this.dir, CLEAN_SHUTDOWN_FILE)
    let text: string
    try {
      text = await readFile(path, 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw err
    }
    await unlink(path)
    await fsyncDir(this.dir)
    const mismatch = (why: string) => {
      this.logger.warn({ why }, 'the clean-shutdown marker does not match the log; scanning every segment')
      return null
    }
    let marker: CleanShutdown
    try {
      marker = JSON.parse(text) as CleanShutdown
    } catch {
      return mismatch('not valid JSON')
    }
    if (marker?.version !== CLEAN_SHUTDOWN_VERSION || !Number.isSafeInteger(marker.nextTxId) || !Array.isArray(marker.segments)) return mismatch('unknown version or shape')
    const segments = new Map<string, CleanSegment>()
    for (const e of marker.segments) {
      if (typeof e?.file !== 'string' || !Number.isSafeInteger(e.size)) return mismatch('a malformed segment entry')
      segments.set(e.file, e)
    }
    let found = 0
    for (const topic of await readdir(topicsDir)) {
      if (topic.includes('.tmp-')) continue
      for (const partition of await readdir(join(topicsDir, topic)).catch(() => [] as string[])) {
        if (!/^\d+$/.test(partition)) continue
        for (const file of await readdir(join(topicsDir, topic, partition))) {
          if (!SEGMENT_FILE.test(file)) continue
          const key = `${topic}/${partition}/${file}`
          const entry = segments.get(key)
          if (!entry) return mismatch(`${key} is not in it`)
          const size = (await stat(join(topicsDir, key))).size
          if (size !== entry.size) return mismatch(`${key} is ${size} bytes, not ${entry.size}`)
          found++
        }
      }
    }
    if (found !== segments.size) return mismatch('a segment it lists is gone')
    return { nextTxId: marker.nextTxId, segments }
  }

  /** Writes the clean-shutdown marker: every write is durable and no more come (close()). */
  private async writeCleanShutdown(): Promise<void> {
    const segments: CleanSegment[] = []
    for (const t of this.topics.values()) {
      for (const p of t.partitions) {
        for (let i = 0; i < p.segments.length; i++) {
          const s = p.segments[i]!
          // A segment followed by another can no longer grow: its last timestamp is kept, so retention after the next
          // open judges its age without indexing it.
          if (s.lastTimestamp === undefined && i + 1 < p.segments.length && !s.lazy && s.positions.length > 0) {
            const [last] = await this.readRange(p, s.baseOffset + s.positions.length - 1, 1).catch(() => [])
            if (last) s.lastTimestamp = last.timestamp
          }
          const entry: CleanSegment = { file: `${p.topic}/${p.partition}/${segmentName(s.baseOffset)}`, size: s.size }
          if (s.lastTimestamp !== undefined) entry.lastTimestamp = s.lastTimestamp
          segments.push(entry)
        }
      }
    }
    const marker: CleanShutdown = { version: CLEAN_SHUTDOWN_VERSION, nextTxId: this.nextTxId, segments }
    await writeFileAtomic(join(this.dir, CLEAN_SHUTDOWN_FILE), JSON.stringify(marker) + '\n')
  }

  /** Indexes a segment opened after a clean shutdown (once; concurrent readers share the scan). */
  private indexed(s: Segment): Promise<void> {
    const lazy = s.lazy
    if (!lazy) return Promise.resolve()
    lazy.indexing ??= (async () => {
      s.readers++
      try {
        const { validBytes, fileBytes, reason } = await this.scanSegment(s, [])
        if (validBytes !== s.size || fileBytes !== s.size || s.positions.length !== lazy.records) {
          throw new LogError('LOG_CORRUPT', `${s.path}: ${s.positions.length} valid records in ${validBytes} of ${fileBytes} bytes, not the ${lazy.records} records in ${s.size} bytes a clean shutdown recorded${reason ? ` (${reason})` : ''}`)
        }
        s.lazy = null
      } catch (err) {
        s.positions = []
        lazy.indexing = null
        throw err
      } finally {
        if (--s.readers === 0 && s.retired) await s.fh.close().catch(() => {})
      }
    })()
    return lazy.indexing
  }

  private async recoverPartition(topic: string, partition: number, dir: string, runs: TxRun[], clean: Map<string, CleanSegment> | null): Promise<PartitionState> {
    const state = this.emptyPartition(topic, partition, dir)
    const listed = await readdir(dir)
    for (const f of listed) if (f.startsWith(`${START_FILE}.tmp-`)) await unlink(join(dir, f)).catch(() => {})
    const logStart = await this.readLogStart(dir)
    let files = listed.filter((f) => SEGMENT_FILE.test(f)).sort()
    let removed = false
    // Segments wholly below the log start are what a crash mid-deletion left behind.
    while (files.length > 1 && Number(SEGMENT_FILE.exec(files[1]!)![1]) <= logStart) {
      this.logger.info({ topic, partition, segment: join(dir, files[0]!), logStart }, 'deleting a segment below the log start (retention interrupted)')
      await rm(join(dir, files[0]!), { force: true })
      files = files.slice(1)
      removed = true
    }
    const firstBase = files.length > 0 ? Number(SEGMENT_FILE.exec(files[0]!)![1]) : logStart
    let expected = firstBase <= logStart ? firstBase : logStart
    state.logStart = logStart
    let cut = false
    for (const [i, file] of files.entries()) {
      const path = join(dir, file)
      const baseOffset = Number(SEGMENT_FILE.exec(file)![1])
      if (cut || baseOffset !== expected) {
        this.logger.warn(
          { topic, partition, segment: path, reason: cut ? 'after a torn tail' : `starts at ${baseOffset}, expected ${expected}` },
          'deleting segment beyond the valid end of the log',
        )
        await rm(path, { force: true })
        cut = true
        removed = true
        continue
      }
      const fh = await open(path, 'r+')
      const segment: Segment = { baseOffset, path, fh, size: 0, positions: [], lazy: null, readers: 0, retired: false }
      state.segments.push(segment)
      // After a clean shutdown only the last segment is scanned here (it takes the writes); the others on first read.
      const known = i + 1 < files.length ? clean?.get(`${topic}/${partition}/${file}`) : undefined
      if (known) {
        const next = Number(SEGMENT_FILE.exec(files[i + 1]!)![1])
        segment.size = known.size
        segment.lazy = { records: next - baseOffset, indexing: null }
        if (known.lastTimestamp !== undefined) segment.lastTimestamp = known.lastTimestamp
        expected = next
        continue
      }
      const { validBytes, fileBytes, reason } = await this.scanSegment(segment, runs)
      if (validBytes < fileBytes) {
        this.logger.warn(
          { topic, partition, segment: path, validBytes, droppedBytes: fileBytes - validBytes, reason, nextOffset: baseOffset + segment.positions.length },
          'truncating torn tail of embedded log segment',
        )
        await fh.truncate(validBytes)
        cut = true
      }
      // Whatever survived the crash is made durable before anyone can read it.
      await fh.datasync()
      segment.size = validBytes
      expected = baseOffset + segment.positions.length
    }
    if (removed) await fsyncDir(dir)
    // A torn tail can end the log inside the first segment, even below the recorded start: reads start at the end then.
    if (expected < state.logStart) state.logStart = expected
    state.nextOffset = expected
    state.completeEnd = expected
    state.durableEnd = expected
    return state
  }

  /**
   * The transaction rule of recovery (see the file comment): count each transaction's frames over all partitions,
   * truncate every partition at its first frame of an incomplete transaction, repeat while a truncation made another
   * transaction incomplete.
   */
  private async dropIncompleteTransactions(runs: Map<PartitionState, TxRun[]>): Promise<void> {
    const counts = new Map<number, { found: number; frames: number }>()
    for (const [p, list] of runs) {
      for (const r of list) {
        const c = counts.get(r.id)
        if (!c) counts.set(r.id, { found: r.count, frames: r.frames })
        else if (c.frames !== r.frames) {
          throw new LogError('LOG_CORRUPT', `${p.dir}: transaction ${r.id} declares ${r.frames} frames here and ${c.frames} elsewhere`)
        } else c.found += r.count
      }
    }
    const incomplete = new Set<number>()
    for (const [id, c] of counts) {
      // More frames than declared cannot come from a crash (ids are never reused): refuse rather than guess.
      if (c.found > c.frames) throw new LogError('LOG_CORRUPT', `${this.dir}: transaction ${id} has ${c.found} frames but declares ${c.frames}`)
      // Retention deleted some of its frames: they were durable, so it was whole.
      if (c.found < c.frames && !inRanges(this.retiredTx, id)) incomplete.add(id)
    }
    const cuts = new Map<PartitionState, { offset: number; transactions: number[] }>()
    for (let changed = incomplete.size > 0; changed; ) {
      changed = false
      for (const [p, list] of runs) {
        const i = list.findIndex((r) => incomplete.has(r.id))
        if (i < 0) continue
        const removed = list.splice(i)
        const cut = cuts.get(p) ?? { offset: Infinity, transactions: [] }
        cut.offset = Math.min(cut.offset, removed[0]!.first) // a later pass can only cut earlier
        cuts.set(p, cut)
        for (const r of removed) {
          cut.transactions.push(r.id)
          if (incomplete.has(r.id)) continue
          incomplete.add(r.id) // a complete transaction lost this partition's frames: cut it everywhere
          changed = true
        }
      }
    }
    for (const [p, { offset, transactions }] of cuts) {
      this.logger.warn(
        { topic: p.topic, partition: p.partition, from: offset, to: p.nextOffset, droppedRecords: p.nextOffset - offset, droppedTransactions: transactions.slice(0, 20) },
        'truncating the embedded log partition at its first frame of an incomplete atomic unit',
      )
      await this.truncatePartition(p, offset)
    }
  }

  /** Cuts a recovered partition at `offset`: later frames and segments go, and the cut is fsynced. */
  private async truncatePartition(p: PartitionState, offset: number): Promise<void> {
    const segment = this.segmentFor(p, offset)
    await this.indexed(segment)
    const k = p.segments.indexOf(segment)
    const bytes = segment.positions[offset - segment.baseOffset]!
    const later = p.segments.splice(k + 1)
    for (const s of later) {
      await s.fh.close().catch(() => {})
      await rm(s.path, { force: true })
    }
    if (later.length > 0) await fsyncDir(p.dir)
    await segment.fh.truncate(bytes)
    await segment.fh.datasync()
    segment.positions.length = offset - segment.baseOffset
    segment.size = bytes
    p.nextOffset = offset
    p.completeEnd = offset
    p.durableEnd = offset
  }

  private async scanSegment(segment: Segment, runs: TxRun[]): Promise<{ validBytes: number; fileBytes: number; reason: string | null }> {
    const fileBytes = (await segment.fh.stat()).size
    let buf = Buffer.alloc(0)
    let bufStart = 0 // file position of buf[0]
    let at = 0 // index into buf of the next frame
    let eof = false
    for (;;) {
      const offset = segment.baseOffset + segment.positions.length
      const check = checkFrame(buf, at, offset)
      if (check.ok) {
        const tx = frameTx(buf, at)
        if (tx) {
          const last = runs[runs.length - 1]
          if (last && last.id === tx.id && last.first + last.count === offset) last.count++
          else runs.push({ id: tx.id, frames: tx.frames, first: offset, count: 1 })
        }
        segment.positions.push(bufStart + at)
        at += check.frameBytes
        continue
      }
      if (check.reason !== 'incomplete') return { validBytes: bufStart + at, fileBytes, reason: check.reason }
      if (eof) {
        const validBytes = bufStart + at
        return { validBytes, fileBytes, reason: validBytes < fileBytes ? 'incomplete frame at end of file' : null }
      }
      // Keep the unconsumed remainder and read the next chunk (large enough for the frame in hand).
      const remainder = buf.subarray(at)
      const wanted = remainder.length >= 4 ? Math.max(SCAN_CHUNK_BYTES, remainder.readUInt32BE(0) + 8) : SCAN_CHUNK_BYTES
      const chunk = Buffer.allocUnsafe(Math.min(wanted, Math.max(0, fileBytes - (bufStart + buf.length))))
      let got = 0
      while (got < chunk.length) {
        const { bytesRead } = await segment.fh.read(chunk, got, chunk.length - got, bufStart + buf.length + got)
        if (bytesRead === 0) break
        got += bytesRead
      }
      if (got < wanted) eof = true
      bufStart += at
      buf = Buffer.concat([remainder, chunk.subarray(0, got)])
      at = 0
    }
  }
}
