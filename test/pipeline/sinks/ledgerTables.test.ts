/**
 * Ledger records and their sink tables: canonical bytes, validation naming the field path, every record field in the
 * Parquet row, no drift between the TopicTables and the generated views (sql/002_journals.sql), and the SQL question catalog equal to the registry.
 */
import t from 'tap'
import { canonicalJson } from '../../../common/jcs.ts'
import { DECISIONS, decodeDecision, encodeDecision, validateDecision, DECISION_RECORD_SCHEMA, type LedgerDecision } from '../../../pipeline/records/decisionRecord.ts'
import { OUTCOMES_JOURNAL, decodeOutcome, encodeOutcome, type LedgerOutcome } from '../../../pipeline/records/outcomeRecord.ts'

const DECISIONS_COLUMNS = DECISIONS.columns
const OUTCOMES_COLUMNS = OUTCOMES_JOURNAL.columns
const decisionsTable = (topic: string) => DECISIONS.topicTable(topic)
const outcomesTable = (topic: string) => OUTCOMES_JOURNAL.topicTable(topic)
import { ParquetSink } from '../../../pipeline/sinks/ParquetSink.ts'
import { SINK_COLUMNS } from '../../../pipeline/sinks/TopicTable.ts'
import { QUESTIONS } from '../../../models/questions/index.ts'
import { Catalog, withCatalog } from '../../../sql/Catalog.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const decision: LedgerDecision = {
  v: 1,
  decision_id: '0198a3c4-5e6f-8a0b-9c1d-2e3f4a5b6c7d',
  question_id: 'S01_market_regime',
  asset: 'BTC',
  subject: null,
  event: 'BTC market regime from 2026-07-01T00:00Z to 2026-07-01T01:00Z',
  horizon: '60m',
  horizon_end: '2026-07-01T01:00:00.000Z',
  created_at: '2026-07-01T00:00:00.000Z',
  conditions: { window_start: '2026-07-01T00:00Z', predicted_class: 'range_quiet', baseline_per_hour: 0.004 },
  probability: 0.55,
  confidence: 0.4,
  decision: 'regime:range_quiet',
  action: 'monitor',
  input_hash: 'a'.repeat(64),
  state_hash: 'b'.repeat(64),
  policy_version: 'policy-1.0.0',
  jev_version: 'jev-1.0.0',
  choice: { choice_id: 'range_quiet', distribution: { range_quiet: 0.55, range_volatile: 0.2, trend_up: 0.15, trend_down: 0.1 } },
  payment_id: 'pay-1',
  payment_rail: 'credits',
  matched_rules: ['choice.monitor'],
  refusal_reason: null,
  model_id: 'S01_market_regime',
  fitted_version: 'grid3x3-dirichlet+shrink@0123456789ab',
  policy_checksum: 'c'.repeat(64),
  journal: '{"asset":"BTC"}',
}
const outcome: LedgerOutcome = {
  v: 1,
  decision_id: decision.decision_id,
  question_id: decision.question_id,
  asset: 'BTC',
  subject: null,
  outcome: 'obtains',
  resolved_at: '2026-07-01T01:05:00.000Z',
  horizon_end: decision.horizon_end,
  statistic: 0.0012,
  statistic_detail: { log_return: 0.0012, realized_class: 'range_quiet' },
  realized_choice: 'range_quiet',
  reason: null,
}

t.test('codecs: canonical bytes, round trip, field-path errors', async (t) => {
  const bytes = encodeDecision(decision)
  t.equal(bytes.toString('utf8'), canonicalJson(decision), 'the value is the RFC 8785 text')
  t.same(decodeDecision(bytes), decision)
  t.same(decodeOutcome(encodeOutcome(outcome)), outcome)
  t.throws(() => validateDecision({ ...decision, probability: 2 }), { code: 'LEDGER_RECORD_INVALID', path: '/probability' })
  t.throws(() => validateDecision({ ...decision, input_hash: 'sha256:xyz' }), { code: 'LEDGER_RECORD_INVALID', path: '/input_hash' })
  t.throws(() => validateDecision({ ...decision, extra: 1 }), { code: 'LEDGER_RECORD_INVALID', path: '/extra' })
  const { journal: _journal, ...missing } = decision
  t.throws(() => validateDecision(missing), { code: 'LEDGER_RECORD_INVALID', path: '/journal' })
  t.throws(() => decodeOutcome(JSON.stringify({ ...outcome, outcome: 'maybe' })), { code: 'LEDGER_RECORD_INVALID', path: '/outcome' })
})

t.test('sink tables carry every record field; views match the tables', async (t) => {
  const recordFields = Object.keys(DECISION_RECORD_SCHEMA.properties).filter((f) => f !== 'v' && f !== 'asset' && f !== 'choice')
  const columns = DECISIONS_COLUMNS.map((c) => c.name as string)
  for (const f of recordFields) t.ok(columns.includes(f), `decisions column ${f}`)
  t.ok(columns.includes('choice_id') && columns.includes('choice_distribution') && columns.includes('record_version'))

  const dataDir = await makeTempDir(t)
  const sink = await ParquetSink.open({ dataDir, tables: [decisionsTable('decisions'), outcomesTable('outcomes')] })
  await sink.handle({ topic: 'decisions', partition: 1, records: [{ topic: 'decisions', partition: 1, offset: 0, key: 'k', value: encodeDecision(decision), timestamp: 0 }] })
  await sink.handle({ topic: 'outcomes', partition: 2, records: [{ topic: 'outcomes', partition: 2, offset: 0, key: 'k', value: encodeOutcome(outcome), timestamp: 0 }] })
  await sink.close()
  await Catalog.apply(dataDir)
  await withCatalog(dataDir, { readOnly: true }, async (c) => {
    const [row] = await c.query(`SELECT * EXCLUDE (log_partition, log_offset) FROM decisions`)
    t.match(row, {
      decision_id: decision.decision_id,
      asset: 'BTC',
      horizon_end: '2026-07-01T01:00:00.000Z',
      created_at: '2026-07-01T00:00:00.000Z',
      conditions: canonicalJson(decision.conditions),
      choice_id: 'range_quiet',
      choice_distribution: canonicalJson(decision.choice!.distribution),
      matched_rules: '["choice.monitor"]',
      payment_id: 'pay-1',
      journal: decision.journal,
      date: '2026-07-01',
    })
    for (const [view, cols] of [['decision_rows', DECISIONS_COLUMNS], ['outcome_rows', OUTCOMES_COLUMNS]] as const) {
      const described = await c.query(`DESCRIBE ${view}`)
      const got = described.map((r) => `${r.column_name} ${r.column_type}`).sort()
      // Views carry the files' types: instants TIMESTAMPTZ and object/array fields JSON.
      const viewType = (x: { name: string; type: string }) => (x.type === 'TIMESTAMPTZ' ? 'TIMESTAMP WITH TIME ZONE' : x.type)
      const want = [...SINK_COLUMNS, ...cols].map((x) => `${x.name} ${viewType(x)}`).concat(['date DATE', 'asset VARCHAR']).sort()
      t.same(got, want, `no drift between the ${view} table and its view`)
    }
    t.same(await c.query(`SELECT decision_id, output, predicted_label, realized, match, observed, status FROM feed_chips`), [
      { decision_id: decision.decision_id, output: 'choice', predicted_label: 'range_quiet', realized: 'range_quiet', match: true, observed: null, status: 'obtains' },
    ])
    t.same(await c.query(`SELECT count(*) AS n FROM open_clocks`), [{ n: '0' }], 'a resolved clock is not open')
    const catalog = await c.query(`SELECT question_id, label, answer, scope, sold FROM question_catalog ORDER BY question_id`)
    t.same(catalog, QUESTIONS.map((q) => ({ question_id: q.id, label: q.label, answer: q.answer, scope: q.scope, sold: q.sold })), 'question_catalog = the registry')
  })
})
