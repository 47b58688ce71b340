import t from 'tap'
import { spawn } from 'node:child_process'
import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { writeSchemaAnchors, Catalog, CATALOG_DIGEST_FILE, CATALOG_FILE, DATA_DIR_PLACEHOLDER, SQL_DIR, renderSql, sqlFiles, withCatalog } from '../../sql/Catalog.ts'
import { ParquetSink } from '../../pipeline/sinks/ParquetSink.ts'
import { TICKS_COLUMNS, ticksTable } from '../../pipeline/sinks/ticksTable.ts'
import { SINK_COLUMNS } from '../../pipeline/sinks/TopicTable.ts'
import { sinkTables } from '../../pipeline/sinks/sinkTables.ts'
import { makeTempDir } from '../helpers/tmp.ts'
import { TOPIC, makeTicks, toBatches, toRecords } from '../pipeline/sinks/fixtures.ts'
import type { Tick } from '../../ingest/Tick.ts'

const VIEWS = [
  'ticks',
  'bars',
  'funding',
  'predicted_funding',
  'mids',
  'marks',
  'index_prices',
  'book_top',
  'open_interest',
  'liquidations',
  'trades',
  'universe',
  'hourly_ohlc',
  'latest_by_asset_kind',
  'decision_rows',
  'decisions',
  'outcome_rows',
  'outcomes',
  'question_catalog',
  'open_clocks',
  'feed_chips',
  'billing_draw_rows',
  'billing_draws',
  'billing_lots',
  // the duel's journals (pipeline/records/callRecord.ts)
  'call_rows',
  'calls',
  'delivery_ask_rows',
  'delivery_asks',
  'delivery_attempt_rows',
  'delivery_attempts',
  'delivery_contact_rows',
  'delivery_contacts',
  'delivery_registration_rows',
  'call_opt_in_rows',
  // the Arena's journals (pipeline/records/experienceRecord.ts, notificationRecord.ts, arenaSettingRecord.ts)
  'arena_experience_rows',
  'arena_experience',
  'arena_notification_rows',
  'arena_notifications',
  'arena_setting_rows',
  'funnel_snapshot_rows',
  'funnel_snapshots',
  // the live venue connector's gap episodes (pipeline/records/venueGapRecord.ts)
  'venue_gap_rows',
  'venue_gaps',
  // the measured record (sql/020_record.sql)
  'record_runs',
  'record_files',
  'calibration_increments',
  'class_increments',
  'label_increments',
  'intelligence_snapshots',
  'ladder_crossings',
  'calibration',
  'calibration_by_subject',
  'calibration_by_class',
  'distribution_brier',
  'priors',
  'label_histogram',
  'curve_points',
  // sealed releases (sql/030_releases.sql)
  'release_rows',
  'release_gates',
  'release_evaluations',
  'release_activations',
  'releases',
]

const ticks = makeTicks(100)

async function sinkTicks(dataDir: string, input: Tick[] = ticks): Promise<void> {
  const sink = await ParquetSink.open({ dataDir, tables: [ticksTable(TOPIC)] })
  for (const batch of toBatches(toRecords(input, { envelope: true }), 50)) await sink.handle(batch)
  await sink.close()
}

t.test('the .sql files are numbered, use the placeholder, and render to valid SQL', async (t) => {
  const files = await sqlFiles()
  t.ok(files.includes('001_ticks.sql'))
  t.same(files, [...files].sort(), 'applied in name order')
  const text = await readFile(join(SQL_DIR, '001_ticks.sql'), 'utf8')
  t.ok(text.includes(DATA_DIR_PLACEHOLDER))
  const rendered = renderSql(text, "/data/o'brien")
  t.notOk(rendered.includes(DATA_DIR_PLACEHOLDER), 'every placeholder substituted')
  t.ok(rendered.includes("'/data/o''brien/parquet/venue.ticks/**/*.parquet'"), 'path escaped as a string literal')
})

t.test('an empty data dir: every view answers with 0 rows, over a catalog reopened READ_ONLY', async (t) => {
  const dataDir = await makeTempDir(t)
  await t.rejects(Catalog.open(dataDir), { code: 'CATALOG_MISSING' }, 'readers need the owner to apply first')
  t.same(await Catalog.apply(dataDir), await sqlFiles())
  await withCatalog(dataDir, { readOnly: true }, async (catalog) => {
    const views = await catalog.query(`SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY view_name`)
    t.same(views.map((v) => v.view_name), [...VIEWS].sort(), 'the catalog holds exactly these views')
    const tables = await catalog.query(`SELECT count(*) AS n FROM duckdb_tables()`)
    t.same(tables, [{ n: '0' }], 'and no tables: the catalog file stores no data')
    for (const view of VIEWS) {
      // question_catalog is the one constant view: the registry's eleven questions.
      const expected = view === 'question_catalog' ? '11' : '0'
      t.same(await catalog.query(`SELECT count(*) AS n FROM ${view}`), [{ n: expected }], `${view}: ${expected} rows`)
    }
    await t.rejects(catalog.query(`CREATE VIEW x AS SELECT 1`), { code: 'CATALOG_SQL' }, 'read-only really is read-only')
  })
})

t.test('views answer over sealed Parquet; temp files are invisible; new files show without re-applying', async (t) => {
  const dataDir = await makeTempDir(t)
  await Catalog.apply(dataDir)
  await sinkTicks(dataDir)
  // A half-written file as a crashed sink leaves it: the views must neither count nor choke on it.
  const group = join(dataDir, 'parquet', TOPIC, 'date=2024-03-01', 'asset=BTC')
  await writeFile(join(group, '.p1-000000000900-000000000999.parquet.tmp'), 'PAR1 half written')

  await withCatalog(dataDir, { readOnly: true }, async (catalog) => {
    const kinds = await catalog.query(`SELECT kind, count(*) AS n FROM ticks GROUP BY kind ORDER BY kind`)
    const expected = new Map<string, number>()
    for (const tick of ticks) expected.set(tick.kind, (expected.get(tick.kind) ?? 0) + 1)
    t.same(
      Object.fromEntries(kinds.map((k) => [k.kind, Number(k.n)])),
      Object.fromEntries([...expected].sort()),
      'counts per kind equal the input',
    )
    for (const [view, kind] of [
      ['bars', 'bar'],
      ['funding', 'funding'],
      ['predicted_funding', 'predicted_funding'],
      ['mids', 'mid'],
      ['marks', 'mark'],
      ['index_prices', 'index'],
      ['book_top', 'book_top'],
      ['open_interest', 'open_interest'],
      ['liquidations', 'liquidation'],
      ['trades', 'trade'],
      ['universe', 'universe'],
    ] as const) {
      t.same(await catalog.query(`SELECT count(*) AS n FROM ${view}`), [{ n: String(expected.get(kind) ?? 0) }], `${view} holds every ${kind}`)
    }

    // hourly_ohlc against the fixture, computed independently: BTC 1m bars opening in 23:00–23:59.
    const bars = ticks.filter((x) => x.kind === 'bar' && x.asset === 'BTC' && x.open_time.startsWith('2024-03-01T23'))
    if (!bars.every((b) => b.kind === 'bar')) throw new Error('fixture')
    const bb = bars as Extract<Tick, { kind: 'bar' }>[]
    const [hour] = await catalog.query(
      `SELECT hour, open, high, low, close, volume, bars FROM hourly_ohlc WHERE asset = 'BTC' AND hour = TIMESTAMP '2024-03-01 23:00:00'`,
    )
    t.same(hour, {
      hour: '2024-03-01T23:00:00.000Z',
      open: bb[0]!.open,
      high: Math.max(...bb.map((b) => b.high)),
      low: Math.min(...bb.map((b) => b.low)),
      close: bb[bb.length - 1]!.close,
      volume: bb.reduce((s, b) => s + b.volume, 0),
      bars: String(bb.length),
    })

    const latest = await catalog.query(`SELECT asset, kind, count(*) AS n FROM latest_by_asset_kind GROUP BY ALL HAVING count(*) > 1`)
    t.same(latest, [], 'one latest row per asset, kind and source')
    const [lastMid] = await catalog.query(`SELECT price, ts FROM latest_by_asset_kind WHERE asset = 'SOL' AND kind = 'mid'`)
    const mids = ticks.filter((x) => x.kind === 'mid' && x.asset === 'SOL')
    const lm = mids[mids.length - 1]!
    t.same(lastMid, { price: lm.kind === 'mid' ? lm.price : null, ts: lm.provenance.timestamp })

    const [spread] = await catalog.query(`SELECT round(spread_bps, 6) AS bps, mid FROM book_top WHERE asset = 'BTC' ORDER BY ts LIMIT 1`)
    const book = ticks.find((x) => x.kind === 'book_top' && x.asset === 'BTC')
    if (book?.kind !== 'book_top') throw new Error('fixture')
    const mid = (book.bid + book.ask) / 2
    t.same(spread, { bps: Math.round(((book.ask - book.bid) / mid) * 1e4 * 1e6) / 1e6, mid })
  })

  // The sink keeps writing after the catalog was applied; readers see new files with no DDL.
  const later = makeTicks(130).slice(ticks.length)
  await sinkTicks(join(dataDir), ticks.concat(later))
  await withCatalog(dataDir, { readOnly: true }, async (catalog) => {
    t.same(await catalog.query(`SELECT count(*) AS n FROM ticks`), [{ n: String(ticks.length + later.length) }])
  })
})

t.test('query output is JSON-safe: 64-bit integers as strings, timestamps as ISO-8601 UTC', async (t) => {
  const dataDir = await makeTempDir(t)
  await sinkTicks(dataDir)
  await Catalog.apply(dataDir)
  await withCatalog(dataDir, { readOnly: true }, async (catalog) => {
    const rows = await catalog.query(
      `SELECT log_offset, log_partition, tape_seq, ts, received_at, date, price, asset, count(*) OVER () AS total,
              TIMESTAMP '2024-01-02 03:04:05.123456' AS micros, 9007199254740993::BIGINT AS big
       FROM ticks WHERE kind = 'mid' AND tape_seq IS NOT NULL ORDER BY ts LIMIT 1`,
    )
    const row = rows[0]!
    t.type(row.log_offset, 'string')
    t.type(row.log_partition, 'number')
    t.type(row.tape_seq, 'string')
    t.type(row.total, 'string')
    t.equal(row.big, '9007199254740993', 'beyond 2^53 without loss')
    t.match(row.ts, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    t.match(row.received_at, /Z$/)
    t.equal(row.micros, '2024-01-02T03:04:05.123456Z')
    t.match(row.date, /^\d{4}-\d{2}-\d{2}$/)
    t.type(row.price, 'number')
    const mid = ticks.find((x) => x.kind === 'mid' && x.provenance.timestamp === row.ts)
    t.ok(mid, 'the ISO timestamp is the tick’s own event time')
    t.same(JSON.parse(JSON.stringify(rows)), rows, 'survives a JSON round trip')
    t.same(await catalog.query(`SELECT count(*) AS n FROM ticks WHERE asset = $asset`, { asset: 'ETH' }), [{ n: '100' }], 'parameters bind')
  })
})

t.test('the ticks view exposes exactly the sink columns plus the partition columns', async (t) => {
  const dataDir = await makeTempDir(t)
  await Catalog.apply(dataDir)
  await withCatalog(dataDir, { readOnly: true }, async (catalog) => {
    const cols = await catalog.query(`SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = 'ticks'`)
    // The view carries the files' types: instants TIMESTAMPTZ, the payload JSON.
    const viewType = (c: { name: string; type: string }) => (c.type === 'TIMESTAMPTZ' ? 'TIMESTAMP WITH TIME ZONE' : c.type)
    const expected = [...SINK_COLUMNS, ...TICKS_COLUMNS].map((c) => `${c.name} ${viewType(c)}`).concat(['date DATE', 'asset VARCHAR'])
    t.same(
      cols.map((c) => `${String(c.column_name)} ${String(c.data_type)}`).sort(),
      expected.sort(),
      'no drift between ticksTable.ts and 001_ticks.sql',
    )
  })
})

t.test('a quant can run the rendered .sql in a plain DuckDB session', async (t) => {
  const dataDir = await makeTempDir(t)
  await sinkTicks(dataDir)
  // Every table's schema anchor (sink tables and the record's batch tables), as the service writes them on start.
  await writeSchemaAnchors(dataDir)
  const instance = await DuckDBInstance.create(':memory:')
  const conn = await instance.connect()
  t.teardown(() => {
    conn.closeSync()
    instance.closeSync()
  })
  for (const name of await sqlFiles()) await conn.run(renderSql(await readFile(join(SQL_DIR, name), 'utf8'), dataDir))
  const rows = (await conn.runAndReadAll(`SELECT count(*)::INTEGER AS n FROM funding`)).getRowObjects()
  t.same(rows, [{ n: ticks.filter((x) => x.kind === 'funding').length }])
})

/** Opens the catalog in a separate process (DuckDB's locks are per process) and reports what happened. */
function openInChild(dataDir: string, readOnly: boolean, withMessage = false): Promise<string> {
  const script = `
    import { withCatalog } from ${JSON.stringify(join(SQL_DIR, 'Catalog.ts'))}
    try {
      const n = await withCatalog(${JSON.stringify(dataDir)}, { readOnly: ${readOnly} }, async (c) => (await c.query('SELECT count(*) AS n FROM ticks'))[0].n)
      process.stdout.write('ok ' + n)
    } catch (err) { process.stdout.write(String(err.code) + (${withMessage} ? ' ' + err.message : '')) }`
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, NODE_ENV: 'test' } })
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.on('error', reject)
    child.on('exit', () => resolve(out))
  })
}

t.test('one writer or many readers: a reader is refused while the owner holds the catalog', async (t) => {
  const dataDir = await makeTempDir(t)
  await mkdir(dataDir, { recursive: true })
  const owner = await Catalog.open(dataDir, { readOnly: false })
  t.equal(await openInChild(dataDir, true), 'CATALOG_LOCKED', 'READ_ONLY open fails while a writer holds the file')
  // The hint says which side to wait for or close (issue 33 item 7).
  t.match(await openInChild(dataDir, true, true), /^CATALOG_LOCKED .* \(a process has it open for writing .*read the Parquet files directly, or retry once it is done\)/)
  owner.close()
  const reader = await Catalog.open(dataDir, { readOnly: true })
  const results = await Promise.all([openInChild(dataDir, true), openInChild(dataDir, true)])
  t.same(results, ['ok 0', 'ok 0'], 'any number of read-only processes at once')
  t.equal(await openInChild(dataDir, false), 'CATALOG_LOCKED', 'and no writer while readers hold it')
  t.match(await openInChild(dataDir, false, true), /^CATALOG_LOCKED .* \(another process has it open, most likely a reader .*`duckdb -readonly`/)
  reader.close()
  t.ok((await readFile(join(dataDir, CATALOG_FILE))).length > 0)
})

t.test('a re-apply of unchanged .sql files is skipped; a changed file, or a catalog without its digest, is applied again', async (t) => {
  // Issue 31: binding the views reads every Parquet footer, so applying at each start grew with history.
  const dataDir = await makeTempDir(t)
  const sqlDir = join(await makeTempDir(t), 'sql')
  await cp(SQL_DIR, sqlDir, { recursive: true })
  t.same(await Catalog.apply(dataDir, { sqlDir }), await sqlFiles(), 'a first apply runs every file')
  t.same(await Catalog.apply(dataDir, { sqlDir }), [], 'the same files again: nothing to apply')
  await writeFile(join(sqlDir, '999_extra.sql'), 'CREATE OR REPLACE VIEW svc_extra AS SELECT 1 AS one;\n')
  t.same((await Catalog.apply(dataDir, { sqlDir })).at(-1), '999_extra.sql', 'a new file: every file is applied again')
  await withCatalog(dataDir, { readOnly: true }, async (catalog) => t.same(await catalog.query('SELECT one FROM svc_extra'), [{ one: 1 }], 'and its view is there'))
  await rm(join(dataDir, CATALOG_DIGEST_FILE))
  t.same((await Catalog.apply(dataDir, { sqlDir })).length, (await sqlFiles()).length + 1, 'no digest (a crash mid-apply): applied again')
  await rm(join(dataDir, CATALOG_FILE))
  t.same((await Catalog.apply(dataDir, { sqlDir })).length, (await sqlFiles()).length + 1, 'a catalog file gone: applied again, whatever the digest says')
})
