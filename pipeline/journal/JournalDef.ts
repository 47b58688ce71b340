/**
 * One append-only thing, defined once: a schema-first record (its TypeScript type is inferred from the schema), the
 * topic it lives on (its key keeps one stream's records in order), its identity, and how it becomes a Parquet table
 * and DuckDB views. From this one definition come the codec (canonical bytes, validation naming the field path), the
 * sink's TopicTable (columns derived from the schema) and the views' DDL (sql/002_journals.sql is generated from it),
 * so a shape is never written twice.
 *
 * Spec, What the service does 2: "Decisions are kept on an append-only ledger. A recorded row is never altered." Every
 * journal is append-only: a record is never updated; a correction is a new record (a refund row names the debit it
 * reverses); the first record per id is the one the views keep.
 */
import { canonicalJson } from '../../common/jcs.ts'
import type { Static, TObject, TSchema } from '../../common/schema.ts'
import { compile, fieldErrors } from '../../common/validation.ts'
import type { ConsumedRecord, LogRecord } from '../log/EventLog.ts'
import { LedgerRecordError } from '../records/LedgerRecordError.ts'
import type { CellValue, ColumnSpec, ColumnType, MappedRecord, TopicTable } from '../sinks/TopicTable.ts'

export interface JournalTableSpec<T> {
  /** The view of every record as sealed (one row per record), e.g. 'decision_rows'. */
  rows: string
  /** The view keeping the first record per id (the journal's "table" for readers), e.g. 'decisions'; omitted: none. */
  first?: string
  /** Directory under $DATA/parquet/: a stable storage name, independent of topic renames. */
  dir: string
  /** The record field that is the `asset` hive partition; omitted: every record partitions as '*'. */
  assetField?: keyof T & string
  /**
   * Object fields stored as several columns instead of one JSON column: column name → the sub-field it holds (a JSON
   * column when the sub-field is an object). The columns stand where the field stands.
   */
  flatten?: Partial<Record<keyof T & string, Record<string, string>>>
  /** The record's schema-version field, stored last as INTEGER under this column name (e.g. v → record_version). */
  version?: { field: keyof T & string; column: string }
}

export interface JournalSpec<S extends TObject> {
  /** Logical name; the default topic name. */
  name: string
  schema: S
  /** Topic key: records with one key keep their order (they share a partition). */
  key(record: Static<S>): string
  /** Identity: a second record with the same id is a duplicate (same bytes) or a conflict (other bytes). */
  id(record: Static<S>): string
  /** Event time, epoch ms: the log timestamp and the `date` partition of the Parquet file. */
  time(record: Static<S>): number
  table: JournalTableSpec<Static<S>>
}

/** A column of the journal's table and how a record fills it. */
interface DerivedColumn<T> extends ColumnSpec {
  cell(record: T): CellValue
}

type SchemaLike = TSchema & { type?: string | string[]; anyOf?: SchemaLike[]; format?: string; const?: unknown }

/** The non-null branch of `T | null`, else the schema itself. */
function nonNull(s: SchemaLike): SchemaLike {
  if (s.anyOf) {
    const rest = s.anyOf.filter((b) => b.type !== 'null')
    if (rest.length === 1) return nonNull(rest[0]!)
  }
  return s
}

/** DuckDB type of a record field: instants are TIMESTAMPTZ; objects and arrays are canonical JSON text, typed JSON. */
function columnType(s: SchemaLike): ColumnType {
  const b = nonNull(s)
  if (b.type === 'string' && b.format === 'date-time') return 'TIMESTAMPTZ'
  if (b.type === 'string') return 'VARCHAR'
  if (b.type === 'integer') return 'BIGINT'
  if (b.type === 'number') return 'DOUBLE'
  if (b.type === 'boolean') return 'BOOLEAN'
  return 'JSON'
}

function cellOf(type: ColumnType, value: unknown): CellValue {
  if (value === null || value === undefined) return null
  if (type === 'TIMESTAMPTZ') return new Date(value as string)
  if (typeof value === 'object') return canonicalJson(value)
  return value as CellValue
}

export class JournalDef<S extends TObject> {
  readonly name: string
  readonly schema: S
  readonly table: JournalTableSpec<Static<S>>
  /** File columns after the sink's own (log_partition, log_offset), in schema order. */
  readonly columns: readonly ColumnSpec[]
  private readonly derived: readonly DerivedColumn<Static<S>>[]
  private readonly validate: ReturnType<typeof compile<Static<S>>>

  constructor(private readonly spec: JournalSpec<S>) {
    this.name = spec.name
    this.schema = spec.schema
    this.table = spec.table
    this.validate = compile<Static<S>>(spec.schema)
    this.derived = this.deriveColumns()
    this.columns = this.derived.map(({ name, type }) => ({ name, type }))
  }

  key(record: Static<S>): string {
    return this.spec.key(record)
  }

  id(record: Static<S>): string {
    return this.spec.id(record)
  }

  time(record: Static<S>): number {
    return this.spec.time(record)
  }

  /** The record, checked against its schema; throws LedgerRecordError naming the field path. */
  check(value: unknown): Static<S> {
    if (!this.validate(value)) {
      const e = fieldErrors(this.validate)[0]
      throw new LedgerRecordError(e?.path ?? '', e?.keyword === 'additionalProperties' ? 'is not a record field' : (e?.message ?? 'is invalid'))
    }
    return value
  }

  /** Canonical JSON (RFC 8785): one record always has the same bytes, whichever process or log carried it. */
  encode(record: Static<S>): Buffer {
    return Buffer.from(canonicalJson(this.check(record)), 'utf8')
  }

  decode(value: Buffer | string): Static<S> {
    return this.check(JSON.parse(typeof value === 'string' ? value : value.toString('utf8')))
  }

  /** The record as it goes on the log: its key, canonical bytes and event time. */
  toLogRecord(record: Static<S>): LogRecord {
    return { key: this.spec.key(record), value: this.encode(record), timestamp: this.spec.time(record) }
  }

  /** The sink's table of this journal on `topic` (the records' columns, asset and date partitions). */
  topicTable(topic: string = this.name): TopicTable {
    const assetField = this.table.assetField
    return {
      topic,
      table: this.table.rows,
      dir: this.table.dir,
      columns: this.columns,
      map: (record: ConsumedRecord): MappedRecord => {
        const r = this.decode(record.value)
        return {
          asset: assetField ? String((r as Record<string, unknown>)[assetField]) : '*',
          eventTime: this.spec.time(r),
          row: this.derived.map((c) => c.cell(r)),
        }
      },
    }
  }

  /** The rows view over the sealed files and the first-per-id view, as DuckDB DDL (the data dir is `${DATA_DIR}`). */
  viewsSql(): string {
    const t = this.table
    const lines = [
      `-- ${t.rows}: every record of the ${this.name} journal as sealed (parquet/${t.dir}/date=YYYY-MM-DD/asset=<ASSET>/p<partition>-<first>-<last>.parquet).`,
      `CREATE OR REPLACE VIEW ${t.rows} AS`,
      'SELECT',
      `  ${[...this.viewColumns(), 'date', 'log_partition', 'log_offset'].join(', ')}`,
      'FROM read_parquet(',
      `  '\${DATA_DIR}/parquet/${t.dir}/**/*.parquet',`,
      '  hive_partitioning = true,',
      '  union_by_name = true,',
      "  hive_types = {'date': DATE, 'asset': VARCHAR},",
      '  filename = true',
      ')',
      `WHERE filename NOT IN (SELECT file FROM covered_parquet('\${DATA_DIR}/parquet/${t.dir}/**/*.parquet'));`,
    ]
    if (t.first) {
      const idColumn = this.idColumn()
      lines.push(
        '',
        `-- ${t.first}: one row per ${idColumn}, the first recorded (one id always sits on one partition, so "first" is the lowest`,
        '-- offset). A later record with the same id can never replace it.',
        `CREATE OR REPLACE VIEW ${t.first} AS`,
        'SELECT *',
        `FROM ${t.rows}`,
        `QUALIFY row_number() OVER (PARTITION BY ${idColumn} ORDER BY log_partition, log_offset) = 1;`,
      )
    }
    return lines.join('\n')
  }

  /** The view's columns in record order: the hive `asset` where the record has it, the version column last. */
  private viewColumns(): string[] {
    const t = this.table
    const out: string[] = []
    for (const field of Object.keys(this.schema.properties)) {
      if (t.version && field === t.version.field) continue
      const flat = t.flatten?.[field as keyof Static<S> & string]
      if (flat) out.push(...Object.keys(flat))
      else out.push(field)
    }
    if (t.version) out.push(t.version.column)
    return out
  }

  /** The column the id comes from (the first column whose value equals the id of a record). */
  private idColumn(): string {
    const props = Object.keys(this.schema.properties)
    const probe = Object.fromEntries(props.map((p) => [p, `\u0000${p}`])) as Static<S>
    let id: string
    try {
      id = this.spec.id(probe)
    } catch {
      id = ''
    }
    const field = props.find((p) => `\u0000${p}` === id)
    if (!field) throw new Error(`journal ${this.name}: its id is not one record field, so the first-per-id view cannot name it`)
    return field
  }

  /** File columns in record order (the asset partition is not one), each with how a record fills it; the version last. */
  private deriveColumns(): DerivedColumn<Static<S>>[] {
    const t = this.table
    const out: DerivedColumn<Static<S>>[] = []
    let version: DerivedColumn<Static<S>> | null = null
    for (const [field, raw] of Object.entries(this.schema.properties)) {
      const s = raw as SchemaLike
      const get = (r: Static<S>) => (r as Record<string, unknown>)[field]
      if (t.version && field === t.version.field) {
        version = { name: t.version.column, type: 'INTEGER', cell: (r) => cellOf('INTEGER', get(r)) }
        continue
      }
      if (t.assetField && field === t.assetField) continue
      const flat = t.flatten?.[field as keyof Static<S> & string]
      if (flat) {
        const obj = nonNull(s) as SchemaLike & { properties?: Record<string, SchemaLike> }
        for (const [column, sub] of Object.entries(flat)) {
          const type = columnType(obj.properties?.[sub] ?? ({} as SchemaLike))
          out.push({
            name: column,
            type,
            cell: (r) => {
              const v = get(r) as Record<string, unknown> | null | undefined
              return cellOf(type, v == null ? null : v[sub])
            },
          })
        }
        continue
      }
      const type = columnType(s)
      out.push({ name: field, type, cell: (r) => cellOf(type, get(r)) })
    }
    if (version) out.push(version)
    return out
  }
}
