/**
 * Replays a tape into the ticks topic, resumable without duplicates.
 *
 * Each record goes out as an envelope {seq, tape, tick} keyed by asset (pipeline/TickEnvelope.ts). Before it starts,
 * the producer reads the last record of every partition: within one partition, records are appended in tape order
 * and a send resolves only once durable, so the last record's seq is that partition's high-water mark. Tape entries
 * at or below their partition's mark are skipped. After a crash at any point the restarted replay therefore appends
 * exactly the records the log is missing — no loss, no duplicate.
 */
import { createHash } from 'node:crypto'
import type { Clock } from '../common/Clock.ts'
import { createReadStream } from 'node:fs'
import { tickKey, tickTime } from '../ingest/Tick.ts'
import { Replay, type ReplayProgress } from '../ingest/Replay.ts'
import type { TapeEntry } from '../ingest/TapeReader.ts'
import { VirtualClock } from '../ingest/VirtualClock.ts'
import { partitionForKey } from '../common/murmur2.ts'
import { childLogger } from '../common/logger.ts'
import type { EventLog, LogRecord } from './log/EventLog.ts'
import { decodeTickValue, encodeTickEnvelope } from './TickEnvelope.ts'

const log = childLogger('tape-producer')

export interface TapeProducerOptions {
  log: EventLog
  topic: string
  /** A tape file; or `source`, records generated in order (the simulated venue), which then needs `tapeId`. */
  tape?: string
  source?: () => AsyncIterable<TapeEntry> | Iterable<TapeEntry>
  /** Live: send each record when this clock reaches its event time (ingest/Replay.ts liveClock); `paceFrom` marks the present. */
  liveClock?: Clock
  /** Identifies the tape in envelopes; default: the first 16 hex digits of the file's SHA-256. */
  tapeId?: string
  /** Event ms per wall ms (0 = as fast as possible). */
  speed?: number
  /** Event time from which `speed` applies; earlier records are sent at full speed, in batches (Replay's paceFrom). */
  paceFrom?: number
  /** Called once, when the first paced record comes due, after every earlier record is durable in the log. */
  onPaceStart?: (info: { produced: number; eventTime: number }) => void
  /** Records per send at speed 0 (default 1000). */
  batchSize?: number
  signal?: AbortSignal
  clock?: VirtualClock
  /** Stop before the first record at or after this event time (epoch ms); a later run resumes from there. */
  until?: number
  onProgress?: (progress: ReplayProgress & { produced: number }) => void
  /**
   * Awaited after each send: every record up to `line` (the batch's last) is now in the log, sent by this run or skipped
   * as already there (the simulated venue keeps its checkpoint of that point, never one ahead of the log).
   */
  onDurable?: (line: number) => void | Promise<void>
}

export interface TapeProducerResult {
  tapeId: string
  produced: number
  skipped: number
  aborted: boolean
  /** True when the run stopped at `until` rather than at the end of the tape. */
  reachedUntil: boolean
  /** Per-partition tape seq already in the log when the run started. */
  resumedFrom: number[]
}

export async function tapeIdOf(file: string): Promise<string> {
  const hash = createHash('sha256')
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer)
  return hash.digest('hex').slice(0, 16)
}

/** The highest tape seq of `tapeId` per partition, from the log's last records (0 where none). */
export async function highWaterMarks(eventLog: EventLog, topic: string, tapeId: string): Promise<number[]> {
  const last = await eventLog.lastRecords(topic)
  return last.map((record) => {
    if (!record) return 0
    const decoded = decodeTickValue(record.value)
    return decoded.tape === tapeId && decoded.seq !== null ? decoded.seq : 0
  })
}

/** Event time of the newest tick of `tapeId` already in the log (the last records of each partition); null if none. */
export async function newestReplayedTime(eventLog: EventLog, topic: string, tapeId: string): Promise<number | null> {
  let newest: number | null = null
  for (const record of await eventLog.lastRecords(topic)) {
    if (!record) continue
    const decoded = decodeTickValue(record.value)
    if (decoded.tape !== tapeId) continue
    const time = tickTime(decoded.tick)
    if (newest === null || time > newest) newest = time
  }
  return newest
}

export async function produceTape(options: TapeProducerOptions): Promise<TapeProducerResult> {
  const { log: eventLog, topic } = options
  if (options.tape === undefined && options.tapeId === undefined) throw new TypeError('produceTape: a generated source needs a tapeId')
  const tapeId = options.tapeId ?? (await tapeIdOf(options.tape!))
  const partitions = await eventLog.partitionsOf(topic)
  const marks = await highWaterMarks(eventLog, topic, tapeId)
  if (marks.some((m) => m > 0)) log.info({ tapeId, marks }, 'resuming replay after the records already in the log')

  const speed = options.speed ?? 0
  const live = options.liveClock !== undefined
  const paceFrom = options.paceFrom ?? -Infinity
  let paced = false
  const batchSize = options.batchSize ?? 1000
  const producer = await eventLog.createProducer()
  let buffer: LogRecord[] = []
  let bufferTime = -1
  let bufferLine = 0
  let produced = 0

  const flush = async () => {
    if (buffer.length === 0) return
    const batch = buffer
    buffer = []
    await producer.send(topic, batch)
    produced += batch.length
    await options.onDurable?.(bufferLine)
  }

  // `until` stops the replay through its own abort signal, chained to the caller's.
  const stopper = new AbortController()
  const onOuterAbort = () => stopper.abort()
  options.signal?.addEventListener('abort', onOuterAbort, { once: true })
  if (options.signal?.aborted) stopper.abort()
  let reachedUntil = false

  try {
    const replay = new Replay({
      ...(options.tape !== undefined ? { tape: options.tape } : { source: options.source! }),
      ...(options.liveClock ? { liveClock: options.liveClock } : {}),
      speed,
      paceFrom,
      signal: stopper.signal,
      clock: options.clock,
      skip: (entry) => entry.line <= (marks[partitionForKey(tickKey(entry.tick), partitions)] ?? 0),
      onProgress: options.onProgress ? (p) => options.onProgress!({ ...p, produced }) : undefined,
      // An instant is complete once the next record has to wait: send it now rather than when that record is due.
      // Live, the first wait is the present reached: the warm-up is over now, not when the next minute comes due.
      beforeWait: async () => {
        await flush()
        if (live && !paced) {
          paced = true
          options.onPaceStart?.({ produced, eventTime: options.liveClock!.now() })
        }
      },
    })
    const result = await replay.run(async (entry) => {
      const time = tickTime(entry.tick)
      if (options.until !== undefined && time >= options.until) {
        reachedUntil = true
        stopper.abort()
        return
      }
      if ((speed > 0 || live) && !paced && time >= paceFrom) {
        await flush()
        paced = true
        options.onPaceStart?.({ produced, eventTime: time })
      }
      // Paced replays send each event instant as it comes due; unpaced ones (and the history before paceFrom) batch
      // for throughput.
      if (paced && buffer.length > 0 && time !== bufferTime) await flush()
      bufferTime = time
      bufferLine = entry.line
      buffer.push({ key: tickKey(entry.tick), value: encodeTickEnvelope({ seq: entry.line, tape: tapeId, tick: entry.tick }, entry.raw), timestamp: time })
      if (buffer.length >= batchSize) await flush()
    })
    await flush()
    return { tapeId, produced, skipped: result.skipped, aborted: result.aborted && !reachedUntil, reachedUntil, resumedFrom: marks }
  } finally {
    options.signal?.removeEventListener('abort', onOuterAbort)
    await producer.close()
  }
}
