/**
 * The measured record over the resolved ledger: calibration reports and base-rate priors (spec, What the service does
 * 7). They read the ledger index (realized claims: unresolvable outcomes excluded, refusals never counted) and never a
 * live model, so they belong to the record, not to the engine that makes decisions.
 *
 * Spec, Calibration report: "Buckets are predicted decile bands against realized frequency. Below the per-question
 * floor a bucket reports counts with published: false; this is data, not an error."
 * Spec, Computation rule 5: "Priors (GET /v1/priors): per question the pooled rate, Wilson interval, n, successes,
 * verdict; S01 carries its label histogram; where no prior exists the field is null with the reason. A prior is a
 * base rate, not a forecast."
 */
import { ServiceError } from '../common/ServiceError.ts'
import type { LedgerIndex } from '../engine/LedgerIndex.ts'
import { isClaim } from '../engine/LedgerIndex.ts'
import type { QuestionModel } from '../models/QuestionModel.ts'
import { QUESTIONS } from '../models/questions/index.ts'
import { calibrationReport } from '../models/verification/calibrationReport.ts'
import { wilsonInterval } from '../models/verification/wilson.ts'
import type { CalibrationReport, QuestionPrior } from './schemas.ts'

/** The question calibration floor (spec Limits): a prior rests on at least this many realized outcomes to publish. */
export const PRIOR_FLOOR = 30

export const PRIORS_NOTE =
  'A prior is a base rate, not a forecast: realized claims pooled over assets (unresolvable outcomes and refusals excluded); published once n reaches the floor.'

export class MeasuredRecord {
  private readonly questions: Map<string, QuestionModel>

  constructor(
    private readonly index: LedgerIndex,
    questions: readonly QuestionModel[] = QUESTIONS,
  ) {
    this.questions = new Map(questions.map((q) => [q.id, q]))
  }

  private checkQuestion(id: string): void {
    if (!this.questions.has(id)) {
      throw new ServiceError('VALIDATION', { message: `unknown question_id '${id}'`, detail: { reason: 'REQUEST_VALIDATION_FAILED', field: 'question_id' } })
    }
  }

  /**
   * Realized claims of one question (or all), optionally one subject (wallet or asset); choice questions grade the
   * modal class.
   */
  calibration(q: { question_id: string | null; subject: string | null }): CalibrationReport {
    if (q.question_id !== null) this.checkQuestion(q.question_id)
    const pairs: { p: number; y: number }[] = []
    for (const o of this.index.feed(Number.MAX_SAFE_INTEGER)) {
      if (o.outcome === 'unresolvable') continue
      if (q.question_id !== null && o.question_id !== q.question_id) continue
      if (q.subject !== null && o.subject !== q.subject && o.asset !== q.subject) continue
      const d = this.index.decision(o.decision_id)!
      if (!isClaim(d)) continue
      pairs.push({ p: d.probability, y: d.choice ? (o.realized_choice === d.choice.choice_id ? 1 : 0) : o.outcome === 'obtains' ? 1 : 0 })
    }
    const r = calibrationReport(pairs)
    return {
      question_id: q.question_id,
      subject: q.subject,
      buckets: r.buckets.map((b) => ({ lo: b.band[0], hi: b.band[1], n: b.n, mean_predicted: b.mean_predicted, realized_frequency: b.realized_frequency, published: b.published })),
      published: r.published,
      n: r.n,
      n_floor: r.n_floor,
      note: r.note,
    }
  }

  /**
   * Pooled over assets and subjects from realized claims in the ledger; the verdict publishes a rate once it rests on
   * the question calibration floor of 30.
   */
  priors(): QuestionPrior[] {
    const byQuestion = new Map<string, { n: number; successes: number; labels: Map<string, number>; first: string | null; last: string | null }>()
    for (const o of this.index.feed(Number.MAX_SAFE_INTEGER)) {
      if (o.outcome === 'unresolvable') continue
      const d = this.index.decision(o.decision_id)
      if (!d || !isClaim(d)) continue
      const acc = byQuestion.get(o.question_id) ?? { n: 0, successes: 0, labels: new Map<string, number>(), first: null, last: null }
      acc.n++
      if (o.outcome === 'obtains') acc.successes++
      if (o.realized_choice) acc.labels.set(o.realized_choice, (acc.labels.get(o.realized_choice) ?? 0) + 1)
      if (acc.first === null || o.resolved_at < acc.first) acc.first = o.resolved_at
      if (acc.last === null || o.resolved_at > acc.last) acc.last = o.resolved_at
      byQuestion.set(o.question_id, acc)
    }
    return [...this.questions.values()].map((q): QuestionPrior => {
      const acc = byQuestion.get(q.id)
      if (!acc || acc.n === 0) {
        return { question_id: q.id, label: q.label, answer: q.answer, prior: null, label_histogram: null, reason: q.sold ? 'no_realized_outcomes_yet' : 'not_sold_on_deployment' }
      }
      const interval = wilsonInterval(acc.successes, acc.n)
      const histogram =
        q.answer === 'choice'
          ? Object.fromEntries((q.classes ?? []).map((c) => {
              const k = acc.labels.get(c) ?? 0
              const ci = wilsonInterval(k, acc.n)
              return [c, { count: k, rate: k / acc.n, interval: ci ? [ci.lower, ci.upper] : null }]
            }))
          : null
      return {
        question_id: q.id,
        label: q.label,
        answer: q.answer,
        prior: {
          rate: acc.successes / acc.n,
          interval: interval ? [interval.lower, interval.upper] : null,
          method: 'wilson-95' as const,
          n: acc.n,
          successes: acc.successes,
          verdict: acc.n >= PRIOR_FLOOR ? ('published' as const) : ('insufficient_sample' as const),
          window: { start: acc.first, end: acc.last },
        },
        label_histogram: histogram,
        reason: null,
      }
    })
  }
}

/** What the routes read of the measured record (MeasuredRecord, or a test double). */
export interface RecordReads {
  calibration(q: { question_id: string | null; subject: string | null }): CalibrationReport | Promise<CalibrationReport>
  priors(): QuestionPrior[] | Promise<QuestionPrior[]>
}
