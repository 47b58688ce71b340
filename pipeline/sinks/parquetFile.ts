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
import { columnsDdl, type ColumnSpec } from './TopicTable.ts'

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

/** Runs `COPY (<select>) TO <tmp>` on `connection`, then seals the result at `finalPath`. */
export async function copyToSealedParquet(connection: DuckDBConnection, select: string, finalPath: string): Promise<void> {
  const dir = dirname(finalPath)
  const tmp = join(dir, tempFileName(basename(finalPath)))
  await mkdirData(dir)
  try {
    await connection.run(`COPY (${select}) TO ${sqlString(tmp)} (FORMAT parquet, COMPRESSION zstd)`)
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
  const casts = columns.map((c) => `CAST(NULL AS ${c.type}) AS "${c.name.replaceAll('"', '""')}"`).join(', ')
  await copyToSealedParquet(connection, `SELECT ${casts} WHERE false`, path)
  return true
}

/** `CREATE OR REPLACE TABLE name (columns)`, used for the sink's staging tables. */
export function createTableSql(name: string, columns: readonly ColumnSpec[]): string {
  return `CREATE OR REPLACE TABLE "${name}" (${columnsDdl(columns)})`
}
