/**
 * The Parquet files carry their tables' one schema: every file the service writes (sink tables and their rejects,
 * schema anchors, the measured record's and the releases' tables) has, for each column, the physical and logical type
 * PARQUET_TYPES gives its schema type (instants TIMESTAMPTZ = isAdjustedToUTC, JSON = the JSON logical type), checked
 * with DuckDB's parquet_schema() and with pyarrow and polars (the readers a quant uses). Files written before the
 * types (naive instants, JSON as text) are rewritten once, as the same UTC instants and the same JSON text.
 */
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api'
import { writeSyntheticLedger } from '../../../bench/syntheticLedger.ts'
import type { QuestionModel } from '../../../models/QuestionModel.ts'
import { DECISIONS } from '../../../pipeline/records/decisionRecord.ts'
import { OUTCOMES_JOURNAL } from '../../../pipeline/records/outcomeRecord.ts'
import { mkdirData } from '../../../pipeline/log/dataModes.ts'
import { sqlString } from '../../../pipeline/sinks/parquetFile.ts'
import { anchorPath, groupDir, PARQUET_ROOT, sealedFileName, tableRoot } from '../../../pipeline/sinks/parquetLayout.ts'
import { ParquetSink } from '../../../pipeline/sinks/ParquetSink.ts'
import { retypeOldParquet, storedColumns, storedColumnType, TYPED_MARKER } from '../../../pipeline/sinks/parquetTypes.ts'
import { sinkTables } from '../../../pipeline/sinks/sinkTables.ts'
import { fileColumns, quoteIdent, type ColumnSpec } from '../../../pipeline/sinks/TopicTable.ts'
import { RecordDb } from '../../../record/RecordDb.ts'
import { RecordJob } from '../../../record/RecordJob.ts'
import { ReleaseStore } from '../../../record/releases/ReleaseStore.ts'
import { typedRoots } from '../../../sql/Catalog.ts'
import { testDecision, testOutcome } from '../../helpers/ledgerRecords.ts'
import { body, evaluation, gates } from '../../helpers/releaseRows.ts'
import { pythonImportMissing, skipUnlessTool } from '../../helpers/requiredTool.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import type { TapTest } from '../../helpers/logs.ts'
import { makeTicks, toBatches, toRecords } from './fixtures.ts'

const PYTHON = process.env.PYTHON ?? 'python3'
const SCRIPT = new URL('./parquetTypes.py', import.meta.url).pathname
const QIDS = ['S03_synthetic', 'S04_synthetic']
const QUESTIONS = QIDS.map((id) => ({ id, label: id, answer: 'probability', sold: true, horizonMs: 4 * 3_600_000 }) as unknown as QuestionModel)

async function withDuck<T>(fn: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
  const duck = await DuckDBInstance.create(':memory:')
  const conn = await duck.connect()
  try {
    return await fn(conn)
  } finally {
    conn.closeSync()
    duck.closeSync()
  }
}

function topicOf(dir: string): string {
  return sinkTables().find((table) => table.dir === dir)!.topic
}

/** The service's writers over one data dir: the sink (ticks, a decision, its outcome, a reject) and the release store. */
async function sinkAndReleases(dataDir: string): Promise<void> {
  const sink = await ParquetSink.open({ dataDir, tables: sinkTables(), checkIntervalMs: 0 })
  try {
    for (const batch of toBatches(toRecords(makeTicks(40), { envelope: true }), 100)) await sink.handle(batch)
    const d = testDecision(1, { conditions: { window: '60m', threshold: 0.02 } })
    const decisions = topicOf('decisions')
    await sink.handle({
      topic: decisions,
      partition: 0,
      records: [
        { topic: decisions, partition: 0, offset: 0, ...DECISIONS.toLogRecord(d) },
        { topic: decisions, partition: 0, offset: 1, key: 'bad', value: Buffer.from('not a record'), timestamp: Date.parse(d.created_at) },
      ],
    })
    const outcomes = topicOf('outcomes')
    await sink.handle({ topic: outcomes, partition: 0, records: [{ topic: outcomes, partition: 0, offset: 0, ...OUTCOMES_JOURNAL.toLogRecord(testOutcome(d)) }] })
    await sink.flush()
  } finally {
    await sink.close()
  }
  const store = await ReleaseStore.open(dataDir)
  try {
    await store.putRelease(body('1.0.0', null), '2025-03-01T00:00:00.000Z')
    await store.putEvaluation('1.0.0', { evaluation: evaluation([-0.02, -0.01]), families: {} }, gates(null), '2025-03-02T00:00:00.000Z')
    await store.activate('1.0.0', '2025-03-03T00:00:00.000Z')
  } finally {
    store.close()
  }
}

/** The measured record's job over a synthetic resolved ledger: its run, file, increment and snapshot tables. */
async function recordRun(t: TapTest, dataDir: string): Promise<void> {
  await writeSyntheticLedger(dataDir, { decisions: 600, perFile: 300 })
  const db = await RecordDb.open(dataDir)
  try {
    const job = await RecordJob.open(db, { questions: QUESTIONS, now: () => Date.parse('2026-11-24T00:00:00Z') })
    try {
      t.equal((await job.run()).idle, false, 'the record job ran over the synthetic ledger')
    } finally {
      await job.close()
    }
  } finally {
    db.close()
  }
}

/** Every stored column of every file under the data dir's typed roots, against its schema type: the drift check. */
async function checkFiles(t: TapTest, dataDir: string): Promise<Set<string>> {
  const seen = new Set<string>()
  await withDuck(async (conn) => {
    for (const { root, columns } of typedRoots(dataDir)) {
      const want = new Map(columns.map((c) => [c.name, c.type]))
      const stored = await storedColumns(conn, root)
      if (stored.length === 0) continue // a rejects folder with nothing rejected
      const drift = stored.filter((c) => storedColumnType(c) !== want.get(c.name)).map((c) => `${c.file} ${c.name}: ${c.type} ${c.converted} ${c.logical} (schema ${want.get(c.name) ?? 'none'})`)
      t.same(drift, [], `${root.slice(dataDir.length)}: every column of ${new Set(stored.map((c) => c.file)).size} files has its schema's Parquet type`)
      for (const c of stored) if (c.logical !== null && /JsonType|isAdjustedToUTC=1/.test(c.logical)) seen.add(`${root.slice(dataDir.length)} ${c.name}`)
    }
  })
  return seen
}

t.test('every Parquet file the service writes has its table schema’s physical and logical types', async (t) => {
  const dataDir = await makeTempDir(t)
  const recordDir = await makeTempDir(t)
  await sinkAndReleases(dataDir)
  await recordRun(t, recordDir)
  const seen = new Set([...(await checkFiles(t, dataDir)), ...(await checkFiles(t, recordDir))])
  for (const column of [
    '/parquet/decisions created_at', '/parquet/decisions conditions', '/parquet/venue.ticks ts', '/parquet/venue.ticks payload',
    '/rejected/decisions log_timestamp', '/parquet/record/runs taken_at', '/parquet/record/calibration_increments first_resolved',
    '/parquet/record/releases body', '/parquet/record/release_gates evaluation',
  ]) t.ok(seen.has(column), `${column} is stored TIMESTAMPTZ/JSON`)
})

/** The decisions table as it was written before the types: naive instants, JSON as text. */
function naive(c: ColumnSpec): string {
  return c.type === 'TIMESTAMPTZ' ? 'TIMESTAMP' : c.type === 'JSON' ? 'VARCHAR' : c.type
}

t.test('files written naive are rewritten once as the same UTC instants and JSON text; a file that cannot be is left as it was', async (t) => {
  const dataDir = await makeTempDir(t)
  const columns = fileColumns(sinkTables().find((table) => table.dir === 'decisions')!)
  const root = tableRoot(dataDir, 'decisions')
  const dir = groupDir(root, '2024-03-01', 'BTC')
  const values: Record<string, string> = { log_partition: '0', created_at: "TIMESTAMP '2024-03-01 23:00:00.123'", conditions: `'{"b":1e-7,"a":[1, 2]}'`, decision_id: `'d-1'` }
  const select = (offset: number, extra: Record<string, string> = {}) =>
    `SELECT ${columns.map((c) => `CAST(${{ ...values, log_offset: String(offset), ...extra }[c.name] ?? 'NULL'} AS ${naive(c)}) AS ${quoteIdent(c.name)}`).join(', ')}`
  await withDuck(async (conn) => {
    await mkdirData(dir)
    await mkdirData(join(anchorPath(root), '..'))
    await conn.run(`COPY (${select(0)}) TO ${sqlString(join(dir, sealedFileName({ partition: 0, firstOffset: 0, lastOffset: 0 })))} (FORMAT parquet)`)
    await conn.run(`COPY (${select(0)} WHERE false) TO ${sqlString(anchorPath(root))} (FORMAT parquet)`)
  })
  t.equal(await retypeOldParquet(dataDir, typedRoots(dataDir)), 2, 'the old file and the old anchor are rewritten')
  t.equal(await retypeOldParquet(dataDir, typedRoots(dataDir)), 0, 'once: the marker skips the scan')
  await checkFiles(t, dataDir)
  const row = await withDuck(async (conn) => {
    // A session that is not UTC: a naive value would print (and compare) shifted; the stored instant does not.
    await conn.run(`SET TimeZone = 'America/New_York'`)
    return (await conn.runAndReadAll(`SELECT epoch_ms(created_at) AS ms, conditions, typeof(conditions) AS jt FROM read_parquet(${sqlString(join(root, '**', '*.parquet'))}) WHERE decision_id = 'd-1'`)).getRowObjectsJson()
  })
  t.same(row, [{ ms: String(Date.parse('2024-03-01T23:00:00.123Z')), conditions: '{"b":1e-7,"a":[1, 2]}', jt: 'JSON' }], 'the same UTC instant and the JSON text verbatim')

  // Text that is not JSON in a JSON column: the file stays as it was, no marker, a later open tries again.
  await rm(join(dataDir, PARQUET_ROOT, TYPED_MARKER))
  await withDuck(async (conn) => {
    await conn.run(`COPY (${select(1, { conditions: `'not json {'` })}) TO ${sqlString(join(dir, sealedFileName({ partition: 0, firstOffset: 1, lastOffset: 1 })))} (FORMAT parquet)`)
  })
  t.equal(await retypeOldParquet(dataDir, typedRoots(dataDir)), 0, 'nothing rewritten')
  t.notOk((await readdir(join(dataDir, PARQUET_ROOT))).includes(TYPED_MARKER), 'no marker while a file keeps its old types')
  const kept = await withDuck((conn) => storedColumns(conn, dir))
  t.same(kept.filter((c) => c.name === 'conditions').map((c) => [c.file.slice(dir.length + 1), storedColumnType(c)]), [
    ['p0-000000000000-000000000000.parquet', 'JSON'],
    ['p0-000000000001-000000000001.parquet', 'VARCHAR'],
  ], 'the file whose text is not JSON is left exactly as it was')
})

const skip = skipUnlessTool(t, pythonImportMissing(PYTHON, ['pyarrow', 'polars'], 'pip install -r .ci/requirements.txt'), 'the pyarrow/polars types test')

t.test('pyarrow and polars read a UTC-aware created_at and JSON-typed columns straight from the sealed files', { skip }, async (t) => {
  const dataDir = await makeTempDir(t)
  await sinkAndReleases(dataDir)
  const dir = groupDir(tableRoot(dataDir, 'decisions'), '2026-07-01', 'BTC')
  const file = join(dir, (await readdir(dir)).find((n) => n.endsWith('.parquet'))!)
  const r = spawnSync(PYTHON, [SCRIPT, file], { encoding: 'utf8' })
  t.equal(r.status, 0, `the script ran: ${r.stderr}`)
  const seen = JSON.parse(r.stdout) as Record<string, Record<string, unknown>>
  const created = testDecision(1).created_at
  t.same(seen.pyarrow, {
    created_at: { timestamp: true, unit: 'us', tz: 'UTC' },
    created_at_first: created.replace('.000Z', '+00:00'),
    conditions_json: true,
    conditions_first: { window: '60m', threshold: 0.02 },
  }, 'pyarrow: timestamp[us, tz=UTC] and the arrow JSON extension type')
  t.same(seen.polars, {
    created_at: "Datetime(time_unit='us', time_zone='UTC')",
    created_at_first: created.replace('.000Z', '+00:00'),
    // polars' own reader does not know the Parquet JSON type and hands over the bytes; through pyarrow it is arrow.json.
    conditions_native: 'Binary',
    conditions_native_first: { window: '60m', threshold: 0.02 },
    conditions_via_pyarrow: "Extension('arrow.json', String, '')",
  }, 'polars: Datetime(us, UTC); the JSON column as its JSON bytes natively, arrow.json through pyarrow')
})
