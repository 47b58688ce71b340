/**
 * What the served data is, in words for the places people and agents read before any answer (issue 33, item 5): the
 * /record page's banner and a line in llms.txt, the agent card and ai.txt. Every phrase is read from the one data-time
 * object (DataTimeSource.status(), the same object behind every answer's x-svc-data-time header and /readyz
 * data_time), so the label can never say something the header does not.
 *
 * Two parts: `standing` holds only what stays true for the life of the process (simulated or not, replay or present,
 * the source, the speed), for the documents built once at start; `now` adds the moving part (the event time, and for
 * the live venue whether it streams right now), for a page rendered per request.
 */
import type { VenueStatus } from '../../pipeline/venue/VenueStatus.ts'
import type { DataTime } from './schemas.ts'

/** simulated: the built-in generator (live or replayed); replay: a recorded tape of real data; live: the venue itself. */
export const DATA_KINDS = ['simulated', 'replay', 'live'] as const
export type DataKind = (typeof DATA_KINDS)[number]

export interface DataLabel {
  kind: DataKind
  /** One word for a banner: SIMULATED, REPLAY or LIVE. */
  title: string
  /** What stays true while the process runs (documents built once at start); read after the title. */
  standing: string
  /** `TITLE. standing`: the one line the documents carry. */
  notice: string
  /** The moving part, for a page rendered per request: event time, and the live venue's state. */
  now: string
}

export function dataKindOf(d: Pick<DataTime, 'simulated' | 'mode'>): DataKind {
  return d.simulated ? 'simulated' : d.mode === 'replay' ? 'replay' : 'live'
}

const WHERE = 'every answer says the same in its x-svc-data-time header, and GET /readyz in data_time'

export function dataLabelOf(d: DataTime, venue: VenueStatus | null = null): DataLabel {
  const kind = dataKindOf(d)
  const speed = d.speed === 0 ? 'as fast as possible' : `${d.speed}x`
  const standing =
    kind === 'simulated'
      ? d.mode === 'replay'
        ? `A dated tape of the built-in market generator, replayed at ${speed}; not a real market. Answers live in the tape's virtual time, and the track record scores answers about simulated prices (${WHERE}).`
        : `The built-in market generator, running in the present; not a real market. Prices, funding and outcomes are generated, and the track record scores answers about them (${WHERE}).`
      : kind === 'replay'
        ? `Recorded venue data from the tape ${d.source}, played at ${speed}. Answers live in the tape's virtual time, not the present (${WHERE}).`
        : `The venue ${d.source}, in the present. When its feed is not streaming, the data is marked degraded and market routes refuse rather than serve old prices (${WHERE}).`
  const at = d.event_time ?? 'none yet'
  const warming = d.warming_up ? ' Warming up: market routes answer 503 until the state has caught up.' : ''
  const now =
    kind === 'live'
      ? `Now: ${d.quality}${venue ? ` (venue stage ${venue.stage})` : ''}; newest venue event ${at}${d.lag_ms === null ? '' : `, ${Math.round(d.lag_ms / 1000)} s ago`}.${warming}`
      : d.mode === 'replay'
        ? `Virtual time now: ${at}.${warming}`
        : `Newest generated event: ${at}.${warming}`
  const title = kind.toUpperCase()
  return { kind, title, standing, notice: `${title}. ${standing}`, now }
}
