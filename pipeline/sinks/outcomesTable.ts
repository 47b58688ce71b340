/**
 * The outcomes topic as the `outcome_rows` table (pipeline/records/outcomeRecord.ts): one row per record, `asset`
 * as the hive partition, `date` = UTC day of resolved_at. The `outcomes` view (sql/003_outcomes.sql) keeps the first
 * row per decision_id: a clock is resolved once.
 */
import { canonicalJson } from '../../common/jcs.ts'
import type { ConsumedRecord } from '../log/EventLog.ts'
import { decodeOutcome, type LedgerOutcome } from '../records/outcomeRecord.ts'
import type { CellValue, ColumnSpec, MappedRecord, TopicTable } from './TopicTable.ts'

export const OUTCOMES_DIR = 'outcomes'

export const OUTCOMES_COLUMNS = [
  { name: 'decision_id', type: 'VARCHAR' },
  { name: 'question_id', type: 'VARCHAR' },
  { name: 'subject', type: 'VARCHAR' },
  { name: 'outcome', type: 'VARCHAR' },
  { name: 'resolved_at', type: 'TIMESTAMP' },
  { name: 'horizon_end', type: 'TIMESTAMP' },
  { name: 'statistic', type: 'DOUBLE' },
  { name: 'statistic_detail', type: 'VARCHAR' },
  { name: 'realized_choice', type: 'VARCHAR' },
  { name: 'reason', type: 'VARCHAR' },
  { name: 'record_version', type: 'INTEGER' },
] as const satisfies readonly ColumnSpec[]

export function outcomeRow(o: LedgerOutcome): CellValue[] {
  return [
    o.decision_id,
    o.question_id,
    o.subject,
    o.outcome,
    new Date(o.resolved_at),
    new Date(o.horizon_end),
    o.statistic,
    o.statistic_detail === null ? null : canonicalJson(o.statistic_detail),
    o.realized_choice,
    o.reason,
    o.v,
  ]
}

export function outcomesTable(topic: string = OUTCOMES_DIR): TopicTable {
  return {
    topic,
    table: 'outcome_rows',
    dir: OUTCOMES_DIR,
    columns: OUTCOMES_COLUMNS,
    map(record: ConsumedRecord): MappedRecord {
      const o = decodeOutcome(record.value)
      return { asset: o.asset, eventTime: Date.parse(o.resolved_at), row: outcomeRow(o) }
    },
  }
}
