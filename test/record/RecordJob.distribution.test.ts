/**
 * A distribution question in the measured record (issue 30, "the record measures what is sold"): the batch job scores
 * S01 by its whole distribution (multi-class Brier Σ_k (p_k − o_k)², −ln p(realized), reference = the realized class
 * frequencies, classwise ECE over one-vs-rest decile bands) and keeps its modal-class pairs as the secondary view. A
 * five-decision ledger (three S01 decisions, two binary ones) written in the sink's Parquet layout; every expected
 * figure below is worked by hand in the comments.
 */
import t from 'tap'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { selectAll } from '../../bench/syntheticLedger.ts'
import type { QuestionModel } from '../../models/QuestionModel.ts'
import { INDEX_VERSION } from '../../models/verification/dii.ts'
import { copyToSealedParquet, sqlString } from '../../pipeline/sinks/parquetFile.ts'
import { groupDir, sealedFileName, tableRoot } from '../../pipeline/sinks/parquetLayout.ts'
import { MeasuredRecord } from '../../record/MeasuredRecord.ts'
import { RecordDb } from '../../record/RecordDb.ts'
import { RecordJob } from '../../record/RecordJob.ts'
import { makeTempDir } from '../helpers/tmp.ts'
import type { TapTest } from '../helpers/logs.ts'

const CLASSES = ['trend_up', 'trend_down', 'range_volatile', 'range_quiet'] as const
const QUESTIONS = [
  { id: 'S01_market_regime', label: 'S01', answer: 'choice', classes: CLASSES, sold: true, horizonMs: 3_600_000 },
  { id: 'S05_volatility_expansion', label: 'S05', answer: 'probability', sold: true, horizonMs: 3_600_000 },
] as unknown as QuestionModel[]

type Row = { q: string; dist: Record<string, number> | null; choice: string | null; p: number; realized: string | null; outcome: 'obtains' | 'not' }
/**
 * S01: d1 chose trend_up (0.7), trend_up realized; d2 chose trend_up (0.4), trend_down realized; d3 chose range_quiet
 * (0.4), range_quiet realized. S05: two claims at 0.8, one obtains.
 */
const LEDGER: Row[] = [
  { q: 'S01_market_regime', dist: { trend_up: 0.7, trend_down: 0.1, range_volatile: 0.1, range_quiet: 0.1 }, choice: 'trend_up', p: 0.7, realized: 'trend_up', outcome: 'obtains' },
  { q: 'S01_market_regime', dist: { trend_up: 0.4, trend_down: 0.3, range_volatile: 0.2, range_quiet: 0.1 }, choice: 'trend_up', p: 0.4, realized: 'trend_down', outcome: 'not' },
  { q: 'S01_market_regime', dist: { trend_up: 0.1, trend_down: 0.2, range_volatile: 0.3, range_quiet: 0.4 }, choice: 'range_quiet', p: 0.4, realized: 'range_quiet', outcome: 'obtains' },
  { q: 'S05_volatility_expansion', dist: null, choice: null, p: 0.8, realized: null, outcome: 'obtains' },
  { q: 'S05_volatility_expansion', dist: null, choice: null, p: 0.8, realized: null, outcome: 'not' },
]

async function writeLedger(dataDir: string, rows: readonly Row[], first = 0): Promise<void> {
  const duck = await DuckDBInstance.create(':memory:')
  const conn = await duck.connect()
  const lit = (v: string | number | null) => (v === null ? 'NULL' : typeof v === 'number' ? `${v}::DOUBLE` : sqlString(v))
  const values = rows.map((r, i) => `(${first + i}, ${lit(r.q)}, ${lit(r.dist && JSON.stringify(r.dist))}, ${lit(r.choice)}, ${lit(r.p)}, ${lit(r.realized)}, ${lit(r.outcome)})`)
  const from = `(SELECT *, TIMESTAMP '2026-01-01 00:00:00' + INTERVAL (i) MINUTE AS created, lpad(i::VARCHAR, 8, '0') || '-0000-4000-8000-000000000000' AS id
    FROM (VALUES ${values.join(', ')}) AS v(i, q, dist, choice, p, realized, outcome))`
  const name = sealedFileName({ partition: 0, firstOffset: first, lastOffset: first + rows.length - 1 })
  try {
    await copyToSealedParquet(conn, selectAll('decisions', {
      log_partition: '0', log_offset: 'i', decision_id: 'id', question_id: 'q', event: `'e'`, horizon: `'60m'`, horizon_end: `created + INTERVAL 1 HOUR`,
      created_at: 'created', probability: 'p', confidence: '0.5', decision: `'claim'`, action: `'monitor'`, choice_id: 'choice', choice_distribution: 'dist',
      policy_version: `'policy-test'`, jev_version: `'jev-test'`, record_version: '1',
    }, from), join(groupDir(tableRoot(dataDir, 'decisions'), '2026-01-01', 'BTC'), name))
    await copyToSealedParquet(conn, selectAll('outcomes', {
      log_partition: '0', log_offset: 'i', decision_id: 'id', question_id: 'q', outcome: 'outcome', realized_choice: 'realized',
      resolved_at: `created + INTERVAL 65 MINUTE`, horizon_end: `created + INTERVAL 1 HOUR`, record_version: '1',
    }, from), join(groupDir(tableRoot(dataDir, 'outcomes'), '2026-01-01', 'BTC'), name))
  } finally {
    conn.closeSync()
    duck.closeSync()
  }
}

function close(t: TapTest, got: number | null | undefined, want: number, what: string): void {
  t.ok(typeof got === 'number' && Math.abs(got - want) <= 1e-12, `${what}: ${got} = ${want}`)
}

t.test('S01 is scored by its distribution; its modal class is the secondary view', async (t) => {
  const dataDir = await makeTempDir(t)
  const db = await RecordDb.open(dataDir)
  t.teardown(() => db.close())
  const job = await RecordJob.open(db, { questions: QUESTIONS, now: () => Date.parse('2026-01-02T00:00:00Z') })
  t.teardown(() => job.close())
  await writeLedger(dataDir, LEDGER)
  const run = await job.run()
  const record = new MeasuredRecord(db, { questions: QUESTIONS })

  // S01 alone. Σ_k (p_k − o_k)²: d1 .09+.01+.01+.01 = .12; d2 .16+.49+.04+.01 = .70; d3 .01+.04+.09+.36 = .50; mean 1.32/3 = .44.
  // Realized class frequencies 1/3, 1/3, 0, 1/3: reference Σ f(1 − f) = 2/3; BSS = 1 − .44/(2/3) = .34.
  // Log loss −(ln .7 + ln .3 + ln .4)/3. Classwise ECE: one-vs-rest Σ n_b|p̄ − ō| per class (each p in its own band
  // but range_quiet's two 0.1 in [0, 0.1]): trend_up .3+.4+.1, trend_down .1+.7+.2, range_volatile .1+.2+.3,
  // range_quiet 2(.1)+.6, total 3.2, over N·K = 12: 0.2666….
  const s01 = await record.calibration({ question_id: 'S01_market_regime', subject: null })
  t.equal(s01.buckets_grade, 'modal_class', 'the buckets grade the modal class, labelled')
  t.equal(s01.scores?.scored_as, 'distribution')
  t.equal(s01.scores?.n, 3)
  close(t, s01.scores?.brier, 0.44, 'S01 multi-class Brier')
  close(t, s01.scores?.reference_brier, 2 / 3, 'S01 reference: the realized class frequencies')
  close(t, s01.scores?.skill_vs_reference, 0.34, 'S01 BSS')
  close(t, s01.scores?.logloss, -Math.log(0.7 * 0.3 * 0.4) / 3, 'S01 log loss of the realized class')
  close(t, s01.scores?.ece, 3.2 / 12, 'S01 classwise ECE')
  const [row] = await db.query(`SELECT n, brier, logloss FROM distribution_brier WHERE question_id = 'S01_market_regime'`)
  t.equal(Number(row!.n), 3, 'distribution_brier view: n')
  close(t, Number(row!.brier), 0.44, 'distribution_brier view: the same Brier in SQL')

  // One-vs-rest reliability per class: trend_up's bands 0 (p .1, not), 3 (p .4, not), 6 (p .7, realized).
  t.same(s01.classes?.map((c) => [c.class, c.n, c.published]), CLASSES.map((c) => [c, 3, false]), 'every class, each counting every decision (below the floor of 30)')
  t.same(s01.classes?.find((c) => c.class === 'trend_up')?.buckets.map((b) => b.n), [1, 0, 0, 1, 0, 0, 1, 0, 0, 0], 'trend_up by the band of its probability')
  t.same(s01.classes?.find((c) => c.class === 'range_quiet')?.buckets.map((b) => b.n), [2, 0, 0, 1, 0, 0, 0, 0, 0, 0], 'range_quiet by the band of its probability')
  // Secondary: the modal pairs (.7, 1), (.4, 0), (.4, 1) in bands 6 and 3.
  t.same(s01.buckets.map((b) => b.n), [0, 0, 0, 2, 0, 0, 1, 0, 0, 0], 'the modal-class buckets')

  const s05 = await record.calibration({ question_id: 'S05_volatility_expansion', subject: null })
  t.equal(s05.buckets_grade, 'event')
  t.equal(s05.classes, null, 'a binary question has no classes')
  close(t, s05.scores?.brier, 0.34, 'S05 Brier (.04 + .64)/2')

  // Pooled per decision (N = 5): Brier (3 · .44 + 2 · .34)/5 = .4; UNC (3 · 2/3 + 2 · .25)/5 = .5; BSS .2; REL
  // (3 · .44 + 2 · .09)/5 = .3, RES (3 · 2/3 + 0)/5 = .4 (BS = REL − RES + UNC); ECE (3 · 3.2/12 + 2 · .3)/5 = .28.
  const s = run.snapshot!
  t.equal(s.index_version, INDEX_VERSION)
  t.equal(s.evidence.n_realized, 5)
  close(t, s.components.brier, 0.4, 'pooled Brier')
  close(t, s.components.uncertainty, 0.5, 'pooled UNC')
  close(t, s.benchmarks.reference_brier, 0.5, 'reference_brier')
  close(t, s.components.skill_vs_reference, 0.2, 'pooled BSS')
  close(t, s.components.reliability, 0.3, 'pooled REL')
  close(t, s.components.resolution, 0.4, 'pooled RES')
  close(t, s.components.ece, 0.28, 'pooled ECE')
  close(t, s.components.logloss, -(Math.log(0.7 * 0.3 * 0.4) + Math.log(0.8 * 0.2)) / 5, 'pooled log loss')
  t.equal(s.composite, null, 'below the floor of 100: no composite')
  const pooled = await record.calibration({ question_id: null, subject: null })
  t.equal(pooled.buckets_grade, 'pooled')
  close(t, pooled.scores?.brier, 0.4, 'the pooled report scores as the snapshot')

  // The modal-class view, secondary: pairs (.7,1) (.4,0) (.4,1) (.8,1) (.8,0): Brier 1.29/5 = .258, base rate .6,
  // UNC .24, BSS 1 − .258/.24 = −.075.
  t.equal(s.modal_class?.n, 5)
  close(t, s.modal_class?.brier, 0.258, 'modal-class Brier')
  close(t, s.modal_class?.skill_vs_reference, 1 - 0.258 / 0.24, 'modal-class BSS')

  // The snapshot as stored verifies, and reads back with its secondary figure.
  const read = await record.intelligence()
  t.equal(read.chain_verified, true)
  t.same(read.snapshot, s, 'the stored row is the snapshot')
  const curve = await record.curve({ window: 'all', from: null, index_version: INDEX_VERSION })
  t.same(curve.points.map((p) => [p.n_cum, p.index_version]), [[5, INDEX_VERSION]], 'the curve point carries its index version')
  close(t, curve.points[0]!.brier, 0.4, 'the curve plots the distribution-scored Brier')

  // A restarted job loads the class sums and adds a new run's: d4 states 0.25 on every class, range_volatile realized,
  // Σ_k (p_k − o_k)² = 3 · .0625 + .5625 = .75; S01 over four: (1.32 + .75)/4 = .5175.
  await job.close()
  const again = await RecordJob.open(db, { questions: QUESTIONS })
  t.teardown(() => again.close())
  t.equal((await again.run()).idle, true, 'nothing new')
  const even = { trend_up: 0.25, trend_down: 0.25, range_volatile: 0.25, range_quiet: 0.25 }
  await writeLedger(dataDir, [{ q: 'S01_market_regime', dist: even, choice: 'trend_up', p: 0.25, realized: 'range_volatile', outcome: 'not' }], LEDGER.length)
  const run2 = await again.run()
  t.equal(run2.snapshot?.evidence.n_realized, 6)
  record.invalidate()
  const s01b = await record.calibration({ question_id: 'S01_market_regime', subject: null })
  t.equal(s01b.scores?.n, 4)
  close(t, s01b.scores?.brier, 2.07 / 4, 'S01 Brier over two runs')
  close(t, run2.snapshot?.components.brier, (2.07 + 0.68) / 6, 'pooled Brier over two runs (the loaded totals plus the new run)')
})
