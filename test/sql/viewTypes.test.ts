/**
 * The types every catalog view hands a quant: instants TIMESTAMPTZ (never a naive TIMESTAMP, which a reader outside
 * DuckDB takes for local time) and counts BIGINT (never HUGEINT, the type of sum() over BIGINT, which pyarrow and
 * pandas get as a 128-bit decimal). Checked on the schema anchors alone, so every view of every .sql file is covered.
 */
import t from 'tap'
import { Catalog, withCatalog } from '../../sql/Catalog.ts'
import { makeTempDir } from '../helpers/tmp.ts'

t.test('no catalog view has a naive TIMESTAMP or a HUGEINT column', async (t) => {
  const dataDir = await makeTempDir(t)
  await Catalog.apply(dataDir)
  const cols = await withCatalog(dataDir, { readOnly: true }, (c) =>
    c.query(`SELECT table_name, column_name, data_type FROM duckdb_columns() WHERE NOT internal AND table_name IN (SELECT view_name FROM duckdb_views() WHERE NOT internal) ORDER BY ALL`))
  t.ok(cols.length > 300, `${cols.length} view columns checked`)
  t.same(cols.filter((c) => ['TIMESTAMP', 'HUGEINT'].includes(String(c.data_type))).map((c) => `${c.table_name}.${c.column_name} ${c.data_type}`), [], 'none naive, none HUGEINT')
  const typeOf = (view: string, column: string) => cols.find((c) => c.table_name === view && c.column_name === column)?.data_type
  for (const [view, column] of [['record_runs', 'taken_at'], ['priors', 'window_start'], ['decisions', 'created_at'], ['ticks', 'ts'], ['billing_draws', 'reversed_at']] as const) {
    t.equal(typeOf(view, column), 'TIMESTAMP WITH TIME ZONE', `${view}.${column} is TIMESTAMPTZ`)
  }
  for (const [view, column] of [['calibration', 'n'], ['calibration', 'question_n'], ['priors', 'n'], ['label_histogram', 'n'], ['billing_lots', 'remaining'], ['hourly_ohlc', 'bars']] as const) {
    t.equal(typeOf(view, column), 'BIGINT', `${view}.${column} is BIGINT`)
  }
  for (const [view, column] of [['ticks', 'payload'], ['decisions', 'conditions'], ['release_rows', 'body'], ['ladder_crossings', 'measured']] as const) {
    t.equal(typeOf(view, column), 'JSON', `${view}.${column} is JSON`)
  }
})
