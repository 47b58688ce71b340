/**
 * Compaction of sealed sink Parquet: per closed day, directory (date, asset) and log partition, the sink's many small
 * files become one, still named p<partition>-<first>-<last>.parquet (parquetLayout.ts), so the name still says which
 * offsets it holds and the sink's resume rule (the highest sealed lastOffset per group) reads the same watermark.
 *
 * Steps per run of files: DuckDB COPY of their rows in offset order to `.<merged>.tmp`, fsync, a row-count check
 * against the inputs' Parquet metadata, rename, fsync of the directory, then the small files are deleted and the
 * directory synced again. A crash before the rename leaves only the small files visible (the temp file is not
 * `*.parquet`; the sink deletes it when it next opens). From the rename on, the merged file covers the small files'
 * offset ranges, and every reader skips a covered file (coveredFileNames; the views' covered_parquet macro), so the rows
 * are counted once whether or not the deletion happened; the next run deletes what a crash left covered.
 *
 * Which days: a day is closed when it is before today (UTC) and before the newest date directory of its table, so a
 * replay writing virtual days never has its current day merged under it. A late record for a closed day is still safe:
 * the sink only writes offsets above every sealed file of the directory, so a later small file is never covered and
 * the next run merges it in.
 *
 * Downstream manifests: a consumer that remembers files by name (record/RecordJob.ts and its record_files) passes
 * `consumed`; for its tables only unbroken runs of files it has consumed are merged (a file it holds back splits the
 * run), so the merged file holds nothing it has not counted, and parquetLayout.manifestCovers recognises it.
 *
 * One compactor per data dir at a time: `open` takes $DATA/parquet/.compaction/LOCK (SINK_LOCKED otherwise).
 */
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api'
import type { Logger } from 'pino'
import { childLogger } from '../../common/logger.ts'
import { optionsValidator } from '../../common/validation.ts'
import { DirLock } from '../log/DirLock.ts'
import { mkdirData } from '../log/dataModes.ts'
import { SinkError } from './SinkError.ts'
import { copyToSealedParquet, fsyncPath, sqlString } from './parquetFile.ts'
import {
  ANCHOR_DATE,
  PARQUET_ROOT,
  coveredFileNames,
  listGroups,
  manifestCovers,
  parseSealedFileName,
  sealedFileName,
  tableRoot,
  utcDate,
  type SealedFile,
} from './parquetLayout.ts'

/** Per table dir, the sealed files (paths relative to the table root) a downstream consumer has counted. */
export type ConsumedManifests = () => Promise<ReadonlyMap<string, Iterable<string>>>

export interface ParquetCompactorOptions {
  /** $DATA: compacts <dataDir>/parquet/<dir>/ for each of `dirs`. */
  dataDir: string
  /** Table directories under parquet/ (TopicTable.dir). */
  dirs: string[]
  /** Wall clock (today's UTC date is never compacted). Default Date.now. */
  now?: () => number
  /**
   * Manifests of downstream consumers; a table dir present in the map has only runs of files its manifest covers
   * merged. Absent: every table is merged freely.
   */
  consumed?: ConsumedManifests
}

interface ResolvedOptions {
  dataDir: string
  dirs: string[]
}

const OPTIONS_SCHEMA = {
  type: 'object',
  required: ['dataDir', 'dirs'],
  additionalProperties: false,
  properties: {
    dataDir: { type: 'string', minLength: 1 },
    dirs: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', pattern: '^[A-Za-z0-9_][A-Za-z0-9_.-]*$' } },
  },
} as const

const validateOptions = optionsValidator<ResolvedOptions>(OPTIONS_SCHEMA, 'ParquetCompactor options', (message) => new SinkError('SINK_CONFIG', message))

export interface CompactionSummary {
  /** Directories (table, date, asset) in which something was merged. */
  groups: number
  /** Merged files written. */
  merged: number
  /** Small files replaced by merged files (deleted). */
  replaced: number
  /** Rows rewritten into merged files. */
  rows: number
  /** Covered files a crashed earlier run left behind, deleted now. */
  recovered: number
  /** Sealed files left as they are because a consumer has not counted them yet. */
  held: number
}

interface Named extends SealedFile {
  name: string
}

/** What helps when compaction is taken (the files are local: Kafka would not help). */
const COMPACTION_LOCK_HINT = 'one compactor per data folder: a running `svc start` compacts every SVC_COMPACT_INTERVAL_S, so let it, or stop that process first'

export class ParquetCompactor {
  private readonly log: Logger = childLogger('parquet-compactor')
  private running: Promise<CompactionSummary> | null = null

  private constructor(
    private readonly options: ResolvedOptions,
    private readonly now: () => number,
    private readonly consumed: ConsumedManifests | undefined,
    private readonly lock: DirLock,
    private readonly instance: DuckDBInstance,
    private readonly conn: DuckDBConnection,
  ) {}

  /** Validates the options and takes the data dir's compaction lock (SINK_LOCKED when another process holds it). */
  static async open(options: ParquetCompactorOptions): Promise<ParquetCompactor> {
    const { now, consumed, ...plain } = options
    const resolved = validateOptions(plain)
    const lockDir = join(resolved.dataDir, PARQUET_ROOT, '.compaction')
    await mkdirData(lockDir)
    let lock: DirLock
    try {
      lock = await DirLock.acquire(lockDir, childLogger('parquet-compactor'), COMPACTION_LOCK_HINT)
    } catch (err) {
      throw new SinkError('SINK_LOCKED', `another compactor holds this data folder: ${(err as Error).message}`, { cause: err })
    }
    try {
      // A run mixing a naive-instant file (written before the types, not yet rewritten: parquetTypes.ts) with typed
      // ones is unioned by casting the naive column in the session's TimeZone: UTC, which is what those values meant.
      const instance = await DuckDBInstance.create(':memory:')
      const conn = await instance.connect()
      await conn.run(`SET TimeZone = 'UTC'`)
      return new ParquetCompactor(resolved, now ?? Date.now, consumed, lock, instance, conn)
    } catch (err) {
      await lock.release()
      throw err
    }
  }

  /** One pass over every table; concurrent callers share the pass in progress. */
  compact(): Promise<CompactionSummary> {
    if (!this.running) this.running = this.compactOnce().finally(() => { this.running = null })
    return this.running
  }

  private async compactOnce(): Promise<CompactionSummary> {
    const summary: CompactionSummary = { groups: 0, merged: 0, replaced: 0, rows: 0, recovered: 0, held: 0 }
    const manifests = this.consumed ? await this.consumed() : new Map<string, Iterable<string>>()
    const today = utcDate(this.now())
    for (const dir of this.options.dirs) {
      const root = tableRoot(this.options.dataDir, dir, PARQUET_ROOT)
      const groups = (await listGroups(root)).filter((g) => g.date !== ANCHOR_DATE)
      const newest = groups.reduce((m, g) => (g.date > m ? g.date : m), '')
      const manifest = manifests.get(dir)
      const counted = manifest === undefined ? null : manifestCovers(manifest)
      for (const group of groups) {
        if (group.date >= today || group.date >= newest) continue
        const relDir = group.dir.slice(root.length + 1)
        const merged = await this.compactGroup(group.dir, group.files, counted && ((name: string) => counted(`${relDir}/${name}`)), summary)
        if (merged) summary.groups++
      }
    }
    if (summary.merged > 0 || summary.recovered > 0) this.log.info(summary, 'compacted sealed Parquet')
    return summary
  }

  /** Returns whether anything was merged in this directory. */
  private async compactGroup(dir: string, names: string[], counted: ((name: string) => boolean) | null, summary: CompactionSummary): Promise<boolean> {
    const covered = coveredFileNames(names)
    if (covered.size > 0) {
      // A merged file is on disk and durable (it was renamed after its fsync): these are duplicates of its rows.
      await this.remove(dir, [...covered])
      summary.recovered += covered.size
    }
    const byPartition = new Map<number, Named[]>()
    for (const name of names) {
      const f = parseSealedFileName(name)
      if (!f || covered.has(name)) continue
      const list = byPartition.get(f.partition) ?? []
      list.push({ name, ...f })
      byPartition.set(f.partition, list)
    }
    let any = false
    for (const files of byPartition.values()) {
      files.sort((a, b) => a.firstOffset - b.firstOffset)
      // Runs of consecutive files the consumer has counted; a file it has not breaks the run.
      let run: Named[] = []
      const runs: Named[][] = []
      for (const f of files) {
        if (counted && !counted(f.name)) {
          summary.held++
          runs.push(run)
          run = []
        } else {
          run.push(f)
        }
      }
      runs.push(run)
      for (const r of runs) {
        if (r.length < 2) continue
        await this.merge(dir, r, summary)
        any = true
      }
    }
    return any
  }

  private async merge(dir: string, files: Named[], summary: CompactionSummary): Promise<void> {
    const name = sealedFileName({ partition: files[0]!.partition, firstOffset: files[0]!.firstOffset, lastOffset: files[files.length - 1]!.lastOffset })
    const target = join(dir, name)
    const list = `[${files.map((f) => sqlString(join(dir, f.name))).join(', ')}]`
    const expected = Number((await this.conn.runAndReadAll(`SELECT sum(num_rows)::BIGINT AS n FROM parquet_file_metadata(${list})`)).getRowObjects()[0]!.n)
    try {
      // hive_partitioning off: date and asset stay in the directory names, never in the files.
      await copyToSealedParquet(this.conn, `SELECT * FROM read_parquet(${list}, union_by_name = true, hive_partitioning = false) ORDER BY log_offset`, target)
    } catch (err) {
      throw new SinkError('SINK_IO', `compacting ${files.length} files into ${target} failed: ${(err as Error).message}`, { cause: err })
    }
    const written = Number((await this.conn.runAndReadAll(`SELECT sum(num_rows)::BIGINT AS n FROM parquet_file_metadata(${sqlString(target)})`)).getRowObjects()[0]!.n)
    if (written !== expected) {
      await rm(target, { force: true })
      throw new SinkError('SINK_IO', `compacting into ${target} wrote ${written} rows for ${expected}; removed it, the small files stay`)
    }
    await this.remove(dir, files.map((f) => f.name))
    summary.merged++
    summary.replaced += files.length
    summary.rows += written
    this.log.debug({ path: target, files: files.length, rows: written }, 'merged')
  }

  private async remove(dir: string, names: string[]): Promise<void> {
    for (const name of names) await rm(join(dir, name), { force: true })
    await fsyncPath(dir)
  }

  /** Waits for a pass in progress, then releases DuckDB and the lock. */
  async close(): Promise<void> {
    if (this.running) await this.running.catch(() => undefined)
    this.conn.closeSync()
    this.instance.closeSync()
    await this.lock.release()
  }
}
