/**
 * What the live venue connector tells /readyz (data.venue) and the market routes: its stage, whether the websocket is
 * up, how far the log is behind the present, the backfill, the gaps repaired and open, and the venue input it
 * refused. One schema: the connector fills it, the platform route publishes it.
 */
import { NullableInstant, NullableNumber, NullableString, StringEnum, Type, type Static } from '../../common/schema.ts'

/**
 * starting: nothing tried yet; backfilling: fetching history over REST before streaming; streaming: the websocket is
 * up and the log is current; reconnecting: the websocket is down, the data is still within its staleness budget;
 * stale: the newest venue data is older than the budget (market answers refuse); unreachable: the venue has not
 * answered since the service started (market answers say PROVIDER_DOWN); stopped: the connector has ended.
 */
export const VENUE_STAGES = ['starting', 'backfilling', 'streaming', 'reconnecting', 'stale', 'unreachable', 'stopped'] as const
export type VenueStage = (typeof VENUE_STAGES)[number]

const Count = Type.Integer({ minimum: 0 })

export const VENUE_STATUS = Type.Object(
  {
    source: Type.String(),
    /** REST base URL and websocket URL the connector uses. */
    url: Type.String(),
    ws_url: Type.String(),
    stage: StringEnum(VENUE_STAGES),
    connected: Type.Boolean(),
    /** The clock's time of the last message from the venue (websocket frame or REST answer). */
    last_message_at: NullableInstant,
    /** The newest event time written to the log. */
    event_time: NullableInstant,
    /** now − event_time: how far the log is behind the present. */
    lag_ms: NullableNumber,
    /** Ticks held for ordering (the reorder window, and a bar or settlement being waited for). */
    held: Count,
    /** What the stream is waiting for, when a barrier holds it: e.g. `bar BTC 2026-03-01T12:00:00.000Z`. */
    waiting_for: NullableString,
    backfill: Type.Object(
      {
        from: NullableInstant,
        to: NullableInstant,
        done: Type.Boolean(),
        ticks: Count,
      },
      { additionalProperties: false },
    ),
    gaps: Type.Object(
      {
        /** Episodes not settled yet (the websocket is down, or a repair is in progress). */
        open: Count,
        /** Settled episodes whose bars and settlements were all fetched (this data folder's whole history). */
        repaired: Count,
        /** Settled episodes with something the venue no longer served (recorded in venue.gaps, never filled in). */
        unrepairable: Count,
        /** Bars and settlements recorded missing. */
        missing: Count,
      },
      { additionalProperties: false },
    ),
    /** Venue input refused, by reason (VenueInputGuard), since the start. */
    rejected: Type.Record(Type.String(), Count),
    /** Ticks older than what was already written (not placeable) and repeated ones, since the start. */
    late: Count,
    duplicates: Count,
    /** Live ticks dropped because the sink was behind and the buffer full (the log was not taking writes). */
    dropped: Count,
    rest: Type.Object(
      {
        requests: Count,
        failures: Count,
        throttled: Count,
        last_error: NullableString,
      },
      { additionalProperties: false },
    ),
    websocket: Type.Object({ connects: Count, reconnects: Count, frames: Count }, { additionalProperties: false }),
  },
  { additionalProperties: false },
)
export type VenueStatus = Static<typeof VENUE_STATUS>

/** What the rest of the service reads of the live connector: its stage (cheap, per answer), its last error, its status. */
export interface LiveVenue {
  stage(): VenueStage
  lastError(): string | null
  status(): VenueStatus
}
