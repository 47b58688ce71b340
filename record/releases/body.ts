/**
 * A release's sealed body and its checksum.
 *
 *   body = { version, parent, method: { name, jev_version }, families: { <question>: { fitted, reference, n_fit,
 *            n_realized } }, dataset: { window_start, window_end, n_realized, dataset_hash }, code: { jev_version,
 *            policy_version, policy_checksum, fit_code } }
 *   checksum = SHA-256 of the body's JCS (RFC 8785)
 *
 * `fitted` is exactly what the question's fit returns on the dataset's fit decisions (models/QuestionModel.ts
 * FittedParams: versioned, content-hashed, what the engine serves and replays), `reference` the training base rate
 * (binary: the share that obtained; S01: class frequencies), the forecast a refusal is scored as.
 *
 * The body holds nothing that depends on when or where it was built (no clock, no path, no host): building it again
 * from the same dataset hash with the same code gives the same bytes, which is what the reproducibility gate checks.
 * The code pin says which code that is: the model method's jev_version, the sealed ruleset its answers go through, and
 * `fit_code`, a SHA-256 over the bytes of every source file the fit runs (fitCodeFiles: the question registry and
 * what it imports, transitively). A git commit would move with every unrelated commit; this hash moves only when code
 * the fit runs changes, and then a rebuild is not "the pinned code" and the gate says so.
 */
import { readFile } from 'node:fs/promises'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { jcsSha256, sha256Hex } from '../../common/hash.ts'
import type { FittedParams, LabelledSample, QuestionId, QuestionModel } from '../../models/QuestionModel.ts'
import { BinaryQuestion } from '../../models/questions/BinaryQuestion.ts'
import { MarketRegimeQuestion } from '../../models/questions/S01_market_regime.ts'
import { questionById } from '../../models/questions/index.ts'
import type { Policy } from '../../models/policy/Policy.ts'
import { activePolicy, knownPolicyVersions, policyByVersion } from '../../models/policy/rulesets.ts'
import { JEV_VERSION } from '../../models/version.ts'
import { isRealized, type DatasetManifest } from './dataset.ts'
import { ReleaseError } from './ReleaseError.ts'

export type ReleaseMethod = 'v1' | 'v2'
export const METHOD_JEV: Record<ReleaseMethod, string> = { v1: 'jev-1.0.0', v2: JEV_VERSION }
export const VERSION_PATTERN = /^(0|[1-9]\d{0,5})\.(0|[1-9]\d{0,5})\.(0|[1-9]\d{0,5})$/

export interface FamilyFit {
  fitted: FittedParams
  /** The training base rate: binary P(obtains); choice: class frequencies in the question's class order. */
  reference: number | number[] | null
  /** Fit decisions, and those of them that resolved to an outcome. */
  n_fit: number
  n_realized: number
}

export interface ReleaseBody {
  version: string
  parent: string | null
  method: { name: ReleaseMethod; jev_version: string }
  families: Record<string, FamilyFit>
  dataset: { window_start: string; window_end: string; n_realized: number; dataset_hash: string }
  code: { jev_version: string; policy_version: string; policy_checksum: string; fit_code: string }
}

/** The repository root (record/releases/ is two levels down). */
const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/**
 * Where the fit's code starts: the question registry (every family's fit, evaluate and resolve, the rulesets), and
 * this dataset and body code. fit_code hashes these files and every file they import, transitively (relative imports
 * only: packages are pinned by package-lock.json), so it moves when code the fit runs changes and not when an unrelated
 * module of the same folder does.
 */
export const FIT_CODE_ROOTS = ['models/questions/index.ts', 'models/policy/rulesets.ts', 'record/releases/dataset.ts', 'record/releases/body.ts'] as const

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"](\.{1,2}\/[^'"]+)['"]|(?:^|\n)\s*import\s+['"](\.{1,2}\/[^'"]+)['"]/g

/** The repository-relative paths of `roots` and every file they import, transitively, sorted. */
export async function fitCodeFiles(roots: readonly string[] = FIT_CODE_ROOTS): Promise<string[]> {
  const seen = new Set<string>()
  const queue = roots.map((r) => join(ROOT, r))
  while (queue.length > 0) {
    const file = queue.pop()!
    if (seen.has(file)) continue
    seen.add(file)
    if (!file.endsWith('.ts')) continue
    const text = await readFile(file, 'utf8')
    for (const m of text.matchAll(IMPORT)) queue.push(join(dirname(file), m[1] ?? m[2]!))
  }
  return [...seen].map((f) => relative(ROOT, f).split('\\').join('/')).sort()
}

let fitCodeMemo: Promise<string> | null = null

/** SHA-256 of the JCS of [[path, sha256(bytes)], …] over fitCodeFiles(). */
export function fitCodeHash(): Promise<string> {
  fitCodeMemo ??= (async () => {
    const entries: Array<[string, string]> = []
    for (const f of await fitCodeFiles()) entries.push([f, sha256Hex(await readFile(join(ROOT, f)))])
    return jcsSha256(entries)
  })()
  return fitCodeMemo
}

/** The sealed ruleset a method's answers go through: the one in force for v2, the last one sealed for jev-1.0.0 for v1. */
export function policyFor(method: ReleaseMethod): Policy {
  if (method === 'v2') return activePolicy()
  const sealed = knownPolicyVersions().map((v) => policyByVersion(v)!).filter((p) => p.jevVersion === METHOD_JEV.v1)
  return sealed[sealed.length - 1]!
}

/** The question fitted by the release's method (BinaryQuestion and S01 carry both; others fit one way). */
export function familyModel(id: string, method: ReleaseMethod): QuestionModel {
  const q = questionById(id)
  if (!q) throw new ReleaseError('RELEASE_BAD_VERSION', `unknown question family '${id}'`)
  if (q instanceof BinaryQuestion || q instanceof MarketRegimeQuestion) return q.withMethod(method)
  return q
}

export function referenceOf(q: QuestionModel, fit: readonly LabelledSample[]): number | number[] | null {
  const choice = q.answer === 'choice'
  const realized = fit.filter((s) => isRealized(s, choice))
  if (realized.length === 0) return null
  if (choice) return (q.classes ?? []).map((c) => realized.filter((s) => s.resolution.realized_choice === c).length / realized.length)
  return realized.filter((s) => s.resolution.outcome === 'obtains').length / realized.length
}

export interface BuildSpec {
  version: string
  parent: string | null
  method: ReleaseMethod
  families: readonly string[]
}

/** Fits every family on the dataset's fit decisions: the body, deterministic in (spec, dataset, code). */
export async function buildBody(
  spec: BuildSpec,
  manifest: DatasetManifest,
  fitSamples: ReadonlyMap<QuestionId, readonly LabelledSample[]>,
  onFamily?: (id: string, done: number, total: number) => void,
): Promise<ReleaseBody> {
  if (!VERSION_PATTERN.test(spec.version)) throw new ReleaseError('RELEASE_BAD_VERSION', `'${spec.version}' is not <major>.<minor>.<patch>`)
  if (spec.parent !== null && !VERSION_PATTERN.test(spec.parent)) throw new ReleaseError('RELEASE_BAD_VERSION', `parent '${spec.parent}' is not <major>.<minor>.<patch>`)
  const families: Record<string, FamilyFit> = {}
  let nRealized = 0
  const ids = [...spec.families].sort()
  for (const [i, id] of ids.entries()) {
    onFamily?.(id, i, ids.length)
    const q = familyModel(id, spec.method)
    const fit = fitSamples.get(q.id) ?? []
    const realized = fit.filter((s) => isRealized(s, q.answer === 'choice')).length
    nRealized += realized
    families[id] = { fitted: q.fit(fit), reference: referenceOf(q, fit), n_fit: fit.length, n_realized: realized }
  }
  onFamily?.('', ids.length, ids.length)
  const policy = policyFor(spec.method)
  return {
    version: spec.version,
    parent: spec.parent,
    method: { name: spec.method, jev_version: METHOD_JEV[spec.method] },
    families,
    dataset: { window_start: manifest.window_start, window_end: manifest.window_end, n_realized: nRealized, dataset_hash: manifest.dataset_hash },
    code: { jev_version: METHOD_JEV[spec.method], policy_version: policy.version, policy_checksum: policy.checksum, fit_code: await fitCodeHash() },
  }
}

/** The body's JSON as it is sealed (JCS), and read back: what a replay would load. */
export function checksumOf(body: ReleaseBody): string {
  return jcsSha256(body)
}

export function majorOf(version: string): number {
  return Number(version.split('.')[0])
}

/** Semantic-version order. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number)
  const pb = b.split('.').map(Number)
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return (pa[i] ?? 0) - (pb[i] ?? 0)
  return 0
}
