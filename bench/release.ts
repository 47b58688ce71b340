/**
 * Release evaluation over the real tapes (issue 30): `svc release evaluate` (rebuild the body from its dataset hash,
 * score it and its incumbent on the holdout, the four gates) beside one `svc eval` of the same tapes and the same
 * split, in the same run. Goal: evaluate ≤ 2× eval.
 *
 * Data: the six OKX swap files of ../shared/tapes/okx_swap_1h_2023_2026/ (BTC, ETH, SOL 1 h bars 2023-01 → 2026-08 and
 * 8 h funding 2026-04 → 2026-08), split at 2026-07-01 as the published releases are (docs/releases/). The candidate
 * (v2, parent none: the base rate is its incumbent) is built first and not timed. Both commands run as the operator
 * runs them, each in its own `node bin/svc.js` process (the same start-up cost on both sides); eval runs before and
 * after evaluate and the ratio is taken to their mean, so a neighbour's load that comes and goes hits both sides.
 *
 * `node --import tsx bench/release.ts`
 */
import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { buildRelease } from '../record/releases/ReleaseJobs.ts'
import { ReleaseStore } from '../record/releases/ReleaseStore.ts'

const exec = promisify(execFile)
const OKX = new URL('../../shared/tapes/okx_swap_1h_2023_2026/', import.meta.url).pathname
const SVC = new URL('../bin/svc.js', import.meta.url).pathname
export const RELEASE_BENCH_TAPES = ['BTC', 'ETH', 'SOL'].flatMap((a) => [join(OKX, `${a}-USDT-SWAP_1H.csv`), join(OKX, `${a}-USDT-SWAP_funding_8h.csv`)])
export const RELEASE_BENCH_START = '2023-01-01T01:00:00.000Z'
export const RELEASE_BENCH_SPLIT = '2026-07-01T00:00:00.000Z'

export interface ReleaseBenchResult {
  evalMs: number[]
  evaluateMs: number
  ratio: number
}

async function timed(args: string[]): Promise<number> {
  const t0 = performance.now()
  await exec('node', [SVC, ...args], { env: { ...process.env, LOG_LEVEL: 'warn' }, maxBuffer: 256 * 2 ** 20 })
  return performance.now() - t0
}

export async function benchRelease(o: { print: (line: string) => void }): Promise<ReleaseBenchResult> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-release-bench-'))
  try {
    const store = await ReleaseStore.open(dataDir)
    const b0 = performance.now()
    try {
      await buildRelease(store, { version: '9.0.0', parent: null, method: 'v2', dataset: { tapes: RELEASE_BENCH_TAPES, window_start: RELEASE_BENCH_START, window_end: RELEASE_BENCH_SPLIT } })
    } finally {
      store.close()
    }
    o.print(`release: candidate built (not timed) in ${((performance.now() - b0) / 1000).toFixed(1)} s`)
    const evalArgs = ['eval', ...RELEASE_BENCH_TAPES.flatMap((t) => ['--tape', t]), '--split', RELEASE_BENCH_SPLIT, '--json']
    const before = await timed(evalArgs)
    const evaluateMs = await timed(['release', 'evaluate', '9.0.0', '--data-dir', dataDir, '--json'])
    const after = await timed(evalArgs)
    const base = (before + after) / 2
    const r = { evalMs: [before, after], evaluateMs, ratio: evaluateMs / base }
    o.print(
      `release: svc release evaluate ${(evaluateMs / 1000).toFixed(1)} s vs svc eval of the same tapes and split ${(before / 1000).toFixed(1)} s / ${(after / 1000).toFixed(1)} s (before / after) → ratio ${r.ratio.toFixed(2)} (goal ≤ 2)`,
    )
    return r
  } finally {
    await rm(dataDir, { recursive: true, force: true })
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchRelease({ print: (l) => process.stdout.write(l + '\n') })
}
