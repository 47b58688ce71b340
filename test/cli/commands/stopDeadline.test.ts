/**
 * A stop that stops (issue 31, item 4): `svc start` signalled at each start phase — the warm-up (the venue's history
 * at full speed), the bootstrap release at the training cut (reading the window, labelling, fitting), a restart's
 * state rebuild before it listens, and serving — exits within its deadline (SVC_STOP_DEADLINE_MS; exit 0 means it
 * finished before its own deadline timer), and only then does another instance get the data folder: a second
 * `svc start` launched right after the signal either refuses (LOG_LOCKED, naming the first pid) or owns the folder's
 * LOCK (and the embedded log's) only after the first process has exited. Each second instance that got the folder is
 * the next phase's instance, so the whole test is five short starts on a four-day history.
 */
import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { freePort, makeTempDir } from '../../helpers/tmp.ts'

const SVC = new URL('../../../bin/svc.js', import.meta.url).pathname
const DEADLINE_MS = 30_000
/** Process teardown after the service's own exit (and a loaded machine's scheduling) on top of the deadline. */
const SLACK_MS = 5_000
/** Each phase is reached within this (a four-day history; CI shares two cores with other suites). */
const PHASE_WITHIN_MS = 240_000
/** The start's catalog step, applied or found up to date (sql/Catalog.ts): the owner has the folder from here on. */
const CATALOG_STEP = /"msg":"catalog (applied|up to date)/

interface Run {
  child: ChildProcess
  pid: number
  stdout: () => string
  stderr: () => string
  exited: Promise<{ code: number | null; at: number }>
}

function start(dataDir: string, port: number): Run {
  const child = spawn(process.execPath, [SVC, 'start'], {
    env: {
      ...process.env,
      PORT: String(port),
      SVC_DATA_DIR: dataDir,
      SVC_SIM_HISTORY_DAYS: '4',
      SVC_TRAIN_DAYS: '3',
      SVC_STOP_DEADLINE_MS: String(DEADLINE_MS),
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
  const exited = new Promise<{ code: number | null; at: number }>((resolve) => child.on('exit', (code) => resolve({ code, at: Date.now() })))
  return { child, pid: child.pid!, stdout: () => stdout, stderr: () => stderr, exited }
}

const alive = (run: Run) => run.child.exitCode === null && run.child.signalCode === null

async function waitFor(run: Run, what: string, seen: (out: string, err: string) => boolean): Promise<void> {
  const deadline = Date.now() + PHASE_WITHIN_MS
  for (;;) {
    if (seen(run.stdout(), run.stderr())) return
    if (!alive(run)) throw new Error(`svc start exited before ${what}:\n${run.stdout()}\n${run.stderr().slice(-4000)}`)
    if (Date.now() > deadline) throw new Error(`${what}: not within ${PHASE_WITHIN_MS} ms\n${run.stdout()}`)
    await sleep(25)
  }
}

async function lockPid(file: string): Promise<number | null> {
  const text = await readFile(file, 'utf8').catch(() => '')
  try {
    return Number((JSON.parse(text) as { pid: number }).pid)
  } catch {
    return null
  }
}

interface Phase {
  name: string
  /** The line that says the instance is in this phase. */
  reached: (out: string, err: string) => boolean
  /** What must not be printed yet when the signal goes (else the signal did not land in this phase). */
  notYet: RegExp
}

const PHASES: Phase[] = [
  { name: 'warm-up (history at full speed)', reached: (out) => out.includes('svc: warming up'), notYet: /svc: warm-up done/ },
  { name: 'bootstrap release at the cut (read, label, fit)', reached: (out) => out.includes('no active release: building'), notYet: /svc: release +2\.0\.0 (activated|rejected)/ },
  { name: "restart's state rebuild before listening", reached: (_out, err) => CATALOG_STEP.test(err), notYet: /svc: listening/ },
  { name: 'serving', reached: (out) => out.includes('svc: ready:'), notYet: /svc: stopped/ },
]

t.test('a stop signal at each start phase ends the process within the deadline, and only then may another instance own the data folder', async (t) => {
  const dataDir = await makeTempDir(t, 'svc-stop-')
  const runs: Run[] = []
  t.teardown(async () => {
    for (const r of runs) if (alive(r)) r.child.kill('SIGKILL')
  })
  let current: Run | null = null
  for (const phase of PHASES) {
    if (!current) runs.push((current = start(dataDir, await freePort())))
    const first: Run = current
    await waitFor(first, phase.name, phase.reached)
    const early = !phase.notYet.test(first.stdout())
    first.child.kill('SIGTERM')
    const signalledAt = Date.now()
    t.ok(early, `${phase.name}: signalled while in it (pid ${first.pid})`)
    // The second instance, right after the signal; the LOCK files sampled until the first has exited.
    const second = start(dataDir, await freePort())
    runs.push(second)
    const early2: string[] = []
    let firstExit: { code: number | null; at: number } | null = null
    void first.exited.then((e) => (firstExit = e))
    while (!firstExit) {
      const [folder, log] = await Promise.all([lockPid(join(dataDir, 'LOCK')), lockPid(join(dataDir, 'log', 'LOCK'))])
      // Sampled before the first's exit was seen, so any second-pid sample here means it owned the folder too early.
      if (!firstExit && (folder === second.pid || log === second.pid)) early2.push(`folder ${folder}, log ${log}`)
      await sleep(15)
    }
    const exit = firstExit as { code: number | null; at: number }
    const tookMs = exit.at - signalledAt
    t.equal(exit.code, 0, `${phase.name}: exit 0, everything stopped before the process's own deadline`)
    t.ok(tookMs <= DEADLINE_MS + SLACK_MS, `${phase.name}: exited ${tookMs} ms after the signal (deadline ${DEADLINE_MS} ms)`)
    t.match(first.stdout(), /svc: stopped\n$/, `${phase.name}: 'svc: stopped' is its last line`)
    t.same(early2, [], `${phase.name}: the second instance (pid ${second.pid}) held no LOCK before pid ${first.pid} exited`)
    // The second either refused while the first ran, or goes on to own the folder and is the next phase's instance.
    await waitFor(second, 'the second instance refusing or owning the folder', (_out, err) => err.includes('LOG_LOCKED') || CATALOG_STEP.test(err))
    if (second.stderr().includes('LOG_LOCKED')) {
      const refused = await second.exited
      t.equal(refused.code, 1, `${phase.name}: the second instance refused the folder while pid ${first.pid} ran`)
      t.match(second.stderr(), new RegExp(`locked by live process ${first.pid}`), 'and named the live owner')
      current = null
    } else {
      t.equal(await lockPid(join(dataDir, 'LOCK')), second.pid, `${phase.name}: the second instance owns the folder after the first exited`)
      current = second
    }
  }
  if (current && alive(current)) {
    current.child.kill('SIGTERM')
    t.equal((await current.exited).code, 0, 'the last instance stops too')
  }
})
