/**
 * The backbone in one object: topics on an event log, the Parquet sink consuming them, and tape replays feeding
 * the ticks topic. Used by `svc pipeline run`, `svc start`, the crash tests and the benches.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { childLogger } from '../common/logger.ts'
import type { EventLog, LogConsumer } from './log/EventLog.ts'
import { ParquetSink, type ParquetSinkOptions } from './sinks/ParquetSink.ts'
import { sinkTables } from './sinks/sinkTables.ts'
import { produceTape, type TapeProducerOptions, type TapeProducerResult } from './TapeProducer.ts'
import { DEFAULT_PARTITIONS, topicNames, topicSpecs, type TopicNames } from './topics.ts'

const log = childLogger('pipeline')

export interface PipelineOptions {
  dataDir: string
  log: EventLog
  names?: TopicNames
  partitions?: number
  /** Consumer group of the Parquet sink. */
  sinkGroup?: string
  /** Kafka: retention of the ticks topic when this creates it (topics.ts topicSpecs). Absent: ticks never expire. */
  ticksRetentionMs?: number
  sink?: Omit<ParquetSinkOptions, 'dataDir' | 'tables'>
  /**
   * Start the sink's consumer now (default true). False leaves it idle until startSink() (or drain()):
   * svc start keeps the warm-up's CPU for the stream processors the API reads from, and the sink catches up after.
   */
  startSink?: boolean
}

export class Pipeline {
  readonly log: EventLog
  readonly names: TopicNames
  readonly sink: ParquetSink
  readonly #consumer: LogConsumer
  #running: Promise<void> | null = null

  private constructor(eventLog: EventLog, names: TopicNames, sink: ParquetSink, consumer: LogConsumer) {
    this.log = eventLog
    this.names = names
    this.sink = sink
    this.#consumer = consumer
  }

  static async start(options: PipelineOptions): Promise<Pipeline> {
    const names = options.names ?? topicNames()
    const tables = sinkTables(names)
    // Every sunk topic exists before the sink subscribes, including journals whose topic is not a configurable name.
    const specs = topicSpecs(names, options.partitions, options.ticksRetentionMs !== undefined ? { ticksRetentionMs: options.ticksRetentionMs } : {})
    for (const t of tables) if (!specs.some((s) => s.name === t.topic)) specs.push({ name: t.topic, partitions: options.partitions ?? DEFAULT_PARTITIONS })
    await options.log.ensureTopics(specs)
    const sink = await ParquetSink.open({ dataDir: options.dataDir, tables, ...options.sink })
    const consumer = await options.log.createConsumer({
      groupId: options.sinkGroup ?? 'svc.parquet-sink',
      topics: tables.map((t) => t.topic),
      fromBeginning: true,
    })
    const pipeline = new Pipeline(options.log, names, sink, consumer)
    if (options.startSink ?? true) pipeline.startSink()
    return pipeline
  }

  /**
   * Whether the sink is sealing what reaches the log (started and not stopped by a failed write): a processor that
   * drops rows from memory to read them back from Parquet waits for it (product/duel/CallBook.ts).
   */
  get sealing(): boolean {
    return this.#running !== null && !this.sink.failed
  }

  /** Starts the sink's consumer (once; later calls do nothing). */
  startSink(): void {
    if (this.#running) return
    this.#running = this.sink.run(this.#consumer)
    this.#running.catch((err: unknown) => log.error({ err }, 'parquet sink consumer stopped'))
  }

  /** Replays a tape into the ticks topic (resuming after what the log already holds). */
  replay(options: Omit<TapeProducerOptions, 'log' | 'topic'>): Promise<TapeProducerResult> {
    return produceTape({ ...options, log: this.log, topic: this.names.ticks })
  }

  /** Seals buffered rows and waits until the sink has committed every record of `topic` currently in the log. */
  async drain(topic: string = this.names.ticks, timeoutMs = 120_000): Promise<void> {
    this.startSink()
    const deadline = Date.now() + timeoutMs
    const end = await this.log.endOffsets(topic)
    for (;;) {
      if (this.sink.failed) throw this.sink.failed
      await this.sink.flush()
      const committable = this.sink.committableOffsets()
      // A partition this process has not consumed from was committed by an earlier run up to where the consumer
      // starts (a rerun over a log the sink already holds): its position is then its committed offset.
      const started = new Map(this.#consumer.positions().filter((q) => q.topic === topic).map((q) => [q.partition, q.next]))
      if (end.every((e, p) => e === 0 || (committable[`${topic}/${p}`] ?? started.get(p) ?? 0) >= e)) return
      if (Date.now() > deadline) throw new Error(`sink did not catch up with ${topic} within ${timeoutMs} ms`)
      await sleep(50)
    }
  }

  async close(): Promise<void> {
    await this.sink.close()
    if (this.#running) await this.#running.catch(() => undefined)
    else await this.#consumer.stop()
  }
}
