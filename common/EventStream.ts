/**
 * A live stream of events with a resumable position (issue 33, streams): what a domain offers and the serving layer's
 * WebSocket and Server-Sent Events transports deliver. Every event carries the cursor (common/Cursor.ts) just after
 * it; a reader started after a cursor yields every event after it the domain still holds, in order, and listening
 * from the same synchronous tick the reader ran dry continues with exactly the events after those (nothing missed,
 * nothing twice): both are fed from one append-only sequence on the one JavaScript thread.
 */
export interface StreamEvent {
  /** The cursor after this event (opaque; a reconnect hands it back). */
  readonly cursor: string
  /** The event's name (SSE `event:`, WebSocket `event` field). */
  readonly event: string
  /** JSON-safe payload. */
  readonly data: unknown
}

export interface StreamReader {
  /**
   * The next events after the reader's position, at most `max`; `done` once it reached the newest event (always in a
   * synchronous step, so listening from it misses nothing). `wait`, with no events: the reader is reading older
   * events from storage (a cursor older than what the domain keeps in memory); call next() again once it resolves
   * (it rejects when that read failed).
   */
  next(max: number): { events: StreamEvent[]; done: boolean; wait?: Promise<void> }
  /** Releases what the reader holds (a read from storage in progress); called when its connection ends. */
  close?(): void
}

export interface EventStream {
  /** A name unique among the deployment's streams (the pub/sub topic its live events go out on). */
  readonly topic: string
  /**
   * A reader after `cursor` (a token this stream issued: anything else throws VALIDATION / INVALID_CURSOR naming
   * `field`), or from now when null.
   */
  reader(cursor: string | null, field: string): StreamReader
  /** Every event appended from now on, in order, synchronously as it is appended; returns the unsubscribe. */
  listen(fn: (event: StreamEvent) => void): () => void
}
