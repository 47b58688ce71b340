/**
 * How one log topic becomes one Parquet table. The ParquetSink is generic; each topic plugs in a TopicTable
 * (ticks: ticksTable.ts; decisions, outcomes and billing draws add theirs the same way).
 *
 * Every file the sink writes starts with the two columns the sink owns (SINK_COLUMNS: log_partition, log_offset),
 * followed by the table's `columns`. `date` (UTC day of the event time) and `asset` are hive partition columns:
 * they live in the directory names, not in the files, and readers get them with hive_partitioning = true.
 */
import type { ConsumedRecord } from '../log/EventLog.ts'

/**
 * Column types a table may declare; each maps one-to-one onto a DuckDB type and, in the Parquet file, onto one physical
 * and logical type (PARQUET_TYPES), so readers outside DuckDB (pyarrow, polars) get the same types. Instants are
 * TIMESTAMPTZ (Parquet TIMESTAMP isAdjustedToUTC=true, arrow timestamp[us, tz=UTC]), never a naive TIMESTAMP; objects
 * and arrays are JSON (the Parquet JSON logical type), never plain text.
 */
export const COLUMN_TYPES = ['INTEGER', 'BIGINT', 'DOUBLE', 'VARCHAR', 'JSON', 'TIMESTAMPTZ', 'BOOLEAN'] as const
export type ColumnType = (typeof COLUMN_TYPES)[number]

/**
 * What DuckDB writes for each column type, as parquet_schema() reports it (physical type, converted type, and the
 * logical type where the converted one does not say it all: a TIMESTAMP_MICROS column is an instant only when
 * isAdjustedToUTC). The drift test (test/pipeline/sinks/parquetTypes.test.ts) checks every file the service writes.
 */
export const PARQUET_TYPES: Record<ColumnType, { type: string; converted: string | null; logical?: RegExp }> = {
  INTEGER: { type: 'INT32', converted: 'INT_32' },
  BIGINT: { type: 'INT64', converted: 'INT_64' },
  DOUBLE: { type: 'DOUBLE', converted: null },
  VARCHAR: { type: 'BYTE_ARRAY', converted: 'UTF8' },
  JSON: { type: 'BYTE_ARRAY', converted: 'JSON', logical: /^JsonType\(\)$/ },
  TIMESTAMPTZ: { type: 'INT64', converted: 'TIMESTAMP_MICROS', logical: /^TimestampType\(isAdjustedToUTC=1, unit=TimeUnit\(MILLIS=<null>, MICROS=MicroSeconds\(\)/ },
  BOOLEAN: { type: 'BOOLEAN', converted: null },
}

export interface ColumnSpec {
  name: string
  type: ColumnType
}

/**
 * One cell. TIMESTAMPTZ cells are Date (or epoch-ms numbers converted by the sink); BIGINT cells are numbers
 * (offsets and sequence numbers stay below 2^53).
 */
export type CellValue = number | string | boolean | Date | null

export interface MappedRecord {
  /** Hive partition value: upper-case asset, or '*' for venue-wide records (stored percent-encoded). */
  asset: string
  /** Event time, epoch ms; its UTC day is the `date` partition. */
  eventTime: number
  /** Values of `columns`, in order (without the sink's own columns). */
  row: CellValue[]
}

export interface TopicTable {
  /** The log topic this table consumes. */
  topic: string
  /** Table (view) name in the catalog. */
  table: string
  /**
   * Directory under $DATA/parquet/. Stable storage name, independent of deployment topic renames
   * (SVC_TOPIC_*), so the .sql views never change with configuration.
   */
  dir: string
  /** File columns after SINK_COLUMNS. Never name them date or asset (those are the partition columns). */
  columns: readonly ColumnSpec[]
  /** Decodes one record; throws on bad input (the sink then stores it among the rejects, never drops it). */
  map(record: ConsumedRecord): MappedRecord
}

/** Columns every sink file starts with: where the record sat in the log. They make output idempotent. */
export const SINK_COLUMNS: readonly ColumnSpec[] = [
  { name: 'log_partition', type: 'INTEGER' },
  { name: 'log_offset', type: 'BIGINT' },
]

/** Names reserved for the hive partition directories. */
export const PARTITION_COLUMNS = ['date', 'asset'] as const

/** All file columns of a table, in file order. */
export function fileColumns(table: TopicTable): ColumnSpec[] {
  return [...SINK_COLUMNS, ...table.columns]
}

/** DDL column list, e.g. `log_partition INTEGER, log_offset BIGINT, ...`. */
export function columnsDdl(columns: readonly ColumnSpec[]): string {
  return columns.map((c) => `${quoteIdent(c.name)} ${c.type}`).join(', ')
}

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}
