/**
 * `svc start`'s serving heap (issue 31, steady RSS): once the service has caught up, before /readyz answers 200, it
 * sets V8's growing factor and runs one full collection, so the heap it serves from holds the live state and not what
 * the restore and the warm-up left; with SVC_HEAP_GROWTH_PERCENT=0 (V8's own choice) it does neither.
 */
import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { freePort, makeTempDir } from '../../helpers/tmp.ts'

const SVC = new URL('../../../bin/svc.js', import.meta.url).pathname
const READY_WITHIN_MS = 300_000

interface LogLine {
  msg?: string
  /** pino's epoch ms. */
  time?: number
  ms?: number
  heapUsed?: number
}

/**
 * One `svc start` on a short simulated history, until /readyz is 200 (`readyAt`, epoch ms), then stopped; its JSON log
 * lines, read once it exited: a line written before ready can still be in the pipe when the 200 arrives.
 */
async function startUntilReady(t: Test, env: Record<string, string>): Promise<{ lines: LogLine[]; readyAt: number }> {
  const dataDir = await makeTempDir(t, 'svc-heap-')
  const port = await freePort()
  const child = spawn(process.execPath, [SVC, 'start'], {
    env: { ...process.env, PORT: String(port), SVC_DATA_DIR: dataDir, SVC_SIM_HISTORY_DAYS: '2', SVC_TRAIN_DAYS: '1', SVC_BOOTSTRAP_RELEASE: 'off', LOG_LEVEL: 'info', LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  t.teardown(async () => {
    if (child.exitCode === null) child.kill('SIGTERM')
    await exited
  })
  const started = Date.now()
  let readyAt: number
  for (;;) {
    if (child.exitCode !== null) throw new Error(`svc start exited before ready: ${stderr.slice(-2000)}`)
    if (Date.now() - started > READY_WITHIN_MS) throw new Error('svc start was not ready in time')
    if ((await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status, () => 0)) === 200) {
      readyAt = Date.now()
      break
    }
    await sleep(200)
  }
  child.kill('SIGTERM')
  t.equal(await exited, 0, 'it stops cleanly')
  const lines = stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogLine)
  return { lines, readyAt }
}

t.test('one full collection at ready, before the routes answer', async (t) => {
  const { lines, readyAt } = await startUntilReady(t, {})
  const collected = lines.filter((l) => l.msg === 'one full collection at ready')
  t.equal(collected.length, 1, 'one collection')
  t.ok(typeof collected[0]?.time === 'number' && collected[0].time <= readyAt, 'logged before /readyz answered 200')
  t.ok(typeof collected[0]?.ms === 'number' && collected[0].ms >= 0, `it took ${collected[0]?.ms} ms`)
  t.ok(typeof collected[0]?.heapUsed === 'number' && collected[0].heapUsed > 0, `heap used after it: ${Math.round((collected[0]?.heapUsed ?? 0) / 2 ** 20)} MiB`)
})

t.test('SVC_HEAP_GROWTH_PERCENT=0 leaves the heap to V8: no collection of ours', async (t) => {
  const { lines } = await startUntilReady(t, { SVC_HEAP_GROWTH_PERCENT: '0' })
  t.ok(lines.length > 0, `it logged (${lines.length} lines)`)
  t.equal(lines.filter((l) => l.msg === 'one full collection at ready').length, 0, 'none')
})
