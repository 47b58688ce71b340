/**
 * Spec, What the service does 2: "Decisions are kept on an append-only ledger. A recorded row is never altered."
 * Versioning 5: "no past row is mutated".
 *
 * 1. No source file (code or SQL, outside node_modules and this test) contains an UPDATE, DELETE, TRUNCATE, MERGE,
 *    INSERT OR REPLACE, ALTER or DROP aimed at a ledger table or its storage (decisions, outcomes, decision_rows,
 *    outcome_rows, parquet/decisions, parquet/outcomes), and sql/ defines views only (and table macros they use).
 * 2. The write path cannot alter a recorded row: the engine refuses a conflicting record with a recorded decision_id
 *    (test/engine/EngineRunner.test.ts), and when such a record reaches the log anyway the sink appends it and
 *    the `decisions` view still answers the first (checked here over real Parquet).
 */
import t from 'tap'
import { readdir, readFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { ParquetSink } from '../../pipeline/sinks/ParquetSink.ts'
import { DECISIONS, decisionKey, encodeDecision, type LedgerDecision } from '../../pipeline/records/decisionRecord.ts'
import { Catalog, SQL_DIR, sqlFiles, withCatalog } from '../../sql/Catalog.ts'
import { makeTempDir } from '../helpers/tmp.ts'

const ROOT = new URL('../../', import.meta.url).pathname
const LEDGER = String.raw`(decisions|outcomes|decision_rows|outcome_rows)`
const MUTATIONS = [
  new RegExp(String.raw`\bUPDATE\s+["'\x60]?${LEDGER}\b`, 'i'),
  new RegExp(String.raw`\bDELETE\s+FROM\s+["'\x60]?${LEDGER}\b`, 'i'),
  new RegExp(String.raw`\bTRUNCATE\s+(TABLE\s+)?["'\x60]?${LEDGER}\b`, 'i'),
  new RegExp(String.raw`\bMERGE\s+INTO\s+["'\x60]?${LEDGER}\b`, 'i'),
  new RegExp(String.raw`\bINSERT\s+OR\s+REPLACE\s+INTO\s+["'\x60]?${LEDGER}\b`, 'i'),
  new RegExp(String.raw`\bALTER\s+TABLE\s+["'\x60]?${LEDGER}\b`, 'i'),
  new RegExp(String.raw`\bDROP\s+(TABLE|VIEW)\s+(IF\s+EXISTS\s+)?["'\x60]?${LEDGER}\b`, 'i'),
  // Removing or rewriting sealed ledger files.
  /\b(rm|unlink|rename|writeFile)\w*\([^)]*parquet[/'"`,\s]+(decisions|outcomes)\b/i,
]

async function sourceFiles(dir: string, out: string[] = []): Promise<string[]> {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name.startsWith('.') || e.name === 'data') continue
    const p = join(dir, e.name)
    if (e.isDirectory()) await sourceFiles(p, out)
    else if (/\.(ts|js|mjs|sql|sh|py)$/.test(e.name)) out.push(p)
  }
  return out
}

t.test('no code path updates or deletes a ledger row', async (t) => {
  const files = await sourceFiles(ROOT)
  t.ok(files.length > 50, `scanned ${files.length} files`)
  const self = new URL(import.meta.url).pathname
  const hits: string[] = []
  for (const f of files) {
    if (f === self) continue
    const text = await readFile(f, 'utf8')
    for (const re of MUTATIONS) {
      const m = re.exec(text)
      if (m) hits.push(`${relative(ROOT, f)}: ${m[0]}`)
    }
  }
  t.same(hits, [], 'no UPDATE/DELETE/TRUNCATE/MERGE/ALTER/DROP against decisions or outcomes')
  t.ok(MUTATIONS[0]!.test('UPDATE decisions SET probability = 1') && MUTATIONS[1]!.test('delete from "outcome_rows" where 1'), 'the patterns do catch a mutation')

  for (const name of await sqlFiles()) {
    const statements = (await readFile(join(SQL_DIR, name), 'utf8'))
      .replace(/--.*$/gm, '')
      .split(';')
      .map((s) => s.trim())
      .filter(Boolean)
    for (const s of statements) t.match(s, /^CREATE OR REPLACE (VIEW|MACRO)\b/i, `${name}: views (and macros) only`)
  }
})

t.test('a conflicting record that reaches the log is appended, and the decisions view keeps the first', async (t) => {
  const dataDir = await makeTempDir(t)
  const first: LedgerDecision = {
    v: 1,
    decision_id: '0198a3c4-5e6f-8a0b-9c1d-2e3f4a5b6c7d',
    question_id: 'S05_volatility_expansion',
    asset: 'SOL',
    subject: null,
    event: 'SOL realized vol expands',
    horizon: '240m',
    horizon_end: '2026-07-01T04:00:00.000Z',
    created_at: '2026-07-01T00:00:00.000Z',
    conditions: { window_start: '2026-07-01T00:00Z' },
    probability: 0.2,
    confidence: 0.3,
    decision: 'unlikely',
    action: 'none',
    input_hash: 'a'.repeat(64),
    state_hash: 'b'.repeat(64),
    policy_version: 'policy-1.0.0',
    jev_version: 'jev-1.0.0',
    choice: null,
    payment_id: null,
    payment_rail: 'none',
    matched_rules: ['binary.unlikely'],
    refusal_reason: null,
    model_id: 'S05_volatility_expansion',
    fitted_version: null,
    policy_checksum: 'c'.repeat(64),
    journal: '{}',
  }
  const second: LedgerDecision = { ...first, probability: 0.9, decision: 'likely', action: 'alert' }
  const sink = await ParquetSink.open({ dataDir, tables: [DECISIONS.topicTable('decisions')] })
  const records = [first, second].map((d, i) => ({
    topic: 'decisions',
    partition: 0,
    offset: i,
    key: decisionKey(d),
    value: encodeDecision(d),
    timestamp: Date.parse(d.created_at),
  }))
  await sink.handle({ topic: 'decisions', partition: 0, records })
  await sink.close()
  await Catalog.apply(dataDir)
  await withCatalog(dataDir, { readOnly: true }, async (c) => {
    t.same(await c.query(`SELECT count(*) AS n FROM decision_rows`), [{ n: '2' }], 'both records are on the append-only ledger')
    t.same(await c.query(`SELECT probability, decision, log_offset FROM decisions`), [{ probability: 0.2, decision: 'unlikely', log_offset: '0' }], 'the view answers the first')
  })
})
