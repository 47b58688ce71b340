/**
 * A year of history (issue 31): restart time and steady RSS of `svc start` on a data folder holding N days of simulated
 * venue history and M duel calls with their grades, restored from the processors' state snapshots, printed beside a
 * full rebuild of the same data in the same run (the state/ folder removed, so every processor reads its topics from
 * the beginning). Goal: restart ≤ 10 s and RSS ≤ 1 GB at 35 and at 365 days, flat.
 *
 * Per history length, on one data folder:
 *   1. history: `svc start` on an empty folder generates N days and warms up; stopped once /readyz is 200.
 *   2. calls: with the service stopped (and sample claims appended to the ledger over the history's span when the
 *      folder's own ledger holds too few: a bootstrap release rejected by its gates sells none), M call records (P payers, each on a distinct decision of the ledger, payment
 *      ids of their own) are appended to duel.calls on the folder's embedded log; grades follow from the outcomes
 *      already on the log.
 *   3. a start folds the calls (the Arena awards them) and writes every processor's snapshot at its clean stop.
 *   4. restart (snapshots + tail): time until /readyz 200, then RSS over a minute (median and maximum of 12 samples).
 *   5. full rebuild: state/ removed, the same: time and RSS.
 *
 *   node --import tsx bench/restart.ts [days,days] [calls] [payers] [data dir]   (default 35,365 1000000 20000)
 *   BENCH_REBUILD_WITHIN_S=N bounds the full rebuild's wait for ready (default 30 min; past it: printed, killed)
 * A given data dir (one history length) must hold that history already (step 1 is skipped, the folder kept); when it
 * holds M calls already (a run before on it), steps 2 and 3 are skipped too: restart and rebuild measured again.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { pathToFileURL } from 'node:url'
import { EmbeddedLog } from '../pipeline/log/EmbeddedLog.ts'
import { Journal } from '../pipeline/journal/Journal.ts'
import { DECISIONS } from '../pipeline/records/decisionRecord.ts'
import { CALLS, CALL_RECORD_VERSION, callId, type CallRow } from '../pipeline/records/callRecord.ts'
import { topicNames } from '../pipeline/topics.ts'
import { freePort } from './freePort.ts'
import { sampleClaims, testOutcome } from './ledgerRecords.ts'
import { OUTCOMES_JOURNAL } from '../pipeline/records/outcomeRecord.ts'
import type { LedgerDecision } from '../pipeline/records/decisionRecord.ts'
import { DAY_MS } from '../common/time.ts'

const SVC = new URL('../bin/svc.js', import.meta.url).pathname
const READY_WITHIN_MS = 30 * 60_000
/**
 * RSS after ready is sampled every SAMPLE_EVERY_MS for SETTLE_MS (the warm-up's garbage collected, the first snapshots
 * written): the steady figure is the samples' median, printed with their maximum. One sample 20 s after ready moved by
 * 0.4-0.7 GiB between runs of one folder (when V8 last collected and gave pages back).
 */
const SETTLE_MS = 60_000
const SAMPLE_EVERY_MS = 5_000

interface Run {
  child: ChildProcess
  started: number
  exited: Promise<number | null>
  stderr: () => string
}

function startService(dataDir: string, port: number, env: Record<string, string>): Run {
  const child = spawn(process.execPath, ['--max-semi-space-size=32', SVC, 'start'], {
    env: { ...process.env, PORT: String(port), SVC_DATA_DIR: dataDir, LOG_LEVEL: 'warn', LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-20_000)))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  return { child, started: Date.now(), exited, stderr: () => stderr }
}

/** Time from spawn to /readyz 200; null when not ready within `withinMs`. */
async function readyAfterMs(run: Run, port: number, withinMs = READY_WITHIN_MS): Promise<number | null> {
  for (;;) {
    if (run.child.exitCode !== null) throw new Error(`svc start exited ${run.child.exitCode}: ${run.stderr()}`)
    const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false)
    if (ok) return Date.now() - run.started
    if (Date.now() - run.started > withinMs) return null
    await sleep(100)
  }
}

/** Resident set of the process in MiB (/proc: what the machine pays, heap and native alike); `VmHWM`: its peak so far. */
async function rssMiB(pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const kb = Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN)
  return kb / 1024
}

async function stopService(run: Run): Promise<void> {
  if (run.child.exitCode === null) run.child.kill('SIGTERM')
  const code = await run.exited
  if (code !== 0) throw new Error(`svc start stopped with ${code}: ${run.stderr()}`)
}

/**
 * One start measured: time to /readyz 200, then (sample) RSS over SETTLE_MS; null when it is not ready within
 * `withinMs` (the process is then killed: a start that stopped answering does not answer a stop signal either).
 */
async function startMeasured(dataDir: string, env: Record<string, string>, o: { sample: boolean; withinMs?: number } = { sample: true }): Promise<StartFigures | null> {
  const port = await freePort()
  const run = startService(dataDir, port, env)
  let killed = false
  try {
    const readyMs = await readyAfterMs(run, port, o.withinMs)
    if (readyMs === null) {
      killed = true
      run.child.kill('SIGKILL')
      await run.exited
      return null
    }
    // The peak while starting (a rebuild folds every journal before ready: what the machine must have to get there).
    const peakToReady = await rssMiB(run.child.pid!, 'VmHWM')
    if (!o.sample) return { readyMs, peakToReady, rss: NaN, rssMax: NaN }
    const samples: number[] = []
    for (let waited = 0; waited < SETTLE_MS; waited += SAMPLE_EVERY_MS) {
      await sleep(SAMPLE_EVERY_MS)
      samples.push(await rssMiB(run.child.pid!))
    }
    samples.sort((a, b) => a - b)
    return { readyMs, peakToReady, rss: samples[Math.floor(samples.length / 2)]!, rssMax: samples[samples.length - 1]! }
  } finally {
    if (!killed) await stopService(run)
  }
}

/**
 * Claims a day when the folder's own ledger holds too few to call on: about the engine's own rate on the simulated
 * venue (48,244 ledger rows over 365 days in an earlier run, ~130 a day), so the ledger grows with history as it would.
 */
const SAMPLE_CLAIMS_PER_DAY = 130

/**
 * Sample claims (bench/ledgerRecords.ts) spread over the history's span, each resolved at its 4-hour horizon: the
 * simulated venue's bootstrap release can be rejected by its gates (its features do not beat the baseline on that
 * history), and then the engine sells no claim a call could be made on.
 */
async function appendSampleClaims(log: EmbeddedLog, days: number): Promise<LedgerDecision[]> {
  const names = topicNames()
  const decisions = await Journal.open({ log, def: DECISIONS, topic: names.decisions })
  const outcomes = await Journal.open({ log, def: OUTCOMES_JOURNAL, topic: names.outcomes })
  // The history's span less its last day (those claims' horizons and outcomes are all in the past).
  const out = sampleClaims(days * SAMPLE_CLAIMS_PER_DAY, Date.now() - days * DAY_MS, (days - 1) * DAY_MS, ['BTC', 'ETH', 'SOL'])
  for (let i = 0; i < out.length; i += 2_000) {
    const batch = out.slice(i, i + 2_000)
    await decisions.append(batch)
    // A fifth obtain, as the sample claims' probability (0.2) says.
    await outcomes.append(batch.map((d, k) => testOutcome(d, { outcome: (i + k) % 5 === 0 ? 'obtains' : 'not' })))
  }
  await decisions.close()
  await outcomes.close()
  return out
}

/** Call records the folder's log holds. */
async function callsHeld(dataDir: string): Promise<number> {
  const log = await EmbeddedLog.open(join(dataDir, 'log'))
  try {
    return (await log.endOffsets(topicNames().calls)).reduce((a, b) => a + b, 0)
  } catch {
    return 0 // no calls topic yet
  } finally {
    await log.close()
  }
}

/** M calls over P payers, spread over the ledger's claims in time, never two by one payer on one decision. */
async function appendCalls(dataDir: string, days: number, calls: number, payers: number): Promise<number> {
  const log = await EmbeddedLog.open(join(dataDir, 'log'))
  try {
    const names = topicNames()
    const decisions = await (await Journal.open({ log, def: DECISIONS, topic: names.decisions })).readAll(600_000)
    // Claims only (a refusal takes no call); a distribution question's call is on its chosen class.
    let claims = decisions.filter((d) => d.subject === null && d.action !== 'refuse')
    if (calls > 0 && claims.length < days * SAMPLE_CLAIMS_PER_DAY / 10) claims = await appendSampleClaims(log, days)
    claims.sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0))
    const journal = await Journal.open({ log, def: CALLS, topic: names.calls })
    let written = 0
    const batch: CallRow[] = []
    for (let i = 0; i < calls && claims.length > 0; i++) {
      // Spread evenly over the claims in event time, so the calls span the history as a year of use would (a run of
      // consecutive calls shares a claim, each by another payer: a payer never calls one decision twice while the
      // run is shorter than the payers).
      const payer = `0x${(i % payers).toString(16).padStart(40, '0')}`
      const d = claims[Math.floor((i * claims.length) / calls)]!
      batch.push({
        v: CALL_RECORD_VERSION, call_id: callId(payer, d.decision_id), payer, decision_id: d.decision_id, question_id: d.question_id, asset: d.asset,
        subject: null, call: i % 3 === 0 ? 'not' : 'obtains', call_probability: null, house_probability: d.probability, choice_id: d.choice?.choice_id ?? null,
        locked_at: d.created_at, horizon_end: d.horizon_end, payment_id: `bench-${i}`, payment_rail: 'credits',
      })
      if (batch.length === 10_000) {
        await journal.append(batch.splice(0))
        written += 10_000
      }
    }
    await journal.append(batch)
    written += batch.length
    await journal.close()
    return written
  } finally {
    await log.close()
  }
}

/** One start: time to ready, its peak RSS up to ready, and the RSS sampled over the minute after (median, max), MiB. */
export interface StartFigures {
  readyMs: number
  peakToReady: number
  rss: number
  rssMax: number
}

export interface RestartFigures {
  days: number
  calls: number
  firstStartMs: number
  restart: StartFigures
  /** null: not ready within the rebuild's limit. */
  rebuild: StartFigures | null
}

export async function benchRestart(o: { days: number[]; calls: number; payers: number; dataDir?: string; rebuildWithinMs?: number; print: (line: string) => void }): Promise<RestartFigures[]> {
  const out: RestartFigures[] = []
  for (const days of o.days) {
    const dataDir = o.dataDir ?? (await mkdtemp(join(tmpdir(), `svc-bench-restart-${days}-`)))
    try {
      // A stop waits for the Arena to finish folding a million calls and write its snapshot (minutes on 2 cores), so
      // the next start restores it rather than exiting 3 at the default 30 s deadline with the fold half done.
      const env = { SVC_SIM_HISTORY_DAYS: String(days), SVC_STOP_DEADLINE_MS: String(1_800_000) }
      let firstStartMs = NaN
      if (!o.dataDir) {
        const port = await freePort()
        const first = startService(dataDir, port, env)
        const ready = await readyAfterMs(first, port)
        if (ready === null) throw new Error(`the first start was not ready within ${READY_WITHIN_MS} ms: ${first.stderr()}`)
        firstStartMs = ready
        await stopService(first)
        o.print(`  ${days} d: first start (history generated) ready after ${(firstStartMs / 1000).toFixed(1)} s`)
      }
      const held = o.dataDir ? await callsHeld(dataDir) : 0
      let calls = held
      if (held >= o.calls && o.calls > 0) o.print(`  ${days} d: the folder holds ${held.toLocaleString('en-US')} calls already (a run before): restart and rebuild only`)
      else {
        calls = await appendCalls(dataDir, days, o.calls, o.payers)
        const folded = (await startMeasured(dataDir, env, { sample: false }))!
        o.print(`  ${days} d: ${calls.toLocaleString('en-US')} calls appended; the start that folds them ready after ${(folded.readyMs / 1000).toFixed(1)} s`)
      }
      const restart = (await startMeasured(dataDir, env))!
      o.print(`  ${days} d: restart ready after ${(restart.readyMs / 1000).toFixed(1)} s, RSS ${restart.rss.toFixed(0)} MiB (max ${restart.rssMax.toFixed(0)}); now the full rebuild`)
      await rm(join(dataDir, 'state'), { recursive: true, force: true })
      const rebuildWithinMs = o.rebuildWithinMs ?? READY_WITHIN_MS
      const rebuild = await startMeasured(dataDir, env, { sample: true, withinMs: rebuildWithinMs })
      out.push({ days, calls, firstStartMs, restart, rebuild })
      const beside = rebuild
        ? ` vs full rebuild ${(rebuild.readyMs / 1000).toFixed(1)} s, RSS ${rebuild.rss.toFixed(0)} MiB (max ${rebuild.rssMax.toFixed(0)}; peak before ready ${rebuild.peakToReady.toFixed(0)}) → time ratio ${(restart.readyMs / rebuild.readyMs).toFixed(2)}`
        : ` vs full rebuild not ready within ${(rebuildWithinMs / 1000).toFixed(0)} s (killed)`
      o.print(
        `  ${days} d, ${calls.toLocaleString('en-US')} calls: restart ${(restart.readyMs / 1000).toFixed(1)} s, RSS ${restart.rss.toFixed(0)} MiB (max ${restart.rssMax.toFixed(0)}; peak before ready ${restart.peakToReady.toFixed(0)})` +
          beside + `  (goal ≤ 10 s, ≤ 1024 MiB)`,
      )
    } finally {
      if (!o.dataDir) await rm(dataDir, { recursive: true, force: true })
    }
  }
  return out
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const days = (process.argv[2] ?? '35,365').split(',').map(Number)
  const calls = Number(process.argv[3] ?? 1_000_000)
  const payers = Number(process.argv[4] ?? 20_000)
  process.stdout.write('== restart: snapshots + tail vs a full rebuild of the same data folder\n')
  const dataDir = process.argv[5]
  // BENCH_REBUILD_WITHIN_S: how long the full rebuild may take to be ready (default 30 min), e.g. to bound a year's.
  const within = Number(process.env.BENCH_REBUILD_WITHIN_S)
  await benchRestart({ days, calls, payers, ...(dataDir ? { dataDir } : {}), ...(within > 0 ? { rebuildWithinMs: within * 1000 } : {}), print: (l) => process.stdout.write(l + '\n') })
}
