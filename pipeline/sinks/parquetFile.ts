/**
 * Sealing Parquet files: DuckDB writes `.<name>.tmp` beside the final name, we fsync it, rename it into place and
 * fsync the directory. A reader globbing *.parquet sees either nothing or the whole file, and a sealed file
 * survives a crash (the rename is durable once the directory is synced).
 */
import { chmod, open, rename, rm, stat } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import type { DuckDBConnection } from '@duckdb/node-api'
import { DATA_FILE_MODE, mkdirData } from '../log/dataModes.ts'
import { tempFileName } from './parquetLayout.ts'
import { columnsDdl, quoteIdent, type ColumnSpec } from './TopicTable.ts'

export function sqlString(value: string): string {
  return `'${value.replaceAll("'", "''")}'`
}

/** fsync a file or directory by path (a rename is durable once its directory is synced). */
export async function fsyncPath(path: string): Promise<void> {
  const handle = await open(path, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/**
 * `select` with every column cast to the table's one schema, in its order: the file's Parquet types come from
 * `columns` and never from whatever the select happens to produce (a sum() is HUGEINT, a literal TIMESTAMP naive). The
 * select must yield exactly those columns. A naive TIMESTAMP becomes TIMESTAMPTZ read as UTC (timezone('UTC', ·), never a
 * plain cast, which would read it in the session's TimeZone).
 */
export async function typedSelect(connection: DuckDBConnection, select: string, columns: readonly ColumnSpec[]): Promise<string> {
  const described = (await connection.runAndReadAll(`DESCRIBE ${select}`)).getRowObjectsJson()
  const have = new Map(described.map((r) => [String(r.column_name), String(r.column_type)]))
  const names = [...have.keys()]
  if (names.length !== columns.length || columns.some((c) => !have.has(c.name))) {
    throw new Error(`the select yields (${names.join(', ')}), the table's schema is (${columns.map((c) => c.name).join(', ')})`)
  }
  const exprs = columns.map((c) => {
    const from = have.get(c.name)!
    const name = quoteIdent(c.name)
    if (from === c.type || (c.type === 'TIMESTAMPTZ' && from === 'TIMESTAMP WITH TIME ZONE')) return name
    if (c.type === 'TIMESTAMPTZ' && from === 'TIMESTAMP') return `timezone('UTC', ${name}) AS ${name}`
    return `CAST(${name} AS ${c.type}) AS ${name}`
  })
  return `SELECT ${exprs.join(', ')} FROM (${select})`
}

/**
 * Runs `COPY (<select>) TO <tmp>` on `connection`, then seals the result at `finalPath`. With `columns` (the table's
 * schema) the file is typed by it (typedSelect); without, the select's own types are written (compaction of files that
 * are already typed).
 */
export async function copyToSealedParquet(connection: DuckDBConnection, select: string, finalPath: string, columns?: readonly ColumnSpec[]): Promise<void> {
  const dir = dirname(finalPath)
  const tmp = join(dir, tempFileName(basename(finalPath)))
  await mkdirData(dir)
  try {
    const typed = columns ? await typedSelect(connection, select, columns) : select
    await connection.run(`COPY (${typed}) TO ${sqlString(tmp)} (FORMAT parquet, COMPRESSION zstd)`)
    // DuckDB creates the file under the process umask; the data folder's mode is set here whatever that is.
    await chmod(tmp, DATA_FILE_MODE)
    await fsyncPath(tmp)
    await rename(tmp, finalPath)
    await fsyncPath(dir)
  } catch (err) {
    await rm(tmp, { force: true })
    throw err
  }
}

/**
 * Writes the zero-row schema anchor at `path` unless it exists (see parquetLayout.ts). `connection` must be an
 * in-memory DuckDB: Parquet is never written through the catalog file.
 */
export async function ensureSchemaAnchor(connection: DuckDBConnection, path: string, columns: readonly ColumnSpec[]): Promise<boolean> {
  try {
    await stat(path)
    return false
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  const casts = columns.map((c) => `CAST(NULL AS ${c.type}) AS ${quoteIdent(c.name)}`).join(', ')
  await copyToSealedParquet(connection, `SELECT ${casts} WHERE false`, path, columns)
  return true
}

/** `CREATE OR REPLACE TABLE name (columns)`, used for the sink's staging tables. */
export function createTableSql(name: string, columns: readonly ColumnSpec[]): string {
  return `CREATE OR REPLACE TABLE "${name}" (${columnsDdl(columns)})`
}
