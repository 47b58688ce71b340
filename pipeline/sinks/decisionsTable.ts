/**
 * The decisions topic as the `decision_rows` table: one row per record, one column per ledger field
 * (pipeline/records/decisionRecord.ts), nothing dropped. `asset` is the hive partition column; the UTC day of
 * created_at (event time) is `date`. Object fields are stored as canonical JSON text.
 *
 * Append-only: the sink only ever writes new sealed files. The `decisions` view (sql/002_decisions.sql) keeps the
 * first row per decision_id, so a conflicting record that reached the log past the engine's refusal can never
 * replace the recorded one.
 */
import { canonicalJson } from '../../common/jcs.ts'
import type { ConsumedRecord } from '../log/EventLog.ts'
import { decodeDecision, type LedgerDecision } from '../records/decisionRecord.ts'
import type { CellValue, ColumnSpec, MappedRecord, TopicTable } from './TopicTable.ts'

export const DECISIONS_DIR = 'decisions'

export const DECISIONS_COLUMNS = [
  { name: 'decision_id', type: 'VARCHAR' },
  { name: 'question_id', type: 'VARCHAR' },
  { name: 'subject', type: 'VARCHAR' },
  { name: 'event', type: 'VARCHAR' },
  { name: 'horizon', type: 'VARCHAR' },
  { name: 'horizon_end', type: 'TIMESTAMP' },
  { name: 'created_at', type: 'TIMESTAMP' },
  { name: 'conditions', type: 'VARCHAR' },
  { name: 'probability', type: 'DOUBLE' },
  { name: 'confidence', type: 'DOUBLE' },
  { name: 'decision', type: 'VARCHAR' },
  { name: 'action', type: 'VARCHAR' },
  { name: 'input_hash', type: 'VARCHAR' },
  { name: 'state_hash', type: 'VARCHAR' },
  { name: 'policy_version', type: 'VARCHAR' },
  { name: 'jev_version', type: 'VARCHAR' },
  { name: 'choice_id', type: 'VARCHAR' },
  { name: 'choice_distribution', type: 'VARCHAR' },
  { name: 'payment_id', type: 'VARCHAR' },
  { name: 'payment_rail', type: 'VARCHAR' },
  { name: 'matched_rules', type: 'VARCHAR' },
  { name: 'refusal_reason', type: 'VARCHAR' },
  { name: 'model_id', type: 'VARCHAR' },
  { name: 'fitted_version', type: 'VARCHAR' },
  { name: 'policy_checksum', type: 'VARCHAR' },
  { name: 'journal', type: 'VARCHAR' },
  { name: 'record_version', type: 'INTEGER' },
] as const satisfies readonly ColumnSpec[]

/** One ledger decision as a row, in DECISIONS_COLUMNS order. */
export function decisionRow(d: LedgerDecision): CellValue[] {
  return [
    d.decision_id,
    d.question_id,
    d.subject,
    d.event,
    d.horizon,
    new Date(d.horizon_end),
    new Date(d.created_at),
    canonicalJson(d.conditions),
    d.probability,
    d.confidence,
    d.decision,
    d.action,
    d.input_hash,
    d.state_hash,
    d.policy_version,
    d.jev_version,
    d.choice?.choice_id ?? null,
    d.choice ? canonicalJson(d.choice.distribution) : null,
    d.payment_id,
    d.payment_rail,
    canonicalJson(d.matched_rules),
    d.refusal_reason,
    d.model_id,
    d.fitted_version,
    d.policy_checksum,
    d.journal,
    d.v,
  ]
}

export function decisionsTable(topic: string = DECISIONS_DIR): TopicTable {
  return {
    topic,
    table: 'decision_rows',
    dir: DECISIONS_DIR,
    columns: DECISIONS_COLUMNS,
    map(record: ConsumedRecord): MappedRecord {
      const d = decodeDecision(record.value)
      return { asset: d.asset, eventTime: Date.parse(d.created_at), row: decisionRow(d) }
    },
  }
}
