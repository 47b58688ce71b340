/**
 * The measured record's DuckDB: one in-memory instance per process over the data dir's Parquet, with the catalog's
 * views (sql/*.sql rendered for this data dir) so the batch job and the reads query the same `decision_rows`,
 * `outcome_rows`, `calibration`, `priors`, `intelligence_snapshots`… a quant sees in catalog.duckdb. In memory because
 * DuckDB admits one writer per database file (sql/Catalog.ts), and Parquet files need no database to be read or
 * written. Statements run one at a time on one connection (a queue), so a read never sees a half-applied step of the
 * job's temporary tables.
 */
import { readFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api'
import { jsonSafeConverter, renderSql, sqlFiles, SQL_DIR, writeSchemaAnchors, type JsonRow } from '../sql/Catalog.ts'
import { copyToSealedParquet } from '../pipeline/sinks/parquetFile.ts'
import type { RecordTable } from '../sql/recordTables.ts'
import { RecordError } from './RecordError.ts'

export type SqlParams = Record<string, string | number | boolean | null>

/**
 * DuckDB settings of the record's database. The Parquet it reads is local, so the OS page cache holds its bytes
 * already: DuckDB's external file cache kept a second copy of every file a query read, 19-43 MB of a restarted
 * service's resident set at a million calls (issue 31, docs/decisions.md). Parquet metadata stays cached (object cache).
 */
export const RECORD_DB_SETTINGS: Record<string, string> = { enable_external_file_cache: 'false' }

export class RecordDb {
  private queue: Promise<unknown> = Promise.resolve()
  private closed = false

  private constructor(
    readonly dataDir: string,
    private readonly instance: DuckDBInstance,
    private readonly conn: DuckDBConnection,
  ) {}

  /** Writes any missing schema anchor (so every view binds on an empty data dir) and applies the views in memory. */
  static async open(dataDir: string): Promise<RecordDb> {
    const dir = resolve(dataDir)
    await writeSchemaAnchors(dir)
    const instance = await DuckDBInstance.create(':memory:', RECORD_DB_SETTINGS)
    const conn = await instance.connect()
    try {
      for (const name of await sqlFiles(SQL_DIR)) await conn.run(renderSql(await readFile(join(SQL_DIR, name), 'utf8'), dir))
    } catch (err) {
      conn.closeSync()
      instance.closeSync()
      throw new RecordError('RECORD_SQL', `applying the views: ${(err as Error).message}`, { cause: err })
    }
    return new RecordDb(dir, instance, conn)
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new RecordError('RECORD_SQL', 'the record database is closed'))
    const next = this.queue.then(fn, fn)
    this.queue = next.catch(() => undefined)
    return next
  }

  /** One statement; JSON-safe rows (BIGINT as strings, timestamps as ISO-8601). */
  query(sql: string, params?: SqlParams): Promise<JsonRow[]> {
    return this.serial(async () => {
      try {
        const reader = params ? await this.conn.runAndReadAll(sql, params) : await this.conn.runAndReadAll(sql)
        return reader.convertRowObjects(jsonSafeConverter) as JsonRow[]
      } catch (err) {
        throw new RecordError('RECORD_SQL', (err as Error).message, { cause: err })
      }
    })
  }

  run(sql: string, params?: SqlParams): Promise<void> {
    return this.serial(async () => {
      try {
        if (params) await this.conn.run(sql, params)
        else await this.conn.run(sql)
      } catch (err) {
        throw new RecordError('RECORD_SQL', (err as Error).message, { cause: err })
      }
    })
  }

  /** Runs `fn` on the connection with nothing else interleaved (multi-statement writes: stage, copy, drop). */
  exclusive<T>(fn: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
    return this.serial(() => fn(this.conn))
  }

  /**
   * COPY (select) to a sealed Parquet file (temp name, fsync, rename, fsync dir): readers see all of it or none. The
   * file is typed by `table`'s columns (sql/recordTables.ts), its one schema, whatever types the select produces.
   */
  seal(select: string, finalPath: string, table: RecordTable): Promise<void> {
    return this.serial(async () => {
      try {
        await copyToSealedParquet(this.conn, select, finalPath, table.columns)
      } catch (err) {
        throw new RecordError('RECORD_SQL', `sealing ${finalPath}: ${(err as Error).message}`, { cause: err })
      }
    })
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    this.conn.closeSync()
    this.instance.closeSync()
  }
}
