/**
 * The four promotion gates (spec, States and transitions: "evidence (30 realized per fitted family, 100 in total);
 * improvement (holdout delta Brier below zero with its 95% interval strictly below zero, or the equivalent log-loss
 * criterion when flat); no regression (no family worse than 0.005, monotone slope-bounded map, refusal behaviour on
 * replay unchanged); reproducibility (rebuilding the body from dataset hash and pinned code reproduces the checksum
 * exactly; failure never promotes)").
 *
 * Holdout: the dataset's holdout decisions (dataset.ts: decided at or after the fit window's end), never used to fit
 * either body. Both sealed bodies answer every holdout decision through their pinned rulesets, as the engine would:
 * nothing is refitted, so what is measured is exactly what activation would serve. Scores per realized decision:
 * binary Brier (p − o)², S01 the multi-class Brier Σ_k (p_k − o_k)² (the distribution is what is sold); log loss
 * −ln p(realized), p clipped to [1e-15, 1 − 1e-15]. Where a body refuses, its forecast is its own training base rate
 * (`reference`: a refusal claims nothing, and this is how `svc eval` scores a previous version's refusals), so a
 * release that stops answering a family pays for it in the scores.
 *
 * Incumbent: the candidate's parent release; a release without a parent is compared with the base-rate forecaster
 * (its own training base rates), so the first release must beat climatology.
 *
 * Delta: mean over realized holdout decisions of score(candidate) − score(incumbent), every family pooled (negative:
 * the candidate is better). Interval: seeded percentile bootstrap (seed 1, 2000 resamples, 95 %) resampling whole UTC
 * days, every asset and family of a day together (models/verification/bootstrap.ts blockBootstrapCi). Folds: the
 * holdout cut into FOLDS consecutive spans of equal length, each with its own delta (time-ordered, never shuffled).
 */
import { canonicalJson } from '../../common/jcs.ts'
import { isoMs } from '../../ingest/Tick.ts'
import type { FittedParams, LabelledSample, ModelOutput, QuestionId, QuestionModel } from '../../models/QuestionModel.ts'
import type { Policy } from '../../models/policy/Policy.ts'
import { policyByVersion } from '../../models/policy/rulesets.ts'
import { BINARY_METHOD, BINARY_METHOD_V2 } from '../../models/questions/BinaryQuestion.ts'
import { S01_METHOD_V2 } from '../../models/questions/S01_market_regime.ts'
import { blockBootstrapCi, DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED } from '../../models/verification/bootstrap.ts'
import { familyModel, type ReleaseBody } from './body.ts'
import { isRealized } from './dataset.ts'
import { DAY_MS } from '../../common/time.ts'

export const GATES = ['evidence', 'improvement', 'no_regression', 'reproducible'] as const
export type GateName = (typeof GATES)[number]

export const EVIDENCE_PER_FAMILY = 30
export const EVIDENCE_TOTAL = 100
/** A family is a regression when its holdout Brier is worse than the incumbent's by more than this. */
export const REGRESSION_TOLERANCE = 0.005
/** |delta Brier| below this is flat: then the log-loss criterion decides improvement. */
export const FLAT_BRIER = 0.0005
/**
 * A calibration map may stretch log-odds at most this much (calibrated log-odds per raw log-odds): beyond it the map is
 * close to a step, and a small change in the model's raw output swings the sold probability. Fixed before any
 * holdout was scored.
 */
export const MAP_SLOPE_MAX = 5
export const FOLDS = 4
const LL_CLIP = 1e-15

export interface GateVerdict {
  met: boolean
  measured: Record<string, unknown>
  reason?: string
}

export type Interval = [number, number]

export interface FoldResult {
  fold: number
  window_start: string
  window_end: string
  n_realized: number
  delta_brier: number | null
  delta_logloss: number | null
}

export interface MapCheck {
  /** none: no map is served (S01 v1's cell frequencies, an insufficient fit, a family its sale gate blocked). */
  kind: 'isotonic' | 'platt' | 'temperature' | 'none'
  monotone: boolean
  /** Largest calibrated-per-raw log-odds slope of the map (null without a map). */
  max_slope: number | null
  slope_bound: number
  met: boolean
}

export interface RefusalCheck {
  /** The sealed body read back from its canonical JSON answers every holdout decision exactly as before. */
  replay_identical: boolean
  /** Decisions where the input and scope rules (stale_input, suppress) refuse differently from the incumbent. */
  input_rule_flips: number | null
  /** Decisions the incumbent answered and the candidate refuses, and the other way round, by the candidate's reason. */
  claim_to_refusal: number | null
  refusal_to_claim: number | null
  by_reason: Record<string, number>
  met: boolean
}

export interface SideScore {
  fitted_version: string | null
  fit_status: string | null
  n_refused: number
  brier: number | null
  logloss: number | null
}

export interface FamilyDetail {
  question_id: string
  n_decisions: number
  n_realized: number
  n_unresolvable: number
  fitted: boolean
  candidate: SideScore
  incumbent: SideScore
  delta_brier: number | null
  delta_brier_ci: Interval | null
  delta_logloss: number | null
  map: MapCheck
  refusals: RefusalCheck
  evidence_met: boolean
  regression_met: boolean
}

export interface FamilySummary {
  n_realized: number
  delta_brier: number | null
  delta_brier_ci: Interval | null
  delta_logloss: number | null
}

export interface Evaluation {
  folds: FoldResult[]
  incumbent: { version: string | null; kind: 'release' | 'base_rate' }
  delta_brier: number | null
  delta_brier_ci: Interval | null
  delta_logloss: number | null
  delta_logloss_ci: Interval | null
  per_family: Record<string, FamilySummary>
  holdout: { window_start: string; window_end: string | null; n_decisions: number; n_realized: number }
  bootstrap: { method: 'percentile, whole UTC days'; seed: number; resamples: number; level: number }
  candidate_checksum: string
}

export interface EvaluationResult {
  evaluation: Evaluation
  gates: Record<GateName, GateVerdict>
  families: Record<string, FamilyDetail>
}

interface Answer {
  refused: boolean
  /** 'input' for the question's input and scope rules, 'model' for what the fit decides (confidence, sale gate). */
  refusalKind: 'input' | 'model' | null
  reason: string | null
  forecast: number | number[] | null
  out: ModelOutput
}

function answer(q: QuestionModel, fitted: FittedParams | null, policy: Policy, s: LabelledSample, reference: number | number[] | null): Answer {
  const out = q.evaluate(s.snapshot, fitted)
  const decided = policy.apply(out, q.id)
  if (decided.action === 'refuse') {
    const input = out.kind === 'refusal' && (out.refusal === 'stale_input' || out.refusal === 'suppress')
    const reason = out.kind === 'refusal' ? `${out.refusal}:${out.reason}` : 'insufficient_confidence:min_confidence'
    return { refused: true, refusalKind: input ? 'input' : 'model', reason, forecast: reference, out }
  }
  if (q.answer === 'choice') {
    const classes = q.classes ?? []
    return { refused: false, refusalKind: null, reason: null, forecast: out.kind === 'claim' ? classes.map((c) => out.distribution?.[c] ?? 0) : reference, out }
  }
  return { refused: false, refusalKind: null, reason: null, forecast: decided.probability, out }
}

function scores(q: QuestionModel, forecast: number | number[] | null, s: LabelledSample): { brier: number; logloss: number } | null {
  if (forecast === null) return null
  if (q.answer === 'choice') {
    const k = (q.classes ?? []).indexOf(s.resolution.realized_choice!)
    const dist = forecast as number[]
    const brier = dist.reduce((a, p, i) => a + (p - (i === k ? 1 : 0)) ** 2, 0)
    return { brier, logloss: -Math.log(Math.min(1 - LL_CLIP, Math.max(LL_CLIP, dist[k] ?? 0))) }
  }
  const p = forecast as number
  const y = s.resolution.outcome === 'obtains' ? 1 : 0
  const pc = Math.min(1 - LL_CLIP, Math.max(LL_CLIP, p))
  return { brier: (p - y) ** 2, logloss: -(y * Math.log(pc) + (1 - y) * Math.log(1 - pc)) }
}

function logit(p: number): number {
  const q = Math.min(1 - 1e-9, Math.max(1e-9, p))
  return Math.log(q / (1 - q))
}

/** The family's calibration map, checked from the sealed parameters: monotone, and its log-odds slope bounded. */
export function mapCheck(fitted: FittedParams | null): MapCheck {
  const none: MapCheck = { kind: 'none', monotone: true, max_slope: null, slope_bound: MAP_SLOPE_MAX, met: true }
  const p = (fitted?.params ?? {}) as Record<string, unknown>
  if (!fitted || p.status !== 'ok') return none
  // A family its own sale gate blocked answers only refusals: no map of it is ever served.
  if ((p.sale_gate as { status?: unknown } | null | undefined)?.status === 'blocked') return none
  if (p.method === BINARY_METHOD) {
    const blocks = [...((p.calibration as Array<{ x_min: number; x_max: number; p: number }>) ?? [])].sort((a, b) => a.x_min - b.x_min)
    let monotone = true
    let max = 0
    for (let i = 1; i < blocks.length; i++) {
      const a = blocks[i - 1]!
      const b = blocks[i]!
      if (b.p < a.p) monotone = false
      const dx = logit((b.x_min + b.x_max) / 2) - logit((a.x_min + a.x_max) / 2)
      const dy = logit(b.p) - logit(a.p)
      max = Math.max(max, dx > 0 ? dy / dx : dy > 0 ? Infinity : 0)
    }
    const slope = Number.isFinite(max) ? max : null
    return { kind: 'isotonic', monotone, max_slope: slope, slope_bound: MAP_SLOPE_MAX, met: monotone && slope !== null && slope <= MAP_SLOPE_MAX }
  }
  if (p.method === BINARY_METHOD_V2) {
    const platt = p.platt as { sd: number[]; beta: number[] }
    const slope = (platt.beta[1] ?? 0) / (platt.sd[0] ?? 1)
    return { kind: 'platt', monotone: slope >= 0, max_slope: slope, slope_bound: MAP_SLOPE_MAX, met: slope >= 0 && slope <= MAP_SLOPE_MAX }
  }
  if (p.method === S01_METHOD_V2) {
    const t = p.temperature as number
    const slope = t > 0 ? 1 / t : null
    return { kind: 'temperature', monotone: t > 0, max_slope: slope, slope_bound: MAP_SLOPE_MAX, met: slope !== null && slope <= MAP_SLOPE_MAX }
  }
  // S01 v1 answers cell frequencies: no map from a raw score to a probability.
  return none
}

interface Row {
  family: string
  day: number
  at: number
  dBrier: number
  dLogloss: number
}

const mean = (rows: readonly Row[], pick: (r: Row) => number): number | null => (rows.length === 0 ? null : rows.reduce((a, r) => a + pick(r), 0) / rows.length)

function ci(rows: readonly Row[], pick: (r: Row) => number): Interval | null {
  if (rows.length < 2) return null
  const b = blockBootstrapCi(rows, (r) => r.day, (sample) => mean(sample, pick), { seed: DEFAULT_SEED, resamples: DEFAULT_RESAMPLES, level: DEFAULT_LEVEL })
  return b ? [b.lower, b.upper] : null
}

export interface EvaluateInput {
  candidate: ReleaseBody
  candidateChecksum: string
  /** The parent's body, or null: the base-rate forecaster. */
  incumbent: ReleaseBody | null
  holdout: ReadonlyMap<QuestionId, readonly LabelledSample[]>
  holdoutWindow: { start: string; end: string | null }
  /** The reproducibility measurement (a rebuild from the dataset hash; ReleaseJobs). */
  reproducible: GateVerdict
  onFamily?: (id: string, done: number, total: number) => void
}

/** Scores both bodies on the holdout and returns the evaluation, the four gate verdicts and the per-family details. */
export function evaluateRelease(input: EvaluateInput): EvaluationResult {
  const { candidate, incumbent } = input
  const candPolicy = policyByVersion(candidate.code.policy_version)!
  const incPolicy = incumbent ? policyByVersion(incumbent.code.policy_version)! : null
  const rows: Row[] = []
  const families: Record<string, FamilyDetail> = {}
  const ids = Object.keys(candidate.families).sort()
  let nDecisions = 0
  for (const [i, id] of ids.entries()) {
    input.onFamily?.(id, i, ids.length)
    const fam = candidate.families[id]!
    const q = familyModel(id, candidate.method.name)
    const choice = q.answer === 'choice'
    const incFam = incumbent?.families[id] ?? null
    const incQ = incumbent ? familyModel(id, incumbent.method.name) : null
    // Replay: the body as a reader of the sealed JSON gets it.
    const replayFitted = JSON.parse(canonicalJson(fam.fitted)) as FittedParams
    const holdout = input.holdout.get(id as QuestionId) ?? []
    nDecisions += holdout.length
    const famRows: Row[] = []
    let nUnresolvable = 0
    let candRefused = 0
    let incRefused = 0
    let replayIdentical = true
    let inputFlips = 0
    let claimToRefusal = 0
    let refusalToClaim = 0
    const byReason: Record<string, number> = {}
    let cb = 0
    let cl = 0
    let ib = 0
    let il = 0
    for (const s of holdout) {
      const a = answer(q, fam.fitted, candPolicy, s, fam.reference)
      const again = answer(q, replayFitted, candPolicy, s, fam.reference)
      if (a.refused !== again.refused || a.reason !== again.reason || canonicalJson(a.forecast) !== canonicalJson(again.forecast)) replayIdentical = false
      if (a.refused) candRefused++
      let b: Answer | null = null
      if (incumbent) {
        b = answer(incQ!, incFam?.fitted ?? null, incPolicy!, s, incFam?.reference ?? fam.reference)
        if (b.refused) incRefused++
        const aInput = a.refusalKind === 'input' ? a.reason : null
        const bInput = b.refusalKind === 'input' ? b.reason : null
        if (aInput !== bInput) inputFlips++
        if (a.refused && !b.refused) {
          claimToRefusal++
          byReason[a.reason!] = (byReason[a.reason!] ?? 0) + 1
        } else if (!a.refused && b.refused) {
          refusalToClaim++
          byReason[`answered where incumbent refused ${b.reason}`] = (byReason[`answered where incumbent refused ${b.reason}`] ?? 0) + 1
        }
      }
      if (!isRealized(s, choice)) {
        nUnresolvable++
        continue
      }
      const cs = scores(q, a.forecast, s)
      const is = scores(q, b ? b.forecast : fam.reference, s)
      if (!cs || !is) continue
      cb += cs.brier
      cl += cs.logloss
      ib += is.brier
      il += is.logloss
      famRows.push({ family: id, day: Math.floor(s.snapshot.at / DAY_MS), at: s.snapshot.at, dBrier: cs.brier - is.brier, dLogloss: cs.logloss - is.logloss })
    }
    rows.push(...famRows)
    const n = famRows.length
    const fitted = (fam.fitted.params as { status?: unknown }).status === 'ok'
    const deltaBrier = mean(famRows, (r) => r.dBrier)
    const map = mapCheck(fam.fitted)
    const refusals: RefusalCheck = {
      replay_identical: replayIdentical,
      input_rule_flips: incumbent ? inputFlips : null,
      claim_to_refusal: incumbent ? claimToRefusal : null,
      refusal_to_claim: incumbent ? refusalToClaim : null,
      by_reason: byReason,
      met: replayIdentical && (!incumbent || inputFlips === 0),
    }
    families[id] = {
      question_id: id,
      n_decisions: holdout.length,
      n_realized: n,
      n_unresolvable: nUnresolvable,
      fitted,
      candidate: { fitted_version: fam.fitted.version, fit_status: String((fam.fitted.params as { status?: unknown }).status ?? null), n_refused: candRefused, brier: n ? cb / n : null, logloss: n ? cl / n : null },
      incumbent: incumbent
        ? { fitted_version: incFam?.fitted.version ?? null, fit_status: incFam ? String((incFam.fitted.params as { status?: unknown }).status ?? null) : null, n_refused: incRefused, brier: n ? ib / n : null, logloss: n ? il / n : null }
        : { fitted_version: null, fit_status: 'base_rate', n_refused: 0, brier: n ? ib / n : null, logloss: n ? il / n : null },
      delta_brier: deltaBrier,
      delta_brier_ci: ci(famRows, (r) => r.dBrier),
      delta_logloss: mean(famRows, (r) => r.dLogloss),
      map,
      refusals,
      evidence_met: !fitted || n >= EVIDENCE_PER_FAMILY,
      regression_met: (deltaBrier === null || deltaBrier <= REGRESSION_TOLERANCE) && map.met && refusals.met,
    }
  }
  input.onFamily?.('', ids.length, ids.length)

  // Folds: equal spans of the holdout's decision times, in time order.
  const folds: FoldResult[] = []
  if (rows.length > 0) {
    let lo = Infinity
    let hi = -Infinity
    for (const r of rows) {
      lo = Math.min(lo, r.at)
      hi = Math.max(hi, r.at)
    }
    const span = (hi - lo + 1) / FOLDS
    for (let k = 0; k < FOLDS; k++) {
      const a = lo + Math.floor(k * span)
      const b = k === FOLDS - 1 ? hi + 1 : lo + Math.floor((k + 1) * span)
      const fr = rows.filter((r) => r.at >= a && r.at < b)
      folds.push({ fold: k + 1, window_start: isoMs(a), window_end: isoMs(b), n_realized: fr.length, delta_brier: mean(fr, (r) => r.dBrier), delta_logloss: mean(fr, (r) => r.dLogloss) })
    }
  }

  const deltaBrier = mean(rows, (r) => r.dBrier)
  const deltaBrierCi = ci(rows, (r) => r.dBrier)
  const deltaLogloss = mean(rows, (r) => r.dLogloss)
  const deltaLoglossCi = ci(rows, (r) => r.dLogloss)
  const perFamily: Record<string, FamilySummary> = {}
  for (const [id, f] of Object.entries(families)) perFamily[id] = { n_realized: f.n_realized, delta_brier: f.delta_brier, delta_brier_ci: f.delta_brier_ci, delta_logloss: f.delta_logloss }

  const evaluation: Evaluation = {
    folds,
    incumbent: incumbent ? { version: incumbent.version, kind: 'release' } : { version: null, kind: 'base_rate' },
    delta_brier: deltaBrier,
    delta_brier_ci: deltaBrierCi,
    delta_logloss: deltaLogloss,
    delta_logloss_ci: deltaLoglossCi,
    per_family: perFamily,
    holdout: { window_start: input.holdoutWindow.start, window_end: input.holdoutWindow.end, n_decisions: nDecisions, n_realized: rows.length },
    bootstrap: { method: 'percentile, whole UTC days', seed: DEFAULT_SEED, resamples: DEFAULT_RESAMPLES, level: DEFAULT_LEVEL },
    candidate_checksum: input.candidateChecksum,
  }

  // Evidence.
  const short = Object.values(families).filter((f) => !f.evidence_met)
  const evidenceMet = short.length === 0 && rows.length >= EVIDENCE_TOTAL
  const evidence: GateVerdict = {
    met: evidenceMet,
    measured: {
      n_realized: rows.length,
      per_family: Object.fromEntries(Object.values(families).map((f) => [f.question_id, { n_realized: f.n_realized, fitted: f.fitted }])),
      floor_per_family: EVIDENCE_PER_FAMILY,
      floor_total: EVIDENCE_TOTAL,
    },
    ...(evidenceMet
      ? {}
      : {
          reason: [
            ...short.map((f) => `${f.question_id}: ${f.n_realized} realized < ${EVIDENCE_PER_FAMILY}`),
            ...(rows.length < EVIDENCE_TOTAL ? [`${rows.length} realized in total < ${EVIDENCE_TOTAL}`] : []),
          ].join('; '),
        }),
  }

  // Improvement: the Brier delta's interval strictly below zero; when the Brier delta is flat, the log-loss one's.
  const flat = deltaBrier !== null && Math.abs(deltaBrier) < FLAT_BRIER
  const brierMet = deltaBrier !== null && deltaBrierCi !== null && deltaBrier < 0 && deltaBrierCi[1] < 0
  const loglossMet = flat && deltaLogloss !== null && deltaLoglossCi !== null && deltaLogloss < 0 && deltaLoglossCi[1] < 0
  const improvementMet = brierMet || loglossMet
  const fmtCi = (c: Interval | null) => (c ? `[${c[0].toFixed(5)}, ${c[1].toFixed(5)}]` : 'none')
  const improvement: GateVerdict = {
    met: improvementMet,
    measured: { delta_brier: deltaBrier, delta_brier_ci: deltaBrierCi, delta_logloss: deltaLogloss, delta_logloss_ci: deltaLoglossCi, flat, flat_below: FLAT_BRIER, criterion: brierMet ? 'brier' : loglossMet ? 'logloss' : flat ? 'logloss' : 'brier', n_realized: rows.length },
    ...(improvementMet
      ? {}
      : {
          reason:
            deltaBrier === null
              ? 'no realized holdout decision to compare'
              : flat
                ? `Brier delta flat (${deltaBrier.toFixed(5)}) and log-loss delta ${deltaLogloss?.toFixed(5)} ${fmtCi(deltaLoglossCi)} not strictly below zero`
                : `delta Brier ${deltaBrier.toFixed(5)} ${fmtCi(deltaBrierCi)}: the 95% interval is not strictly below zero`,
        }),
  }

  // No regression.
  const regressions: string[] = []
  for (const f of Object.values(families)) {
    if (f.delta_brier !== null && f.delta_brier > REGRESSION_TOLERANCE) regressions.push(`${f.question_id}: Brier worse by ${f.delta_brier.toFixed(5)} > ${REGRESSION_TOLERANCE}`)
    if (!f.map.met) regressions.push(`${f.question_id}: ${f.map.kind} map ${f.map.monotone ? `slope ${f.map.max_slope === null ? 'unbounded' : f.map.max_slope.toFixed(2)} > ${MAP_SLOPE_MAX}` : 'not monotone'}`)
    if (!f.refusals.replay_identical) regressions.push(`${f.question_id}: the sealed body does not replay its own answers`)
    if ((f.refusals.input_rule_flips ?? 0) > 0) regressions.push(`${f.question_id}: ${f.refusals.input_rule_flips} decisions refused differently by the input and scope rules`)
  }
  const noRegression: GateVerdict = {
    met: regressions.length === 0,
    measured: {
      tolerance: REGRESSION_TOLERANCE,
      slope_bound: MAP_SLOPE_MAX,
      per_family: Object.fromEntries(
        Object.values(families).map((f) => [f.question_id, { delta_brier: f.delta_brier, map: f.map, refusals: f.refusals, met: f.regression_met }]),
      ),
    },
    ...(regressions.length === 0 ? {} : { reason: regressions.join('; ') }),
  }

  return { evaluation, gates: { evidence, improvement, no_regression: noRegression, reproducible: input.reproducible }, families }
}
