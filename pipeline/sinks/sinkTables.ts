/**
 * Every TopicTable the service sinks to Parquet, in one list: the sink process consumes these topics and the
 * catalog writes their schema anchors. The ledger and billing tables derive from their journal definitions.
 */
import { ARENA_SETTINGS } from '../records/arenaSettingRecord.ts'
import { DECISIONS } from '../records/decisionRecord.ts'
import { DELIVERY_ASKS, DELIVERY_ATTEMPTS, DELIVERY_CONTACTS, DELIVERY_REGISTRATIONS } from '../records/deliveryRecord.ts'
import { DRAWS } from '../records/drawRecord.ts'
import { EXPERIENCE } from '../records/experienceRecord.ts'
import { NOTIFICATIONS } from '../records/notificationRecord.ts'
import { CALL_OPT_INS, CALLS } from '../records/callRecord.ts'
import { FUNNEL_SNAPSHOTS } from '../records/funnelRecord.ts'
import { OUTCOMES_JOURNAL } from '../records/outcomeRecord.ts'
import { VENUE_GAPS } from '../records/venueGapRecord.ts'
import { topicNames, type TopicNames } from '../topics.ts'
import { ticksTable } from './ticksTable.ts'
import type { TopicTable } from './TopicTable.ts'

/** The journals (append-only record types) the service keeps, each with its table and views. */
export const JOURNALS = [DECISIONS, OUTCOMES_JOURNAL, DRAWS, CALLS, CALL_OPT_INS, EXPERIENCE, NOTIFICATIONS, ARENA_SETTINGS, FUNNEL_SNAPSHOTS,
  DELIVERY_REGISTRATIONS, DELIVERY_ASKS, DELIVERY_ATTEMPTS, DELIVERY_CONTACTS, VENUE_GAPS] as const

export function sinkTables(names: TopicNames = topicNames()): TopicTable[] {
  return [
    ticksTable(names.ticks), DECISIONS.topicTable(names.decisions), OUTCOMES_JOURNAL.topicTable(names.outcomes), DRAWS.topicTable(names.draws),
    CALLS.topicTable(names.calls), CALL_OPT_INS.topicTable(names.callOptIns),
    // The Arena's journals keep their definition's topic name (not configurable): product/arena opens them so.
    EXPERIENCE.topicTable(), NOTIFICATIONS.topicTable(), ARENA_SETTINGS.topicTable(),
    FUNNEL_SNAPSHOTS.topicTable(names.funnel),
    // Delivery's journals, like the Arena's, keep their definition's topic name.
    DELIVERY_REGISTRATIONS.topicTable(), DELIVERY_ASKS.topicTable(), DELIVERY_ATTEMPTS.topicTable(), DELIVERY_CONTACTS.topicTable(),
    // The live venue connector's gap episodes (pipeline/venue/), on its definition's topic name.
    VENUE_GAPS.topicTable(),
  ]
}
