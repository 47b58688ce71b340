/**
 * Every TopicTable the service sinks to Parquet, in one list: the sink process consumes these topics and the
 * catalog writes their schema anchors. The ledger and billing tables derive from their journal definitions.
 */
import { DECISIONS } from '../records/decisionRecord.ts'
import { DRAWS } from '../records/drawRecord.ts'
import { FUNNEL_SNAPSHOTS } from '../records/funnelRecord.ts'
import { OUTCOMES_JOURNAL } from '../records/outcomeRecord.ts'
import { topicNames, type TopicNames } from '../topics.ts'
import { ticksTable } from './ticksTable.ts'
import type { TopicTable } from './TopicTable.ts'

/** The journals (append-only record types) the service keeps, each with its table and views. */
export const JOURNALS = [DECISIONS, OUTCOMES_JOURNAL, DRAWS, FUNNEL_SNAPSHOTS] as const

export function sinkTables(names: TopicNames = topicNames()): TopicTable[] {
  return [ticksTable(names.ticks), DECISIONS.topicTable(names.decisions), OUTCOMES_JOURNAL.topicTable(names.outcomes), DRAWS.topicTable(names.draws), FUNNEL_SNAPSHOTS.topicTable(names.funnel)]
}
