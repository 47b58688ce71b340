/**
 * The DuckDB catalog: $DATA/catalog.duckdb holds view definitions over the sealed Parquet, nothing else.
 *
 * DuckDB allows one read-write process per database file, or any number of read-only processes, never both.
 * So the catalog has exactly one writer: the process that owns it at start opens it read-write, (re)applies the
 * .sql files in sql/ in name order (001_ticks.sql, 002_..., each idempotent: CREATE OR REPLACE VIEW), and closes
 * it. Everyone else (serving, batch jobs, notebooks) opens it READ_ONLY, as many processes as needed. Parquet is
 * written by the sink's own in-memory DuckDB (pipeline/sinks/ParquetSink.ts), never through this file, so the
 * writer rule holds while data keeps arriving: the views re-glob the files on every query.
 *
 * The .sql files say ${DATA_DIR} wherever the data directory goes; apply() substitutes the absolute path, and
 * quants can do the same by hand (sql/README.md). Before applying, the schema anchors (zero-row Parquet files,
 * pipeline/sinks/parquetLayout.ts) are written with a throwaway in-memory DuckDB so the views bind on an empty
 * data dir.
 */
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { chmod, readdir, readFile, rm } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import {
  DuckDBInstance,
  DuckDBTypeId,
  JsonDuckDBValueConverter,
  DuckDBTimestampValue,
  DuckDBTimestampSecondsValue,
  DuckDBTimestampMillisecondsValue,
  DuckDBTimestampNanosecondsValue,
  DuckDBTimestampTZValue,
  type DuckDBConnection,
  type DuckDBValue,
  type DuckDBValueConverter,
  type DuckDBType,
  type Json,
} from '@duckdb/node-api'
import { childLogger } from '../common/logger.ts'
import { DATA_FILE_MODE, mkdirData } from '../pipeline/log/dataModes.ts'
import { writeFileAtomic } from '../pipeline/log/atomicFile.ts'
import { ensureSchemaAnchor } from '../pipeline/sinks/parquetFile.ts'
import { PARQUET_ROOT, REJECTS_ROOT, anchorPath, tableRoot } from '../pipeline/sinks/parquetLayout.ts'
import { REJECT_COLUMNS } from '../pipeline/sinks/ParquetSink.ts'
import { retypeOldParquet, type TypedRoot } from '../pipeline/sinks/parquetTypes.ts'
import { sinkTables } from '../pipeline/sinks/sinkTables.ts'
import { fileColumns, type TopicTable } from '../pipeline/sinks/TopicTable.ts'
import { CatalogError } from './CatalogError.ts'
import { RECORD_TABLES, recordAnchorPath, recordTableRoot } from './recordTables.ts'
import { RELEASE_TABLES } from './releaseTables.ts'

export const CATALOG_FILE = 'catalog.duckdb'
/**
 * Beside the catalog: the SHA-256 of the .sql files as last applied to it (names and rendered text). A read-write open
 * whose files render to the same digest skips applying them: creating a view binds it, and with union_by_name DuckDB
 * reads the footer of every Parquet file it globs, so applying cost a restart time growing with history (4 s at 365
 * days of simulated ticks, 3,739 files). The views re-glob on every query, so an unchanged definition needs no re-apply.
 */
export const CATALOG_DIGEST_FILE = 'catalog.applied'
export const DATA_DIR_PLACEHOLDER = '${DATA_DIR}'
/** This directory: where the numbered .sql files live. */
export const SQL_DIR = new URL('.', import.meta.url).pathname
const SQL_FILE = /^\d{3}_[a-z0-9_]+\.sql$/

export interface CatalogOptions {
  /** Default true. Only the process that owns the catalog at start opens it read-write (and applies the DDL). */
  readOnly?: boolean
  /** Tables whose schema anchors apply() writes. Default: every sink table (pipeline/sinks/sinkTables.ts). */
  tables?: TopicTable[]
  /** Where the .sql files are. Default: this directory. */
  sqlDir?: string
}

export type JsonRow = Record<string, Json>

/** The numbered .sql files of `sqlDir`, in the order they are applied. */
export async function sqlFiles(sqlDir: string = SQL_DIR): Promise<string[]> {
  return (await readdir(sqlDir)).filter((name) => SQL_FILE.test(name)).sort()
}

/**
 * Substitutes the data directory into one .sql file. The placeholder only ever appears inside single-quoted
 * string literals, so the path is escaped as one.
 */
export function renderSql(text: string, dataDir: string): string {
  return text.replaceAll(DATA_DIR_PLACEHOLDER, resolve(dataDir).replaceAll("'", "''"))
}

function microsToIso(micros: bigint): string | null {
  const ms = micros / 1000n - (micros % 1000n < 0n ? 1n : 0n)
  const sub = micros - ms * 1000n
  if (ms > 8_640_000_000_000_000n || ms < -8_640_000_000_000_000n) return null
  const iso = new Date(Number(ms)).toISOString()
  return sub === 0n ? iso : `${iso.slice(0, -1)}${String(sub).padStart(3, '0')}Z`
}

function timestampMicros(value: DuckDBValue): bigint | null {
  if (value instanceof DuckDBTimestampValue || value instanceof DuckDBTimestampTZValue) return value.micros
  if (value instanceof DuckDBTimestampSecondsValue) return value.seconds * 1_000_000n
  if (value instanceof DuckDBTimestampMillisecondsValue) return value.millis * 1000n
  if (value instanceof DuckDBTimestampNanosecondsValue) return value.nanos / 1000n
  return null
}

const TIMESTAMP_TYPES = new Set<DuckDBTypeId>([
  DuckDBTypeId.TIMESTAMP,
  DuckDBTypeId.TIMESTAMP_S,
  DuckDBTypeId.TIMESTAMP_MS,
  DuckDBTypeId.TIMESTAMP_NS,
  DuckDBTypeId.TIMESTAMP_TZ,
])

/**
 * DuckDB values as JSON: 64-bit and wider integers and decimals as strings (DuckDB's Json converter), and
 * timestamps as ISO-8601 UTC strings ('2024-03-01T23:00:00.000Z', microseconds kept when present) instead of
 * DuckDB's 'YYYY-MM-DD HH:MM:SS' text. Dates stay 'YYYY-MM-DD'; ±infinity timestamps stay DuckDB's text.
 */
export const jsonSafeConverter: DuckDBValueConverter<Json> = (value: DuckDBValue, type: DuckDBType, _converter: DuckDBValueConverter<Json>) => {
  if (value !== null && TIMESTAMP_TYPES.has(type.typeId)) {
    const micros = timestampMicros(value)
    const iso = micros === null ? null : microsToIso(micros)
    if (iso !== null) return iso
  }
  return JsonDuckDBValueConverter(value, type, jsonSafeConverter)
}

export class Catalog {
  private readonly log = childLogger('catalog')

  private constructor(
    readonly dataDir: string,
    readonly readOnly: boolean,
    private readonly instance: DuckDBInstance,
    private readonly conn: DuckDBConnection,
    /** The .sql files applied by this open (empty for read-only opens, and when unchanged since the last apply). */
    readonly applied: readonly string[],
  ) {}

  static path(dataDir: string): string {
    return join(resolve(dataDir), CATALOG_FILE)
  }

  /**
   * Opens $DATA/catalog.duckdb. Read-only (the default) requires an applied catalog; read-write first writes the
   * schema anchors, then applies every .sql file unless they are as last applied (CATALOG_DIGEST_FILE). Close it with close(), or use withCatalog().
   */
  static async open(dataDir: string, options: CatalogOptions = {}): Promise<Catalog> {
    const readOnly = options.readOnly ?? true
    const dir = resolve(dataDir)
    const path = Catalog.path(dir)
    if (readOnly && !existsSync(path)) {
      throw new CatalogError('CATALOG_MISSING', `no catalog at ${path}: the owning process applies it first (Catalog.apply)`)
    }
    if (!readOnly) {
      await mkdirData(dir)
      await writeSchemaAnchors(dir, options.tables ?? sinkTables())
    }
    const existed = existsSync(path)
    let instance: DuckDBInstance
    try {
      instance = await DuckDBInstance.create(path, readOnly ? { access_mode: 'READ_ONLY' } : { access_mode: 'READ_WRITE' })
    } catch (err) {
      const message = (err as Error).message
      // What helps depends on the side: DuckDB lets no other process read a file one process has open for writing.
      const hint = readOnly
        ? 'a process has it open for writing (a running `svc start` applies the views at start, `svc record build` after a run); read the Parquet files directly, or retry once it is done'
        : 'another process has it open, most likely a reader (the duckdb CLI or a notebook): close it; readers should open it with `duckdb -readonly` or access_mode READ_ONLY'
      if (/lock/i.test(message)) throw new CatalogError('CATALOG_LOCKED', `${path} is held by another process (${hint}): ${message}`, { cause: err })
      throw new CatalogError('CATALOG_SQL', `cannot open ${path}: ${message}`, { cause: err })
    }
    // DuckDB creates the file under the process umask; a catalog opened for writing is narrowed to the data mode.
    if (!readOnly) await chmod(path, DATA_FILE_MODE)
    const conn = await instance.connect()
    const applied: string[] = []
    try {
      if (!readOnly) {
        const sqlDir = options.sqlDir ?? SQL_DIR
        const files: Array<[string, string]> = []
        for (const name of await sqlFiles(sqlDir)) files.push([name, renderSql(await readFile(join(sqlDir, name), 'utf8'), dir)])
        const digest = createHash('sha256').update(JSON.stringify(files)).digest('hex')
        const digestPath = join(dir, CATALOG_DIGEST_FILE)
        const kept = existed ? await readFile(digestPath, 'utf8').catch(() => null) : null
        if (kept?.trim() !== digest) {
          // Gone first: a crash mid-apply leaves no digest, so the next open applies again.
          await rm(digestPath, { force: true })
          for (const [name, text] of files) {
            try {
              await conn.run(text)
            } catch (err) {
              throw new CatalogError('CATALOG_SQL', `${name}: ${(err as Error).message}`, { cause: err })
            }
            applied.push(name)
          }
          // Persist the definitions now, so read-only openers see them even if this process lingers.
          await conn.run('CHECKPOINT')
          await writeFileAtomic(digestPath, digest + '\n')
        }
      }
    } catch (err) {
      conn.closeSync()
      instance.closeSync()
      throw err
    }
    const catalog = new Catalog(dir, readOnly, instance, conn, applied)
    if (applied.length > 0) catalog.log.info({ path, applied }, 'catalog applied')
    // The owner's open says so either way: operators (and the stop-deadline test) read it as the start's catalog step.
    else if (!readOnly) catalog.log.info({ path }, 'catalog up to date (its .sql files unchanged since the last apply)')
    return catalog
  }

  /** The owner's start-up step: open read-write, apply the .sql files, close. Returns the files applied. */
  static async apply(dataDir: string, options: Omit<CatalogOptions, 'readOnly'> = {}): Promise<string[]> {
    const catalog = await Catalog.open(dataDir, { ...options, readOnly: false })
    catalog.close()
    return [...catalog.applied]
  }

  /** The raw connection, for callers that need DuckDB values (prefer query()). */
  get connection(): DuckDBConnection {
    return this.conn
  }

  /** Runs one statement and returns JSON-safe row objects (see jsonSafeConverter). `$name` parameters bind from `params`. */
  async query(sql: string, params?: Record<string, string | number | boolean | null>): Promise<JsonRow[]> {
    try {
      const reader = params ? await this.conn.runAndReadAll(sql, params) : await this.conn.runAndReadAll(sql)
      return reader.convertRowObjects(jsonSafeConverter) as JsonRow[]
    } catch (err) {
      throw new CatalogError('CATALOG_SQL', (err as Error).message, { cause: err })
    }
  }

  close(): void {
    this.conn.closeSync()
    this.instance.closeSync()
  }
}

/**
 * Every table the service writes as Parquet, with its one schema: the sink tables (and their rejects) and the
 * measured record's and releases' tables. The files' types are these columns' (pipeline/sinks/TopicTable.ts
 * PARQUET_TYPES); test/pipeline/sinks/parquetTypes.test.ts checks the files against them.
 */
export function typedRoots(dataDir: string, tables: TopicTable[] = sinkTables()): TypedRoot[] {
  return [
    ...tables.flatMap((table) => [
      { root: tableRoot(dataDir, table.dir, PARQUET_ROOT), columns: fileColumns(table) },
      { root: tableRoot(dataDir, table.dir, REJECTS_ROOT), columns: REJECT_COLUMNS },
    ]),
    ...[...RECORD_TABLES, ...RELEASE_TABLES].map((table) => ({ root: recordTableRoot(dataDir, table), columns: table.columns })),
  ]
}

/**
 * Rewrites files written before instants were TIMESTAMPTZ and JSON fields JSON (once per data dir:
 * pipeline/sinks/parquetTypes.ts), then writes any missing schema anchor (sink tables and the measured record's
 * tables), each with a throwaway in-memory DuckDB (never through the catalog file).
 */
export async function writeSchemaAnchors(dataDir: string, tables: TopicTable[] = sinkTables()): Promise<void> {
  await retypeOldParquet(dataDir, typedRoots(dataDir, tables))
  const instance = await DuckDBInstance.create(':memory:')
  const conn = await instance.connect()
  try {
    for (const table of tables) {
      await ensureSchemaAnchor(conn, anchorPath(tableRoot(dataDir, table.dir, PARQUET_ROOT)), fileColumns(table))
    }
    for (const table of [...RECORD_TABLES, ...RELEASE_TABLES]) await ensureSchemaAnchor(conn, recordAnchorPath(dataDir, table), table.columns)
  } finally {
    conn.closeSync()
    instance.closeSync()
  }
}

/** Opens the catalog, runs `fn`, and always closes it: no test or job leaks a DuckDB handle. */
export async function withCatalog<T>(dataDir: string, options: CatalogOptions, fn: (catalog: Catalog) => Promise<T>): Promise<T> {
  const catalog = await Catalog.open(dataDir, options)
  try {
    return await fn(catalog)
  } finally {
    catalog.close()
  }
}
