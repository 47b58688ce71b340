/**
 * Issue 31, Deliver 3: "Disk use per month of history is reported." What a data folder holds, by part, and what that is
 * per 30 days of history (`svc disk`; the measured figures are in README, "Sizing a deployment").
 *
 * History is counted in days of ticks sealed in Parquet (the ticks table's date= directories), the one record of it
 * that retention never trims. Parts that grow with history are scaled to a month; the ticks in the log are not: once
 * retention runs they hold the kept window (SVC_TICK_RETENTION_MARGIN_DAYS + 30 days), so their steady size is given
 * for that window instead.
 */
import { lstat, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { TICKS_DIR } from '../pipeline/sinks/ticksTable.ts'
import { PARQUET_ROOT, ANCHOR_DATE } from '../pipeline/sinks/parquetLayout.ts'

export const MONTH_DAYS = 30

export interface DiskPart {
  /** One of DISK_PARTS. */
  part: string
  bytes: number
  files: number
}

export interface DiskUseReport {
  dataDir: string
  /** Days with sealed ticks (distinct dates of the ticks table). */
  historyDays: number
  parts: DiskPart[]
  totalBytes: number
  /** Each part per 30 days of history (null without history). */
  perMonth: Record<string, number | null>
}

async function walk(dir: string, visit: (path: string, rel: string[], bytes: number) => void, rel: string[] = []): Promise<void> {
  let names: string[]
  try {
    names = await readdir(dir)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
    throw err
  }
  for (const name of names) {
    const path = join(dir, name)
    const st = await lstat(path).catch(() => null)
    if (!st) continue
    if (st.isDirectory()) await walk(path, visit, [...rel, name])
    else if (st.isFile()) visit(path, [...rel, name], st.size)
  }
}

function partOf(rel: string[], ticksTopic: string): string {
  const [top, second] = rel
  const name = rel[rel.length - 1]!
  if (/\.duckdb(\.wal)?$/.test(name)) return 'duckdb'
  if (top === 'log') return second === 'topics' && rel[2] === ticksTopic ? 'log.ticks' : 'log.journals'
  if (top === PARQUET_ROOT) return second === TICKS_DIR ? 'parquet.ticks' : 'parquet.journals'
  if (top === 'rejected') return 'parquet.journals'
  if (top === 'state') return 'state'
  // Release builds' datasets and the record's files: one training window per release, not history.
  if (top === 'record') return 'record'
  return 'other'
}

export const DISK_PARTS = ['log.ticks', 'log.journals', 'parquet.ticks', 'parquet.journals', 'duckdb', 'state', 'record', 'other'] as const

export async function measureDiskUse(dataDir: string, ticksTopic = 'venue.ticks'): Promise<DiskUseReport> {
  const parts = new Map<string, DiskPart>(DISK_PARTS.map((part) => [part, { part, bytes: 0, files: 0 }]))
  const dates = new Set<string>()
  await walk(dataDir, (_path, rel, bytes) => {
    const part = parts.get(partOf(rel, ticksTopic))!
    part.bytes += bytes
    part.files++
    if (rel[0] === PARQUET_ROOT && rel[1] === TICKS_DIR && rel[2]?.startsWith('date=') && rel[2] !== `date=${ANCHOR_DATE}`) dates.add(rel[2])
  })
  const historyDays = dates.size
  const list = [...parts.values()]
  const perMonth: Record<string, number | null> = {}
  for (const p of list) perMonth[p.part] = historyDays > 0 ? Math.round((p.bytes / historyDays) * MONTH_DAYS) : null
  return { dataDir, historyDays, parts: list, totalBytes: list.reduce((s, p) => s + p.bytes, 0), perMonth }
}
