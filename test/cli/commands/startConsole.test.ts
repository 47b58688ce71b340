/**
 * What `svc start` shows while it warms up (issue 33 item 7: "46 silent seconds of warm-up"): on a terminal a bar of
 * the venue history simulated so far, then one line per answered request; off a terminal, progress lines (and JSON
 * log lines). A short history (2 days, fitted on the first) keeps each start to seconds; the bootstrap release is
 * off, so only the warm-up draws.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { freePort, makeTempDir } from '../../helpers/tmp.ts'

const SVC = new URL('../../../bin/svc.js', import.meta.url).pathname
const WITHIN_MS = 240_000

const hasScript = await new Promise<boolean>((resolve) => spawn('script', ['-qec', 'true', '/dev/null']).on('exit', (c) => resolve(c === 0)).on('error', () => resolve(false)))

/** Starts `svc start`, on a pseudo-terminal (util-linux `script`: stdout and stderr merged) or on pipes. */
function start(dataDir: string, port: number, tty: boolean) {
  const env: Record<string, string | undefined> = {
    ...process.env, PORT: String(port), SVC_DATA_DIR: dataDir, SVC_SIM_HISTORY_DAYS: '2', SVC_TRAIN_DAYS: '1',
    SVC_BOOTSTRAP_RELEASE: 'off', SVC_RECORD_INTERVAL_S: '0', SVC_PROGRESS_MS: '200', LOG_LEVEL: 'info', TERM: 'xterm',
  }
  delete env.CI // CI=true draws no bar
  delete env.LOG_FORMAT
  const child = tty
    ? spawn('script', ['-qec', `'${process.execPath}' '${SVC}' start`, '/dev/null'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, [SVC, 'start'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()))
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  return {
    output: () => out,
    until: async (what: string, test: (out: string) => boolean) => {
      const deadline = Date.now() + WITHIN_MS
      while (!test(out)) {
        if (child.exitCode !== null) throw new Error(`svc start exited before ${what}:\n${out.slice(-3000)}`)
        if (Date.now() > deadline) throw new Error(`${what}: not within ${WITHIN_MS} ms\n${out.slice(-3000)}`)
        await sleep(200)
      }
    },
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM')
      await exited
    },
  }
}

const plain = (s: string) => s.replace(/\x1b(\[[0-9;?]*[A-Za-z]|[78])/g, '')

t.test('on a terminal: a warm-up bar, then one line per request', { skip: hasScript ? false : 'util-linux script (a pseudo-terminal) is not available here' }, async (t) => {
  const dir = await makeTempDir(t, 'svc-start-tty-')
  const port = await freePort()
  const run = start(join(dir, 'data'), port, true)
  t.teardown(() => run.stop())
  await run.until('the warm-up done', (o) => o.includes('svc: warm-up done'))
  const out = plain(run.output())
  t.match(out, /svc: warm-up \[[^\]]*\] \d+% \| \d+\/\d+ minutes of history/, 'a bar of the history simulated so far')
  const total = Number(/\d+\/(\d+) minutes of history/.exec(out)![1])
  t.ok(total >= 2 * 1440 && total <= 3 * 1440, `its total is the history up to now: ${total} minutes`)
  t.match(out, new RegExp(`${total}/${total} minutes of history`), 'and it ends full')
  t.notMatch(out, /svc: warm-up: \d+/, 'no progress lines on a terminal')

  const before = run.output().length
  for (let i = 0; i < 3; i++) await fetch(`http://127.0.0.1:${port}/healthz`)
  await run.until('three access lines', (o) => (plain(o.slice(before)).match(/path=\/healthz/g) ?? []).length >= 3)
  await sleep(300)
  const lines = plain(run.output().slice(before)).split(/\r?\n/).filter((l) => l.includes('/healthz') || /^\s+(route|method|status|ms):/.test(l))
  t.equal(lines.length, 3, `one line per request:\n${lines.join('\n')}`)
  for (const l of lines) t.match(l, /INFO: serving: request request_id=\S+ route=healthz method=GET path=\/healthz status=\d{3} ms=[\d.]+$/)
})

t.test('off a terminal: progress lines, JSON logs', async (t) => {
  const dir = await makeTempDir(t, 'svc-start-pipe-')
  const run = start(join(dir, 'data'), await freePort(), false)
  t.teardown(() => run.stop())
  await run.until('the warm-up done', (o) => o.includes('svc: warm-up done'))
  const out = run.output()
  const progress = out.split('\n').filter((l) => l.startsWith('svc: warm-up: '))
  t.ok(progress.length >= 1, `${progress.length} progress lines`)
  for (const l of progress) t.match(l, /^svc: warm-up: \d+\/\d+ minutes of history \(\d+\.\d%\)$/)
  t.notMatch(out, /\x1b\[/, 'no terminal control codes')
  t.ok(out.split('\n').some((l) => l.startsWith('{"level":30')), 'log records are JSON lines')
})
