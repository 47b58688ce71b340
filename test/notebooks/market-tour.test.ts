/**
 * notebooks/market-tour.ipynb, executed for real. The test generates a seeded tape, runs it through the real
 * pipeline (embedded log → Parquet → catalog), executes the notebook with Jupyter (nbconvert + ipykernel), and
 * checks the figures the notebook printed against the same data read through sql/Catalog.ts (read-only), with the
 * statistics recomputed here in TypeScript.
 *
 * Needs Python 3 with notebooks/requirements.txt installed. Without it, the test skips locally and fails under
 * CI=true, where .ci/run installs the requirements.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Catalog, withCatalog, type JsonRow } from '../../sql/Catalog.ts'
import { FUNDING_DEAD_BAND_PER_HOUR, NEUTRAL_FUNDING_PER_HOUR } from '../../pipeline/features/funding.ts'
import { makeTempDir } from '../helpers/tmp.ts'
import { executeNotebook as runNotebook } from '../helpers/jupyter.ts'

const run = promisify(execFile)
const ROOT = new URL('../../', import.meta.url).pathname
const SVC = join(ROOT, 'bin/svc.js')
const NOTEBOOK = join(ROOT, 'notebooks/market-tour.ipynb')
const PYTHON = process.env.PYTHON ?? 'python3'
const PY_MODULES = ['duckdb', 'pandas', 'nbconvert', 'nbclient', 'ipykernel', 'jupyter_core']
/** pandas' default display.precision is 6 decimals, so a printed figure is within 5e-7 of the value. */
const PRINTED = 1e-6

interface NotebookCell {
  id?: string
  cell_type: 'code' | 'markdown' | 'raw'
  execution_count?: number | null
  outputs?: NotebookOutput[]
}
interface NotebookOutput {
  output_type: 'stream' | 'execute_result' | 'display_data' | 'error'
  text?: string | string[]
  data?: Record<string, string | string[]>
  ename?: string
  evalue?: string
}
interface Notebook {
  cells: NotebookCell[]
}

const joined = (v: string | string[] | undefined): string => (Array.isArray(v) ? v.join('') : (v ?? ''))

/** Python with every notebook requirement importable, or why not. */
async function probePython(): Promise<{ ok: true; duckdb: string } | { ok: false; reason: string }> {
  try {
    const { stdout } = await run(PYTHON, ['-c', `import ${PY_MODULES.join(', ')}; print(duckdb.__version__)`])
    return { ok: true, duckdb: stdout.trim() }
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string }
    return { ok: false, reason: e.code === 'ENOENT' ? `${PYTHON} not found` : (e.stderr ?? e.message).trim().split('\n').at(-1) ?? e.message }
  }
}

async function executeNotebook(dataDir: string, outDir: string): Promise<Notebook> {
  return runNotebook<Notebook>({ python: PYTHON, notebook: NOTEBOOK, cwd: ROOT, outDir, env: { ...process.env, SVC_DATA_DIR: dataDir } })
}

function cell(nb: Notebook, id: string): NotebookCell {
  const found = nb.cells.find((c) => c.id === id)
  if (!found) throw new Error(`notebook has no cell ${id}`)
  return found
}

function printed(nb: Notebook, id: string): string {
  return (cell(nb, id).outputs ?? []).filter((o) => o.output_type === 'stream').map((o) => joined(o.text)).join('')
}

/** The first pandas HTML table a cell displayed, as its header cells and body rows (index cell first). */
function table(nb: Notebook, id: string): { header: string[]; rows: string[][] } {
  const html = (cell(nb, id).outputs ?? []).map((o) => joined(o.data?.['text/html'])).find((h) => h.includes('<table'))
  if (!html) throw new Error(`cell ${id} displayed no table`)
  const cells = (tr: string) => [...tr.matchAll(/<t[hd][^>]*>([\s\S]*?)<\/t[hd]>/g)].map((m) => m[1]!.replace(/<[^>]+>/g, '').trim())
  const trs = (part: string) => [...part.matchAll(/<tr[^>]*>([\s\S]*?)<\/tr>/g)].map((m) => cells(m[1]!))
  const thead = /<thead>([\s\S]*?)<\/thead>/.exec(html)?.[1] ?? ''
  const tbody = /<tbody>([\s\S]*?)<\/tbody>/.exec(html)?.[1] ?? ''
  return { header: trs(thead)[0] ?? [], rows: trs(tbody) }
}

/** Rows of a displayed table as objects keyed by column name. */
function records(nb: Notebook, id: string): Array<Record<string, string>> {
  const { header, rows } = table(nb, id)
  return rows.map((row) => Object.fromEntries(header.map((name, i) => [name, row[i] ?? ''])))
}

const num = (v: unknown): number => Number(v)
const line = (text: string, pattern: RegExp): string | undefined => pattern.exec(text)?.[1]

t.test('the committed notebook carries no outputs', async (t) => {
  const nb = JSON.parse(await readFile(NOTEBOOK, 'utf8')) as Notebook
  const code = nb.cells.filter((c) => c.cell_type === 'code')
  t.ok(code.length > 0, 'has code cells')
  for (const c of code) {
    t.same(c.outputs, [], `cell ${c.id}: no outputs (jupyter nbconvert --clear-output --inplace)`)
    t.equal(c.execution_count ?? null, null, `cell ${c.id}: no execution count`)
  }
})

const python = await probePython()
if (!python.ok) {
  const why = `Python/Jupyter unavailable (${python.reason}); run: ${PYTHON} -m pip install -r notebooks/requirements.txt`
  if (process.env.CI === 'true') t.fail(`CI=true requires the notebook test: ${why}`)
  else t.test('market-tour.ipynb executes under Jupyter', { skip: why }, async () => {})
} else {
  t.test('market-tour.ipynb runs on a real pipeline data dir and prints what the catalog holds', async (t) => {
    const dir = await makeTempDir(t, 'svc-notebook-')
    const tape = join(dir, 't.ndjson')
    const dataDir = join(dir, 'data')
    const gen = await run('node', [SVC, 'tape', 'generate', '--seed', '5', '--hours', '24', '--assets', 'BTC,ETH,SOL', '--out', tape])
    const tapeRecords = num(line(gen.stdout + gen.stderr, /(\d+) records →/))
    const pipe = await run('node', [SVC, 'pipeline', 'run', '--tape', tape, '--data-dir', dataDir])
    const sunk = num(line(pipe.stdout + pipe.stderr, /sink wrote (\d+) rows/))
    t.ok(tapeRecords > 0, `tape has ${tapeRecords} records`)
    t.equal(sunk, tapeRecords, 'the pipeline sank every tape record')

    // What the notebook should find, read here through the TypeScript catalog, read-only.
    const expected = await withCatalog(dataDir, { readOnly: true }, async (catalog: Catalog) => {
      const views = await catalog.query(`SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'main'`)
      const has = (name: string) => views.some((v) => v.table_name === name)
      const ledgerCount = async (name: string) => (has(name) ? num((await catalog.query(`SELECT count(*) AS n FROM "${name}"`))[0]!.n) : null)
      return {
        duckdbVersion: String((await catalog.query('SELECT version() AS v'))[0]!.v),
        views,
        total: num((await catalog.query('SELECT count(*) AS n FROM ticks'))[0]!.n),
        byKindAsset: await catalog.query('SELECT kind, asset, count(*) AS n FROM ticks GROUP BY ALL'),
        hourly: await catalog.query('SELECT asset, source, source_interval, hour, open, high, low, close FROM hourly_ohlc ORDER BY asset, source, source_interval, hour'),
        funding: await catalog.query('SELECT asset, source, rate, interval_hours FROM funding'),
        decisions: await ledgerCount('decisions'),
        outcomes: await ledgerCount('outcomes'),
      }
    })

    const nb = await executeNotebook(dataDir, dir)
    const errors = nb.cells.flatMap((c) => (c.outputs ?? []).filter((o) => o.output_type === 'error').map((o) => `${c.id}: ${o.ename}: ${o.evalue}`))
    t.same(errors, [], 'no cell raised')
    for (const c of nb.cells.filter((c) => c.cell_type === 'code')) t.type(c.execution_count, 'number', `cell ${c.id} ran`)

    t.test('setup: opens the catalog read-only with a DuckDB of the service minor version', async (t) => {
      const text = printed(nb, 'setup')
      t.match(text, `catalog:  ${join(dataDir, 'catalog.duckdb')} (read-only)`)
      t.equal(line(text, /duckdb:\s+(\d+\.\d+)\./), /^v(\d+\.\d+)\./.exec(expected.duckdbVersion)?.[1], `python duckdb ${python.duckdb} vs node ${expected.duckdbVersion}`)
    })

    t.test('views: every catalog object, all views', async (t) => {
      const listed = records(nb, 'views')
      t.same(listed.map((r) => r.name).sort(), expected.views.map((v) => String(v.table_name)).sort())
      t.ok(listed.every((r) => r.type === 'VIEW'), 'the catalog holds views only')
      t.match(printed(nb, 'views'), `views: ${expected.views.length}`)
    })

    t.test('tick counts: the total and every kind × asset cell', async (t) => {
      t.equal(num(line(printed(nb, 'tick-counts'), /total ticks: (\d+)/)), expected.total, 'total = count(*) from ticks')
      t.equal(expected.total, tapeRecords, 'total = records on the tape')
      const { header, rows } = table(nb, 'tick-counts')
      const shown = new Map<string, number>()
      for (const row of rows) header.forEach((asset, i) => i > 0 && asset !== 'total' && num(row[i]) > 0 && shown.set(`${row[0]}|${asset}`, num(row[i])))
      const want = new Map(expected.byKindAsset.map((r) => [`${r.kind}|${r.asset}`, num(r.n)]))
      t.same(Object.fromEntries(shown), Object.fromEntries(want))
      for (const row of rows) {
        const total = row.slice(1, -1).reduce((s, v) => s + num(v), 0)
        t.equal(num(row.at(-1)), total, `${row[0]}: total column`)
      }
    })

    // The estimators of the notebook's markdown, recomputed here from the rows of hourly_ohlc.
    const series = new Map<string, JsonRow[]>()
    for (const r of expected.hourly) {
      const key = `${r.asset}|${r.source}|${r.source_interval}`
      series.set(key, [...(series.get(key) ?? []), r])
    }

    t.test('hourly OHLC and realized volatility match a TypeScript recomputation', async (t) => {
      t.equal(num(line(printed(nb, 'hourly-ohlc'), /asset-hours: (\d+)/)), expected.hourly.length)
      const vols = records(nb, 'realized-vol')
      t.equal(vols.length, series.size, 'one row per series')
      t.same(vols.map((v) => v.asset).sort(), ['BTC', 'ETH', 'SOL'])
      for (const [key, rows] of series) {
        const [asset, source, interval] = key.split('|')
        const shown = vols.find((v) => v.asset === asset && v.source === source && v.source_interval === interval)
        if (!t.ok(shown, `${key} shown`) || !shown) continue
        let sumR2 = 0
        let spanHours = 0
        for (let i = 1; i < rows.length; i++) {
          const r = Math.log(num(rows[i]!.close) / num(rows[i - 1]!.close))
          sumR2 += r * r
          spanHours += (Date.parse(String(rows[i]!.hour)) - Date.parse(String(rows[i - 1]!.hour))) / 3_600_000
        }
        const parkinson = rows.reduce((s, r) => s + Math.log(num(r.high) / num(r.low)) ** 2, 0) / rows.length / (4 * Math.LN2)
        const move = 100 * (num(rows.at(-1)!.close) / num(rows[0]!.open) - 1)
        t.equal(num(shown.hours), rows.length, `${asset}: hours`)
        t.equal(rows.length, 24, `${asset}: a 24-hour tape of 1m bars fills 24 hours`)
        t.ok(Math.abs(num(shown.move_pct) - move) < PRINTED, `${asset}: move_pct ${shown.move_pct} ≈ ${move}`)
        t.ok(Math.abs(num(shown.cc_vol_pct_per_hour) - 100 * Math.sqrt(sumR2 / spanHours)) < PRINTED, `${asset}: close-to-close vol ${shown.cc_vol_pct_per_hour}`)
        t.ok(Math.abs(num(shown.parkinson_vol_pct_per_hour) - 100 * Math.sqrt(parkinson)) < PRINTED, `${asset}: Parkinson vol ${shown.parkinson_vol_pct_per_hour}`)
        t.ok(Math.abs(num(shown.cc_vol_pct_annualised) - 100 * Math.sqrt((sumR2 / spanHours) * 24 * 365)) < 1e-4, `${asset}: annualised`)
      }
    })

    t.test('funding against the 1.25e-05/h neutral matches a TypeScript recomputation', async (t) => {
      const shown = records(nb, 'funding')
      t.match(printed(nb, 'funding'), `funding settlements: ${expected.funding.length};`)
      const assets = [...new Set(expected.funding.map((r) => String(r.asset)))].sort()
      t.same(shown.map((r) => r.asset).sort(), assets)
      for (const asset of assets) {
        const perHour = expected.funding.filter((r) => r.asset === asset).map((r) => num(r.rate) / num(r.interval_hours))
        const row = shown.find((r) => r.asset === asset)!
        const mean = perHour.reduce((s, v) => s + v, 0) / perHour.length
        t.equal(num(row.settlements), perHour.length, `${asset}: settlements`)
        t.equal(num(row.above), perHour.filter((v) => v - NEUTRAL_FUNDING_PER_HOUR > FUNDING_DEAD_BAND_PER_HOUR).length, `${asset}: above`)
        t.equal(num(row.below), perHour.filter((v) => v - NEUTRAL_FUNDING_PER_HOUR < -FUNDING_DEAD_BAND_PER_HOUR).length, `${asset}: below`)
        t.equal(num(row.at_neutral), perHour.filter((v) => Math.abs(v - NEUTRAL_FUNDING_PER_HOUR) <= FUNDING_DEAD_BAND_PER_HOUR).length, `${asset}: at neutral`)
        t.ok(Math.abs(num(row.mean_bp_per_hour) - 1e4 * mean) < PRINTED, `${asset}: mean ${row.mean_bp_per_hour} bp/h`)
        t.ok(Math.abs(num(row.excess_bp_per_hour) - 1e4 * (mean - NEUTRAL_FUNDING_PER_HOUR)) < PRINTED, `${asset}: excess over neutral`)
      }
    })

    t.test('ledger: counted when the views exist, skipped by name when not', async (t) => {
      const text = printed(nb, 'ledger')
      for (const name of ['decisions', 'outcomes'] as const) {
        const count = expected[name]
        if (count === null) t.match(text, `${name}: no such view in this catalog; skipped`, `${name}: no view, reported as skipped`)
        else t.match(text, `${name}: ${count} rows`, `${name}: ${count} rows, as the catalog counts`)
      }
    })
  })

  t.test('market-tour.ipynb runs on a freshly applied, empty data dir', async (t) => {
    const dir = await makeTempDir(t, 'svc-notebook-empty-')
    const dataDir = join(dir, 'data')
    await Catalog.apply(dataDir)
    const nb = await executeNotebook(dataDir, dir)
    const errors = nb.cells.flatMap((c) => (c.outputs ?? []).filter((o) => o.output_type === 'error').map((o) => `${c.id}: ${o.ename}: ${o.evalue}`))
    t.same(errors, [], 'no cell raised on zero rows')
    t.match(printed(nb, 'tick-counts'), 'total ticks: 0')
    t.match(printed(nb, 'funding'), 'funding settlements: 0;')
  })
}
