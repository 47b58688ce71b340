/**
 * `svc eval`: fits every sold market question on the part of a tape before the split and scores it on the part after
 * (or fits on training tapes and scores on test tapes), against the base rate measured on the training part
 * (models/evaluateQuestion.ts). The table goes to stdout, progress to stderr.
 */
import { parseArgs } from 'node:util'
import { UsageError, type Command } from '../Command.ts'
import { startProgress } from '../../common/progress.ts'
import { progressSettings } from '../environment.ts'
import { loadTicks } from '../../ingest/loadTicks.ts'
import { buildDataset } from '../../models/Dataset.ts'
import { evaluateQuestion, scoreQuestion, ECE_BINS, type QuestionEvaluation } from '../../models/evaluateQuestion.ts'
import { questionById, soldMarketQuestions } from '../../models/questions/index.ts'
import { activePolicy } from '../../models/policy/rulesets.ts'
import { JEV_VERSION } from '../../models/version.ts'
import type { QuestionModel } from '../../models/QuestionModel.ts'
import { BinaryQuestion } from '../../models/questions/BinaryQuestion.ts'
import { MarketRegimeQuestion } from '../../models/questions/S01_market_regime.ts'
import { gateSummary } from '../../models/saleGate.ts'
const usage = `Usage: svc eval --tape FILE [--tape FILE ...] [--split DATE] [--questions ID,...] [--json]
       svc eval --train FILE [--train FILE ...] --test FILE [--test FILE ...] [--questions ID,...] [--json]

Fits each question on decisions whose windows closed before the split and scores the decisions at or after it; or
fits only on the training tapes and scores only on the test tapes. No decision is made inside a gap in the ticks
(more than 12 h without a record) and no window is graded across one.

Options:
  --tape FILE       a tape (NDJSON, optionally gzip) or a recorded venue file from ../shared/tapes (imported
                    in-process); repeat to combine, e.g. an OKX 1H file with its 8h funding file
  --split DATE      ISO date or instant; default: 70% of each question's decision span on these tapes
  --train FILE      a tape to fit on (repeat to combine); with --test instead of --tape and --split
  --test FILE       a tape to score on (repeat to combine)
  --questions IDS   comma-separated question ids (default: every sold market question)
  --models v1|v2    v2: the live models (jev-2.0.0, default), scored beside v1 as the previous version;
                    v1: the jev-1.0.0 models alone
  --json            print the evaluations as JSON instead of a table
`

/** The labelled decisions of one set of tapes (their ticks merged in event time; gaps are not crossed). */
async function datasetOf(paths: readonly string[], questions: readonly QuestionModel[], label: string) {
  const ticks = await loadTicks(paths)
  if (ticks.length === 0) throw new UsageError(`the tapes hold no records: ${paths.join(', ')}`)
  const progress = startProgress(label, ticks.length, 'ticks', progressSettings())
  const built = buildDataset(ticks, questions, (n) => progress.update(n))
  progress.update(ticks.length)
  progress.stop()
  return built
}

function fmt(x: number | null | undefined, digits = 4): string {
  return x === null || x === undefined ? '—' : x.toFixed(digits)
}

export function formatTable(evals: readonly QuestionEvaluation[], unavailable: Record<string, number> = {}): string {
  const header = ['question', 'split', 'train n', 'decisions', 'resolved', 'unresolvable', 'refused', 'Brier', 'base-rate Brier', 'BSS', 'BSS 95% CI', '1-feature BSS', 'previous BSS', 'ECE', 'distinct p', 'sale gate']
  const rows = evals.map((e) => [
    e.question_id,
    e.split === null ? '—' : e.split.slice(0, 16) + 'Z',
    String(e.train.resolved),
    String(e.n_decisions),
    String(e.n_resolved),
    String(e.n_unresolvable),
    String(e.n_refused),
    fmt(e.brier),
    fmt(e.base_brier),
    fmt(e.bss, 3),
    e.bss_ci ? `[${fmt(e.bss_ci.lower, 3)}, ${fmt(e.bss_ci.upper, 3)}]` : '—',
    fmt(e.one_feature?.bss, 3),
    fmt(e.previous?.bss, 3),
    fmt(e.ece?.value),
    String(e.distinct_probabilities),
    e.sale_gate === null ? '—' : e.sale_gate.status === 'sold' ? 'sold' : `blocked: ${e.sale_gate.reason}`,
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`
  const out = [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)]
  const notes = [
    '',
    `Brier: binary mean (p − o)²; S01 multi-class Brier Σ_k (p_k − o_k)² (range 0..2). Base-rate Brier: the TRAINING window's base rate (S01: class frequencies) applied to the test decisions.`,
    `BSS = 1 − Brier / base-rate Brier; 95% CI: seeded percentile block bootstrap (seed 1, 2000 resamples) over whole UTC days of test decisions, every asset of a day together.`,
    `1-feature BSS: the skill, against the same base rate and on the same decisions, of the deciles of one feature per question (Laplace-smoothed rates fitted on the same training decisions; the feature is named in --json and docs/methodology.md).`,
    `previous BSS: the previous version (v1, jev-1.0.0) fitted on the same training decisions and scored on the same decisions (its refusals forecast the training base rate; S01: class frequencies); — with --models v1.`,
    `ECE: K = ${ECE_BINS} adaptive (equal-count) bins, (a,b] convention, L1, weighted by bin count (S01: top-label, modal-class probability vs hit). distinct p: distinct probability values scored.`,
    `sale gate: measured on the training span only — the method refitted on its earlier rows and scored on a later holdout of it; sold when the holdout BSS's day-block 95% lower bound is above 0 and the BSS is at least the one-feature baseline's (docs/methodology.md). The test columns score the model as it would answer if sold.`,
    `train n = resolved training decisions (window end before the split); decisions = test decisions (decision time ≥ split); refused = policy refusals (probability 0, confidence 0), not scored; unresolvable = claims whose window could not be resolved. Figures that do not beat the base rate are printed as they are.`,
  ]
  for (const e of evals) {
    if (e.n_decisions === 0 && e.train.n === 0 && (unavailable[e.question_id] ?? 0) > 0) {
      notes.push(`${e.question_id}: no decisions — an input it needs is not on these tapes (${unavailable[e.question_id]} market-instants without it)`)
    }
    const reasons = Object.entries(e.refused_by_reason).map(([k, v]) => `${k} ${v}`).join(', ')
    if (reasons) notes.push(`${e.question_id} refusals: ${reasons}`)
    if (e.per_value && e.per_value.length > 0) {
      notes.push(`${e.question_id} reliability per value: ${e.per_value.map((v) => `p ${fmt(v.p, 3)} n ${v.n} realized ${fmt(v.realized, 3)}`).join('; ')}`)
    }
    if (e.sale_gate && e.sale_gate.status === 'blocked') notes.push(`${e.question_id} sale gate: blocked (${e.sale_gate.reason}), ${gateSummary(e.sale_gate)}`)
    if (e.predicted_classes) notes.push(`${e.question_id} predicted classes: ${Object.entries(e.predicted_classes).map(([k, v]) => `${k} ${v}`).join(', ')}`)
  }
  return out.join('\n') + '\n' + notes.join('\n') + '\n'
}

export const command: Command = {
  name: 'eval',
  summary: 'Fit questions before a time split on tapes and score them after it (Brier, base rate, BSS with CI, ECE)',
  usage,
  async run(argv) {
    const { values } = parseArgs({
      args: argv,
      options: {
        tape: { type: 'string', multiple: true },
        train: { type: 'string', multiple: true },
        test: { type: 'string', multiple: true },
        split: { type: 'string' },
        questions: { type: 'string' },
        models: { type: 'string', default: 'v2' },
        json: { type: 'boolean', default: false },
      },
      strict: true,
      allowPositionals: false,
    })
    const tapes = values.tape ?? []
    const trainTapes = values.train ?? []
    const testTapes = values.test ?? []
    const apart = trainTapes.length > 0 || testTapes.length > 0
    if (apart) {
      if (trainTapes.length === 0 || testTapes.length === 0) throw new UsageError('--train and --test go together')
      if (tapes.length > 0 || values.split !== undefined) throw new UsageError('--train/--test replace --tape and --split')
    } else if (tapes.length === 0) throw new UsageError('--tape (or --train with --test) is required')
    let split: number | undefined
    if (values.split !== undefined) {
      split = Date.parse(values.split)
      if (Number.isNaN(split)) throw new UsageError(`--split must be an ISO date or instant, got '${values.split}'`)
    }
    let questions: QuestionModel[] = soldMarketQuestions()
    if (values.questions !== undefined) {
      questions = values.questions.split(',').map((id) => {
        const q = questionById(id.trim())
        if (!q) throw new UsageError(`--questions: unknown question '${id}'`)
        return q
      })
    }
    if (values.models !== 'v1' && values.models !== 'v2') throw new UsageError(`--models must be v1 or v2, got '${values.models}'`)
    const models = values.models
    // The live models (v2, jev-2.0.0) are scored beside the version they replaced; --models v1 scores that version.
    const previousOf = new Map<string, QuestionModel>()
    questions = questions.map((q) => {
      if (!(q instanceof BinaryQuestion) && !(q instanceof MarketRegimeQuestion)) return q
      if (models === 'v1') return q.withMethod('v1')
      previousOf.set(q.id, q.withMethod('v1'))
      return q.withMethod('v2')
    })
    const previousOption = (q: QuestionModel) => (previousOf.has(q.id) ? { previous: previousOf.get(q.id)! } : {})
    const policy = activePolicy()
    const head = `models ${models}; jev ${JEV_VERSION}; policy ${policy.version} (${policy.checksum.slice(0, 12)})`
    const sealed = { models, jev_version: JEV_VERSION, policy_version: policy.version, policy_checksum: policy.checksum }
    if (apart) {
      const train = await datasetOf(trainTapes, questions, 'eval train')
      const test = await datasetOf(testTapes, questions, 'eval test')
      const evals = questions.map((q) =>
        scoreQuestion(q, { train: train.samples.get(q.id) ?? [], test: test.samples.get(q.id) ?? [] }, { policy, split: null, splitRule: 'train tapes → test tapes', ...previousOption(q) }),
      )
      if (values.json) {
        process.stdout.write(JSON.stringify({ ...sealed, train_tapes: trainTapes, test_tapes: testTapes, train_dataset: train.stats, test_dataset: test.stats, evaluations: evals }, null, 2) + '\n')
      } else {
        process.stdout.write(`svc eval — fit on ${trainTapes.join(' + ')} (${train.stats.ticks} ticks), scored on ${testTapes.join(' + ')} (${test.stats.ticks} ticks)\n${head}\n\n`)
        process.stdout.write(formatTable(evals, test.stats.unavailable))
      }
      return 0
    }
    const { samples, stats } = await datasetOf(tapes, questions, 'eval')
    const evals = questions.map((q) => evaluateQuestion(q, samples.get(q.id) ?? [], { policy, ...previousOption(q), ...(split !== undefined ? { split } : {}) }))
    if (values.json) {
      process.stdout.write(JSON.stringify({ ...sealed, tapes, dataset: stats, evaluations: evals }, null, 2) + '\n')
    } else {
      process.stdout.write(`svc eval — ${tapes.join(' + ')}\n${stats.ticks} ticks; ${head}\n\n`)
      process.stdout.write(formatTable(evals, stats.unavailable))
    }
    return 0
  },
}
