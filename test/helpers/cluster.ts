/** Two or more `svc start` instances of one cluster in a test (bench/clusterInstance.ts spawns each one). */
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import type { ClusterInstance } from '../../bench/clusterInstance.ts'
import { SOL_FILES } from './engine.ts'
import { within } from './until.ts'

const SVC = fileURLToPath(new URL('../../bin/svc.js', import.meta.url))
const exec = promisify(execFile)

/** Runs an `svc` command on a data folder (an operator's release built, evaluated, activated before a start); its stdout. */
export async function svc(args: string[], dataDir: string): Promise<string> {
  return (await exec(process.execPath, [SVC, ...args, '--data-dir', dataDir], { env: { ...process.env, CI: 'true', LOG_FORMAT: 'json', LOG_LEVEL: 'warn' }, maxBuffer: 64 * 1024 * 1024 })).stdout
}

/**
 * The operator's release in a data folder before its start (`svc release build | evaluate | activate`, README
 * "Releases"): S01 fitted on the recorded OKX SOL tape. A test's short history is too short for the bootstrap release
 * to pass its gates, and without a release every answer is a refusal.
 */
export async function activateS01Release(dataDir: string, version = '1.0.0'): Promise<void> {
  await svc(['release', 'build', '--version', version, '--parent', 'none', '--method', 'v2', ...SOL_FILES.flatMap((f) => ['--tape', f]), '--window-end', '2026-05-01', '--questions', 'S01_market_regime', '--json'], dataDir)
  await svc(['release', 'evaluate', version], dataDir)
  await svc(['release', 'activate', version], dataDir)
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any
export interface Answer { status: number; headers: Headers; body: Json }

/** One request on a new connection (so through the balancer, the next instance in its rotation). */
export async function call(base: string, method: string, path: string, o: { body?: unknown; headers?: Record<string, string> } = {}): Promise<Answer> {
  const res = await fetch(base + path, {
    method,
    headers: { connection: 'close', ...(o.body === undefined ? {} : { 'content-type': 'application/json' }), ...o.headers },
    ...(o.body === undefined ? {} : { body: JSON.stringify(o.body) }),
  })
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: text === '' ? null : JSON.parse(text) }
}

/** How long an instance may take to be ready: a first start warms up its simulated history on a shared 2-core machine. */
export const READY_WITHIN_MS = 420_000

export const ready = async (url: string): Promise<boolean> => (await fetch(`${url}/readyz`)).status === 200

/**
 * Starts the first of `names`, waits until it is ready (it then holds the leases: the first member of each group), then
 * the others beside it at once, and resolves every URL once all are ready.
 */
export async function startAll(names: readonly string[], start: (name: string) => ClusterInstance | Promise<ClusterInstance>): Promise<Record<string, string>> {
  const urls: Record<string, string> = {}
  const [first, ...rest] = names
  urls[first!] = await (await start(first!)).url
  await within('the first instance ready', READY_WITHIN_MS, () => ready(urls[first!]!))
  await Promise.all(rest.map(async (name) => (urls[name] = await (await start(name)).url)))
  await within(`${names.length} instances ready`, READY_WITHIN_MS, async () => (await Promise.all(names.map((n) => ready(urls[n]!)))).every(Boolean))
  return urls
}

/** startAll of `a` and `b`. */
export async function startPair(start: (name: 'a' | 'b') => ClusterInstance | Promise<ClusterInstance>): Promise<{ a: ClusterInstance; b: ClusterInstance; urlA: string; urlB: string }> {
  const started: Record<string, ClusterInstance> = {}
  const urls = await startAll(['a', 'b'], async (name) => (started[name] = await start(name as 'a' | 'b')))
  return { a: started.a!, b: started.b!, urlA: urls.a!, urlB: urls.b! }
}
