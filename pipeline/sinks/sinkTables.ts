/**
 * Every TopicTable the service sinks to Parquet, in one list: the sink process consumes these topics and the
 * catalog writes their schema anchors. Decisions, outcomes and billing draws add their tables here.
 */
import { topicNames, type TopicNames } from '../topics.ts'
import { ticksTable } from './ticksTable.ts'
import type { TopicTable } from './TopicTable.ts'

export function sinkTables(names: TopicNames = topicNames()): TopicTable[] {
  return [ticksTable(names.ticks)]
}
