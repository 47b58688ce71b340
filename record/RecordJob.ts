/**
 * The measured record's batch job: sealed decision and outcome Parquet in, the record's tables out (sql/recordTables.ts,
 * views in sql/020_record.sql). Runs on a schedule inside `svc start` and on demand (`svc record build`).
 *
 * Spec, What the service does 7: "The service publishes its own measured record: calibration reports, a composite
 * Decision Intelligence Index, a learning curve, sealed releases, base-rate priors…". Computation rules 1-5 are applied
 * in models/verification/bucketSums.ts (figures from band sums) and dii.ts (the index).
 *
 * Incremental: sealed Parquet files are immutable, so a run reads only the files no earlier run consumed (record_files
 * names them), pairs their outcomes with their decisions (looked up only in the date partitions a horizon can reach
 * back to), appends the band sums of the new pairs, and derives the new snapshot from the running totals. A run that
 * finds no new file writes nothing, so a rerun over the same data changes nothing.
 *
 * Atomic per run: the run's files are written first and its record_runs row last; the views and this job ignore rows
 * of a run with no record_runs row, and the next run reuses that run id, so a crash mid-run leaves nothing counted and
 * nothing counted twice.
 *
 * Which pairs count (the same rule as the ledger index): claims only (a refusal states no probability); the first
 * record per decision id; unresolvable outcomes count toward resolution_rate and never as a pair. An outcome file whose
 * decision is not sealed yet waits for a later run, whole.
 */
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from 'pino'
import { childLogger } from '../common/logger.ts'
import { DirLock } from '../pipeline/log/DirLock.ts'
import { sqlString } from '../pipeline/sinks/parquetFile.ts'
import { PARQUET_ROOT, coveredFileNames, manifestCovers, parseSealedFileName, tableRoot } from '../pipeline/sinks/parquetLayout.ts'
import type { QuestionModel } from '../models/QuestionModel.ts'
import { QUESTIONS } from '../models/questions/index.ts'
import {
  DECILE_BANDS, LOG_LOSS_EPSILON, mergeBandSums, recordScoresOf, scoresFromBands, type BandSums, type ClassBandSums, type RecordScores,
} from '../models/verification/bucketSums.ts'
import { CALIBRATION_BAND_FLOOR, QUESTION_CALIBRATION_FLOOR } from '../models/verification/calibrationReport.ts'
import { decisionIntelligenceIndex, INDEX_VERSION } from '../models/verification/dii.ts'
import {
  CALIBRATION_INCREMENTS, CLASS_INCREMENTS, INTELLIGENCE_SNAPSHOTS, LABEL_INCREMENTS, LADDER_CROSSINGS, RECORD_FILES, RECORD_RUNS,
  recordFileName, recordTableRoot, type RecordTable,
} from '../sql/recordTables.ts'
import type { RecordDb } from './RecordDb.ts'
import { RecordError } from './RecordError.ts'
import { LADDER_NOTICE_MS, nextCrossing, type LadderCrossing, type ReleaseFacts } from './ladder.ts'
import { snapshotOfRow, snapshotRowHash, type IntelligenceSnapshot } from './snapshot.ts'
import { DAY_MS } from '../common/time.ts'

const HIVE = "hive_partitioning = true, union_by_name = true, hive_types = {'date': DATE, 'asset': VARCHAR}"

export interface RecordJobOptions {
  /** The question catalog (its horizons bound how far back an outcome's decision can be). */
  questions?: readonly QuestionModel[]
  /** Wall clock for taken_at and the ladder's notice window. */
  now?: () => number
  /** Release facts for the snapshot (active_release) and the ladder's release gates; absent: no release is active. */
  releases?: ReleaseFacts | null
  /** Ladder notice window. Default LADDER_NOTICE_MS (7 days). */
  ladderNoticeMs?: number
  /**
   * The crowd benchmark when the snapshot is taken (the duel's graded player calls, a port the composition root fills
   * from product/duel, above this layer); null or absent: the snapshot has no crowd line.
   */
  crowd?: () => CrowdLine | null
}

/** benchmarks.crowd of a snapshot (record/schemas.ts). */
export interface CrowdLine {
  brier: number
  n: number
  house_brier?: number
}

/** The snapshot's crowd line: present only when the source has one (spec: "below its floor the line is absent"). */
function crowdLine(c: CrowdLine | null): { crowd?: CrowdLine } {
  if (!c || !(c.n > 0)) return {}
  return { crowd: { brier: c.brier, n: c.n, ...(c.house_brier === undefined ? {} : { house_brier: c.house_brier }) } }
}

export interface RecordRunSummary {
  run_id: number | null
  /** Nothing new: nothing was written. */
  idle: boolean
  decision_files: number
  outcome_files: number
  /** Outcome files left for a later run because a decision they resolve is not sealed yet. */
  held_files: number
  new_pairs: number
  new_unresolvable: number
  new_decisions: number
  snapshot: IntelligenceSnapshot | null
  crossing: LadderCrossing | null
  /** Wall time per step, ms (listing, counting decisions, pairing, aggregating, writing). */
  timings_ms: Record<string, number>
}

interface Totals {
  /** Band sums per question (pooled over subjects): binary pairs, and distribution questions' modal-class pairs. */
  byQuestion: Map<string, BandSums[]>
  /** One-vs-rest band sums of distribution questions per question and class (pooled over subjects). */
  byClass: Map<string, ClassBandSums[]>
  n_unresolvable: number
  n_decisions: number
  n_refused: number
  window_start: string | null
  window_end: string | null
}

interface SealedListing {
  /** Path relative to the table root (date=…/asset=…/p…parquet), the record_files key. */
  rel: string
  abs: string
  date: string
}

/**
 * Sealed files of one sink table (schema anchors and temp files excluded, and files a compaction merged but has not
 * deleted yet: their rows are in the merged file, pipeline/sinks/ParquetCompactor.ts).
 */
async function listSealed(root: string): Promise<SealedListing[]> {
  const out: SealedListing[] = []
  for (const dateDir of await readdirOrEmpty(root)) {
    if (!dateDir.startsWith('date=')) continue
    for (const assetDir of await readdirOrEmpty(join(root, dateDir))) {
      if (!assetDir.startsWith('asset=')) continue
      const names = await readdirOrEmpty(join(root, dateDir, assetDir))
      const covered = coveredFileNames(names)
      for (const name of names) {
        if (!parseSealedFileName(name) || covered.has(name)) continue
        const rel = `${dateDir}/${assetDir}/${name}`
        out.push({ rel, abs: join(root, rel), date: dateDir.slice(5) })
      }
    }
  }
  return out.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0))
}

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).sort()
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw err
  }
}

function fileList(files: readonly { abs: string }[]): string {
  return `[${files.map((f) => sqlString(f.abs)).join(', ')}]`
}

function num(v: unknown): number {
  return v === null || v === undefined ? 0 : Number(v)
}

/** The band index of the calibration report ('(a,b]', first band [0, 0.1]) as SQL: the count of interior edges below p. */
function bandSql(p: string): string {
  const edges = Array.from({ length: DECILE_BANDS - 1 }, (_, j) => `(${p} > CAST('${(j + 1) / DECILE_BANDS}' AS DOUBLE))::INTEGER`)
  return `(${edges.join(' + ')})`
}

/**
 * What helps when the record tables are taken: the holder is most often a running `svc start`, which runs this very job
 * on its schedule; reading never needs the lock. (The event log's advice, Kafka, would not help: the tables are files.)
 */
const RECORD_LOCK_HINT = 'one writer per data folder: a running `svc start` runs this job every SVC_RECORD_INTERVAL_S, so let it, or stop that process first; reading needs no lock: `svc record show`, GET /v1/intelligence, or `duckdb -readonly` on the catalog'

export class RecordJob {
  private readonly log: Logger = childLogger('record-job')
  private readonly processed = { decisions: new Set<string>(), outcomes: new Set<string>() }
  private totals: Totals = { byQuestion: new Map(), byClass: new Map(), n_unresolvable: 0, n_decisions: 0, n_refused: 0, window_start: null, window_end: null }
  private lastRunId = 0
  private lastSnapshot: IntelligenceSnapshot | null = null
  private crossings: LadderCrossing[] = []
  private running: Promise<RecordRunSummary> | null = null
  private readonly maxHorizonMs: number
  private readonly now: () => number
  private readonly noticeMs: number

  private constructor(
    private readonly db: RecordDb,
    private readonly lock: DirLock,
    private readonly options: RecordJobOptions,
  ) {
    const horizons = (options.questions ?? QUESTIONS).map((q) => q.horizonMs).filter((h) => Number.isFinite(h) && h > 0)
    // One day of slack over the longest horizon: a decision's date partition is its created_at day.
    this.maxHorizonMs = Math.max(DAY_MS, ...horizons) + DAY_MS
    this.now = options.now ?? Date.now
    this.noticeMs = options.ladderNoticeMs ?? LADDER_NOTICE_MS
  }

  /** Takes the record tables' lock (one writer per data dir) and loads the running totals from the committed runs. */
  static async open(db: RecordDb, options: RecordJobOptions = {}): Promise<RecordJob> {
    const root = join(db.dataDir, PARQUET_ROOT, 'record')
    let lock: DirLock
    try {
      lock = await DirLock.acquire(root, childLogger('record-job'), RECORD_LOCK_HINT)
    } catch (err) {
      throw new RecordError('RECORD_LOCKED', `the record tables are being written by another process: ${(err as Error).message}`, { cause: err })
    }
    const job = new RecordJob(db, lock, options)
    try {
      await job.load()
    } catch (err) {
      await lock.release()
      throw err
    }
    return job
  }

  private async load(): Promise<void> {
    const runs = await this.db.query('SELECT coalesce(max(run_id), 0) AS last, coalesce(sum(n_decisions), 0) AS d, coalesce(sum(n_refused), 0) AS r FROM record_runs')
    this.lastRunId = num(runs[0]?.last)
    this.totals.n_decisions = num(runs[0]?.d)
    this.totals.n_refused = num(runs[0]?.r)
    for (const row of await this.db.query('SELECT source, file FROM record_files')) {
      const set = row.source === 'decisions' ? this.processed.decisions : this.processed.outcomes
      set.add(String(row.file))
    }
    const bands = await this.db.query(`
      SELECT question_id, bucket, sum(n) AS n, sum(sum_p) AS sum_p, sum(sum_y) AS sum_y, sum(sum_p2) AS sum_p2,
             sum(sum_py) AS sum_py, sum(sum_sq) AS sum_sq, sum(sum_ll) AS sum_ll
      FROM calibration_increments WHERE bucket IS NOT NULL GROUP BY ALL ORDER BY question_id, bucket`)
    this.addBands(bands)
    this.addClassBands(await this.db.query(`
      SELECT question_id, class, bucket, sum(n) AS n, sum(sum_p) AS sum_p, sum(sum_y) AS sum_y, sum(sum_p2) AS sum_p2,
             sum(sum_py) AS sum_py, sum(sum_sq) AS sum_sq, sum(sum_ll) AS sum_ll
      FROM class_increments GROUP BY ALL ORDER BY question_id, class, bucket`))
    this.warnPredating()
    const other = await this.db.query(`
      SELECT coalesce(sum(n_unresolvable), 0) AS u, min(first_resolved) AS first, max(last_resolved) AS last FROM calibration_increments`)
    this.totals.n_unresolvable = num(other[0]?.u)
    this.totals.window_start = (other[0]?.first as string | null) ?? null
    this.totals.window_end = (other[0]?.last as string | null) ?? null
    const snaps = await this.db.query(`SELECT * FROM intelligence_snapshots WHERE seq = (SELECT max(seq) FROM intelligence_snapshots)`)
    this.lastSnapshot = snaps[0] ? snapshotOfRow(snaps[0]) : null
    this.crossings = (await this.db.query('SELECT rung, crossed_at, effective_at, measured FROM ladder_crossings ORDER BY rung')).map((r) => ({
      rung: num(r.rung),
      crossed_at: String(r.crossed_at),
      effective_at: String(r.effective_at),
      measured: String(r.measured),
    }))
  }

  private addBands(rows: readonly Record<string, unknown>[]): void {
    for (const r of rows) {
      const q = String(r.question_id)
      const prev = this.totals.byQuestion.get(q) ?? mergeBandSums([])
      this.totals.byQuestion.set(q, mergeBandSums([...prev, {
        bucket: num(r.bucket), n: num(r.n), sum_p: num(r.sum_p), sum_y: num(r.sum_y), sum_p2: num(r.sum_p2),
        sum_py: num(r.sum_py), sum_sq: num(r.sum_sq), sum_ll: num(r.sum_ll),
      }]))
    }
  }

  /**
   * A record whose earlier runs predate the class sums (index 1.0.0) counted distribution decisions as modal pairs
   * only: those decisions are missing from the distribution scores (a question with no class sums at all is scored by
   * its modal pairs). Nothing is rewritten (runs are append-only); the operator is told how many, and that a rebuild
   * (the record folder moved aside, `svc record build`) scores them all.
   */
  private warnPredating(): void {
    const choice = new Set((this.options.questions ?? QUESTIONS).filter((q) => q.answer === 'choice').map((q) => q.id))
    for (const q of new Set([...choice, ...this.totals.byClass.keys()])) {
      const modal = (this.totals.byQuestion.get(q) ?? []).reduce((s, b) => s + b.n, 0)
      const byClass = new Map<string, number>()
      for (const r of this.totals.byClass.get(q) ?? []) byClass.set(r.class, (byClass.get(r.class) ?? 0) + r.n)
      const scored = Math.max(0, ...byClass.values())
      if (modal > scored) {
        this.log.warn({ question_id: q, modal_pairs: modal, distribution_scored: scored }, 'record runs before index 1.1.0 counted these distribution decisions by their modal class only; rebuild the record to score them by their distribution')
      }
    }
  }

  private addClassBands(rows: readonly Record<string, unknown>[]): void {
    for (const r of rows) {
      const q = String(r.question_id)
      this.totals.byClass.set(q, [...(this.totals.byClass.get(q) ?? []), {
        class: String(r.class), bucket: num(r.bucket), n: num(r.n), sum_p: num(r.sum_p), sum_y: num(r.sum_y), sum_p2: num(r.sum_p2),
        sum_py: num(r.sum_py), sum_sq: num(r.sum_sq), sum_ll: num(r.sum_ll),
      }])
    }
  }

  /**
   * The sealed files committed runs consumed, per sink table dir (relative paths, as record_files holds them): the
   * compactor merges only runs of these in the ledger tables, so a merged file holds nothing this job has not counted.
   */
  static async consumedFiles(db: RecordDb): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>([['decisions', []], ['outcomes', []]])
    for (const row of await db.query('SELECT source, file FROM record_files')) out.get(String(row.source))?.push(String(row.file))
    return out
  }

  /** The latest committed snapshot (null before the first). */
  get snapshot(): IntelligenceSnapshot | null {
    return this.lastSnapshot
  }

  get ladderCrossings(): readonly LadderCrossing[] {
    return this.crossings
  }

  /** One run; concurrent callers share the run in progress. */
  run(): Promise<RecordRunSummary> {
    if (!this.running) this.running = this.runOnce().finally(() => { this.running = null })
    return this.running
  }

  private async runOnce(): Promise<RecordRunSummary> {
    const dataDir = this.db.dataDir
    // A merged file of files this job counted is counted too (manifestCovers): compaction renames, it adds nothing.
    const countedDecision = manifestCovers(this.processed.decisions)
    const countedOutcome = manifestCovers(this.processed.outcomes)
    const decisionFiles = (await listSealed(tableRoot(dataDir, 'decisions'))).filter((f) => !countedDecision(f.rel))
    let outcomeFiles = (await listSealed(tableRoot(dataDir, 'outcomes'))).filter((f) => !countedOutcome(f.rel))
    const summary: RecordRunSummary = {
      run_id: null, idle: true, decision_files: 0, outcome_files: 0, held_files: 0,
      new_pairs: 0, new_unresolvable: 0, new_decisions: 0, snapshot: null, crossing: null, timings_ms: {},
    }
    let mark = performance.now()
    const lap = (step: string) => {
      const now = performance.now()
      summary.timings_ms[step] = Math.round(now - mark)
      mark = now
    }
    lap('list')
    if (decisionFiles.length === 0 && outcomeFiles.length === 0) return summary
    const runId = this.lastRunId + 1
    const db = this.db

    // New outcomes paired with their decisions (first record per id on both sides), and aggregated in the same pass:
    // one join, grouped by question, asset, subject, band and realized label (labels need no second pass). Outcomes
    // without a sealed decision land in the paired = false group; their files then wait for a later run (rare: the
    // sink seals a decision hours before its outcome), and the pass is redone without them.
    const eps = `CAST('${LOG_LOSS_EPSILON}' AS DOUBLE)`
    const grouped = (files: readonly SealedListing[], candidates: readonly SealedListing[], dedupe: boolean) => {
      const decisions = candidates.length === 0
        ? `SELECT NULL::VARCHAR AS decision_id, NULL::BIGINT AS log_offset, NULL::DOUBLE AS probability, NULL::VARCHAR AS choice_id,
             NULL::VARCHAR AS choice_distribution, NULL::VARCHAR AS action WHERE false`
        : `SELECT decision_id, log_offset, probability, choice_id, choice_distribution, action FROM read_parquet(${fileList(candidates)}, ${HIVE})`
      // Join the raw records, then keep one row per decision id: the lowest outcome offset, then the lowest decision
      // offset (one id always sits on one partition, so offsets order its records). One join and one grouping: the
      // first record on both sides, as the catalog's `decisions` and `outcomes` views keep.
      return `
        WITH o AS (
          SELECT decision_id, log_offset, question_id, asset, subject, outcome, resolved_at, realized_choice FROM read_parquet(${fileList(files)}, ${HIVE})
        ), d AS (${decisions}),
        firsts AS (${dedupe
          ? `SELECT min(struct_pack(oo := o.log_offset, od := d.log_offset, question_id := o.question_id, asset := o.asset, subject := o.subject,
                   outcome := o.outcome, resolved_at := o.resolved_at, realized_choice := o.realized_choice, p := d.probability, c := d.choice_id,
                   dist := d.choice_distribution, a := d.action)) AS f
             FROM o LEFT JOIN d USING (decision_id) GROUP BY o.decision_id`
          : `SELECT struct_pack(oo := o.log_offset, od := d.log_offset, question_id := o.question_id, asset := o.asset, subject := o.subject,
                   outcome := o.outcome, resolved_at := o.resolved_at, realized_choice := o.realized_choice, p := d.probability, c := d.choice_id,
                   dist := d.choice_distribution, a := d.action) AS f
             FROM o LEFT JOIN d USING (decision_id)`}
        ), j AS (
          SELECT f.question_id, f.asset, f.subject, f.outcome, f.resolved_at, f.realized_choice, f.p, f.dist, f.od IS NOT NULL AS paired,
                 CASE WHEN f.od IS NULL OR f.outcome = 'unresolvable' THEN NULL
                      WHEN f.c IS NOT NULL THEN (f.realized_choice IS NOT DISTINCT FROM f.c)::INTEGER
                      ELSE (f.outcome = 'obtains')::INTEGER END AS y
          FROM firsts
          WHERE f.od IS NULL OR f.a <> 'refuse'
        ), dj AS (
          SELECT *, json_transform(dist, '"MAP(VARCHAR, DOUBLE)"') AS m FROM j WHERE y IS NOT NULL AND dist IS NOT NULL
        ), k AS (
          -- A distribution decision's one-vs-rest rows: one per class of its distribution (class NULL: the pair above).
          SELECT question_id, asset, subject, outcome, resolved_at, paired, realized_choice, unnest(map_keys(m)) AS class, unnest(map_values(m)) AS p FROM dj
          UNION ALL
          SELECT question_id, asset, subject, outcome, resolved_at, paired, realized_choice, realized_choice AS class, 0.0 AS p FROM dj
          WHERE realized_choice IS NOT NULL AND NOT list_contains(map_keys(m), realized_choice)
        ), u AS (
          SELECT question_id, asset, subject, outcome, resolved_at, paired, NULL::VARCHAR AS class, p, y,
                 CASE WHEN y IS NULL THEN NULL ELSE coalesce(realized_choice, outcome) END AS label
          FROM j
          UNION ALL
          SELECT question_id, asset, subject, outcome, resolved_at, paired, class, p, (class IS NOT DISTINCT FROM realized_choice)::INTEGER AS y, NULL AS label FROM k
        ), b AS (
          SELECT *, CASE WHEN y IS NULL THEN NULL ELSE ${bandSql('p')} END AS bucket,
                 CASE WHEN y IS NULL THEN NULL ELSE least(1 - ${eps}, greatest(${eps}, p)) END AS q
          FROM u)
        SELECT paired, question_id, asset, subject, class, bucket, label,
               count(*) FILTER (WHERE y IS NOT NULL) AS n,
               count(*) FILTER (WHERE paired AND outcome = 'unresolvable') AS n_unresolvable,
               count(*) FILTER (WHERE NOT paired) AS n_unpaired,
               coalesce(sum(p) FILTER (WHERE y IS NOT NULL), 0) AS sum_p,
               coalesce(sum(y), 0)::DOUBLE AS sum_y,
               coalesce(sum(p * p) FILTER (WHERE y IS NOT NULL), 0) AS sum_p2,
               coalesce(sum(p * y), 0) AS sum_py,
               coalesce(sum((p - y) * (p - y)), 0) AS sum_sq,
               -- A pair's log loss; a class row's term −o_k·ln p_k (summed over a decision's classes: −ln p(realized)).
               coalesce(sum(CASE WHEN class IS NULL THEN -(y * ln(q) + (1 - y) * ln(1 - q)) ELSE -y * ln(q) END), 0) AS sum_ll,
               min(resolved_at) FILTER (WHERE paired) AS first_resolved, max(resolved_at) FILTER (WHERE paired) AS last_resolved
        FROM b GROUP BY ALL`
    }
    let held = new Set<string>()
    let pairingCandidates: SealedListing[] = []
    let candidatesUnique = false
    await db.run(`CREATE OR REPLACE TEMP TABLE record_new_groups AS SELECT NULL::BOOLEAN AS paired WHERE false`)
    if (outcomeFiles.length > 0) {
      const earliest = await db.query(`SELECT min(horizon_end) AS h FROM read_parquet(${fileList(outcomeFiles)}, ${HIVE})`)
      const fromMs = Date.parse(String(earliest[0]?.h)) - this.maxHorizonMs
      const fromDate = new Date(Number.isFinite(fromMs) ? fromMs : 0).toISOString().slice(0, 10)
      const candidates = (await listSealed(tableRoot(dataDir, 'decisions'))).filter((f) => f.date >= fromDate)
      // Every id once on each side (the rule, unless a producer wrote a conflicting record): then the first record per
      // id is the only one and the pass needs no grouping by id, which would cost more than the join itself.
      const repeats = async (files: readonly SealedListing[]) =>
        files.length === 0 ? 0 : num((await db.query(`SELECT count(*) - count(DISTINCT decision_id) AS r FROM read_parquet(${fileList(files)}, union_by_name = true)`))[0]?.r)
      pairingCandidates = candidates
      candidatesUnique = (await repeats(candidates)) === 0
      const dedupe = !candidatesUnique || (await repeats(outcomeFiles)) > 0
      await db.run(`CREATE OR REPLACE TEMP TABLE record_new_groups AS ${grouped(outcomeFiles, candidates, dedupe)}`)
      const unpaired = num((await db.query('SELECT coalesce(sum(n_unpaired), 0) AS n FROM record_new_groups'))[0]?.n)
      if (unpaired > 0) {
        const ids = candidates.length === 0 ? 'SELECT NULL::VARCHAR AS decision_id WHERE false' : `SELECT decision_id FROM read_parquet(${fileList(candidates)}, union_by_name = true)`
        held = new Set((await db.query(`
          SELECT DISTINCT filename FROM read_parquet(${fileList(outcomeFiles)}, union_by_name = true, filename = true)
          WHERE decision_id NOT IN (${ids})`)).map((r) => String(r.filename)))
        outcomeFiles = outcomeFiles.filter((f) => !held.has(f.abs))
        this.log.info({ held: held.size, unpaired }, 'outcome files wait for their decisions to be sealed')
        if (outcomeFiles.length > 0) await db.run(`CREATE OR REPLACE TEMP TABLE record_new_groups AS ${grouped(outcomeFiles, candidates, dedupe)}`)
        else await db.run(`DELETE FROM record_new_groups`)
      }
    }
    summary.held_files = held.size
    lap('pair_and_aggregate')

    // New decisions, counted once (n_decisions, n_refused). When the pairing found every candidate id once and the
    // new decision files are among the candidates, they hold no repeated id and a plain count is exact.
    let newDecisions = 0
    let newRefused = 0
    if (decisionFiles.length > 0) {
      const candidateSet = new Set(pairingCandidates.map((f) => f.abs))
      const plain = candidatesUnique && decisionFiles.every((f) => candidateSet.has(f.abs))
      const r = await db.query(plain
        ? `SELECT count(*) AS n, count(*) FILTER (WHERE action = 'refuse') AS refused FROM read_parquet(${fileList(decisionFiles)}, union_by_name = true)`
        : `SELECT count(*) AS n, count(*) FILTER (WHERE first.a = 'refuse') AS refused FROM (
             SELECT min(struct_pack(o := log_offset, a := action)) AS first FROM read_parquet(${fileList(decisionFiles)}, ${HIVE})
             GROUP BY decision_id)`)
      newDecisions = num(r[0]?.n)
      newRefused = num(r[0]?.refused)
    }
    lap('count_decisions')
    if (decisionFiles.length === 0 && outcomeFiles.length === 0) return summary

    const increments = outcomeFiles.length === 0
      ? `SELECT ${runId}::BIGINT AS run_id, ${CALIBRATION_INCREMENTS.columns.filter((c) => c.name !== 'run_id').map((c) => `NULL::${c.type} AS ${c.name}`).join(', ')} WHERE false`
      : `SELECT ${runId}::BIGINT AS run_id, question_id, asset, subject, bucket, sum(n)::BIGINT AS n, sum(n_unresolvable)::BIGINT AS n_unresolvable,
               sum(sum_p) AS sum_p, sum(sum_y) AS sum_y, sum(sum_p2) AS sum_p2, sum(sum_py) AS sum_py, sum(sum_sq) AS sum_sq, sum(sum_ll) AS sum_ll,
               min(first_resolved) AS first_resolved, max(last_resolved) AS last_resolved
         FROM record_new_groups WHERE paired AND class IS NULL GROUP BY question_id, asset, subject, bucket
         ORDER BY question_id, asset, subject, bucket NULLS LAST`
    const classIncrements = outcomeFiles.length === 0
      ? `SELECT ${runId}::BIGINT AS run_id, ${CLASS_INCREMENTS.columns.filter((c) => c.name !== 'run_id').map((c) => `NULL::${c.type} AS ${c.name}`).join(', ')} WHERE false`
      : `SELECT ${runId}::BIGINT AS run_id, question_id, asset, subject, class, bucket, sum(n)::BIGINT AS n,
               sum(sum_p) AS sum_p, sum(sum_y) AS sum_y, sum(sum_p2) AS sum_p2, sum(sum_py) AS sum_py, sum(sum_sq) AS sum_sq, sum(sum_ll) AS sum_ll
         FROM record_new_groups WHERE paired AND class IS NOT NULL GROUP BY question_id, asset, subject, class, bucket
         ORDER BY question_id, asset, subject, class, bucket`
    const labels = outcomeFiles.length === 0
      ? `SELECT ${runId}::BIGINT AS run_id, NULL::VARCHAR AS question_id, NULL::VARCHAR AS label, NULL::BIGINT AS n WHERE false`
      : `SELECT ${runId}::BIGINT AS run_id, question_id, label, sum(n)::BIGINT AS n
         FROM record_new_groups WHERE paired AND label IS NOT NULL GROUP BY question_id, label ORDER BY question_id, label`
    await db.run(`CREATE OR REPLACE TEMP TABLE record_new_increments AS ${increments}`)
    const newBands = await db.query('SELECT * FROM record_new_increments')
    const pairs = newBands.reduce((s, r) => s + num(r.n), 0)
    const unresolvable = newBands.reduce((s, r) => s + num(r.n_unresolvable), 0)

    // Write the run: increments, labels, the files it consumed, then (below) the snapshot, and record_runs last.
    await db.seal('SELECT * FROM record_new_increments', this.path(CALIBRATION_INCREMENTS, runId), CALIBRATION_INCREMENTS)
    await db.run(`CREATE OR REPLACE TEMP TABLE record_new_class_increments AS ${classIncrements}`)
    const newClassBands = await db.query('SELECT * FROM record_new_class_increments')
    await db.seal('SELECT * FROM record_new_class_increments', this.path(CLASS_INCREMENTS, runId), CLASS_INCREMENTS)
    await db.seal(labels, this.path(LABEL_INCREMENTS, runId), LABEL_INCREMENTS)
    const consumed = [
      ...decisionFiles.map((f) => `('decisions', ${sqlString(f.rel)})`),
      ...outcomeFiles.map((f) => `('outcomes', ${sqlString(f.rel)})`),
    ]
    await db.seal(`SELECT ${runId}::BIGINT AS run_id, source, file FROM (VALUES ${consumed.join(', ')}) AS t(source, file)`, this.path(RECORD_FILES, runId), RECORD_FILES)

    lap('aggregate_and_write')
    // Running totals after this run (committed below).
    const totals: Totals = {
      byQuestion: new Map([...this.totals.byQuestion].map(([q, b]) => [q, b.map((x) => ({ ...x }))])),
      byClass: new Map([...this.totals.byClass].map(([q, b]) => [q, b.map((x) => ({ ...x }))])),
      n_unresolvable: this.totals.n_unresolvable + unresolvable,
      n_decisions: this.totals.n_decisions + newDecisions,
      n_refused: this.totals.n_refused + newRefused,
      window_start: this.totals.window_start,
      window_end: this.totals.window_end,
    }
    for (const r of newBands) {
      if (r.first_resolved && (totals.window_start === null || String(r.first_resolved) < totals.window_start)) totals.window_start = String(r.first_resolved)
      if (r.last_resolved && (totals.window_end === null || String(r.last_resolved) > totals.window_end)) totals.window_end = String(r.last_resolved)
    }
    const saved = this.totals
    this.totals = totals
    this.addBands(newBands.filter((r) => r.bucket !== null))
    this.addClassBands(newClassBands)
    try {
      const takenAt = new Date(this.now()).toISOString()
      const snapshot = await this.buildSnapshot(runId, takenAt)
      await db.seal(snapshotSelect(snapshot), this.path(INTELLIGENCE_SNAPSHOTS, runId), INTELLIGENCE_SNAPSHOTS)
      const crossing = nextCrossing({
        crossings: this.crossings,
        realized: snapshot.evidence.n_realized,
        publishedBands: snapshot.published_bands,
        releases: this.options.releases ? await this.options.releases.ladderFacts() : null,
        now: this.now(),
        noticeMs: this.noticeMs,
      })
      if (crossing) {
        await db.seal(
          `SELECT ${crossing.rung}::BIGINT AS rung, ${sqlString(crossing.crossed_at)} AS crossed_at, ${sqlString(crossing.effective_at)} AS effective_at, ${sqlString(crossing.measured)} AS measured`,
          this.path(LADDER_CROSSINGS, crossing.rung),
          LADDER_CROSSINGS,
        )
      }
      await db.seal(
        `SELECT ${runId}::BIGINT AS run_id, ${sqlString(takenAt)}::TIMESTAMPTZ AS taken_at, ${pairs + unresolvable}::BIGINT AS n_outcomes,
                ${newDecisions}::BIGINT AS n_decisions, ${newRefused}::BIGINT AS n_refused`,
        this.path(RECORD_RUNS, runId),
        RECORD_RUNS,
      )
      lap('snapshot_and_commit')
      // Committed.
      this.lastRunId = runId
      this.lastSnapshot = snapshot
      if (crossing) this.crossings = [...this.crossings, crossing]
      for (const f of decisionFiles) this.processed.decisions.add(f.rel)
      for (const f of outcomeFiles) this.processed.outcomes.add(f.rel)
      Object.assign(summary, {
        run_id: runId, idle: false, decision_files: decisionFiles.length, outcome_files: outcomeFiles.length,
        new_pairs: pairs, new_unresolvable: unresolvable, new_decisions: newDecisions, snapshot, crossing,
      })
      this.log.info({ run_id: runId, pairs, unresolvable, decisions: newDecisions, n_realized: snapshot.evidence.n_realized, composite: snapshot.composite }, 'record run committed')
      return summary
    } catch (err) {
      this.totals = saved
      throw err
    } finally {
      for (const table of ['record_new_groups', 'record_new_increments', 'record_new_class_increments']) await db.run(`DROP TABLE IF EXISTS ${table}`)
    }
  }

  private path(table: RecordTable, seq: number): string {
    return join(recordTableRoot(this.db.dataDir, table), recordFileName(table, seq))
  }

  /** Published bands per question: a question publishes from 30 realized, a band from 10 (spec Limits). */
  publishedBands(): number {
    let count = 0
    for (const bands of this.totals.byQuestion.values()) {
      const n = bands.reduce((s, b) => s + b.n, 0)
      if (n < QUESTION_CALIBRATION_FLOOR) continue
      count += bands.filter((b) => b.n >= CALIBRATION_BAND_FLOOR).length
    }
    return count
  }

  private async buildSnapshot(seq: number, takenAt: string): Promise<IntelligenceSnapshot> {
    // Binary questions by their pairs, distribution questions (S01) by their distributions; the modal-class view of
    // every claim is the secondary figure (index 1.0.0 scored the record that way).
    const scores = recordScoresOf(this.totals.byQuestion, this.totals.byClass)
    const modal = scoresFromBands(mergeBandSums([...this.totals.byQuestion.values()].flat()))
    const nRealized = scores?.n ?? 0
    const dii = decisionIntelligenceIndex({
      bss: scores?.skill_vs_reference ?? null,
      ece: scores?.ece ?? null,
      n_realized: nRealized,
      n_unresolvable: this.totals.n_unresolvable,
    })
    const active = this.options.releases ? await this.options.releases.activeRelease() : null
    const rung = this.crossings.filter((c) => Date.parse(c.effective_at) <= Date.parse(takenAt)).reduce((m, c) => Math.max(m, c.rung), 0)
    const body: Omit<IntelligenceSnapshot, 'row_hash'> = {
      seq,
      index_version: INDEX_VERSION,
      composite: dii.composite,
      insufficient_note: dii.insufficient_note,
      components: {
        brier: scores?.brier ?? null,
        logloss: scores?.logloss ?? null,
        skill_vs_reference: scores?.skill_vs_reference ?? null,
        reliability: scores?.reliability ?? null,
        resolution: scores?.resolution ?? null,
        uncertainty: scores?.uncertainty ?? null,
        ece: scores?.ece ?? null,
        resolution_rate: dii.resolution_rate,
      },
      evidence: {
        n_decisions: this.totals.n_decisions,
        n_realized: nRealized,
        n_unresolvable: this.totals.n_unresolvable,
        n_refused: this.totals.n_refused,
        window_start: this.totals.window_start,
        window_end: this.totals.window_end,
      },
      benchmarks: { reference_brier: scores?.uncertainty ?? null, ...crowdLine(this.options.crowd?.() ?? null) },
      modal_class: modalClassOf(modal),
      active_release: active,
      release_delta: active?.delta_brier ?? null,
      published_bands: this.publishedBands(),
      rung,
      taken_at: takenAt,
      prev_hash: this.lastSnapshot?.row_hash ?? null,
    }
    return { ...body, row_hash: snapshotRowHash(body) }
  }

  async close(): Promise<void> {
    if (this.running) await this.running.catch(() => undefined)
    await this.lock.release()
  }
}

/** The snapshot's secondary modal-class figures (every claim graded as one binary event). */
function modalClassOf(s: RecordScores | null): NonNullable<IntelligenceSnapshot['modal_class']> {
  return { n: s?.n ?? 0, brier: s?.brier ?? null, logloss: s?.logloss ?? null, skill_vs_reference: s?.skill_vs_reference ?? null, ece: s?.ece ?? null }
}

/** The snapshot as one row of intelligence_snapshots (sql/recordTables.ts). */
function snapshotSelect(s: IntelligenceSnapshot): string {
  const v = (x: string | number | null) => (x === null ? 'NULL' : typeof x === 'number' ? `CAST('${x}' AS DOUBLE)` : sqlString(x))
  const i = (x: number) => `${x}::BIGINT`
  return `SELECT ${i(s.seq)} AS seq, ${v(s.index_version)} AS index_version, ${v(s.composite)} AS composite,
    ${v(s.insufficient_note)}::VARCHAR AS insufficient_note, ${v(s.components.brier)}::DOUBLE AS brier, ${v(s.components.logloss)}::DOUBLE AS logloss,
    ${v(s.components.skill_vs_reference)}::DOUBLE AS skill_vs_reference, ${v(s.components.reliability)}::DOUBLE AS reliability,
    ${v(s.components.resolution)}::DOUBLE AS resolution, ${v(s.components.uncertainty)}::DOUBLE AS uncertainty, ${v(s.components.ece)}::DOUBLE AS ece,
    ${v(s.components.resolution_rate)}::DOUBLE AS resolution_rate, ${i(s.evidence.n_decisions)} AS n_decisions, ${i(s.evidence.n_realized)} AS n_realized,
    ${i(s.evidence.n_unresolvable)} AS n_unresolvable, ${i(s.evidence.n_refused)} AS n_refused, ${v(s.evidence.window_start)}::VARCHAR AS window_start,
    ${v(s.evidence.window_end)}::VARCHAR AS window_end, ${v(s.benchmarks.reference_brier)}::DOUBLE AS reference_brier,
    ${v(s.benchmarks.crowd?.brier ?? null)}::DOUBLE AS crowd_brier, ${s.benchmarks.crowd ? i(s.benchmarks.crowd.n) : 'NULL::BIGINT'} AS crowd_n,
    ${v(s.benchmarks.crowd?.house_brier ?? null)}::DOUBLE AS crowd_house_brier,
    ${v(s.active_release === null ? null : JSON.stringify(s.active_release))}::JSON AS active_release, ${v(s.release_delta)}::DOUBLE AS release_delta,
    ${s.modal_class ? i(s.modal_class.n) : 'NULL::BIGINT'} AS modal_n, ${v(s.modal_class?.brier ?? null)}::DOUBLE AS modal_brier,
    ${v(s.modal_class?.logloss ?? null)}::DOUBLE AS modal_logloss, ${v(s.modal_class?.skill_vs_reference ?? null)}::DOUBLE AS modal_skill_vs_reference,
    ${v(s.modal_class?.ece ?? null)}::DOUBLE AS modal_ece,
    ${i(s.published_bands)} AS published_bands, ${i(s.rung)} AS rung, ${v(s.taken_at)} AS taken_at, ${v(s.prev_hash)}::VARCHAR AS prev_hash, ${v(s.row_hash)} AS row_hash`
}
