/** The disk-use report (app/DiskUse.ts): every file lands in one part, and history is the days of sealed ticks. */
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import t from 'tap'
import { measureDiskUse } from '../../app/DiskUse.ts'
import { makeTempDir } from '../helpers/tmp.ts'

t.test('sizes each part and scales it to 30 days of sealed tick history', async (t) => {
  const dir = await makeTempDir(t, 'svc-disk-')
  const files: Array<[string, number]> = [
    ['log/topics/venue.ticks/0/00000000000000000000.log', 6000],
    ['log/topics/decisions/0/00000000000000000000.log', 300],
    ['log/groups/svc.engine.json', 30],
    ['parquet/venue.ticks/date=1970-01-01/asset=_schema/_schema.parquet', 10],
    ['parquet/venue.ticks/date=2026-01-01/asset=BTC/p0-000000000000-000000000009.parquet', 1000],
    ['parquet/venue.ticks/date=2026-01-02/asset=BTC/p0-000000000010-000000000019.parquet', 1000],
    ['parquet/venue.ticks/date=2026-01-03/asset=ETH/p1-000000000000-000000000009.parquet', 1000],
    ['parquet/decisions/date=2026-01-01/asset=BTC/p0-000000000000-000000000001.parquet', 150],
    ['rejected/venue.ticks/date=2026-01-01/asset=BTC/p0-000000000003-000000000003.parquet', 60],
    ['catalog.duckdb', 900],
    ['record/record.duckdb.wal', 90],
    ['state/engine.ndjson', 120],
    ['fits/model.json', 45],
    ['record/datasets/bootstrap/BTC-bar.ndjson.gz', 500],
  ]
  for (const [rel, bytes] of files) {
    await mkdir(dirname(join(dir, rel)), { recursive: true })
    await writeFile(join(dir, rel), Buffer.alloc(bytes))
  }
  const report = await measureDiskUse(dir)
  const bytes = Object.fromEntries(report.parts.map((p) => [p.part, p.bytes]))
  t.same(bytes, {
    'log.ticks': 6000,
    'log.journals': 330,
    'parquet.ticks': 3010,
    'parquet.journals': 210,
    duckdb: 990,
    state: 120,
    record: 500,
    other: 45,
  })
  t.equal(report.totalBytes, files.reduce((s, [, b]) => s + b, 0), 'every file counted once')
  t.equal(report.historyDays, 3, 'three dates of sealed ticks (the schema anchor is not history)')
  t.equal(report.perMonth['parquet.ticks'], Math.round((3010 / 3) * 30))
})

t.test('an empty folder has no history and no per-month figure', async (t) => {
  const dir = await makeTempDir(t, 'svc-disk-empty-')
  const report = await measureDiskUse(dir)
  t.equal(report.historyDays, 0)
  t.equal(report.totalBytes, 0)
  t.equal(report.perMonth['log.ticks'], null)
})
