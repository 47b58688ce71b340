/**
 * A release for engine-level tests and benches: fitted by the release build's own code (record/releases/body.ts
 * buildBody on record/releases/dataset.ts labelAndSplit) from ticks in memory, sealed with its checksum, and handed
 * to the engine as ServedRelease. What the service serves goes through `svc release` and the gates
 * (record/releases/bootstrap.ts); an engine test only needs "the engine serves the release it is given".
 */
import { isoMs, tickTime, type Tick } from '../../ingest/Tick.ts'
import { soldMarketQuestions } from '../../models/questions/index.ts'
import { DATASET_GAP_MS } from '../../models/Dataset.ts'
import type { FittedParams } from '../../models/QuestionModel.ts'
import { buildBody, checksumOf, familyModel, type ReleaseBody, type ReleaseMethod } from '../../record/releases/body.ts'
import { DATASET_KIND, datasetHash, labelAndSplit, type DatasetIdentity, type DatasetManifest } from '../../record/releases/dataset.ts'
import { ServedRelease, type SealedRelease } from '../../engine/ServedRelease.ts'

export interface TestReleaseOptions {
  version?: string
  method?: ReleaseMethod
  families?: readonly string[]
}

/** A sealed release fitted on the decisions of `ticks` whose window closed before `cut` (every sold market question). */
export async function sealedReleaseOf(ticks: readonly Tick[], cut: number, o: TestReleaseOptions = {}): Promise<SealedRelease & { body: ReleaseBody }> {
  const method = o.method ?? 'v2'
  const families = [...(o.families ?? soldMarketQuestions().map((q) => q.id))].sort()
  const questions = families.map((id) => familyModel(id, method))
  const { fit } = labelAndSplit(ticks, questions, { start: -Infinity, split: cut, end: cut }, DATASET_GAP_MS)
  const first = ticks.length > 0 ? tickTime(ticks[0]!) : cut - 1
  const identity: DatasetIdentity = { kind: DATASET_KIND, tapes: [], window_start: isoMs(first), window_end: isoMs(cut), holdout_end: null, gap_ms: DATASET_GAP_MS }
  const manifest: DatasetManifest = { ...identity, dataset_hash: datasetHash(identity), paths: {} }
  const body = await buildBody({ version: o.version ?? '2.0.0', parent: null, method, families }, manifest, fit)
  return { version: body.version, checksum: checksumOf(body), body }
}

/** The same, as the engine serves it. */
export async function releaseOf(ticks: readonly Tick[], cut: number, o: TestReleaseOptions = {}): Promise<ServedRelease> {
  return ServedRelease.load(await sealedReleaseOf(ticks, cut, o))
}

/** A release like `sealed` with one family's parameters replaced, sealed again under `version`. */
export function withFamily(sealed: SealedRelease & { body: ReleaseBody }, fitted: FittedParams, version = sealed.version): ServedRelease {
  const body: ReleaseBody = { ...sealed.body, version, families: { ...sealed.body.families, [fitted.question_id]: { ...sealed.body.families[fitted.question_id]!, fitted } } }
  return ServedRelease.load({ version, checksum: checksumOf(body), body })
}
