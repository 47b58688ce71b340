/**
 * The measured record as the API reads it: calibration reports, base-rate priors, the intelligence snapshot with its
 * verified chain, the learning curve and the ladder measures, all read from the batch tables (sql/020_record.sql)
 * through RecordDb, never from the ledger in memory, so the server's memory does not grow with the ledger. Results are
 * cached until the next committed run (the job calls invalidate()) or for at most CACHE_MS, which bounds how long an
 * edit of the files by another process goes unseen.
 *
 * Spec, Calibration report: "Buckets are predicted decile bands against realized frequency. Below the per-question
 * floor a bucket reports counts with published: false; this is data, not an error."
 * Spec, Computation rule 5: "Priors (GET /v1/priors): per question the pooled rate, Wilson interval, n, successes,
 * verdict; S01 carries its label histogram; where no prior exists the field is null with the reason. A prior is a
 * base rate, not a forecast."
 * Spec, Computation rule 4: "Every figure ships with n and window. A null composite is not zero; a curve gap is not
 * smoothed."
 */
import { ServiceError } from '../common/ServiceError.ts'
import type { QuestionModel } from '../models/QuestionModel.ts'
import { QUESTIONS } from '../models/questions/index.ts'
import { bandSumsByClass, recordScoresOf, type BandSums, type ClassBandSums } from '../models/verification/bucketSums.ts'
import { calibrationReportFromBands, QUESTION_CALIBRATION_FLOOR, type CalibrationBucket as BandReport } from '../models/verification/calibrationReport.ts'
import { INDEX_VERSION, PREVIOUS_INDEX_VERSIONS } from '../models/verification/dii.ts'
import { fitLearningCurve } from '../models/verification/learningCurve.ts'
import { wilsonInterval } from '../models/verification/wilson.ts'
import { ladderStateOf, type LadderCrossing, type LadderState, type ReleaseFacts } from './ladder.ts'
import type { RecordDb } from './RecordDb.ts'
import type { CalibrationReport, Curve, IntelligenceSnapshot, QuestionPrior } from './schemas.ts'
import { chainVerified, snapshotOfRow } from './snapshot.ts'

/** The question calibration floor (spec Limits): a prior rests on at least this many realized outcomes to publish. */
export const PRIOR_FLOOR = QUESTION_CALIBRATION_FLOOR

export const PRIORS_NOTE =
  'A prior is a base rate, not a forecast: realized claims pooled over assets (unresolvable outcomes and refusals excluded), read from the batch tables (calibration_increments); published once n reaches the floor.'

/** Index versions this service has published; a curve pinned to another is a bad version pin (400). */
export const INDEX_VERSIONS: readonly string[] = [...PREVIOUS_INDEX_VERSIONS, INDEX_VERSION]
/** Curve windows: all history, or the points taken in the last 90, 30 or 7 days, or 24 hours. */
export const CURVE_WINDOWS = ['all', '90d', '30d', '7d', '24h'] as const
export type CurveWindow = (typeof CURVE_WINDOWS)[number]
const WINDOW_MS: Record<CurveWindow, number> = { all: Infinity, '90d': 90 * 86_400_000, '30d': 30 * 86_400_000, '7d': 7 * 86_400_000, '24h': 86_400_000 }
/** The learning curve's bootstrap seed: fixed, so the same points give the same interval on every read. */
export const CURVE_SEED = 'svc.curve.v1'
const CACHE_MS = 30_000
const CACHE_ENTRIES = 512

export interface IntelligenceRead {
  snapshot: IntelligenceSnapshot | null
  chain_verified: boolean
  ladder: LadderState
}

export interface MeasuredRecordOptions {
  questions?: readonly QuestionModel[]
  releases?: ReleaseFacts | null
  now?: () => number
}

/** A report band as served. */
function bucketOf(b: BandReport): CalibrationReport['buckets'][number] {
  return { lo: b.band[0], hi: b.band[1], n: b.n, mean_predicted: b.mean_predicted, realized_frequency: b.realized_frequency, published: b.published }
}

function num(v: unknown): number {
  return v === null || v === undefined ? 0 : Number(v)
}

export class MeasuredRecord {
  private readonly questions: Map<string, QuestionModel>
  private readonly cache = new Map<string, { at: number; value: Promise<unknown> }>()
  private readonly now: () => number
  private ladderCache: { at: number; crossings: LadderCrossing[]; realized: number; bands: number; facts: Awaited<ReturnType<ReleaseFacts['ladderFacts']>> | null } | null = null

  constructor(
    private readonly db: RecordDb,
    private readonly options: MeasuredRecordOptions = {},
  ) {
    this.questions = new Map((options.questions ?? QUESTIONS).map((q) => [q.id, q]))
    this.now = options.now ?? Date.now
  }

  /** A run committed: every cached figure is stale. */
  invalidate(): void {
    this.cache.clear()
    this.ladderCache = null
  }

  private cached<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const hit = this.cache.get(key)
    if (hit && this.now() - hit.at < CACHE_MS) return hit.value as Promise<T>
    if (this.cache.size >= CACHE_ENTRIES) this.cache.clear()
    const value = fn()
    this.cache.set(key, { at: this.now(), value })
    value.catch(() => this.cache.delete(key))
    return value
  }

  private checkQuestion(id: string): void {
    if (!this.questions.has(id)) {
      throw new ServiceError('VALIDATION', { message: `unknown question_id '${id}'`, detail: { reason: 'REQUEST_VALIDATION_FAILED', field: 'question_id' } })
    }
  }

  /**
   * Realized claims of one question (or all), optionally of one subject (a wallet, or an asset); choice questions grade
   * the class the decision chose.
   */
  calibration(q: { question_id: string | null; subject: string | null }): Promise<CalibrationReport> {
    if (q.question_id !== null) this.checkQuestion(q.question_id)
    return this.cached(`cal\n${q.question_id}\n${q.subject}`, async () => {
      const where: string[] = []
      const params: Record<string, string> = {}
      if (q.question_id !== null) {
        where.push('question_id = $question_id')
        params.question_id = q.question_id
      }
      if (q.subject !== null) {
        where.push('(subject = $subject OR asset = $subject)')
        params.subject = q.subject
      }
      const and = where.map((w) => ` AND ${w}`).join('')
      const sums = 'sum(n) AS n, sum(sum_p) AS sum_p, sum(sum_y) AS sum_y, sum(sum_p2) AS sum_p2, sum(sum_py) AS sum_py, sum(sum_sq) AS sum_sq, sum(sum_ll) AS sum_ll'
      const bandOf = (x: Record<string, unknown>): BandSums => ({
        bucket: num(x.bucket), n: num(x.n), sum_p: num(x.sum_p), sum_y: num(x.sum_y), sum_p2: num(x.sum_p2), sum_py: num(x.sum_py), sum_sq: num(x.sum_sq), sum_ll: num(x.sum_ll),
      })
      const byQuestion = new Map<string, BandSums[]>()
      for (const x of await this.db.query(`SELECT question_id, bucket, ${sums} FROM calibration_increments WHERE bucket IS NOT NULL${and} GROUP BY ALL ORDER BY question_id, bucket`, params)) {
        byQuestion.set(String(x.question_id), [...(byQuestion.get(String(x.question_id)) ?? []), bandOf(x)])
      }
      const byClass = new Map<string, ClassBandSums[]>()
      for (const x of await this.db.query(`SELECT question_id, class, bucket, ${sums} FROM class_increments WHERE true${and} GROUP BY ALL ORDER BY question_id, class, bucket`, params)) {
        byClass.set(String(x.question_id), [...(byClass.get(String(x.question_id)) ?? []), { ...bandOf(x), class: String(x.class) }])
      }
      const r = calibrationReportFromBands([...byQuestion.values()].flat())
      const model = q.question_id === null ? null : this.questions.get(q.question_id)!
      const distribution = model !== null && (model.answer === 'choice' || byClass.has(model.id))
      const scores = recordScoresOf(byQuestion, byClass)
      let classes: CalibrationReport['classes'] = null
      if (distribution) {
        const rows = bandSumsByClass(byClass.get(model.id) ?? [])
        const names = [...new Set([...(model.classes ?? []), ...rows.keys()])]
        classes = names.map((c) => {
          const cr = calibrationReportFromBands(rows.get(c) ?? [])
          return { class: c, n: cr.n, published: cr.published, buckets: cr.buckets.map(bucketOf) }
        })
      }
      return {
        question_id: q.question_id,
        subject: q.subject,
        buckets: r.buckets.map(bucketOf),
        buckets_grade: model === null ? 'pooled' : distribution ? 'modal_class' : 'event',
        published: r.published,
        n: r.n,
        n_floor: r.n_floor,
        note: distribution
          ? `${r.note} The buckets grade the modal (chosen) class only, a secondary view; the distribution is what is sold: scores grade the whole distribution and classes hold each class's one-vs-rest reliability.`
          : r.note,
        scores: scores === null
          ? null
          : {
              scored_as: model === null ? 'pooled' : distribution ? 'distribution' : 'event',
              n: scores.n,
              brier: scores.brier,
              logloss: scores.logloss,
              skill_vs_reference: scores.skill_vs_reference,
              reference_brier: scores.uncertainty,
              ece: scores.ece,
            },
        classes,
      }
    })
  }

  /** Pooled over assets and subjects from the realized claims the batch job has counted. */
  priors(): Promise<QuestionPrior[]> {
    return this.cached('priors', async () => {
      const totals = new Map(
        (await this.db.query(`
          SELECT question_id, sum(n) AS n, sum(sum_y) AS successes, min(first_resolved) AS first, max(last_resolved) AS last
          FROM calibration_increments WHERE bucket IS NOT NULL GROUP BY question_id`)).map((r) => [String(r.question_id), r]),
      )
      const labels = new Map<string, Map<string, number>>()
      for (const r of await this.db.query('SELECT question_id, label, sum(n) AS n FROM label_increments GROUP BY ALL')) {
        const m = labels.get(String(r.question_id)) ?? new Map<string, number>()
        m.set(String(r.label), num(r.n))
        labels.set(String(r.question_id), m)
      }
      return [...this.questions.values()].map((q): QuestionPrior => {
        const acc = totals.get(q.id)
        const n = num(acc?.n)
        if (!acc || n === 0) {
          return { question_id: q.id, label: q.label, answer: q.answer, prior: null, label_histogram: null, reason: q.sold ? 'no_realized_outcomes_yet' : 'not_sold_on_deployment' }
        }
        const successes = Math.round(num(acc.successes))
        const interval = wilsonInterval(successes, n)
        const counts = labels.get(q.id) ?? new Map<string, number>()
        const histogram =
          q.answer === 'choice'
            ? Object.fromEntries((q.classes ?? []).map((c) => {
                const k = counts.get(c) ?? 0
                const ci = wilsonInterval(k, n)
                return [c, { count: k, rate: k / n, interval: ci ? [ci.lower, ci.upper] : null }]
              }))
            : null
        return {
          question_id: q.id,
          label: q.label,
          answer: q.answer,
          prior: {
            rate: successes / n,
            interval: interval ? [interval.lower, interval.upper] : null,
            method: 'wilson-95' as const,
            n,
            successes,
            verdict: n >= PRIOR_FLOOR ? ('published' as const) : ('insufficient_sample' as const),
            window: { start: (acc.first as string | null) ?? null, end: (acc.last as string | null) ?? null },
          },
          label_histogram: histogram,
          reason: null,
        }
      })
    })
  }

  /** Every committed snapshot in chain order. */
  private snapshots(): Promise<IntelligenceSnapshot[]> {
    return this.cached('snapshots', async () => (await this.db.query('SELECT * FROM intelligence_snapshots ORDER BY seq')).map(snapshotOfRow))
  }

  /** GET /v1/intelligence: the latest snapshot, the chain recomputed from the rows, and the ladder measures. */
  async intelligence(): Promise<IntelligenceRead> {
    const all = await this.snapshots()
    return { snapshot: all[all.length - 1] ?? null, chain_verified: chainVerified(all), ladder: await this.measures() }
  }

  /**
   * GET /v1/intelligence/curve: one point per snapshot of one index version (never mixed), in the window; the fit
   * BS(n) = a·n^(−b) + c over the points with a realized outcome, with a seeded bootstrap 95 % interval on b; null with
   * a note below three distinct anchor points. Points are the snapshots as taken: a gap stays a gap.
   */
  async curve(q: { window: CurveWindow; from: string | null; index_version: string }): Promise<Curve & { chain_verified: boolean }> {
    const all = await this.snapshots()
    const now = this.now()
    const fromMs = q.from === null ? -Infinity : Date.parse(q.from)
    const points = all
      .filter((s) => s.index_version === q.index_version)
      .filter((s) => Date.parse(s.taken_at) >= Math.max(fromMs, now - WINDOW_MS[q.window]))
      .map((s) => ({
        n_cum: s.evidence.n_realized,
        brier: s.components.brier,
        logloss: s.components.logloss,
        ece: s.components.ece,
        ...(s.active_release ? { release: s.active_release.version } : {}),
        taken_at: s.taken_at,
        index_version: s.index_version,
      }))
    const anchors = points.filter((p) => p.n_cum > 0 && p.brier !== null).map((p) => ({ n: p.n_cum, brier: p.brier! }))
    const result = fitLearningCurve(anchors, { seed: CURVE_SEED })
    const fit = result.fit ? { a: result.fit.a, b: result.fit.b, c: result.fit.c, b_ci: result.fit.b_ci ? [result.fit.b_ci[0], result.fit.b_ci[1]] : null } : null
    const note = result.fit
      ? `BS(n) = a·n^(−b) + c fitted by weighted least squares over ${result.fit.n_points} snapshots (weights n); b_ci is a ${Math.round(result.fit.level * 100)} % bootstrap interval (${result.fit.resamples} resamples, seed ${CURVE_SEED}).${result.fit.at_bound ? ` The fit sits at a bound (${result.fit.bounds_hit.join(', ')}); read b with care.` : ''}`
      : result.note
    return { index_version: q.index_version, window: q.window, from: q.from, points, fit: fit as Curve['fit'], note, chain_verified: chainVerified(all) }
  }

  /**
   * The ladder measures (the price list's LadderSource): read on every paid call, so kept in memory and refreshed from
   * the tables when a run commits; pending and ms_remaining follow the clock.
   */
  async measures(): Promise<LadderState> {
    const now = this.now()
    if (!this.ladderCache || now - this.ladderCache.at >= CACHE_MS) {
      const crossings = (await this.db.query('SELECT rung, crossed_at, effective_at, measured FROM ladder_crossings ORDER BY rung')).map((r) => ({
        rung: num(r.rung), crossed_at: String(r.crossed_at), effective_at: String(r.effective_at), measured: String(r.measured),
      }))
      const latest = (await this.snapshots()).at(-1)
      const facts = this.options.releases ? await this.options.releases.ladderFacts() : null
      this.ladderCache = { at: now, crossings, realized: latest?.evidence.n_realized ?? 0, bands: latest?.published_bands ?? 0, facts }
    }
    const c = this.ladderCache
    return ladderStateOf({ crossings: c.crossings, realized: c.realized, publishedBands: c.bands, releases: c.facts, now })
  }
}

/** What the routes read of the measured record (MeasuredRecord, or a test double). */
export interface RecordReads {
  calibration(q: { question_id: string | null; subject: string | null }): CalibrationReport | Promise<CalibrationReport>
  priors(): QuestionPrior[] | Promise<QuestionPrior[]>
  intelligence(): Promise<IntelligenceRead>
  curve(q: { window: CurveWindow; from: string | null; index_version: string }): Promise<Curve & { chain_verified: boolean }>
}
