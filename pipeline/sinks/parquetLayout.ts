/**
 * Where sealed Parquet lives, and how a file's name records what it holds.
 *
 *   $DATA/parquet/<dir>/date=YYYY-MM-DD/asset=<ASSET>/p<partition>-<firstOffset>-<lastOffset>.parquet
 *   $DATA/rejected/<dir>/date=YYYY-MM-DD/asset=<KEY>/p<partition>-<firstOffset>-<lastOffset>.parquet
 *
 * Offsets are zero-padded to 12 digits so names sort by offset. A file is written as `.<name>.tmp` in the same
 * directory and renamed when complete; readers glob `*.parquet`, so they never see a half-written file.
 * Hive values are percent-encoded (DuckDB decodes them), so the venue-wide asset '*' is the directory `asset=%2A`.
 *
 * Compaction (ParquetCompactor.ts) merges a run of one directory's files of one partition into one file named, the
 * same way, by the run's first and last offsets. Between its rename and the deletion of the small files (or after a
 * crash there) both are on disk: a sealed file whose offset range lies inside another's of the same directory and
 * partition is *covered* and every reader skips it (coveredFileNames here; the views use the covered_parquet macro of
 * sql/000_sealed_files.sql). The sink's files of one directory and partition never overlap, so only a merged file
 * can cover another, and its rows are exactly those of the files it covers.
 *
 * Each data directory also holds one zero-row schema anchor, date=1970-01-01/asset=_schema/_schema.parquet:
 * DuckDB's read_parquet fails on a glob that matches nothing, so the anchor keeps the views answering (0 rows)
 * on an empty data dir and pins every column's type. It is not a sealed file (its name does not parse as one).
 */
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'

export const PARQUET_ROOT = 'parquet'
export const REJECTS_ROOT = 'rejected'
export const ANCHOR_DATE = '1970-01-01'
export const ANCHOR_ASSET = '_schema'
export const ANCHOR_FILE = '_schema.parquet'

const OFFSET_DIGITS = 12
const SEALED = /^p(\d+)-(\d{12,})-(\d{12,})\.parquet$/

export interface SealedFile {
  partition: number
  firstOffset: number
  lastOffset: number
}

/** Percent-encodes everything but [A-Za-z0-9_-], so any value is one safe path segment that DuckDB decodes back. */
export function encodeHiveValue(value: string): string {
  if (value.length === 0) throw new Error('a hive partition value must not be empty')
  return Array.from(Buffer.from(value, 'utf8'))
    .map((b) => (/[A-Za-z0-9_-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`))
    .join('')
}

export function decodeHiveValue(segment: string): string {
  return decodeURIComponent(segment)
}

// Records come in event-time order, so consecutive calls almost always fall on the same day.
let lastDay = Number.NaN
let lastDate = ''

/** The UTC day of an instant, as the `date` partition value. */
export function utcDate(epochMs: number): string {
  const day = Math.floor(epochMs / 86_400_000)
  if (day !== lastDay) {
    lastDate = new Date(epochMs).toISOString().slice(0, 10)
    lastDay = day
  }
  return lastDate
}

export function tableRoot(dataDir: string, dir: string, root: string = PARQUET_ROOT): string {
  return join(dataDir, root, dir)
}

export function groupDir(tableRootDir: string, date: string, asset: string): string {
  return join(tableRootDir, `date=${date}`, `asset=${encodeHiveValue(asset)}`)
}

export function sealedFileName(file: SealedFile): string {
  const pad = (n: number) => String(n).padStart(OFFSET_DIGITS, '0')
  return `p${file.partition}-${pad(file.firstOffset)}-${pad(file.lastOffset)}.parquet`
}

export function tempFileName(sealedName: string): string {
  return `.${sealedName}.tmp`
}

export function isTempFileName(name: string): boolean {
  return name.endsWith('.tmp')
}

export function parseSealedFileName(name: string): SealedFile | null {
  const m = SEALED.exec(name)
  if (!m) return null
  return { partition: Number(m[1]), firstOffset: Number(m[2]), lastOffset: Number(m[3]) }
}

export function anchorPath(tableRootDir: string): string {
  return join(tableRootDir, `date=${ANCHOR_DATE}`, `asset=${ANCHOR_ASSET}`, ANCHOR_FILE)
}

export interface GroupListing {
  date: string
  asset: string
  dir: string
  files: string[]
}

/** Every date=/asset= directory under a table root with its file names; a missing root lists nothing. */
export async function listGroups(tableRootDir: string): Promise<GroupListing[]> {
  const out: GroupListing[] = []
  for (const dateDir of await readdirOrEmpty(tableRootDir)) {
    if (!dateDir.startsWith('date=')) continue
    for (const assetDir of await readdirOrEmpty(join(tableRootDir, dateDir))) {
      if (!assetDir.startsWith('asset=')) continue
      const dir = join(tableRootDir, dateDir, assetDir)
      out.push({ date: dateDir.slice(5), asset: decodeHiveValue(assetDir.slice(6)), dir, files: await readdirOrEmpty(dir) })
    }
  }
  return out
}

export async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).sort()
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw err
  }
}

/** The sealed files of one directory that another sealed file of the same partition covers (see the header). */
export function coveredFileNames(names: readonly string[]): Set<string> {
  const sealed = names.flatMap((name) => {
    const f = parseSealedFileName(name)
    return f ? [{ name, ...f }] : []
  })
  // By first offset, the wider file first at a tie: a file is covered when an earlier one reaches as far.
  sealed.sort((a, b) => a.partition - b.partition || a.firstOffset - b.firstOffset || b.lastOffset - a.lastOffset)
  const covered = new Set<string>()
  let partition = -1
  let reach = -1
  for (const f of sealed) {
    if (f.partition !== partition) {
      partition = f.partition
      reach = -1
    }
    if (f.lastOffset <= reach) covered.add(f.name)
    else reach = f.lastOffset
  }
  return covered
}

/**
 * Whether a downstream consumer's manifest (record/RecordJob.ts: record_files, paths relative to the table root)
 * covers a sealed file: the file is named in it, or it is a merged file whose first offset starts a listed file and
 * whose last offset ends one, in the same directory and partition. The second rule is sound because the compactor
 * only merges unbroken runs of files the manifest covers (ParquetCompactor `consumed`), so a merged file never holds
 * a row the consumer has not counted; and it stays true after the small files are gone, since the manifest is
 * append-only.
 */
export function manifestCovers(manifest: Iterable<string>): (rel: string) => boolean {
  const names = new Set<string>()
  const starts = new Set<string>()
  const ends = new Set<string>()
  const key = (rel: string) => {
    const slash = rel.lastIndexOf('/')
    const f = parseSealedFileName(rel.slice(slash + 1))
    return f ? { dir: rel.slice(0, slash), f } : null
  }
  for (const rel of manifest) {
    names.add(rel)
    const k = key(rel)
    if (!k) continue
    starts.add(`${k.dir}\n${k.f.partition}\n${k.f.firstOffset}`)
    ends.add(`${k.dir}\n${k.f.partition}\n${k.f.lastOffset}`)
  }
  return (rel) => {
    if (names.has(rel)) return true
    const k = key(rel)
    return k !== null && starts.has(`${k.dir}\n${k.f.partition}\n${k.f.firstOffset}`) && ends.has(`${k.dir}\n${k.f.partition}\n${k.f.lastOffset}`)
  }
}
