/**
 * A release body fitted on ticks held in memory, by the release build's own code (body.ts buildBody on
 * dataset.ts labelAndSplit: the decisions whose window closed before `cut`), with its checksum: what the engine
 * benches and engine-level tests serve. Nothing is sealed in a store and no gate runs; what `svc start` serves comes
 * from `svc release` or the bootstrap release, through the gates.
 */
import { isoMs, tickTime, type Tick } from '../../ingest/Tick.ts'
import { DATASET_GAP_MS } from '../../models/Dataset.ts'
import { soldMarketQuestions } from '../../models/questions/index.ts'
import { buildBody, checksumOf, familyModel, type ReleaseBody, type ReleaseMethod } from './body.ts'
import { DATASET_KIND, datasetHash, labelAndSplit, type DatasetIdentity, type DatasetManifest } from './dataset.ts'

export interface ReleaseOfTicksOptions {
  version?: string
  method?: ReleaseMethod
  families?: readonly string[]
}

export async function releaseOfTicks(ticks: readonly Tick[], cut: number, o: ReleaseOfTicksOptions = {}): Promise<{ version: string; checksum: string; body: ReleaseBody }> {
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
