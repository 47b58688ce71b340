/**
 * Gaps in what the live venue connector received, one append-only record per episode on the `venue.gaps` topic
 * (key = source): the service restarted, the websocket dropped or went silent, the stream never finished a bar, or
 * the venue lacked a bar or settlement it should have had. Live-only data (trades, books, asset contexts) of the
 * episode's span cannot be fetched again; its bars and funding settlements were fetched over REST and appended
 * (`*_repaired`), except those the venue no longer served (`missing`: each with its series and event time). A record
 * is written once the episode is settled, in the same unit of work as the ticks that pass its end, so a restart never
 * finds an episode the log does not reflect.
 *
 * Issue 28: "a gap that cannot be repaired (the venue serves only the newest 5000 candles) is recorded as a gap, and
 * no decision is made or graded across it (the existing rule)": the engine sees the missing bars as missing (stale
 * inputs refuse, incomplete windows resolve unresolvable); this journal says where and why.
 */
import { IsoMs, Nullable, StringEnum, Type, type Static } from '../../common/schema.ts'
import { JournalDef } from '../journal/JournalDef.ts'

export const VENUE_GAP_RECORD_VERSION = 1
/**
 * restart: the service was not running (from the newest tick in the log to the first after the start); disconnect /
 * silence: the websocket dropped, or stopped answering pings; stream: a bar the websocket never finished (fetched over
 * REST); hold: a bar or settlement REST could not deliver while the live stream was waiting for it; history: the
 * first start's backfill met a hole.
 */
export const VENUE_GAP_CAUSES = ['restart', 'disconnect', 'silence', 'stream', 'hold', 'history'] as const
export type VenueGapCause = (typeof VENUE_GAP_CAUSES)[number]
export const VENUE_GAP_STATUSES = ['repaired', 'unrepairable'] as const

const Count = Type.Integer({ minimum: 0 })

export const VENUE_GAP_RECORD_SCHEMA = Type.Object(
  {
    v: Type.Literal(VENUE_GAP_RECORD_VERSION),
    gap_id: Type.String({ minLength: 1 }),
    /** The venue, as in the ticks' envelope (`hyperliquid`). */
    source: Type.String({ minLength: 1 }),
    cause: StringEnum(VENUE_GAP_CAUSES),
    /** The last venue event received before the episode (exclusive start). */
    span_start: IsoMs,
    /** The first venue event after it, or the end of the span repaired (inclusive end). */
    span_end: IsoMs,
    /** The bar interval the bars count in. */
    bar_interval: Type.String({ pattern: '^\\d+[mhdw]$' }),
    bars_expected: Count,
    bars_repaired: Count,
    funding_expected: Count,
    funding_repaired: Count,
    /** Bars and settlements the venue did not serve (their event times); empty when status is repaired. */
    missing: Type.Array(Type.Object({ asset: Type.String({ minLength: 1 }), kind: StringEnum(['bar', 'funding']), at: IsoMs }, { additionalProperties: false })),
    status: StringEnum(VENUE_GAP_STATUSES),
    /** The clock's time when the episode was settled. */
    recorded_at: IsoMs,
    /** Why the episode ended as it did, when there is more to say (e.g. a hold that ran out). */
    note: Nullable(Type.String()),
  },
  { additionalProperties: false },
)

export type VenueGapRecord = Static<typeof VENUE_GAP_RECORD_SCHEMA>

export const VENUE_GAPS = new JournalDef({
  name: 'venue.gaps',
  schema: VENUE_GAP_RECORD_SCHEMA,
  key: (r) => r.source,
  id: (r) => r.gap_id,
  time: (r) => Date.parse(r.span_end),
  table: { rows: 'venue_gap_rows', first: 'venue_gaps', dir: 'venue.gaps', version: { field: 'v', column: 'record_version' } },
})
