/**
 * The live connector's units on the event log (embedded or Kafka, the same code): each unit's ticks go to the ticks
 * topic as envelopes {seq, tape: source, tick} keyed by asset, and its settled gap episodes to `venue.gaps`, in one
 * atomic append (LogProducer.sendAtomic: one fsync round on the embedded log, one transaction of the idempotent
 * producer on Kafka), so after a crash either the whole unit is in the log or none of it is.
 *
 * Resume: a unit holds every tick of the instants it covers (the connector releases whole instants), and units are
 * written one after another, so the newest event time among the last records of the partitions is a watermark below
 * which everything released is durable, and `seq` continues from the highest one there. On Kafka a large unit is cut
 * into several appends at instant boundaries (the broker refuses batches over its message.max.bytes); the cut keeps
 * the rule. The embedded log has no such limit: a unit is one append (one fsync round), however large.
 * A write whose outcome is unknown (a Kafka commit whose answer was lost) is looked up before it is retried: if its
 * last seq is in the log, it landed.
 */
import { childLogger } from '../../common/logger.ts'
import { tickKey, tickTime } from '../../ingest/Tick.ts'
import type { EventLog, LogProducer, LogRecord, TopicRecords } from '../log/EventLog.ts'
import { Journal } from '../journal/Journal.ts'
import { VENUE_GAPS, type VenueGapRecord } from '../records/venueGapRecord.ts'
import { decodeTickValue, encodeTickEnvelope } from '../TickEnvelope.ts'
import { DEFAULT_PARTITIONS } from '../topics.ts'
import type { VenueResume, VenueSink, VenueUnit } from './HyperliquidConnector.ts'

const log = childLogger('venue-log-sink')

/** Kafka: bytes of tick values per append, well under the broker's default 1 MiB message.max.bytes. */
const KAFKA_APPEND_BYTES = 256 * 1024

export interface VenueLogSinkOptions {
  log: EventLog
  ticksTopic: string
  /** The venue's name in the envelopes (`hyperliquid`); the ticks topic must hold no other. */
  source: string
  partitions?: number
}

export class VenueLogSink implements VenueSink {
  readonly #log: EventLog
  readonly #ticksTopic: string
  readonly #source: string
  readonly #producer: LogProducer
  readonly #gaps: Journal<typeof VENUE_GAPS.schema>
  readonly #appendBytes: number
  #nextSeq: number
  /** The seq range each unit was given when first written (a retry reuses it). */
  readonly #assigned = new WeakMap<VenueUnit, { first: number; last: number }>()

  private constructor(o: VenueLogSinkOptions, producer: LogProducer, gaps: Journal<typeof VENUE_GAPS.schema>, nextSeq: number) {
    this.#log = o.log
    this.#ticksTopic = o.ticksTopic
    this.#source = o.source
    this.#producer = producer
    this.#gaps = gaps
    this.#nextSeq = nextSeq
    this.#appendBytes = o.log.kind === 'kafka' ? KAFKA_APPEND_BYTES : Infinity
  }

  /** Opens the sink and reads where the connector resumes: the watermark, and the gap episodes recorded so far. */
  static async open(o: VenueLogSinkOptions): Promise<{ sink: VenueLogSink; resume: VenueResume }> {
    const partitions = o.partitions ?? DEFAULT_PARTITIONS
    await o.log.ensureTopics([{ name: o.ticksTopic, partitions }])
    const { watermark, maxSeq } = await VenueLogSink.#tail(o.log, o.ticksTopic, o.source)
    const gaps = await Journal.open({ log: o.log, def: VENUE_GAPS, partitions })
    const recorded = (await gaps.readAll()).filter((g) => g.source === o.source)
    const sink = new VenueLogSink(o, await o.log.createProducer(), gaps, maxSeq + 1)
    if (watermark !== null) log.info({ source: o.source, watermark: new Date(watermark).toISOString(), seq: maxSeq, gaps: recorded.length }, 'resuming after the ticks already in the log')
    return { sink, resume: { watermark, gaps: recorded } }
  }

  /** The newest event time and seq of `source` among the last records of the ticks topic. */
  static async #tail(eventLog: EventLog, topic: string, source: string): Promise<{ watermark: number | null; maxSeq: number }> {
    let watermark: number | null = null
    let maxSeq = 0
    for (const record of await eventLog.lastRecords(topic)) {
      if (!record) continue
      const decoded = decodeTickValue(record.value)
      if (decoded.tape !== source) {
        throw new Error(`the ticks topic ${topic} holds ticks of ${decoded.tape ?? 'a bare tick stream'}, not of ${source}: use a data folder (or topic prefix) of its own`)
      }
      const time = tickTime(decoded.tick)
      if (watermark === null || time > watermark) watermark = time
      if (decoded.seq !== null && decoded.seq > maxSeq) maxSeq = decoded.seq
    }
    return { watermark, maxSeq }
  }

  async write(unit: VenueUnit): Promise<void> {
    let range = this.#assigned.get(unit)
    if (range) {
      // A retry: the earlier attempt may have landed (Kafka: a commit whose answer was lost).
      const { maxSeq } = await VenueLogSink.#tail(this.#log, this.#ticksTopic, this.#source)
      if (unit.ticks.length > 0 && maxSeq >= range.last) return
    } else {
      range = { first: this.#nextSeq, last: this.#nextSeq + unit.ticks.length - 1 }
      this.#nextSeq += unit.ticks.length
      this.#assigned.set(unit, range)
    }
    const appends = this.#appends(unit, range.first)
    for (const batches of appends) await this.#producer.sendAtomic(batches)
  }

  /** The unit as atomic appends: ticks cut at instant boundaries past APPEND_BYTES; gap records with the last. */
  #appends(unit: VenueUnit, firstSeq: number): TopicRecords[][] {
    const out: TopicRecords[][] = []
    let records: LogRecord[] = []
    let bytes = 0
    let seq = firstSeq
    for (let i = 0; i < unit.ticks.length; i++) {
      const tick = unit.ticks[i]!
      const time = tickTime(tick)
      const value = encodeTickEnvelope({ seq: seq++, tape: this.#source, tick })
      if (bytes + value.length > this.#appendBytes && records.length > 0 && time !== tickTime(unit.ticks[i - 1]!)) {
        out.push([{ topic: this.#ticksTopic, records }])
        records = []
        bytes = 0
      }
      records.push({ key: tickKey(tick), value, timestamp: time })
      bytes += value.length
    }
    const last: TopicRecords[] = records.length > 0 ? [{ topic: this.#ticksTopic, records }] : []
    if (unit.gaps.length > 0) last.push({ topic: this.#gaps.topic, records: unit.gaps.map((g: VenueGapRecord) => VENUE_GAPS.toLogRecord(g)) })
    if (last.length > 0) out.push(last)
    return out
  }

  async close(): Promise<void> {
    await this.#producer.close()
    await this.#gaps.close()
  }
}
