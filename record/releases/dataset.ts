/**
 * A release's dataset: tape files and a time split, named by one hash.
 *
 *   dataset_hash = SHA-256 of the JCS of { kind, tapes: [{ name, sha256, bytes }] (by digest), window_start,
 *                  window_end, holdout_end, gap_ms }
 *
 * Every tape's whole bytes are hashed, so the hash pins the data itself (not a path or a date on a disk), and the
 * split pins which decisions fit a release and which evaluate it:
 *   - fit:     decisions at or after window_start whose window closes strictly before window_end
 *              (models/Dataset.ts splitSamples: no training label reads a tick at or after the split);
 *   - holdout: decisions at or after window_end whose window closes before holdout_end (null: the end of the tapes).
 * The labelled decisions are built from every tick of the tapes in event time (features look back before a decision;
 * gaps are never crossed), so the same tapes give the same samples whoever builds them.
 *
 * A manifest per dataset (<data>/record/datasets/<hash>.json) keeps where the tapes were, so `svc release build
 * --dataset HASH` and the reproducibility gate find the data from its hash; a tape whose bytes no longer match its
 * digest is refused (DATASET_CHANGED), never silently used.
 */
import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { readFile, stat } from 'node:fs/promises'
import { basename, join, resolve } from 'node:path'
import { jcsSha256 } from '../../common/hash.ts'
import { loadTicks } from '../../ingest/loadTicks.ts'
import { isoMs, tickTime, type Tick } from '../../ingest/Tick.ts'
import { buildDataset, DATASET_GAP_MS, type DatasetStats } from '../../models/Dataset.ts'
import type { LabelledSample, QuestionId, QuestionModel } from '../../models/QuestionModel.ts'
import { writeFileAtomic } from '../../pipeline/log/atomicFile.ts'
import { mkdirData } from '../../pipeline/log/dataModes.ts'
import { ReleaseError } from './ReleaseError.ts'

export const DATASET_KIND = 'tapes+split/1'
export const DATASETS_DIR = join('record', 'datasets')

export interface DatasetTape {
  /** File name (no directory): part of the identity, so a renamed copy is a different dataset. */
  name: string
  sha256: string
  bytes: number
}

/** What the hash covers. */
export interface DatasetIdentity {
  kind: typeof DATASET_KIND
  tapes: DatasetTape[]
  window_start: string
  window_end: string
  holdout_end: string | null
  gap_ms: number
}

export interface DatasetManifest extends DatasetIdentity {
  dataset_hash: string
  /** Where each tape was read (by name), for finding the data again; not part of the hash. */
  paths: Record<string, string>
}

export interface DatasetSpec {
  tapes: readonly string[]
  /** ISO instants; window_start defaults to the first tick. */
  window_start?: string
  window_end: string
  holdout_end?: string | null
}

async function fileDigest(path: string): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256')
  let bytes = 0
  for await (const chunk of createReadStream(path)) {
    hash.update(chunk as Buffer)
    bytes += (chunk as Buffer).length
  }
  return { sha256: hash.digest('hex'), bytes }
}

export function datasetHash(identity: DatasetIdentity): string {
  return jcsSha256(identity)
}

function iso(value: string, field: string): string {
  const ms = Date.parse(value)
  if (Number.isNaN(ms)) throw new ReleaseError('DATASET_EMPTY', `${field} is not an ISO instant: '${value}'`)
  return isoMs(ms)
}

/** Hashes the tapes and writes the manifest (idempotent: the same tapes and split give the same file). */
export async function defineDataset(dataDir: string, spec: DatasetSpec): Promise<DatasetManifest> {
  if (spec.tapes.length === 0) throw new ReleaseError('DATASET_EMPTY', 'a dataset needs at least one tape')
  const tapes: DatasetTape[] = []
  const paths: Record<string, string> = {}
  for (const p of spec.tapes) {
    const path = resolve(p)
    const name = basename(path)
    if (paths[name] !== undefined) throw new ReleaseError('DATASET_EMPTY', `two tapes share the file name ${name}`)
    tapes.push({ name, ...(await fileDigest(path)) })
    paths[name] = path
  }
  tapes.sort((a, b) => (a.sha256 < b.sha256 ? -1 : a.sha256 > b.sha256 ? 1 : 0))
  let windowStart = spec.window_start
  if (windowStart === undefined) {
    const ticks = await loadTicks(Object.values(paths))
    if (ticks.length === 0) throw new ReleaseError('DATASET_EMPTY', 'the tapes hold no records')
    windowStart = isoMs(tickTime(ticks[0]!))
  }
  const identity: DatasetIdentity = {
    kind: DATASET_KIND,
    tapes,
    window_start: iso(windowStart, 'window_start'),
    window_end: iso(spec.window_end, 'window_end'),
    holdout_end: spec.holdout_end ? iso(spec.holdout_end, 'holdout_end') : null,
    gap_ms: DATASET_GAP_MS,
  }
  if (Date.parse(identity.window_end) <= Date.parse(identity.window_start)) throw new ReleaseError('DATASET_EMPTY', 'window_end must be after window_start')
  if (identity.holdout_end !== null && Date.parse(identity.holdout_end) <= Date.parse(identity.window_end)) {
    throw new ReleaseError('DATASET_EMPTY', 'holdout_end must be after window_end')
  }
  const manifest: DatasetManifest = { ...identity, dataset_hash: datasetHash(identity), paths }
  const dir = join(dataDir, DATASETS_DIR)
  await mkdirData(dir)
  await writeFileAtomic(join(dir, `${manifest.dataset_hash}.json`), JSON.stringify(manifest, null, 2) + '\n')
  return manifest
}

/** The manifest of a dataset hash (a unique prefix of 8 or more hex digits is enough). */
export async function readDataset(dataDir: string, hash: string): Promise<DatasetManifest> {
  const dir = join(dataDir, DATASETS_DIR)
  let name = `${hash}.json`
  if (!/^[0-9a-f]{64}$/.test(hash)) {
    const { readdir } = await import('node:fs/promises')
    const all = await readdir(dir).catch(() => [] as string[])
    const matches = /^[0-9a-f]{8,63}$/.test(hash) ? all.filter((f) => f.startsWith(hash) && f.endsWith('.json')) : []
    if (matches.length !== 1) throw new ReleaseError('DATASET_NOT_FOUND', `no single dataset manifest matches '${hash}' in ${dir}`)
    name = matches[0]!
  }
  let text: string
  try {
    text = await readFile(join(dir, name), 'utf8')
  } catch {
    throw new ReleaseError('DATASET_NOT_FOUND', `no dataset manifest ${hash} in ${dir}`)
  }
  const manifest = JSON.parse(text) as DatasetManifest
  const { dataset_hash: claimed, paths: _paths, ...identity } = manifest
  if (datasetHash(identity) !== claimed) throw new ReleaseError('DATASET_CHANGED', `the manifest ${name} does not hash to its own dataset_hash`)
  return manifest
}

/** Checks every tape against its digest and returns the paths in manifest order. */
export async function verifyTapes(manifest: DatasetManifest): Promise<string[]> {
  const out: string[] = []
  for (const tape of manifest.tapes) {
    const path = manifest.paths[tape.name]
    if (!path) throw new ReleaseError('DATASET_CHANGED', `the manifest has no path for ${tape.name}`)
    try {
      await stat(path)
    } catch {
      throw new ReleaseError('DATASET_CHANGED', `${tape.name} is gone from ${path}`)
    }
    const d = await fileDigest(path)
    if (d.sha256 !== tape.sha256 || d.bytes !== tape.bytes) throw new ReleaseError('DATASET_CHANGED', `${path} no longer hashes to ${tape.sha256.slice(0, 12)}`)
    out.push(path)
  }
  return out
}

export interface DatasetSamples {
  manifest: DatasetManifest
  /** Per family: the fit decisions and the holdout decisions, in event time. */
  fit: Map<QuestionId, LabelledSample[]>
  holdout: Map<QuestionId, LabelledSample[]>
  stats: DatasetStats
}

export type ProgressFn = (stage: string, done: number, total: number) => void

/** Verifies the tapes, labels every decision of `questions` on them and splits fit from holdout. */
export async function datasetSamples(manifest: DatasetManifest, questions: readonly QuestionModel[], onProgress?: ProgressFn): Promise<DatasetSamples> {
  const paths = await verifyTapes(manifest)
  const key = `${manifest.dataset_hash}|${questions.map((q) => `${q.id}:${(q as { method?: string }).method ?? ''}`).join(',')}`
  if (remembered?.key === key) return { ...remembered.samples, manifest }
  const ticks = await loadTicks(paths)
  if (ticks.length === 0) throw new ReleaseError('DATASET_EMPTY', 'the tapes hold no records')
  const window = { start: Date.parse(manifest.window_start), split: Date.parse(manifest.window_end), end: manifest.holdout_end === null ? Infinity : Date.parse(manifest.holdout_end) }
  const samples: DatasetSamples = { manifest, ...labelAndSplit(ticks, questions, window, manifest.gap_ms, onProgress) }
  if (rememberNext) remembered = { key, samples }
  return samples
}

/**
 * One labelled dataset kept between a build and the evaluation that follows it in the same process (the bootstrap
 * release): labelling is deterministic in the verified tapes, the split and the question set, so labelling again
 * would give the same samples. Off unless asked for; the tapes are verified against their digests on every call.
 */
let remembered: { key: string; samples: DatasetSamples } | null = null
let rememberNext = false

/** Runs `job` with the labelled dataset remembered across its steps, then forgets it. */
export async function withRememberedLabels<T>(job: () => Promise<T>): Promise<T> {
  rememberNext = true
  try {
    return await job()
  } finally {
    rememberNext = false
    remembered = null
  }
}

/**
 * Labels every decision of `questions` on `ticks` (in event time) and splits them: fit = decided at or after `start`
 * with the window closed strictly before `split`; holdout = decided at or after `split` with the window closed before
 * `end`.
 */
export function labelAndSplit(
  ticks: readonly Tick[],
  questions: readonly QuestionModel[],
  window: { start: number; split: number; end: number },
  gapMs: number,
  onProgress?: ProgressFn,
): Omit<DatasetSamples, 'manifest'> {
  onProgress?.('label decisions', 0, ticks.length)
  const built = buildDataset(ticks, questions, (n) => onProgress?.('label decisions', n, ticks.length), { gapMs })
  onProgress?.('label decisions', ticks.length, ticks.length)
  const fit = new Map<QuestionId, LabelledSample[]>()
  const holdout = new Map<QuestionId, LabelledSample[]>()
  for (const q of questions) {
    const all = built.samples.get(q.id) ?? []
    fit.set(q.id, all.filter((s) => s.snapshot.at >= window.start && s.snapshot.at + q.horizonMs < window.split))
    holdout.set(q.id, all.filter((s) => s.snapshot.at >= window.split && s.snapshot.at + q.horizonMs < window.end))
  }
  return { fit, holdout, stats: built.stats }
}

/** A labelled decision that resolved to an outcome (for a choice question: with its realized class). */
export function isRealized(s: LabelledSample, choice: boolean): boolean {
  return s.resolution.outcome !== 'unresolvable' && (!choice || s.resolution.realized_choice !== null)
}
