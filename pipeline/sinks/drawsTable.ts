/**
 * The billing.draws topic as the `billing_draw_rows` table: one row per journal record (pipeline/records/drawRecord.ts),
 * debits, credits, refunds and answer receipts alike. The `billing_draws` view (sql/010_billing_draws.sql) shows the
 * spec's three draw kinds with reversed_at derived from the refund rows; nothing is ever updated in place.
 * Partitioned by the UTC day of created_at; asset is '*' (billing is not per market).
 */
import { decodeDraw, type DrawRow } from '../records/drawRecord.ts'
import type { ConsumedRecord } from '../log/EventLog.ts'
import type { CellValue, ColumnSpec, MappedRecord, TopicTable } from './TopicTable.ts'

export const DRAWS_DIR = 'billing.draws'

export const DRAWS_COLUMNS = [
  { name: 'id', type: 'VARCHAR' },
  { name: 'payer', type: 'VARCHAR' },
  { name: 'kind', type: 'VARCHAR' },
  { name: 'amount', type: 'BIGINT' },
  { name: 'reason', type: 'VARCHAR' },
  { name: 'ref', type: 'VARCHAR' },
  { name: 'lot_id', type: 'VARCHAR' },
  { name: 'created_at', type: 'TIMESTAMP' },
  { name: 'expires_at', type: 'TIMESTAMP' },
] as const satisfies readonly ColumnSpec[]

export function drawRow(d: DrawRow): CellValue[] {
  return [d.id, d.payer, d.kind, d.amount, d.reason, d.ref, d.lot_id, new Date(d.created_at), d.expires_at === null ? null : new Date(d.expires_at)]
}

export function drawsTable(topic: string = DRAWS_DIR): TopicTable {
  return {
    topic,
    table: 'billing_draw_rows',
    dir: DRAWS_DIR,
    columns: DRAWS_COLUMNS,
    map(record: ConsumedRecord): MappedRecord {
      const d = decodeDraw(record.value)
      return { asset: '*', eventTime: Date.parse(d.created_at), row: drawRow(d) }
    },
  }
}
