/**
 * `svc release …`: the operator's release commands (record/releases/). Build a sealed candidate from a dataset, run
 * the four promotion gates on it, activate it (one-shot, only when every gate passed), roll back (a new activation of
 * the active release's parent), and list or show releases with their derived status. Results go to stdout (text, or
 * JSON with --json; `show` prints the proof bundle as JSON); progress goes to stderr: a bar on a TTY, pino lines off it.
 */
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { UsageError, type Command } from '../Command.ts'
import { environment, progressSettings } from '../environment.ts'
import { childLogger } from '../../common/logger.ts'
import { startProgress, type Progress } from '../../common/progress.ts'
import { Type } from '../../common/schema.ts'
import { OptionsError, validateOptions } from '../../common/validation.ts'
import { isoMs } from '../../ingest/Tick.ts'
import { QUESTION_IDS } from '../../models/QuestionModel.ts'
import type { ProgressFn } from '../../record/releases/dataset.ts'
import { ReleaseError } from '../../record/releases/ReleaseError.ts'
import { buildRelease, runEvaluation } from '../../record/releases/ReleaseJobs.ts'
import { RELEASE_STATUSES, ReleaseStore, type ReleaseFeedItem, type ReleaseStatus } from '../../record/releases/ReleaseStore.ts'

const VERSION = Type.String({ pattern: '^(0|[1-9]\\d{0,5})\\.(0|[1-9]\\d{0,5})\\.(0|[1-9]\\d{0,5})$', 'x-expected': 'a version <major>.<minor>.<patch> such as 1.2.0 (numbers without leading zeros)', description: '<major>.<minor>.<patch>' })
const INSTANT = Type.String({ format: 'date-time' })
const DATE_OR_INSTANT = Type.Union([INSTANT, Type.String({ format: 'date' })])

const BUILD_OPTIONS = Type.Object(
  {
    version: VERSION,
    parent: Type.Optional(Type.Union([VERSION, Type.Literal('none')])),
    method: Type.Union([Type.Literal('v1'), Type.Literal('v2')]),
    dataset: Type.Optional(Type.String({ pattern: '^[0-9a-f]{8,64}$', 'x-expected': 'a dataset hash: 8 to 64 lowercase hex digits (a prefix is enough)' })),
    tape: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })),
    'window-start': Type.Optional(DATE_OR_INSTANT),
    'window-end': Type.Optional(DATE_OR_INSTANT),
    'holdout-end': Type.Optional(DATE_OR_INSTANT),
    questions: Type.Optional(Type.Array(Type.Union(QUESTION_IDS.map((q) => Type.Literal(q))), { minItems: 1, uniqueItems: true })),
    'data-dir': Type.Optional(Type.String({ minLength: 1 })),
    json: Type.Boolean(),
  },
  { additionalProperties: false },
)
const VERSION_OPTIONS = Type.Object({ version: VERSION, 'data-dir': Type.Optional(Type.String({ minLength: 1 })), json: Type.Boolean() }, { additionalProperties: false })
const LIST_OPTIONS = Type.Object(
  { status: Type.Optional(Type.Union(RELEASE_STATUSES.map((s) => Type.Literal(s)))), 'data-dir': Type.Optional(Type.String({ minLength: 1 })), json: Type.Boolean() },
  { additionalProperties: false },
)
const ROLLBACK_OPTIONS = Type.Object({ 'data-dir': Type.Optional(Type.String({ minLength: 1 })), json: Type.Boolean() }, { additionalProperties: false })

/** The one Ajv helper; a bad option is a usage error (printed with the usage, exit 2). */
function checked<T>(schema: object, value: Record<string, unknown>): T {
  try {
    return validateOptions<T>('options', schema, value)
  } catch (err) {
    if (err instanceof OptionsError) throw new UsageError(err.message)
    throw err
  }
}

function dataDirOf(flag: string | undefined): string {
  return resolve(flag ?? environment().SVC_DATA_DIR)
}

/** A bar per stage on a TTY; off a TTY, pino lines at most every SVC_PROGRESS_MS (and at each stage's end). */
function progressReporter(): { onProgress: ProgressFn; stop(): void } {
  const settings = progressSettings()
  if (process.stderr.isTTY && !settings.plain) {
    let bar: Progress | null = null
    let stage = ''
    return {
      onProgress(s, done, total) {
        if (s !== stage) {
          bar?.stop()
          stage = s
          bar = startProgress(`release ${s}`, total, s === 'label decisions' ? 'ticks' : 'families', settings)
        }
        bar!.update(done)
      },
      stop: () => bar?.stop(),
    }
  }
  const log = childLogger('release')
  let stage = ''
  let last = 0
  return {
    onProgress(s, done, total) {
      const now = Date.now()
      if (s !== stage || done >= total || now - last >= settings.everyMs) {
        log.info({ stage: s, done, total }, `release ${s}: ${done}/${total}`)
        stage = s
        last = now
      }
    },
    stop: () => {},
  }
}

async function withStore<T>(dataDir: string, fn: (store: ReleaseStore) => Promise<T>): Promise<T> {
  const store = await ReleaseStore.open(dataDir)
  try {
    return await fn(store)
  } finally {
    store.close()
  }
}

const fmt = (x: number | null | undefined, d = 5) => (x === null || x === undefined ? '—' : x.toFixed(d))
const fmtCi = (c: [number, number] | null | undefined) => (c ? `[${fmt(c[0])}, ${fmt(c[1])}]` : '—')

function itemLines(r: ReleaseFeedItem): string {
  const lines = [`${r.version}  ${r.status}  parent ${r.parent ?? '—'}  created ${r.created_at}${r.activated_at ? `  activated ${r.activated_at}` : ''}`]
  lines.push(`  dataset ${r.dataset.dataset_hash.slice(0, 16)}  fit ${r.dataset.window_start} → ${r.dataset.window_end}  n_realized ${r.dataset.n_realized}`)
  if (r.evaluation) {
    const e = r.evaluation
    lines.push(`  vs ${e.incumbent.kind === 'release' ? `release ${e.incumbent.version}` : 'the base rate'} on ${e.holdout.n_realized} realized holdout decisions: delta Brier ${fmt(e.delta_brier)} ${fmtCi(e.delta_brier_ci)}, delta log loss ${fmt(e.delta_logloss)} ${fmtCi(e.delta_logloss_ci)}`)
  }
  for (const g of r.gates) lines.push(`  ${g.met ? 'pass' : 'FAIL'}  ${g.gate}${g.reason ? `: ${g.reason}` : ''}`)
  return lines.join('\n')
}

const DATA_DIR_HELP = '  --data-dir DIR       data folder (default $SVC_DATA_DIR or ./data)\n  --json               print JSON instead of text\n'

const build: Command = {
  name: 'release build',
  summary: 'Fit every question family on a dataset (tapes + time split, or a dataset hash) and seal a candidate release',
  usage: `Usage: svc release build --version X.Y.Z --method v1|v2 --dataset HASH [options]
       svc release build --version X.Y.Z --method v1|v2 --tape FILE [--tape FILE ...] --window-end DATE [options]

Fits every family by the method (v1: jev-1.0.0; v2: the live jev-2.0.0) on the decisions whose windows close before
--window-end and seals the body (fitted parameters, dataset, code pin) with its JCS SHA-256 checksum. The decisions
from --window-end on (to --holdout-end, or the end of the tapes) are the holdout \`svc release evaluate\` scores.

Options:
  --version X.Y.Z      the release version (never reused)
  --method v1|v2       the model method
  --parent X.Y.Z|none  the incumbent it is compared with (default: the active release)
  --dataset HASH       a dataset defined before (its hash, or a unique prefix of 8+ hex digits)
  --tape FILE          a tape or recorded venue file (repeat); defines the dataset with the split below
  --window-start DATE  first decision of the fit window (default: the first tick)
  --window-end DATE    the split: fit windows close before it, holdout decisions start at it
  --holdout-end DATE   the holdout's end (default: the end of the tapes)
  --questions IDS      comma-separated families (default: every sold market question)
${DATA_DIR_HELP}`,
  async run(argv) {
    const { values } = parseArgs({
      args: argv,
      options: {
        version: { type: 'string' },
        parent: { type: 'string' },
        method: { type: 'string' },
        dataset: { type: 'string' },
        tape: { type: 'string', multiple: true },
        'window-start': { type: 'string' },
        'window-end': { type: 'string' },
        'holdout-end': { type: 'string' },
        questions: { type: 'string' },
        'data-dir': { type: 'string' },
        json: { type: 'boolean', default: false },
      },
      strict: true,
      allowPositionals: false,
    })
    const o = checked<{ version: string; parent?: string; method: 'v1' | 'v2'; dataset?: string; tape?: string[]; 'window-start'?: string; 'window-end'?: string; 'holdout-end'?: string; questions?: string[]; 'data-dir'?: string; json: boolean }>(BUILD_OPTIONS, {
      ...values,
      ...(values.questions !== undefined ? { questions: values.questions.split(',').map((s) => s.trim()) } : {}),
    })
    if ((o.dataset === undefined) === (o.tape === undefined)) throw new UsageError('give either --dataset or --tape (with --window-end)')
    if (o.tape && o['window-end'] === undefined) throw new UsageError('--tape needs --window-end (the split)')
    if (o.dataset && (o['window-start'] ?? o['window-end'] ?? o['holdout-end']) !== undefined) throw new UsageError('--dataset already fixes the split; --window-* and --holdout-end go with --tape')
    const progress = progressReporter()
    try {
      const result = await withStore(dataDirOf(o['data-dir']), (store) =>
        buildRelease(store, {
          version: o.version,
          ...(o.parent !== undefined ? { parent: o.parent === 'none' ? null : o.parent } : {}),
          method: o.method,
          dataset: o.dataset
            ? { hash: o.dataset }
            : { tapes: o.tape!, window_end: o['window-end']!, ...(o['window-start'] ? { window_start: o['window-start'] } : {}), holdout_end: o['holdout-end'] ?? null },
          ...(o.questions ? { families: o.questions } : {}),
          onProgress: progress.onProgress,
        }),
      )
      progress.stop()
      if (o.json) process.stdout.write(JSON.stringify({ version: result.version, checksum: result.checksum, dataset: result.manifest, body: result.body }, null, 2) + '\n')
      else {
        const fams = Object.entries(result.body.families).map(([id, f]) => `  ${id}: ${f.fitted.version} (${String((f.fitted.params as { status?: unknown }).status)}; ${f.n_realized} realized of ${f.n_fit})`)
        process.stdout.write(
          [`release ${result.version} sealed as a candidate (parent ${result.body.parent ?? 'none'})`, `checksum ${result.checksum}`, `dataset ${result.manifest.dataset_hash} (fit ${result.body.dataset.window_start} → ${result.body.dataset.window_end}; holdout to ${result.manifest.holdout_end ?? 'the end of the tapes'})`, `method ${result.body.method.name} (${result.body.method.jev_version}); policy ${result.body.code.policy_version}; fit_code ${result.body.code.fit_code.slice(0, 16)}`, ...fams].join('\n') + '\n',
        )
      }
      return 0
    } finally {
      progress.stop()
    }
  },
}

function versionCommand(name: string, summary: string, usage: string, act: (store: ReleaseStore, version: string, json: boolean) => Promise<string>): Command {
  return {
    name,
    summary,
    usage,
    async run(argv) {
      const { values, positionals } = parseArgs({ args: argv, options: { 'data-dir': { type: 'string' }, json: { type: 'boolean', default: false } }, strict: true, allowPositionals: true })
      if (positionals.length !== 1) throw new UsageError('give exactly one VERSION')
      const o = checked<{ version: string; 'data-dir'?: string; json: boolean }>(VERSION_OPTIONS, { ...values, version: positionals[0] })
      const out = await withStore(dataDirOf(o['data-dir']), (store) => act(store, o.version, o.json))
      process.stdout.write(out.endsWith('\n') ? out : out + '\n')
      return 0
    },
  }
}

const evaluate = versionCommand(
  'release evaluate',
  'Run the four promotion gates on a release over its holdout folds and seal the gate rows',
  `Usage: svc release evaluate VERSION [options]

Rebuilds the body from its dataset hash with this code (reproducibility), scores it and its incumbent (the parent, or
the base rate) on the holdout in time-ordered folds, and seals one row per gate: evidence, improvement, no_regression,
reproducible. A release is evaluated once; running it again re-measures and says whether the figures are unchanged.

Options:
${DATA_DIR_HELP}`,
  async (store, version, json) => {
    const progress = progressReporter()
    try {
      const r = await runEvaluation(store, version, { onProgress: progress.onProgress })
      progress.stop()
      if (json) return JSON.stringify({ sealed: r.sealed, remeasured: r.remeasured, release: r.detail }, null, 2)
      const head = r.sealed ? `release ${version}: gate rows sealed` : `release ${version} was evaluated before (nothing written); re-measured: ${r.remeasured!.identical ? 'identical' : `differs in ${r.remeasured!.differences.join(', ')}`}`
      const fam = Object.values(r.families).map((f) => `  ${f.question_id}: n ${f.n_realized}, Brier ${fmt(f.candidate.brier)} vs ${fmt(f.incumbent.brier)}, delta ${fmt(f.delta_brier)} ${fmtCi(f.delta_brier_ci)}, map ${f.map.kind}${f.map.max_slope === null ? '' : ` slope ${fmt(f.map.max_slope, 2)}`}, refused ${f.candidate.n_refused} vs ${f.incumbent.n_refused}`)
      const folds = r.evaluation.folds.map((f) => `  fold ${f.fold} ${f.window_start} → ${f.window_end}: n ${f.n_realized}, delta Brier ${fmt(f.delta_brier)}, delta log loss ${fmt(f.delta_logloss)}`)
      return [head, itemLines(r.detail), 'folds:', ...folds, 'families:', ...fam].join('\n')
    } finally {
      progress.stop()
    }
  },
)

const activate = versionCommand(
  'release activate',
  'Activate a release whose four gates all passed (one-shot)',
  `Usage: svc release activate VERSION [options]

Appends an activation row. Refuses unless all four sealed gates passed, and refuses a second activation of the same
release (rollback is how an earlier release becomes active again).

Options:
${DATA_DIR_HELP}`,
  async (store, version, json) => {
    const r = await store.activate(version, isoMs(Date.now()))
    return json ? JSON.stringify({ version, ...r }) : `release ${version} is active (activation ${r.seq}; previously ${r.previous ?? 'none'})`
  },
)

const show = versionCommand(
  'release show',
  'Print a release\'s proof bundle (feed item, sealed body verbatim, per-family details) as JSON',
  `Usage: svc release show VERSION [options]

Prints what GET /v1/intelligence/releases/{version} serves.

Options:
${DATA_DIR_HELP}`,
  async (store, version) => {
    const d = await store.detail(version)
    if (!d) throw new ReleaseError('RELEASE_NOT_FOUND', `no release ${version}`)
    return JSON.stringify(d, null, 2)
  },
)

const rollback: Command = {
  name: 'release rollback',
  summary: "Roll back: a new activation of the active release's parent",
  usage: `Usage: svc release rollback [options]

Options:
${DATA_DIR_HELP}`,
  async run(argv) {
    const { values } = parseArgs({ args: argv, options: { 'data-dir': { type: 'string' }, json: { type: 'boolean', default: false } }, strict: true, allowPositionals: false })
    const o = checked<{ 'data-dir'?: string; json: boolean }>(ROLLBACK_OPTIONS, { ...values })
    const r = await withStore(dataDirOf(o['data-dir']), (store) => store.rollback(isoMs(Date.now())))
    process.stdout.write((o.json ? JSON.stringify(r) : `rolled back from ${r.from}: ${r.to} is active again (activation ${r.seq})`) + '\n')
    return 0
  },
}

const list: Command = {
  name: 'release list',
  summary: 'List releases with their status (derived from the rows), evaluation and gates',
  usage: `Usage: svc release list [--status candidate|active|superseded|rejected] [options]

Options:
${DATA_DIR_HELP}`,
  async run(argv) {
    const { values } = parseArgs({ args: argv, options: { status: { type: 'string' }, 'data-dir': { type: 'string' }, json: { type: 'boolean', default: false } }, strict: true, allowPositionals: false })
    const o = checked<{ status?: ReleaseStatus; 'data-dir'?: string; json: boolean }>(LIST_OPTIONS, { ...values })
    const items = await withStore(dataDirOf(o['data-dir']), (store) => store.list({ status: o.status ?? null }))
    process.stdout.write((o.json ? JSON.stringify({ releases: items }, null, 2) : items.length === 0 ? 'no releases' : items.map(itemLines).join('\n\n')) + '\n')
    return 0
  },
}

export const commands: Command[] = [build, evaluate, activate, rollback, list, show]
