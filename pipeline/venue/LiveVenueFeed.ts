/**
 * The live venue on one instance or on several (issue 32). One connector feeds the venue, on the instance that holds
 * the venue-feed lease (on one instance, always this one); what the service reads of the venue (/readyz data.venue,
 * the data's quality) comes from that connector while this instance feeds, and from the log otherwise.
 *
 * Taking the feed over (the holder stopped or died): the sink is opened again, which reads where the log ends now
 * (the newest tick and seq any instance wrote, and the gap episodes recorded), and a new connector resumes after it:
 * the span since the previous holder's last tick is repaired over REST as after a restart (a `restart` gap episode),
 * then the stream starts. A connector runs once (its stream, stage and counters end with it), hence a new one.
 */
import type { LiveVenue, VenueStage, VenueStatus } from './VenueStatus.ts'
import { HyperliquidConnector, type HyperliquidConnectorOptions } from './HyperliquidConnector.ts'
import { VenueLogSink, type VenueLogSinkOptions } from './VenueLogSink.ts'

export interface LiveVenueFeedOptions {
  sink: VenueLogSinkOptions
  connector: Omit<HyperliquidConnectorOptions, 'sink' | 'resume'>
  /** Whether this instance feeds the venue (the venue-feed lease's holder; on one instance always true). */
  feeds: () => boolean
  /** The newest venue event time this instance has read from the log (its market state), or null before any. */
  readEventTime: () => number | null
}

export class LiveVenueFeed implements LiveVenue {
  readonly #o: LiveVenueFeedOptions
  #sink: VenueLogSink
  #connector: HyperliquidConnector

  private constructor(o: LiveVenueFeedOptions, sink: VenueLogSink, connector: HyperliquidConnector) {
    this.#o = o
    this.#sink = sink
    this.#connector = connector
  }

  static async open(o: LiveVenueFeedOptions): Promise<LiveVenueFeed> {
    const { sink, connector } = await LiveVenueFeed.#atLogEnd(o)
    return new LiveVenueFeed(o, sink, connector)
  }

  /** A sink opened where the log ends now, and a connector that resumes after the newest tick there. */
  static async #atLogEnd(o: LiveVenueFeedOptions): Promise<{ sink: VenueLogSink; connector: HyperliquidConnector }> {
    const { sink, resume } = await VenueLogSink.open(o.sink)
    return { sink, connector: HyperliquidConnector.create({ ...o.connector, sink, resume }) }
  }

  /**
   * Reads where the log ends again, before this instance feeds after another did: a new sink and a new connector that
   * resumes after the newest tick in the log, whoever wrote it. Not while a run is in progress.
   */
  async reopen(): Promise<void> {
    await this.#sink.close()
    ;({ sink: this.#sink, connector: this.#connector } = await LiveVenueFeed.#atLogEnd(this.#o))
  }

  /** Backfills (first start) or repairs since the newest tick in the log, then streams until `signal` aborts. */
  run(signal: AbortSignal, onLive?: () => void): Promise<void> {
    return this.#connector.run(signal, onLive)
  }

  /** Event time of the newest tick the connector wrote or resumes after; -Infinity before any. */
  get written(): number {
    return this.#connector.written
  }

  status(): VenueStatus {
    return this.#o.feeds() ? this.#connector.status() : this.#connector.statusFromLog(this.#o.readEventTime())
  }

  stage(): VenueStage {
    return this.#o.feeds() ? this.#connector.stage() : this.#connector.stageFromLog(this.#o.readEventTime())
  }

  lastError(): string | null {
    return this.#o.feeds() ? this.#connector.lastError() : null
  }

  close(): Promise<void> {
    return this.#sink.close()
  }
}
