/**
 * The Parquet types of the files the service writes, read back: which ColumnType a stored column carries
 * (PARQUET_TYPES in TopicTable.ts is the one mapping), and the one-time rewrite of files written before instants were
 * TIMESTAMPTZ and JSON fields JSON.
 *
 * Why a rewrite and not views over a mix: DuckDB reads a file's naive TIMESTAMP column and another file's TIMESTAMPTZ
 * column of the same name (union_by_name) as TIMESTAMPTZ by casting the naive value in the session's TimeZone, so a
 * quant whose session is not UTC would see old instants shifted; pyarrow and polars would see two types. Old naive
 * values were always written from UTC epoch milliseconds, so each is rewritten as that UTC instant
 * (timezone('UTC', ·)), JSON text as JSON (verbatim: DuckDB keeps the text). The rewrite seals each file the usual way
 * (temp name, fsync, rename over the old name), keeps its columns, rows and order, and runs once per data dir: a marker
 * file records that every file has its types, so later opens skip the scan. A file that cannot be rewritten (text in
 * a JSON column that is not JSON, which the views' JSON cast refused before too) is left as it was and logged; the
 * scan runs again at the next open.
 */
import { stat, writeFile, chmod } from 'node:fs/promises'
import { join } from 'node:path'
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api'
import { childLogger } from '../../common/logger.ts'
import { DATA_FILE_MODE, mkdirData } from '../log/dataModes.ts'
import { copyToSealedParquet, sqlString } from './parquetFile.ts'
import { PARQUET_ROOT } from './parquetLayout.ts'
import { COLUMN_TYPES, PARQUET_TYPES, quoteIdent, type ColumnSpec, type ColumnType } from './TopicTable.ts'

/** Written under $DATA/parquet once every file there carries TIMESTAMPTZ instants and JSON-typed JSON. */
export const TYPED_MARKER = '.typed-utc-json'

/** One table's files: every *.parquet under `root` (at any depth) holds columns of `columns`. */
export interface TypedRoot {
  root: string
  columns: readonly ColumnSpec[]
}

/** One column of one file as parquet_schema() reports it. */
export interface StoredColumn {
  file: string
  name: string
  type: string | null
  converted: string | null
  logical: string | null
}

/** The ColumnType a stored column carries, or null when it matches none (e.g. a naive TIMESTAMP, JSON as plain text). */
export function storedColumnType(column: Pick<StoredColumn, 'type' | 'converted' | 'logical'>): ColumnType | null {
  return COLUMN_TYPES.find((t) => {
    const want = PARQUET_TYPES[t]
    return column.type === want.type && column.converted === want.converted && (!want.logical || want.logical.test(column.logical ?? ''))
  }) ?? null
}

/** The stored columns of every *.parquet under `root` (none when the directory is absent or empty). */
export async function storedColumns(conn: DuckDBConnection, root: string): Promise<StoredColumn[]> {
  const pattern = sqlString(join(root, '**', '*.parquet'))
  const files = (await conn.runAndReadAll(`SELECT count(*)::INTEGER AS n FROM glob(${pattern})`)).getRowObjectsJson()
  if (Number(files[0]?.n ?? 0) === 0) return []
  const rows = (await conn.runAndReadAll(`SELECT file_name, name, type, converted_type, logical_type FROM parquet_schema(${pattern}) WHERE num_children IS NULL`)).getRowObjectsJson()
  const text = (v: unknown) => (v === null || v === undefined ? null : String(v))
  return rows.map((r) => ({ file: String(r.file_name), name: String(r.name), type: text(r.type), converted: text(r.converted_type), logical: text(r.logical_type) }))
}

/** A stored column needs the rewrite when its schema says TIMESTAMPTZ or JSON and the file says otherwise. */
function stale(column: StoredColumn, want: ColumnType | undefined): 'instant' | 'json' | null {
  if (want === 'TIMESTAMPTZ' && storedColumnType(column) !== 'TIMESTAMPTZ' && column.type === 'INT64') return 'instant'
  if (want === 'JSON' && storedColumnType(column) === 'VARCHAR') return 'json'
  return null
}

/**
 * Rewrites every file under `roots` whose instants are naive or whose JSON is plain text (see the file comment), then
 * writes the marker. Returns the number of files rewritten; a data dir with the marker is not scanned.
 */
export async function retypeOldParquet(dataDir: string, roots: readonly TypedRoot[]): Promise<number> {
  const log = childLogger('parquet-types')
  const marker = join(dataDir, PARQUET_ROOT, TYPED_MARKER)
  try {
    await stat(marker)
    return 0
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  const instance = await DuckDBInstance.create(':memory:')
  const conn = await instance.connect()
  let rewritten = 0
  let failed = 0
  try {
    for (const { root, columns } of roots) {
      const want = new Map(columns.map((c) => [c.name, c.type]))
      const byFile = new Map<string, StoredColumn[]>()
      for (const c of await storedColumns(conn, root)) byFile.set(c.file, [...(byFile.get(c.file) ?? []), c])
      for (const [file, stored] of byFile) {
        if (!stored.some((c) => stale(c, want.get(c.name)) !== null)) continue
        const exprs = stored.map((c) => {
          const name = quoteIdent(c.name)
          const kind = stale(c, want.get(c.name))
          return kind === 'instant' ? `timezone('UTC', ${name}) AS ${name}` : kind === 'json' ? `CAST(${name} AS JSON) AS ${name}` : name
        })
        try {
          await copyToSealedParquet(conn, `SELECT ${exprs.join(', ')} FROM read_parquet(${sqlString(file)}, hive_partitioning = false)`, file)
          rewritten++
        } catch (err) {
          failed++
          log.warn({ file, err: (err as Error).message }, 'could not rewrite an old file with TIMESTAMPTZ/JSON types; left as it was')
        }
      }
    }
  } finally {
    conn.closeSync()
    instance.closeSync()
  }
  if (rewritten > 0) log.info({ rewritten, failed }, 'rewrote Parquet written before instants were TIMESTAMPTZ and JSON fields JSON')
  if (failed === 0) {
    await mkdirData(join(dataDir, PARQUET_ROOT))
    await writeFile(marker, `${new Date().toISOString()}\n`, { mode: DATA_FILE_MODE })
    await chmod(marker, DATA_FILE_MODE)
  }
  return rewritten
}
