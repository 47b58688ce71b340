/**
 * The bootstrap release: a data folder's first release, built from the service's own training window through the
 * same build → evaluate → activate path and gates an operator runs (`svc release`), so the demo and the live venue
 * sell answers on first start without a shortcut (docs/decisions.md, Releases).
 *
 * - Data: every tick the log holds with event time ≤ the training cut, written as tapes into the data folder
 *   (<data>/record/datasets/bootstrap-<cut>/, one tape per asset and tick kind, each in event time: a tick earlier than
 *   its series' last is dropped, as the engine drops it), hashed into a dataset like any other.
 * - Split: fit on [first tick, cut − holdout), evaluate on [cut − holdout, cut): the holdout is the last
 *   BOOTSTRAP_HOLDOUT_SHARE of the window, never used to fit. Nothing after the cut is read.
 * - Incumbent: none, so the candidate must beat the base-rate forecaster (its own training base rates) on the holdout;
 *   the four gates decide. A release that fails stays sealed as rejected, nothing is activated, and every sold
 *   market question refuses no_active_release until an operator activates one.
 * - Idempotent across restarts: each step looks at what is sealed and does only what is missing (a crash after the
 *   build evaluates the sealed candidate; after the evaluation, activates it if its gates passed). Skipped when any
 *   release is active or when the operator turned it off (SVC_BOOTSTRAP_RELEASE=off).
 */
import { readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { childLogger } from '../../common/logger.ts'
import { TapeWriter } from '../../ingest/TapeWriter.ts'
import { mkdirData } from '../../pipeline/log/dataModes.ts'
import { isoMs, tickTime } from '../../ingest/Tick.ts'
import type { EventLog } from '../../pipeline/log/EventLog.ts'
import { readTopicToEnd } from '../../pipeline/log/readTopicToEnd.ts'
import { decodeTickRecord } from '../../pipeline/TickEnvelope.ts'
import { DATASETS_DIR, type ProgressFn } from './dataset.ts'
import { runBootstrapJob, type BootstrapJob } from './BootstrapWorker.ts'
import type { ReleaseStore } from './ReleaseStore.ts'
import { GATES } from './evaluate.ts'
import type { ReleaseMethod } from './body.ts'

const log = childLogger('bootstrap-release')

/** The bootstrap release's version: the v2 models' first release on this data folder. */
export const BOOTSTRAP_VERSION = '2.0.0'
export const BOOTSTRAP_METHOD: ReleaseMethod = 'v2'
/** The share of the training window held out to evaluate the bootstrap release (the rest fits it). */
export const BOOTSTRAP_HOLDOUT_SHARE = 1 / 3

export interface BootstrapOptions {
  store: ReleaseStore
  log: EventLog
  ticksTopic: string
  /** The training cut: ticks with event time ≤ it are the window. */
  cut: number
  now?: () => number
  onProgress?: ProgressFn
  /** Stops the job: while it reads the log, and the build/evaluation worker at once (the service is stopping). */
  signal?: AbortSignal
}

export type BootstrapOutcome =
  | { status: 'skipped'; reason: string; active: string | null }
  | { status: 'activated'; version: string; delta_brier: number | null; delta_brier_ci: [number, number] | null }
  | { status: 'rejected'; version: string; failed: Array<{ gate: string; reason: string }> }

/** Writes the log's ticks with event time ≤ `cut` as tapes under `dir` (one per asset and kind); returns their paths. */
export async function trainingTapes(eventLog: EventLog, ticksTopic: string, cut: number, dir: string, onProgress?: ProgressFn, signal?: AbortSignal): Promise<string[]> {
  await rm(dir, { recursive: true, force: true }) // a crash mid-write left partial tapes: start over
  await mkdirData(dir)
  const writers = new Map<string, { writer: TapeWriter; last: number }>()
  let dropped = 0
  let seen = 0
  const ends = await eventLog.endOffsets(ticksTopic)
  const total = ends.reduce((a, b) => a + b, 0)
  try {
    await readTopicToEnd(eventLog, ticksTopic, async (batch) => {
      signal?.throwIfAborted()
      for (const r of batch.records) {
        seen++
        let tick
        try {
          tick = decodeTickRecord(r).tick
        } catch {
          continue // undecodable: the engine skips it too
        }
        if (tick.kind === 'universe') continue
        const time = tickTime(tick)
        if (time > cut) continue
        const series = `${tick.asset}-${tick.kind}`
        let w = writers.get(series)
        if (!w) writers.set(series, (w = { writer: TapeWriter.open(join(dir, `${series}.ndjson.gz`), { gzipLevel: 1 }), last: -Infinity }))
        if (time < w.last) {
          dropped++
          continue
        }
        w.last = time
        await w.writer.write(tick)
      }
      onProgress?.('read the training window', seen, total)
    }, signal ? { signal } : {})
    for (const w of writers.values()) await w.writer.close()
  } catch (err) {
    for (const w of writers.values()) await w.writer.abort()
    throw err
  }
  if (dropped > 0) log.warn({ dropped }, 'ticks earlier than their series were left out of the training tapes (the engine skips them too)')
  return (await readdir(dir)).filter((f) => f.endsWith('.ndjson.gz')).sort().map((f) => join(dir, f))
}

/**
 * Runs whatever of build → evaluate → activate the bootstrap release still needs. The tapes are written here (they
 * read the service's log); the build and the evaluation run on a worker thread (BootstrapWorker.ts: they label and fit
 * for minutes, and the service keeps answering meanwhile), labelling the tapes once for both.
 */
export async function bootstrapRelease(o: BootstrapOptions): Promise<BootstrapOutcome> {
  const { store } = o
  const now = o.now ?? Date.now
  const active = await store.activeRelease()
  if (active) return { status: 'skipped', reason: `release ${active.version} is active`, active: active.version }
  let detail = await store.detail(BOOTSTRAP_VERSION)
  if (detail?.activated_at) return { status: 'skipped', reason: `${BOOTSTRAP_VERSION} was activated before and is no longer active`, active: null }
  let build: BootstrapJob['build'] = null
  if (!detail) {
    const dir = join(store.dataDir, DATASETS_DIR, `bootstrap-${isoMs(o.cut).replace(/[:.]/g, '')}`)
    log.info({ cut: isoMs(o.cut) }, 'bootstrap release: writing the training window as tapes')
    const tapes = await trainingTapes(o.log, o.ticksTopic, o.cut, dir, o.onProgress, o.signal)
    o.signal?.throwIfAborted()
    if (tapes.length === 0) return { status: 'skipped', reason: 'the log holds no tick before the training cut', active: null }
    build = { tapes, cut: o.cut, holdoutShare: BOOTSTRAP_HOLDOUT_SHARE, method: BOOTSTRAP_METHOD }
  }
  if (build || !detail?.gate_verdicts) {
    await runBootstrapJob({ dataDir: store.dataDir, version: BOOTSTRAP_VERSION, build, evaluate: true }, { now, signal: o.signal, ...(o.onProgress ? { onProgress: o.onProgress } : {}) })
    detail = (await store.detail(BOOTSTRAP_VERSION))!
  }
  o.signal?.throwIfAborted()
  const verdicts = detail.gate_verdicts!
  const failed = GATES.filter((g) => !verdicts[g].met).map((g) => ({ gate: g, reason: verdicts[g].reason ?? 'not met' }))
  if (failed.length > 0) {
    log.warn({ version: BOOTSTRAP_VERSION, failed }, 'bootstrap release rejected by its gates: nothing is active; sold market questions refuse no_active_release')
    return { status: 'rejected', version: BOOTSTRAP_VERSION, failed }
  }
  await store.activate(BOOTSTRAP_VERSION, isoMs(now()))
  const ev = detail.evaluation
  log.info({ version: BOOTSTRAP_VERSION, delta_brier: ev?.delta_brier, delta_brier_ci: ev?.delta_brier_ci }, 'bootstrap release activated by its gates')
  return { status: 'activated', version: BOOTSTRAP_VERSION, delta_brier: ev?.delta_brier ?? null, delta_brier_ci: ev?.delta_brier_ci ?? null }
}
