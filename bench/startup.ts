/**
 * Start-up time (issue 31, restart ≤ 10 s): how long `svc` takes from spawn to doing something, beside `node -e 0` (the
 * bare node start-up) measured in the same run, since this 2-core machine is shared and its absolute figures drift.
 * Per round, in this order: `node -e 0` to exit; `svc --help` to exit (imports every command module); `svc start` on an
 * empty data folder with a short simulated history (SVC_SIM_HISTORY_DAYS=2, SVC_TRAIN_DAYS=1, no bootstrap release) to
 * its first log line and to /readyz 200. Each svc figure twice, interleaved: from bin/svc.js's bundle (built before the
 * first round) and through tsx (SVC_NO_BUNDLE=1), the baseline it replaced. Medians over the rounds.
 *
 *   node --import tsx bench/startup.ts [rounds]   (default 3)
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { pathToFileURL } from 'node:url'
import { freePort } from './freePort.ts'

const SVC = new URL('../bin/svc.js', import.meta.url).pathname
const READY_WITHIN_MS = 120_000

/** Milliseconds from spawn to exit of `node args`; throws on a non-zero exit. */
function timeToExit(args: string[], env: Record<string, string> = {}): Promise<number> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: 'ignore', env: { ...process.env, ...env } })
    child.on('error', reject)
    child.on('exit', (code) => (code === 0 ? resolve(performance.now() - started) : reject(new Error(`node ${args.join(' ')} exited ${code}`))))
  })
}

export interface StartTimes {
  firstLogMs: number
  readyMs: number
}

/** `svc start` on an empty folder: spawn → first line on stdout or stderr, spawn → /readyz 200; then SIGTERM, exit 0. */
export async function timeStart(env: Record<string, string> = {}): Promise<StartTimes> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-startup-'))
  const port = await freePort()
  const started = performance.now()
  const child = spawn(process.execPath, ['--max-semi-space-size=32', SVC, 'start'], {
    env: {
      ...process.env, PORT: String(port), SVC_DATA_DIR: dataDir, SVC_SIM_HISTORY_DAYS: '2', SVC_TRAIN_DAYS: '1', SVC_BOOTSTRAP_RELEASE: 'off',
      LOG_LEVEL: 'info', LOG_FORMAT: 'json', ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let firstLogMs = NaN
  let output = ''
  const onData = (d: Buffer) => {
    if (Number.isNaN(firstLogMs)) firstLogMs = performance.now() - started
    output = (output + d.toString()).slice(-20_000)
  }
  child.stdout.on('data', onData)
  child.stderr.on('data', onData)
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`svc start exited ${child.exitCode}: ${output}`)
      const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false)
      if (ok) return { firstLogMs, readyMs: performance.now() - started }
      if (performance.now() - started > READY_WITHIN_MS) throw new Error(`not ready within ${READY_WITHIN_MS} ms: ${output}`)
      await sleep(50)
    }
  } finally {
    if (child.exitCode === null) child.kill('SIGTERM')
    const code = await exited
    await rm(dataDir, { recursive: true, force: true })
    if (code !== 0) throw new Error(`svc start stopped with ${code}: ${output}`)
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

export interface StartupFigures {
  nodeMs: number
  /** Medians from the bundle and through tsx. */
  bundle: { helpMs: number; firstLogMs: number; readyMs: number }
  tsx: { helpMs: number; firstLogMs: number; readyMs: number }
}

const TSX = { SVC_NO_BUNDLE: '1' }

export async function benchStartup(o: { rounds: number; print: (line: string) => void }): Promise<StartupFigures> {
  await timeToExit([SVC, '--help']) // builds the bundle of the current sources, if missing
  const node: number[] = []
  const runs = { bundle: { help: [] as number[], firstLog: [] as number[], ready: [] as number[] }, tsx: { help: [] as number[], firstLog: [] as number[], ready: [] as number[] } }
  for (let i = 0; i < o.rounds; i++) {
    node.push(await timeToExit(['-e', '0']))
    for (const [way, env] of [['bundle', {}], ['tsx', TSX]] as const) {
      runs[way].help.push(await timeToExit([SVC, '--help'], env))
      const s = await timeStart(env)
      runs[way].firstLog.push(s.firstLogMs)
      runs[way].ready.push(s.readyMs)
    }
  }
  const medians = (r: typeof runs.tsx) => ({ helpMs: median(r.help), firstLogMs: median(r.firstLog), readyMs: median(r.ready) })
  const f: StartupFigures = { nodeMs: median(node), bundle: medians(runs.bundle), tsx: medians(runs.tsx) }
  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`
  const all = (xs: number[]) => xs.map((x) => (x / 1000).toFixed(1)).join('/')
  o.print(`  node -e 0                     ${s(f.nodeMs)}  (${all(node)})`)
  for (const [label, key] of [['svc --help', 'help'], ['svc start, 1st log line', 'firstLog'], ['svc start, /readyz 200', 'ready']] as const) {
    const b = median(runs.bundle[key])
    const x = median(runs.tsx[key])
    o.print(`  ${label.padEnd(28)}  bundle ${s(b)} (${all(runs.bundle[key])})  tsx ${s(x)} (${all(runs.tsx[key])})  → ratio ${(b / x).toFixed(2)}`)
  }
  o.print(`  medians of ${o.rounds} rounds; svc start on an empty folder, 2 days of simulated history`)
  return f
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await benchStartup({ rounds: Number(process.argv[2] ?? 3), print: (line) => process.stdout.write(line + '\n') })
}
