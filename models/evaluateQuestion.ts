/**
 * Honest out-of-sample evaluation of one question: fit on samples whose windows closed before the split, answer every
 * decision at or after it through the sealed policy, and score the resolved claims against the base rate measured on
 * the TRAINING window.
 *
 * Spec, Computation rules: "Brier score BS = mean of (p - o)^2 over resolved pairs"; "BSS = 1 - BS/BS_ref … A
 * negative BSS is published as negative"; "Every figure ships with n and window." Here BS_ref is the Brier score of the
 * training base rate applied to the test decisions (not the test sample's own UNC, which would peek at test outcomes).
 * S01 (choice): multi-class Brier Σ_k (p_k − o_k)² with the training class frequencies as the reference; ECE is the
 * top-label ECE of the modal-class probability.
 * BSS interval: seeded percentile block bootstrap (models/verification/bootstrap.ts, seed 1, 2000 resamples) that
 * resamples whole UTC days of test decisions, every asset of a day together: BTC, ETH and SOL decided at one instant
 * answer to one market, so resampling them as independent rows made the intervals about √3 too narrow.
 * Calibration: ECE on 10 adaptive (equal-count) bins, which puts each of a few distinct forecast values in a bin of
 * its own (fixed-width bins can merge them and hide their errors); the per-value reliability table when the forecasts
 * take at most PER_VALUE_MAX distinct values; the Murphy decomposition on the spec's decile bins; the count of
 * distinct probability values; S01: how often each class was the predicted (modal) one.
 */
import type { FittedParams, LabelledSample, QuestionModel } from './QuestionModel.ts'
import { splitSamples } from './Dataset.ts'
import type { Policy } from './policy/Policy.ts'
import { activePolicy } from './policy/rulesets.ts'
import { blockBootstrapSkillCi, DEFAULT_RESAMPLES, DEFAULT_SEED, type BootstrapInterval } from './verification/bootstrap.ts'
import { murphyDecomposition, type MurphyDecomposition } from './verification/brier.ts'
import { BASELINE_FEATURES, OneFeatureBaseline } from './fit/OneFeatureBaseline.ts'
import { corpDecomposition, corpDiagram, type CorpDiagram } from './verification/corp.ts'
import { tieGroups } from './verification/pairs.ts'
import { expectedCalibrationError, type EceResult } from './verification/ece.ts'
import { isoMs } from '../ingest/Tick.ts'
import type { SaleGate } from './saleGate.ts'
import { DAY_MS } from '../common/time.ts'

export const DEFAULT_SPLIT_SHARE = 0.7
export const ECE_BINS = 10
/** The per-value reliability table is printed when the forecasts take at most this many distinct values. */
export const PER_VALUE_MAX = 20

/** One distinct forecast value: how often it was issued and how often its event happened. */
export interface ValueReliability {
  p: number
  n: number
  realized: number
  /** realized − p. */
  gap: number
}

export interface QuestionEvaluation {
  question_id: string
  answer: 'probability' | 'choice'
  /** Null when the question had no decisions on these tapes. */
  split: string | null
  split_rule: string
  train: { n: number; resolved: number; window_start: string | null; window_end: string | null; fitted_version: string; fit_status: string }
  n_decisions: number
  n_refused: number
  refused_by_reason: Record<string, number>
  n_claims: number
  n_resolved: number
  n_unresolvable: number
  brier: number | null
  brier_kind: 'binary' | 'multiclass_sum'
  base_rate: number | Record<string, number> | null
  base_brier: number | null
  bss: number | null
  bss_ci: BootstrapInterval | null
  /** Adaptive (equal-count) bins. */
  ece: EceResult | null
  /** Murphy decomposition on the decile bins of the scored probabilities (S01: top-label, modal probability vs hit). */
  murphy: MurphyDecomposition | null
  /**
   * CORP (Dimitriadis, Gneiting & Jordan 2021): the Brier decomposition MCB − DSC + UNC of the PAV-recalibrated
   * forecasts, and the reliability diagram with its 90 % consistency band (S01: top-label).
   */
  corp: { mcb: number | null; dsc: number; unc: number; diagram: CorpDiagram } | null
  distinct_probabilities: number
  /** Null when there are more than PER_VALUE_MAX distinct values (the adaptive bins carry the calibration then). */
  per_value: ValueReliability[] | null
  /**
   * The one-feature decile baseline (models/fit/OneFeatureBaseline.ts) fitted on the same training decisions and
   * scored on the same decisions as the model, its skill against the same base rate; null when the question names no
   * baseline feature.
   */
  one_feature: ({ feature: string } & ComparatorSkill) | null
  /**
   * The previous model version (`svc eval --models v2`: v1), fitted on the same training decisions and scored on the
   * same decisions; where it refuses, its forecast is the training base rate (S01: class frequencies; a refusal claims
   * nothing). Null when there is no previous version to compare (`svc eval --models v1`: the first version).
   */
  previous: ({ fitted_version: string } & ComparatorSkill) | null
  /** S01: how many scored decisions predicted each class; null for binary questions. */
  predicted_classes: Record<string, number> | null
  /**
   * The sale gate's verdict on the training span (models/saleGate.ts), null for a method without one. The test window
   * is scored as the model would answer if sold, so a blocked question still shows what it would have earned.
   */
  sale_gate: SaleGate | null
  mean_probability: number | null
  test_window: { start: string | null; end: string | null }
}

/** Default split: the instant 70 % of the way through the question's decision span on this tape. */
export function defaultSplit(samples: readonly LabelledSample[], share = DEFAULT_SPLIT_SHARE): number | null {
  if (samples.length === 0) return null
  let lo = Infinity
  let hi = -Infinity
  for (const s of samples) {
    lo = Math.min(lo, s.snapshot.at)
    hi = Math.max(hi, s.snapshot.at)
  }
  return lo + Math.round((hi - lo) * share)
}

function minOf(xs: readonly number[]): number {
  let m = Infinity
  for (const x of xs) if (x < m) m = x
  return m
}

function maxOf(xs: readonly number[]): number {
  let m = -Infinity
  for (const x of xs) if (x > m) m = x
  return m
}

/** A comparator's score on the model's scored decisions, and its skill against the same base rate. */
export interface ComparatorSkill {
  brier: number | null
  bss: number | null
  bss_ci: BootstrapInterval | null
}

interface ScoredRow {
  model: number
  reference: number
  /** The one-feature baseline's score on the same decision (NaN without a baseline). */
  oneFeature: number
  /** The previous version's score on the same decision (NaN without one). */
  previous: number
  /** UTC day of the decision: the bootstrap block (every asset of a day together). */
  day: number
}

function skill(rows: readonly { model: number; reference: number }[]): number | null {
  let m = 0
  let r = 0
  for (const x of rows) {
    m += x.model
    r += x.reference
  }
  return r > 0 ? 1 - m / r : null
}

export interface ScoringOptions {
  policy?: Policy
  resamples?: number
  /** The previous version of the question (v1 for the live v2), scored beside it as a baseline. */
  previous?: QuestionModel
}

/** Fits on the samples before the split (given, or 70 % of the question's decision span) and scores the rest. */
export function evaluateQuestion(
  question: QuestionModel,
  samples: readonly LabelledSample[],
  options: ScoringOptions & { split?: number } = {},
): QuestionEvaluation {
  const given = options.split !== undefined
  const split = options.split ?? defaultSplit(samples) ?? 0
  const { train, test } = splitSamples(samples, question.horizonMs, split)
  return scoreQuestion(question, { train, test }, {
    ...options,
    split: samples.length > 0 || given ? isoMs(split) : null,
    splitRule: given ? 'given (--split)' : `${DEFAULT_SPLIT_SHARE * 100}% of the question's decision span`,
  })
}

/**
 * Fits on `train` and scores `test` (e.g. decisions of other tapes: `svc eval --train … --test …`). The caller keeps
 * them apart in time; nothing here looks at a test label before scoring.
 */
export function scoreQuestion(
  question: QuestionModel,
  sets: { train: readonly LabelledSample[]; test: readonly LabelledSample[] },
  options: ScoringOptions & { split: string | null; splitRule: string },
): QuestionEvaluation {
  const policy = options.policy ?? activePolicy()
  const { train, test } = sets
  const gated: FittedParams = question.fit(train)
  const saleGate = ((gated.params as { sale_gate?: SaleGate | null }).sale_gate ?? null)
  // Scored as it would answer if sold: the gate's refusal would hide exactly the skill the table is there to show.
  const fitted: FittedParams = saleGate ? { ...gated, params: { ...gated.params, sale_gate: null } } : gated
  const choice = question.answer === 'choice'
  const classes = question.classes ?? []

  // Base rate on the training window only.
  const trainResolved = train.filter((s) => s.resolution.outcome !== 'unresolvable' && (!choice || s.resolution.realized_choice !== null))
  let baseBinary: number | null = null
  let baseDist: number[] | null = null
  if (trainResolved.length > 0) {
    if (choice) {
      baseDist = classes.map((c) => trainResolved.filter((s) => s.resolution.realized_choice === c).length / trainResolved.length)
    } else {
      baseBinary = trainResolved.filter((s) => s.resolution.outcome === 'obtains').length / trainResolved.length
    }
  }

  const baselineFeature = BASELINE_FEATURES[question.id]
  const oneFeature = baselineFeature
    ? OneFeatureBaseline.fit(
        baselineFeature,
        trainResolved.map((s) => ({
          snapshot: s.snapshot,
          outcome: choice ? classes.indexOf(s.resolution.realized_choice!) : s.resolution.outcome === 'obtains' ? 1 : 0,
        })),
        choice ? classes.length : 1,
      )
    : null

  const previous = options.previous ?? null
  const previousFitted = previous ? previous.fit(train) : null
  /** The previous version's claim on one decision (its probability as decided), or null where it refuses. */
  const previousClaim = (s: LabelledSample) => {
    const out = previous!.evaluate(s.snapshot, previousFitted)
    const decided = policy.apply(out, question.id)
    return decided.action !== 'refuse' && out.kind === 'claim' ? { probability: decided.probability, distribution: out.distribution } : null
  }

  const refusedBy: Record<string, number> = {}
  let nRefused = 0
  let nClaims = 0
  let nUnresolvable = 0
  const rows: ScoredRow[] = []
  const pairs: { p: number; y: number }[] = []
  const predicted: Record<string, number> | null = choice ? Object.fromEntries(classes.map((c) => [c, 0])) : null
  let pSum = 0
  for (const s of test) {
    const out = question.evaluate(s.snapshot, fitted)
    const decided = policy.apply(out, question.id)
    if (decided.action === 'refuse') {
      nRefused++
      const reason = out.kind === 'refusal' ? `${out.refusal}:${out.reason}` : `${decided.decision}:min_confidence`
      refusedBy[reason] = (refusedBy[reason] ?? 0) + 1
      continue
    }
    nClaims++
    if (out.kind !== 'claim') continue
    if (s.resolution.outcome === 'unresolvable' || (choice && s.resolution.realized_choice === null)) {
      nUnresolvable++
      continue
    }
    pSum += decided.probability
    const day = Math.floor(s.snapshot.at / DAY_MS)
    if (choice) {
      const realized = classes.indexOf(s.resolution.realized_choice!)
      const dist = classes.map((c) => out.distribution?.[c] ?? 0)
      const score = (d: readonly number[]) => d.reduce((a, p, k) => a + (p - (k === realized ? 1 : 0)) ** 2, 0)
      // Where it refuses, the previous version forecasts the training class frequencies.
      const claimed = previous ? previousClaim(s) : null
      const prevDist = claimed?.distribution ? classes.map((c) => claimed.distribution![c] ?? 0) : previous ? baseDist : null
      rows.push({ model: score(dist), reference: baseDist ? score(baseDist) : NaN, oneFeature: oneFeature ? score(oneFeature.predict(s.snapshot)) : NaN, previous: prevDist ? score(prevDist) : NaN, day })
      const predictedClass = String(out.conditions.predicted_class)
      predicted![predictedClass] = (predicted![predictedClass] ?? 0) + 1
      pairs.push({ p: decided.probability, y: predictedClass === s.resolution.realized_choice ? 1 : 0 })
    } else {
      const y = s.resolution.outcome === 'obtains' ? 1 : 0
      const q = oneFeature ? oneFeature.predict(s.snapshot)[0]! : NaN
      // Where it refuses, the previous version forecasts the training base rate.
      const prev = previous ? (previousClaim(s)?.probability ?? baseBinary ?? NaN) : NaN
      rows.push({ model: (decided.probability - y) ** 2, reference: baseBinary === null ? NaN : (baseBinary - y) ** 2, oneFeature: (q - y) ** 2, previous: (prev - y) ** 2, day })
      pairs.push({ p: decided.probability, y })
    }
  }
  const n = rows.length
  const haveBase = choice ? baseDist !== null : baseBinary !== null
  const baseBrier = n > 0 && haveBase ? rows.reduce((a, r) => a + r.reference, 0) / n : null
  /** The Brier score and skill (with its day-block interval) of one forecaster's scores on the scored decisions. */
  const skillOf = (pick: (r: ScoredRow) => number): ComparatorSkill => {
    const asModel = rows.map((r) => ({ model: pick(r), reference: r.reference, day: r.day }))
    return {
      brier: n > 0 ? asModel.reduce((a, r) => a + r.model, 0) / n : null,
      bss: n > 0 && haveBase ? skill(asModel) : null,
      bss_ci: n > 1 && haveBase ? blockBootstrapSkillCi(asModel, (r) => r.day, { seed: DEFAULT_SEED, resamples: options.resamples ?? DEFAULT_RESAMPLES }) : null,
    }
  }
  const model = skillOf((r) => r.model)
  const ece = pairs.length > 0 ? expectedCalibrationError(pairs, { bins: ECE_BINS, strategy: 'quantile', norm: 'l1' }) : null
  const values = perValueReliability(pairs)
  const oneFeatureResult = oneFeature ? { feature: oneFeature.feature.name, ...skillOf((r) => r.oneFeature) } : null
  const previousResult = previousFitted ? { fitted_version: previousFitted.version, ...skillOf((r) => r.previous) } : null
  const testTimes = test.map((s) => s.snapshot.at)
  return {
    question_id: question.id,
    answer: question.answer,
    split: options.split,
    split_rule: options.splitRule,
    train: {
      n: train.length,
      resolved: trainResolved.length,
      window_start: train.length ? isoMs(minOf(train.map((s) => s.snapshot.at))) : null,
      window_end: train.length ? isoMs(maxOf(train.map((s) => s.snapshot.at)) + question.horizonMs) : null,
      fitted_version: fitted.version,
      fit_status: String((fitted.params as { status?: unknown }).status ?? 'unknown'),
    },
    n_decisions: test.length,
    n_refused: nRefused,
    refused_by_reason: refusedBy,
    n_claims: nClaims,
    n_resolved: n,
    n_unresolvable: nUnresolvable,
    brier: model.brier,
    brier_kind: choice ? 'multiclass_sum' : 'binary',
    base_rate: choice ? (baseDist ? Object.fromEntries(classes.map((c, k) => [c, baseDist![k]!])) : null) : baseBinary,
    base_brier: baseBrier,
    bss: model.bss,
    bss_ci: model.bss_ci,
    ece,
    murphy: murphyDecomposition(pairs, ECE_BINS),
    corp: corpOf(pairs),
    distinct_probabilities: values.length,
    per_value: values.length <= PER_VALUE_MAX ? values : null,
    one_feature: oneFeatureResult,
    previous: previousResult,
    predicted_classes: predicted,
    sale_gate: saleGate,
    mean_probability: n > 0 ? pSum / n : null,
    test_window: { start: testTimes.length ? isoMs(minOf(testTimes)) : null, end: testTimes.length ? isoMs(maxOf(testTimes) + question.horizonMs) : null },
  }
}

/** The reliability of each distinct forecast value, ascending by value. */
export function perValueReliability(pairs: readonly { p: number; y: number }[]): ValueReliability[] {
  return tieGroups(pairs).map(({ p, n, hits }) => ({ p, n, realized: hits / n, gap: hits / n - p }))
}

function corpOf(pairs: readonly { p: number; y: number }[]): QuestionEvaluation['corp'] {
  const decomposition = corpDecomposition(pairs, 'brier')
  const diagram = corpDiagram(pairs, { seed: DEFAULT_SEED })
  if (!decomposition || !diagram) return null
  return { mcb: decomposition.mcb, dsc: decomposition.dsc, unc: decomposition.unc, diagram }
}
