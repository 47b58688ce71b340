import t from 'tap'
import { readdir, rm, stat, writeFile, mkdir } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { ParquetSink, type CommitFn } from '../../../pipeline/sinks/ParquetSink.ts'
import { ticksTable } from '../../../pipeline/sinks/ticksTable.ts'
import { parseSealedFileName } from '../../../pipeline/sinks/parquetLayout.ts'
import type { ConsumedBatch } from '../../../pipeline/log/EventLog.ts'
import { LogError } from '../../../pipeline/log/LogError.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { TOPIC, makeTicks, toBatches, toRecords } from './fixtures.ts'
import { queryParquet, ticksGlob } from './readParquet.ts'

async function walk(dir: string): Promise<string[]> {
  const out: string[] = []
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) out.push(...(await walk(path)))
    else out.push(path)
  }
  return out.sort()
}

async function sealedFiles(dataDir: string): Promise<string[]> {
  return (await walk(join(dataDir, 'parquet', TOPIC))).filter((p) => parseSealedFileName(p.split('/').pop()!) !== null)
}

async function feed(sink: ParquetSink, batches: ConsumedBatch[]): Promise<void> {
  for (const batch of batches) await sink.handle(batch)
}

/** One row per (partition, offset) and how many rows in total. */
async function rowIdentity(dataDir: string): Promise<{ rows: number; distinct: number }> {
  const [r] = await queryParquet(`SELECT count(*) AS rows, count(DISTINCT (log_partition, log_offset)) AS distinct_ FROM ${ticksGlob(dataDir)}`)
  return { rows: Number(r!.rows), distinct: Number(r!.distinct_) }
}

function recordingCommit(): { commit: CommitFn; commits: Map<number, number>; calls: [number, number][] } {
  const commits = new Map<number, number>()
  const calls: [number, number][] = []
  return {
    commits,
    calls,
    commit: async (topic, partition, next) => {
      if (topic !== TOPIC) throw new Error(`unexpected topic ${topic}`)
      calls.push([partition, next])
      commits.set(partition, next)
    },
  }
}

const ticks = makeTicks(100) // 300 asset ticks + 10 universe snapshots, 23:00–00:39 UTC (two dates)
const byPartition = toRecords(ticks, { envelope: true })
const batches = toBatches(byPartition, 17)

t.test('writes every record exactly once in the documented layout, rows ordered by offset', async (t) => {
  const dataDir = await makeTempDir(t)
  const { commit, commits } = recordingCommit()
  const sink = await ParquetSink.open({ dataDir, tables: [ticksTable(TOPIC)], commit, maxRows: 1_000_000, maxAgeMs: 3_600_000 })
  await feed(sink, batches)
  t.equal((await sealedFiles(dataDir)).length, 0, 'nothing sealed before a flush is due')
  await sink.close()

  t.same(await rowIdentity(dataDir), { rows: ticks.length, distinct: ticks.length })
  byPartition.forEach((records, p) => t.equal(commits.get(p), records.length, `partition ${p} committed to its end`))

  const files = (await sealedFiles(dataDir)).map((p) => relative(join(dataDir, 'parquet', TOPIC), p))
  for (const f of files) t.match(f, /^date=2024-03-0[12]\/asset=(BTC|ETH|SOL|%2A)\/p[0-2]-\d{12}-\d{12}\.parquet$/)
  t.ok(files.some((f) => f.includes('asset=%2A')), "venue-wide records live under asset=%2A (hive-decoded to '*')")

  const perFile = await queryParquet(
    `SELECT filename, list(log_offset ORDER BY file_row_number) AS offsets, min(log_offset) AS lo, max(log_offset) AS hi
     FROM read_parquet('${dataDir}/parquet/${TOPIC}/**/p*.parquet', filename = true, file_row_number = true) GROUP BY filename`,
  )
  for (const f of perFile) {
    const offsets = (f.offsets as string[]).map(Number)
    t.same(offsets, [...offsets].sort((a, b) => a - b), `${f.filename} rows in offset order`)
    const name = parseSealedFileName(String(f.filename).split('/').pop()!)!
    t.same([name.firstOffset, name.lastOffset], [Number(f.lo), Number(f.hi)], 'file name carries its offset range')
  }

  const kinds = await queryParquet(`SELECT kind, count(*) AS n FROM ${ticksGlob(dataDir)} GROUP BY kind ORDER BY kind`)
  const expected = new Map<string, number>()
  for (const tick of ticks) expected.set(tick.kind, (expected.get(tick.kind) ?? 0) + 1)
  t.same(Object.fromEntries(kinds.map((k) => [k.kind, Number(k.n)])), Object.fromEntries(expected), 'rows per kind equal input')
})

t.test('columns carry the tick fields, envelope position and payload', async (t) => {
  const dataDir = await makeTempDir(t)
  const sink = await ParquetSink.open({ dataDir, tables: [ticksTable(TOPIC)] })
  await feed(sink, batches)
  await sink.close()
  const [bar] = await queryParquet(
    `SELECT * FROM ${ticksGlob(dataDir)} WHERE kind = 'bar' AND asset = 'ETH' ORDER BY ts LIMIT 1`,
  )
  const first = ticks.find((x) => x.kind === 'bar' && x.asset === 'ETH')!
  if (first.kind !== 'bar') throw new Error('fixture')
  t.match(bar, {
    asset: 'ETH',
    date: '2024-03-01',
    instrument: 'ETH',
    source: 'hyperliquid:perp',
    quality: 'real',
    interval: '1m',
    open: first.open,
    close: first.close,
    volume: first.volume,
    volume_unit: 'base',
    price: null,
    payload: null,
  })
  t.equal(String(bar!.ts).slice(0, 19), first.provenance.timestamp.replace('T', ' ').slice(0, 19))
  t.equal(String(bar!.open_time).slice(0, 19), first.open_time.replace('T', ' ').slice(0, 19))

  const universe = await queryParquet(`SELECT payload, instrument FROM ${ticksGlob(dataDir)} WHERE kind = 'universe' LIMIT 1`)
  t.match(JSON.parse(String(universe[0]!.payload)), { assets: [{ symbol: 'BTC', max_leverage: 50 }] }, 'fields without a column go to payload')

  const env = await queryParquet(
    `SELECT count(*) FILTER (WHERE tape_seq IS NOT NULL AND tape_id = 'fixture-tape') AS wrapped,
            count(*) FILTER (WHERE tape_seq IS NULL AND tape_id IS NULL) AS bare FROM ${ticksGlob(dataDir)}`,
  )
  t.same(env[0], { wrapped: String(Math.ceil(ticks.length / 2)), bare: String(Math.floor(ticks.length / 2)) }, 'envelope seq/tape kept, null for bare ticks')
  const seq = await queryParquet(`SELECT tape_seq, kind, asset FROM ${ticksGlob(dataDir)} WHERE tape_seq = 3`)
  t.same(seq[0], { tape_seq: '3', kind: ticks[2]!.kind, asset: ticks[2]!.asset }, 'tape_seq is the tick’s position on the tape')
})

t.test('re-delivering sealed batches (crash between seal and commit) writes no duplicate rows', async (t) => {
  const dataDir = await makeTempDir(t)
  const first = await ParquetSink.open({ dataDir, tables: [ticksTable(TOPIC)], maxRows: 40 })
  await feed(first, batches)
  await first.close()
  const filesBefore = await sealedFiles(dataDir)

  // The commit never happened: the restarted sink gets everything again, from offset 0.
  const { commit, commits } = recordingCommit()
  const second = await ParquetSink.open({ dataDir, tables: [ticksTable(TOPIC)], maxRows: 40, commit })
  await feed(second, toBatches(byPartition, 29))
  await second.close()

  t.same(await rowIdentity(dataDir), { rows: ticks.length, distinct: ticks.length })
  t.same(await sealedFiles(dataDir), filesBefore, 'no new file')
  t.match(second.stats(), { received: ticks.length, skipped: ticks.length, rowsWritten: 0, filesSealed: 0, buffered: 0 })
  byPartition.forEach((records, p) => t.equal(commits.get(p), records.length, `partition ${p} committed past the skipped records`))
})

t.test('a commit refused because the consumer left its group is not a failed write: re-delivery is skipped, the sink goes on', async (t) => {
  const dataDir = await makeTempDir(t)
  const { commit: record, commits } = recordingCommit()
  let refusals = 0
  // Kafka refuses the first commit (the member's session lapsed while the batch was written): KafkaConsumer.commit
  // throws LOG_REBALANCED, the consumer re-joins and delivers everything after the last commit again.
  const commit: CommitFn = async (topic, partition, next) => {
    if (refusals++ === 0) throw new LogError('LOG_REBALANCED', 'offset commit refused (UNKNOWN_MEMBER_ID): this member left the group')
    await record(topic, partition, next)
  }
  const sink = await ParquetSink.open({ dataDir, tables: [ticksTable(TOPIC)], maxRows: 40, commit })
  let refused: unknown = null
  let i = 0
  for (; i < batches.length && refused === null; i++) await sink.handle(batches[i]!).catch((err: unknown) => (refused = err))
  t.match(refused, { code: 'LOG_REBALANCED' }, 'the refusal reaches the consumer, which re-joins on it')
  t.equal(sink.failed, undefined, 'the sink has not stopped')
  // After the re-join: everything from offset 0 again (nothing was committed), then the rest.
  await feed(sink, toBatches(byPartition, 23))
  await sink.close()
  t.same(await rowIdentity(dataDir), { rows: ticks.length, distinct: ticks.length }, 'one row per record')
  t.ok(sink.stats().skipped > 0, 'the re-delivered sealed records were skipped')
  byPartition.forEach((records, p) => t.equal(commits.get(p), records.length, `partition ${p} committed to its end`))
})

t.test('a partially sealed flush, then re-delivery of everything, yields one row per record', async (t) => {
  const dataDir = await makeTempDir(t)
  const reference = await makeTempDir(t)
  const full = await ParquetSink.open({ dataDir: reference, tables: [ticksTable(TOPIC)], maxRows: 25 })
  await feed(full, batches)
  await full.close()

  // A crash mid-flush: some groups sealed, others not. Block one group's directory with a file so the sink's
  // flush fails part-way, after it has sealed the groups before it.
  const sink = await ParquetSink.open({ dataDir, tables: [ticksTable(TOPIC)], maxRows: 1_000_000, maxAgeMs: 3_600_000 })
  await feed(sink, batches)
  const blocked = join(dataDir, 'parquet', TOPIC, 'date=2024-03-02', 'asset=SOL')
  await mkdir(join(dataDir, 'parquet', TOPIC, 'date=2024-03-02'), { recursive: true })
  await writeFile(blocked, 'not a directory')
  await t.rejects(sink.flush(), { code: 'SINK_IO' }, 'the flush fails at the blocked group')
  await t.rejects(sink.handle(batches[0]!), { code: 'SINK_CLOSED' }, 'and the sink refuses work until restarted')
  t.match(sink.failed, { code: 'SINK_IO' })
  await sink.close()
  const partial = await rowIdentity(dataDir)
  t.ok(partial.rows > 0 && partial.rows < ticks.length, `some groups were sealed (${partial.rows} of ${ticks.length} rows)`)
  t.equal(partial.rows, partial.distinct)

  // Also drop the newest sealed file of one group that has several, and leave a half-written temp file behind.
  await rm(blocked)
  const sealed = await sealedFiles(dataDir)
  const btc = sealed.filter((p) => p.includes('/date=2024-03-01/asset=BTC/'))
  if (btc.length > 0) await rm(btc[btc.length - 1]!)
  const tmp = join(dataDir, 'parquet', TOPIC, 'date=2024-03-01', 'asset=ETH', '.p0-000000000000-000000000099.parquet.tmp')
  await writeFile(tmp, 'PAR1 half written')

  const { commit, commits } = recordingCommit()
  const again = await ParquetSink.open({ dataDir, tables: [ticksTable(TOPIC)], maxRows: 25, commit })
  await t.rejects(stat(tmp), { code: 'ENOENT' }, 'leftover temp file removed on start')
  await feed(again, toBatches(byPartition, 50))
  await again.close()

  t.same(await rowIdentity(dataDir), { rows: ticks.length, distinct: ticks.length }, 'exactly one row per input record')
  const cols = 'log_partition, log_offset, ts, kind, asset, date, price, rate, payload, tape_seq'
  t.same(
    await queryParquet(`SELECT ${cols} FROM ${ticksGlob(dataDir)} ORDER BY log_partition, log_offset`),
    await queryParquet(`SELECT ${cols} FROM ${ticksGlob(reference)} ORDER BY log_partition, log_offset`),
    'same rows as an uninterrupted run',
  )
  byPartition.forEach((records, p) => t.equal(commits.get(p), records.length))
})

t.test('commits only offsets whose records are sealed', async (t) => {
  const dataDir = await makeTempDir(t)
  const violations: string[] = []
  let checks = 0
  const commit: CommitFn = async (_topic, partition, next) => {
    checks++
    const [r] = await queryParquet(`SELECT count(*) AS n FROM ${ticksGlob(dataDir)} WHERE log_partition = ${partition} AND log_offset < ${next}`)
    if (Number(r!.n) !== next) violations.push(`p${partition} committed ${next} with ${String(r!.n)} sealed`)
  }
  // Small row threshold: groups seal at different times, so commits must stop at the oldest unsealed record.
  const sink = await ParquetSink.open({ dataDir, tables: [ticksTable(TOPIC)], commit, maxRows: 7, maxAgeMs: 3_600_000 })
  await feed(sink, batches)
  await sink.close()
  t.ok(checks > 3, `commit called ${checks} times`)
  t.same(violations, [])
})

t.test('flush policy: row count, event-time span and wall-clock age', async (t) => {
  const dataDir = await makeTempDir(t)
  const sink = await ParquetSink.open({ dataDir, tables: [ticksTable(TOPIC)], maxRows: 10, maxAgeMs: 3_600_000, maxEventSpanMs: 86_400_000 })
  await feed(sink, batches)
  const counts = await queryParquet(`SELECT count(*) AS n FROM read_parquet('${dataDir}/parquet/${TOPIC}/**/p*.parquet') GROUP BY filename`)
  t.ok(counts.length > 0 && counts.every((c) => Number(c.n) === 10), 'every file sealed by the row threshold holds maxRows rows')
  await sink.close()

  const spanDir = await makeTempDir(t)
  const span = await ParquetSink.open({ dataDir: spanDir, tables: [ticksTable(TOPIC)], maxRows: 1_000_000, maxAgeMs: 3_600_000, maxEventSpanMs: 30 * 60_000 })
  await feed(span, batches)
  const spanFiles = await sealedFiles(spanDir)
  t.ok(spanFiles.length > 0, 'groups sealed once event time moved 30 minutes past their oldest row')
  t.ok(span.stats().buffered > 0, 'the most recent rows are still buffered')
  await span.close()

  const ageDir = await makeTempDir(t)
  const aged = await ParquetSink.open({ dataDir: ageDir, tables: [ticksTable(TOPIC)], maxRows: 1_000_000, maxAgeMs: 20, checkIntervalMs: 10 })
  await aged.handle({ topic: TOPIC, partition: 0, records: byPartition[0]!.slice(0, 3) })
  const deadline = Date.now() + 5_000
  // The file is visible once renamed, a moment before the seal finishes and empties the buffer: wait for both.
  while (((await sealedFiles(ageDir)).length === 0 || aged.stats().buffered > 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
  t.ok((await sealedFiles(ageDir)).length > 0, 'the timer sealed an idle group after maxAgeMs without any new batch')
  t.equal(aged.stats().buffered, 0, 'and emptied its buffer')
  await aged.close()
})

t.test('bad records are kept among the rejects, never dropped, and do not hold back commits', async (t) => {
  const dataDir = await makeTempDir(t)
  const { commit, commits } = recordingCommit()
  const sink = await ParquetSink.open({ dataDir, tables: [ticksTable(TOPIC)], commit })
  const good = byPartition[1]!.slice(0, 2)
  const ts = good[0]!.timestamp
  const records = [
    good[0]!,
    { topic: TOPIC, partition: 1, offset: 1, key: 'BTC', value: Buffer.from('{not json'), timestamp: ts },
    { topic: TOPIC, partition: 1, offset: 2, key: 'BTC', value: Buffer.from('{"v":1,"kind":"mid","asset":"BTC"}'), timestamp: ts },
    { ...good[1]!, offset: 3 },
  ]
  await sink.handle({ topic: TOPIC, partition: 1, records })
  await sink.close()
  t.equal(Number((await queryParquet(`SELECT count(*) AS n FROM ${ticksGlob(dataDir)}`))[0]!.n), 2)
  const rejects = await queryParquet(
    `SELECT log_offset, log_key, value, error, asset FROM read_parquet('${dataDir}/rejected/${TOPIC}/**/*.parquet', hive_partitioning = true) ORDER BY log_offset`,
  )
  t.match(rejects, [
    { log_offset: '1', log_key: 'BTC', value: '{not json', error: /JSON/ },
    { log_offset: '2', value: /"kind":"mid"/, error: /required property/ },
  ])
  t.equal(commits.get(1), 4)
  t.equal(sink.stats().rejected, 2)
})

t.test('options are validated with the field path named', async (t) => {
  const dataDir = await makeTempDir(t)
  await t.rejects(ParquetSink.open({ dataDir, tables: [ticksTable(TOPIC)], maxRows: 0 }), { code: 'SINK_CONFIG', message: /options\/maxRows/ })
  await t.rejects(ParquetSink.open({ dataDir, tables: [] }), { code: 'SINK_CONFIG', message: /options\/tables/ })
  await t.rejects(
    ParquetSink.open({ dataDir, tables: [{ ...ticksTable(TOPIC), columns: [{ name: 'date', type: 'VARCHAR' }] }] }),
    { code: 'SINK_CONFIG', message: /options\/tables\/0\/columns\/0\/name/ },
  )
  await t.rejects(ParquetSink.open({ dataDir, tables: [ticksTable(TOPIC)], bogus: 1 } as never), { code: 'SINK_CONFIG', message: /options\/bogus/ })
  const sink = await ParquetSink.open({ dataDir, tables: [ticksTable(TOPIC)] })
  await t.rejects(sink.handle({ topic: 'other', partition: 0, records: [] }), { code: 'SINK_UNKNOWN_TOPIC' })
  await sink.handle({ topic: TOPIC, partition: 0, records: byPartition[0]!.slice(0, 1) })
  await sink.close()
  t.equal(sink.stats().rowsWritten, 1, 'an unknown topic does not poison the sink')
})

t.test('a sealed group leaves no staged rows in memory: the stage is replaced, not emptied (DuckDB keeps a DELETEd table’s blocks)', async (t) => {
  const dataDir = await makeTempDir(t)
  const many = makeTicks(3000)
  const sink = await ParquetSink.open({ dataDir, tables: [ticksTable(TOPIC)], maxRows: 1_000_000, maxAgeMs: 3_600_000 })
  t.teardown(() => sink.close())
  await feed(sink, toBatches(toRecords(many, { envelope: true }), 500))
  await sink.flush()
  t.ok((await sealedFiles(dataDir)).length > 0, 'sealed')
  // The sink's own DuckDB (private): what its tables hold after the seal.
  const conn = (sink as unknown as { connection: { runAndReadAll(sql: string): Promise<{ getRowObjects(): Array<Record<string, unknown>> }> } }).connection
  const [held] = (await conn.runAndReadAll(`SELECT coalesce(sum(memory_usage_bytes), 0)::BIGINT AS bytes FROM duckdb_memory() WHERE tag = 'IN_MEMORY_TABLE'`)).getRowObjects()
  t.equal(Number(held!.bytes), 0, 'no table memory held between seals')
})
