/**
 * Compaction over real Parquet written by the real sink, read back through the real catalog views: the same rows
 * before and after, fewer files, names that still give the offsets, the sink's resume rule intact, and a crash before
 * the rename or between the rename and the deletions leaving every row counted exactly once.
 */
import t from 'tap'
import { cp, readdir, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { ParquetCompactor } from '../../../pipeline/sinks/ParquetCompactor.ts'
import { ParquetSink } from '../../../pipeline/sinks/ParquetSink.ts'
import { SinkError } from '../../../pipeline/sinks/SinkError.ts'
import { coveredFileNames, parseSealedFileName, tempFileName } from '../../../pipeline/sinks/parquetLayout.ts'
import { ticksTable } from '../../../pipeline/sinks/ticksTable.ts'
import { Catalog, withCatalog } from '../../../sql/Catalog.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { TOPIC, makeTicks, toBatches, toRecords } from './fixtures.ts'
import { queryParquet } from './readParquet.ts'

const NOW = () => Date.parse('2026-11-24T12:00:00Z')
const CLOSED_DAY = '2024-03-01' // the fixture spans 2024-03-01 23:00 .. 2024-03-02 00:39; the 2nd is the newest day

async function sealedIn(dir: string): Promise<string[]> {
  return (await readdir(dir).catch(() => [])).filter((n) => parseSealedFileName(n) !== null).sort()
}

async function dayDirs(dataDir: string, date: string): Promise<string[]> {
  const root = join(dataDir, 'parquet', TOPIC, `date=${date}`)
  return (await readdir(root)).map((a) => join(root, a)).sort()
}

async function countFiles(dataDir: string, date: string): Promise<number> {
  let n = 0
  for (const dir of await dayDirs(dataDir, date)) n += (await sealedIn(dir)).length
  return n
}

/** Every row of the `ticks` view, as the catalog serves it, in log order. */
async function viewRows(dataDir: string): Promise<unknown[]> {
  return withCatalog(dataDir, { readOnly: true }, (c) => c.query('SELECT * FROM ticks ORDER BY log_partition, log_offset'))
}

t.test('compaction: same rows through the views, fewer files, offsets named, exactly once across crashes', async (t) => {
  const dataDir = await makeTempDir(t)
  const records = toRecords(makeTicks(100), { envelope: true })
  const total = records.reduce((s, r) => s + r.length, 0)
  // Tiny files, as the sink writes them live (a flush every few rows).
  const sink = await ParquetSink.open({ dataDir, tables: [ticksTable(TOPIC)], maxRows: 4, checkIntervalMs: 0 })
  for (const batch of toBatches(records, 7)) await sink.handle(batch)
  await sink.close()
  await Catalog.apply(dataDir)

  const before = await viewRows(dataDir)
  t.equal(before.length, total, `the views hold every record once (${total})`)
  const filesBefore = await countFiles(dataDir, CLOSED_DAY)
  const newestBefore = await countFiles(dataDir, '2024-03-02')
  t.ok(filesBefore > 40, `many small files on the closed day (${filesBefore})`)
  const backup = join(dataDir, 'backup')
  await cp(join(dataDir, 'parquet', TOPIC, `date=${CLOSED_DAY}`), backup, { recursive: true })

  const compactor = await ParquetCompactor.open({ dataDir, dirs: [TOPIC], now: NOW })
  t.teardown(() => compactor.close())
  await t.rejects(ParquetCompactor.open({ dataDir, dirs: [TOPIC] }), SinkError, 'a second compactor is refused (SINK_LOCKED)')
  const s1 = await compactor.compact()
  t.equal(s1.replaced, filesBefore, 'every small file of the closed day was merged')
  t.equal(s1.recovered, 0)

  // One file per directory and partition, named by the offsets it holds, rows in offset order.
  for (const dir of await dayDirs(dataDir, CLOSED_DAY)) {
    const names = await sealedIn(dir)
    const partitions = names.map((n) => parseSealedFileName(n)!.partition)
    t.same(partitions, [...new Set(partitions)], `${dir.split('/').pop()}: one file per partition`)
    for (const name of names) {
      const f = parseSealedFileName(name)!
      const [r] = await queryParquet(`SELECT min(log_offset) AS lo, max(log_offset) AS hi, min(log_partition) AS p, max(log_partition) AS q,
        bool_and(log_offset > lag) AS ordered FROM (SELECT *, lag(log_offset, 1, -1) OVER () AS lag FROM read_parquet('${join(dir, name)}', hive_partitioning = false))`)
      t.same([Number(r!.lo), Number(r!.hi), Number(r!.p), Number(r!.q), r!.ordered], [f.firstOffset, f.lastOffset, f.partition, f.partition, true], `${name}: its name says its offsets`)
    }
  }
  t.ok((await countFiles(dataDir, CLOSED_DAY)) <= 4 * 3, 'at most one file per asset directory and partition')
  t.equal(await countFiles(dataDir, '2024-03-02'), newestBefore, 'the newest day is left alone')
  t.same(await viewRows(dataDir), before, 'the views answer the same rows, values and order')
  t.same(await compactor.compact(), { groups: 0, merged: 0, replaced: 0, rows: 0, recovered: 0, held: 0 }, 'a second pass has nothing to do')

  // The sink's resume rule still finds the highest sealed offset: a full redelivery writes nothing.
  const again = await ParquetSink.open({ dataDir, tables: [ticksTable(TOPIC)], maxRows: 4, checkIntervalMs: 0 })
  for (const batch of toBatches(records, 7)) await again.handle(batch)
  await again.close()
  t.equal(again.stats().rowsWritten, 0, 'redelivered records are all skipped')
  t.same(await viewRows(dataDir), before)

  // Crash between the rename and the deletions: merged and small files side by side. Readers count each row once.
  const merged = new Map<string, string[]>()
  for (const dir of await dayDirs(dataDir, CLOSED_DAY)) merged.set(dir, await sealedIn(dir))
  await cp(backup, join(dataDir, 'parquet', TOPIC, `date=${CLOSED_DAY}`), { recursive: true })
  t.equal(await countFiles(dataDir, CLOSED_DAY), filesBefore + s1.merged, 'both generations on disk')
  t.same(await viewRows(dataDir), before, 'after a crash past the rename the views still count each row once')
  for (const dir of merged.keys()) t.equal(coveredFileNames(await readdir(dir)).size, (await sealedIn(dir)).length - merged.get(dir)!.length, 'the small files are the covered ones')
  const s2 = await compactor.compact()
  t.equal(s2.recovered, filesBefore, 'the next pass deletes the covered small files')
  t.equal(s2.merged, 0)
  t.same(await viewRows(dataDir), before)

  // Crash before the rename: the small files and a temp file of the merged one. Readers see only the small files; the
  // sink removes the temp file when it opens; the next pass merges again.
  for (const [dir, names] of merged) for (const name of names) await rename(join(dir, name), join(dir, tempFileName(name)))
  await cp(backup, join(dataDir, 'parquet', TOPIC, `date=${CLOSED_DAY}`), { recursive: true })
  t.same(await viewRows(dataDir), before, 'after a crash before the rename the views read the small files once')
  const reopened = await ParquetSink.open({ dataDir, tables: [ticksTable(TOPIC)], checkIntervalMs: 0 })
  await reopened.close()
  for (const dir of merged.keys()) t.same((await readdir(dir)).filter((n) => n.endsWith('.tmp')), [], 'the sink removed the temp files')
  const s3 = await compactor.compact()
  t.equal(s3.replaced, filesBefore)
  t.same(await viewRows(dataDir), before, 'and compacting again gives the same rows')
  await rm(backup, { recursive: true })
})
