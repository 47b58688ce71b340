/**
 * The release batch jobs the operator CLI runs (`svc release build | evaluate`) and tests call directly.
 *
 * build:    dataset (tapes + split, or a dataset hash) → fit every family by the release's method on the fit
 *           decisions → sealed candidate row (body verbatim + JCS SHA-256 checksum).
 * evaluate: the body's dataset hash → verify the tapes → rebuild the body with this code (reproducibility: the checksum
 *           must come out identical) → score candidate and incumbent (the parent, or the base rate) on the holdout →
 *           the four gates → one sealed file of gate rows. A release is evaluated once; evaluating it again measures
 *           again and compares with what was sealed (`remeasured`), writing nothing.
 */
import { isoMs } from '../../ingest/Tick.ts'
import { canonicalJson } from '../../common/jcs.ts'
import { soldMarketQuestions } from '../../models/questions/index.ts'
import { buildBody, checksumOf, familyModel, fitCodeHash, type ReleaseBody, type ReleaseMethod } from './body.ts'
import { datasetSamples, defineDataset, readDataset, type DatasetManifest, type DatasetSpec, type ProgressFn } from './dataset.ts'
import { evaluateRelease, GATES, type EvaluationResult, type GateVerdict } from './evaluate.ts'
import { ReleaseError } from './ReleaseError.ts'
import type { ReleaseDetail, ReleaseStore } from './ReleaseStore.ts'

export interface BuildOptions {
  version: string
  /** Default: the active release (null when none is). */
  parent?: string | null
  method: ReleaseMethod
  /** A dataset hash (or a unique prefix), or tapes and a split to define one. */
  dataset: { hash: string } | DatasetSpec
  /** Default: every sold market question. */
  families?: readonly string[]
  now?: () => number
  onProgress?: ProgressFn
}

export interface BuildResult {
  version: string
  checksum: string
  body: ReleaseBody
  manifest: DatasetManifest
}

/** Builds and seals a candidate. */
export async function buildRelease(store: ReleaseStore, o: BuildOptions): Promise<BuildResult> {
  if (await store.body(o.version)) throw new ReleaseError('RELEASE_EXISTS', `release ${o.version} is already sealed`)
  const manifest = 'hash' in o.dataset ? await readDataset(store.dataDir, o.dataset.hash) : await defineDataset(store.dataDir, o.dataset)
  const parent = o.parent !== undefined ? o.parent : ((await store.activeRelease())?.version ?? null)
  if (parent !== null && !(await store.body(parent))) throw new ReleaseError('RELEASE_NOT_FOUND', `the parent ${parent} is not a release in this data folder`)
  const families = [...(o.families ?? soldMarketQuestions().map((q) => q.id))].sort()
  const questions = families.map((id) => familyModel(id, o.method))
  const samples = await datasetSamples(manifest, questions, o.onProgress)
  const body = await buildBody({ version: o.version, parent, method: o.method, families }, manifest, samples.fit, (_id, done, total) => o.onProgress?.('fit', done, total))
  if (body.dataset.n_realized === 0) throw new ReleaseError('DATASET_EMPTY', 'no realized decision in the fit window: nothing to fit on')
  const { checksum } = await store.putRelease(body, isoMs((o.now ?? Date.now)()))
  return { version: o.version, checksum, body, manifest }
}

export interface EvaluateOptions {
  now?: () => number
  onProgress?: ProgressFn
}

export interface EvaluateResult extends EvaluationResult {
  version: string
  rebuilt_checksum: string
  /** Whether this run wrote the gate rows (false: they were sealed before and are unchanged). */
  sealed: boolean
  /** When the release was already evaluated: whether this run measured the same verdicts and evaluation. */
  remeasured: { identical: boolean; differences: string[] } | null
  detail: ReleaseDetail
}

/** Rebuilds a body from its dataset hash with this code: the reproducibility measurement. */
export async function rebuildBody(store: ReleaseStore, sealed: ReleaseBody, onProgress?: ProgressFn) {
  const manifest = await readDataset(store.dataDir, sealed.dataset.dataset_hash)
  const families = Object.keys(sealed.families).sort()
  const questions = families.map((id) => familyModel(id, sealed.method.name))
  const samples = await datasetSamples(manifest, questions, onProgress)
  const body = await buildBody({ version: sealed.version, parent: sealed.parent, method: sealed.method.name, families }, manifest, samples.fit, (_id, done, total) => onProgress?.('refit', done, total))
  return { body, checksum: checksumOf(body), samples }
}

/** Canonical JSON of what a JSON round trip keeps (undefined fields dropped), for comparing with sealed rows. */
const same = (x: unknown): string => canonicalJson(JSON.parse(JSON.stringify(x)))

/** Runs the four promotion gates on a release and seals the gate rows (once). */
export async function runEvaluation(store: ReleaseStore, version: string, o: EvaluateOptions = {}): Promise<EvaluateResult> {
  const found = await store.body(version)
  if (!found) throw new ReleaseError('RELEASE_NOT_FOUND', `no release ${version}`)
  const { body: candidate, checksum } = found
  const rebuilt = await rebuildBody(store, candidate, o.onProgress)
  const codeNow = await fitCodeHash()
  const reproducible: GateVerdict = {
    met: rebuilt.checksum === checksum && codeNow === candidate.code.fit_code,
    measured: { sealed_checksum: checksum, rebuilt_checksum: rebuilt.checksum, pinned_fit_code: candidate.code.fit_code, running_fit_code: codeNow },
    ...(rebuilt.checksum === checksum && codeNow === candidate.code.fit_code
      ? {}
      : { reason: codeNow !== candidate.code.fit_code ? 'the running fit code is not the pinned code (fit_code differs)' : `the rebuilt body hashes to ${rebuilt.checksum.slice(0, 12)}, not ${checksum.slice(0, 12)}` }),
  }
  let incumbent: ReleaseBody | null = null
  if (candidate.parent !== null) {
    const p = await store.body(candidate.parent)
    if (!p) throw new ReleaseError('RELEASE_NOT_FOUND', `the parent ${candidate.parent} is not in this data folder`)
    incumbent = p.body
    if (Date.parse(incumbent.dataset.window_end) > Date.parse(candidate.dataset.window_end)) {
      throw new ReleaseError('INCUMBENT_SAW_HOLDOUT', `the incumbent ${incumbent.version} was fitted up to ${incumbent.dataset.window_end}, after the holdout starts (${candidate.dataset.window_end})`)
    }
  }
  const result = evaluateRelease({
    candidate,
    candidateChecksum: checksum,
    incumbent,
    holdout: rebuilt.samples.holdout,
    holdoutWindow: { start: rebuilt.samples.manifest.window_end, end: rebuilt.samples.manifest.holdout_end },
    reproducible,
    onFamily: (_id, done, total) => o.onProgress?.('score', done, total),
  })
  const before = await store.detail(version)
  let sealed = false
  let remeasured: EvaluateResult['remeasured'] = null
  if (before?.gate_verdicts) {
    const differences: string[] = []
    for (const g of GATES) {
      if (same(before.gate_verdicts[g]) !== same(result.gates[g])) differences.push(g)
    }
    if (same(before.evaluation) !== same(result.evaluation)) differences.push('evaluation')
    remeasured = { identical: differences.length === 0, differences }
  } else {
    await store.putEvaluation(version, { evaluation: result.evaluation, families: result.families }, result.gates, isoMs((o.now ?? Date.now)()))
    sealed = true
  }
  const detail = (await store.detail(version))!
  return { ...result, version, rebuilt_checksum: rebuilt.checksum, sealed, remeasured, detail }
}
