/**
 * The bootstrap release's heavy steps (define the dataset, build: label and fit; evaluate: relabel, refit and score)
 * on a worker thread. On the service's thread they held the event loop for minutes at a first start: /readyz and every
 * route stopped answering, and a stop (SIGTERM, a test's teardown) could not even run until the labelling loop
 * returned, so a stopping service outlived its deadline (issue 31: a stop that stops). Off the thread the service
 * answers while the release is built, and a stop terminates the worker at once: the steps are idempotent (each seals
 * its result atomically or not at all), so the next start does what is missing.
 *
 * The worker opens its own ReleaseStore (an in-memory DuckDB over the data dir's Parquet, like `svc release` in
 * another process) and reports progress by message. The service's clock (possibly scaled, in tests) is shared as an
 * offset from the wall clock, refreshed while the job runs.
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads'
import type { ReleaseMethod } from './body.ts'
import type { ProgressFn } from './dataset.ts'

/** What the worker does: build `version` from `build` when given (define the dataset, fit, seal), then evaluate it. */
export interface BootstrapJob {
  dataDir: string
  version: string
  build: { tapes: string[]; cut: number; holdoutShare: number; method: ReleaseMethod } | null
  evaluate: boolean
}

interface WorkerInput {
  role: 'bootstrap-release'
  job: BootstrapJob
  /** [0]: the service clock's offset from Date.now(), in ms. */
  clockOffset: BigInt64Array
}

type WorkerMessage = { kind: 'progress'; stage: string; done: number; total: number } | { kind: 'done' } | { kind: 'error'; message: string; stack?: string }

/** How often the shared clock offset is refreshed while a job runs (a scaled test clock moves against the wall). */
const CLOCK_REFRESH_MS = 250

/**
 * Runs `job` on a worker thread; resolves when its steps are sealed. Aborting `signal` terminates the worker and
 * rejects with the signal's reason.
 */
export function runBootstrapJob(job: BootstrapJob, o: { now: () => number; onProgress?: ProgressFn; signal?: AbortSignal }): Promise<void> {
  o.signal?.throwIfAborted()
  const clockOffset = new BigInt64Array(new SharedArrayBuffer(8))
  const setOffset = () => Atomics.store(clockOffset, 0, BigInt(Math.round(o.now() - Date.now())))
  setOffset()
  // Workers do not inherit the tsx loader the CLI registers: the worker registers it before loading this file.
  const tsxApi = import.meta.resolve('tsx/esm/api')
  const self = import.meta.url
  const input: WorkerInput = { role: 'bootstrap-release', job, clockOffset }
  const worker = new Worker(`import(${JSON.stringify(tsxApi)}).then(({ register }) => { register(); return import(${JSON.stringify(self)}) })`, { eval: true, workerData: input })
  const refresh = setInterval(setOffset, CLOCK_REFRESH_MS)
  refresh.unref()
  return new Promise<void>((resolve, reject) => {
    let settled = false
    const finish = (err: Error | null) => {
      if (settled) return
      settled = true
      clearInterval(refresh)
      o.signal?.removeEventListener('abort', onAbort)
      if (err) reject(err)
      else resolve()
    }
    const onAbort = () => {
      finish(o.signal!.reason instanceof Error ? o.signal!.reason : new Error('aborted'))
      void worker.terminate()
    }
    o.signal?.addEventListener('abort', onAbort, { once: true })
    worker.on('message', (m: WorkerMessage) => {
      if (m.kind === 'progress') o.onProgress?.(m.stage, m.done, m.total)
      else if (m.kind === 'done') finish(null)
      else {
        const err = new Error(m.message)
        if (m.stack) err.stack = m.stack
        finish(err)
      }
    })
    worker.on('error', (err) => finish(err instanceof Error ? err : new Error(String(err))))
    worker.on('exit', (code) => finish(settled ? null : new Error(`the bootstrap release worker exited (${code}) before its job ended`)))
  })
}

async function runWorker(input: WorkerInput): Promise<void> {
  const port = parentPort!
  const post = (m: WorkerMessage) => port.postMessage(m)
  const now = () => Date.now() + Number(Atomics.load(input.clockOffset, 0))
  const onProgress: ProgressFn = (stage, done, total) => post({ kind: 'progress', stage, done, total })
  // Imported here, not at the top: the service's thread loads this file only to start the worker.
  const { ReleaseStore } = await import('./ReleaseStore.ts')
  const { defineDataset, withRememberedLabels } = await import('./dataset.ts')
  const { buildRelease, runEvaluation } = await import('./ReleaseJobs.ts')
  const { isoMs, tickTime } = await import('../../ingest/Tick.ts')
  const { readTape } = await import('../../ingest/TapeReader.ts')
  const { childLogger } = await import('../../common/logger.ts')
  const log = childLogger('bootstrap-release')
  const store = await ReleaseStore.open(input.job.dataDir)
  try {
    const { job } = input
    // One labelling for the build and the evaluation (the same tapes, the same questions).
    await withRememberedLabels(async () => {
      if (job.build) {
        let first = Infinity
        for (const tape of job.build.tapes) {
          for await (const e of readTape(tape)) {
            first = Math.min(first, tickTime(e.tick))
            break
          }
        }
        const { cut, holdoutShare } = job.build
        const holdoutStart = cut - Math.floor((cut - first) * holdoutShare)
        const manifest = await defineDataset(store.dataDir, { tapes: job.build.tapes, window_start: isoMs(first), window_end: isoMs(holdoutStart), holdout_end: isoMs(cut) })
        log.info({ version: job.version, dataset: manifest.dataset_hash, fit: [manifest.window_start, manifest.window_end], holdout: [manifest.window_end, manifest.holdout_end] }, 'bootstrap release: build')
        await buildRelease(store, { version: job.version, parent: null, method: job.build.method, dataset: { hash: manifest.dataset_hash }, now, onProgress })
      }
      if (job.evaluate) {
        log.info({ version: job.version, incumbent: 'base rate' }, 'bootstrap release: evaluate (four gates on the holdout)')
        await runEvaluation(store, job.version, { now, onProgress })
      }
    })
    post({ kind: 'done' })
  } catch (err) {
    post({ kind: 'error', message: (err as Error)?.message ?? String(err), stack: (err as Error)?.stack })
  } finally {
    store.close()
  }
}

if (!isMainThread && (workerData as { role?: string } | null)?.role === 'bootstrap-release') {
  await runWorker(workerData as WorkerInput)
}
