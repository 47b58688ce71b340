/**
 * Every TopicTable the service sinks to Parquet, in one list: the sink process consumes these topics and the
 * catalog writes their schema anchors. Billing draws add their table here.
 */
import { topicNames, type TopicNames } from '../topics.ts'
import { decisionsTable } from './decisionsTable.ts'
import { drawsTable } from './drawsTable.ts'
import { outcomesTable } from './outcomesTable.ts'
import { ticksTable } from './ticksTable.ts'
import type { TopicTable } from './TopicTable.ts'

export function sinkTables(names: TopicNames = topicNames()): TopicTable[] {
  return [ticksTable(names.ticks), decisionsTable(names.decisions), outcomesTable(names.outcomes), drawsTable(names.draws)]
}
