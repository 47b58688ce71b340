/**
 * `svc start` (what `npm start` runs): the whole service in one process (app/ServiceApp.ts). By default it runs the
 * seeded simulated venue in the present: its history is generated up to now and pushed through at full speed (the
 * models fit on its first SVC_TRAIN_DAYS), then ticks arrive live at 1x, so every instant served is wall time. With
 * SVC_VENUE=hyperliquid it ingests the live venue (REST backfill, then the websocket). With SVC_TAPE it replays that
 * dated tape instead (warm-up at full speed, then accelerated). Ticks go through the event log into Parquet and the
 * DuckDB catalog, and the API serves them. SIGTERM/SIGINT (handled from before the start) stop everything it started
 * (a start rebuilding state, the warm-up, the bootstrap release, the feed), drain in-flight requests, seal what the
 * sink buffers and commit; then it prints stopped and exits, which frees the data folder's LOCK. Past
 * SVC_STOP_DEADLINE_MS it exits 3 anyway, naming what still ran (issue 31).
 */
import { parseArgs } from 'node:util'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import type { Command } from '../Command.ts'
import { ServiceApp } from '../../app/ServiceApp.ts'
import { environment } from '../environment.ts'
import { v8FlagsOf } from '../../app/config.ts'
import { resolve } from 'node:path'
import { childLogger } from '../../common/logger.ts'
import { StopSteps } from '../../common/StopSteps.ts'
import { DirLock } from '../../pipeline/log/DirLock.ts'
import { openDataFolder, restrictUmask } from '../../pipeline/log/dataModes.ts'

const log = childLogger('svc-start')
/** The exit code when the stop deadline (SVC_STOP_DEADLINE_MS) passes with work still running. */
export const STOP_DEADLINE_EXIT = 3

const usage = `Usage: svc start [--port N] [--host H] [--data-dir DIR] [--tape TAPE] [--speed S]

Runs the service in one process: feeds a venue through the event log into Parquet + DuckDB and serves the API.
Default: the simulated BTC/ETH/SOL venue in the present (SIMULATED data, said on every answer in x-svc-data-time).
SVC_VENUE=hyperliquid: the live venue (SVC_HL_BASE_URL, SVC_HL_WS_URL; a local stand-in: svc venue serve).

Options (each overrides the environment variable in brackets; every variable is in README, Environment):
  --port N        listen port (PORT, default 8080; 0 picks a free one)
  --host H        listen address (HOST, default 127.0.0.1)
  --data-dir DIR  data folder (SVC_DATA_DIR, default ./data)
  --tape TAPE     replay this dated tape instead of the live simulated venue (SVC_TAPE): the fast demo and
                  regression mode; answers then live in the tape's virtual time
  --speed S       with --tape: replay speed after the warm-up, event time per wall time (SVC_REPLAY_SPEED, default
                  60: a minute per second)
Also: SVC_LOG=kafka with KAFKA_BROKERS to run on Kafka; SVC_PAY_TO to accept x402 payments (unset: paid routes take
credits, x-svc-payer); SVC_FACILITATOR_URL for x402 settlement; SVC_OPS_TOKEN to enable operator routes (grants,
rate-lock issue, surge).
Stop: SIGTERM/SIGINT stop everything it started within SVC_STOP_DEADLINE_MS (default 30000), else it exits 3; the data
folder (<data>/LOCK) is free once the process has exited.
Engine: fits each question per asset on its first SVC_TRAIN_DAYS days (default 30) or up to SVC_TRAIN_UNTIL (ISO
instant), then decides at every clock's close and resolves clocks as the venue's time passes them.
Warm-up, simulated venue: its history (SVC_SIM_HISTORY_DAYS, default 35, before the first start in the folder;
kept in <data>/venue.json) up to now at full speed (a restart: only the gap since the stop), then live at 1x.
Warm-up, tape: up to the training cut, and on until every sold question has resolved a clock, at full speed (a
restart: up to the next cadence hour after what the log holds), then at --speed. The Parquet sink starts when the
warm-up ends and catches up in the background; market routes answer 503 STALE_DATA (WARMING_UP) until then.
Live venue: first start backfills SVC_TRAIN_DAYS + 7 days of 1h bars and hourly funding over REST and fits on them
(the cut is kept in <data>/venue.json), then streams; a restart repairs the span since the newest tick in the log.
Market: SVC_UNIVERSE=replay|hyperliquid (default hyperliquid on the live venue, else replay), SVC_COINGECKO_URL,
SVC_COINGECKO_KEY.
Wallets: SVC_WALLET_PROVIDER=hyperliquid|none (default none: wallet/risk routes 503, S09..S11 PROVIDER_DOWN).
`

export const command: Command = {
  name: 'start',
  summary: 'Run the whole service: the simulated venue in the present, the live venue (SVC_VENUE=hyperliquid) or a tape, into Parquet + DuckDB, serving the API',
  usage,
  async run(argv) {
    const { values } = parseArgs({
      args: argv,
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        'data-dir': { type: 'string' },
        tape: { type: 'string' },
        speed: { type: 'string' },
      },
      strict: true,
    })
    const config = environment({
      PORT: values.port,
      HOST: values.host,
      SVC_DATA_DIR: values['data-dir'],
      SVC_TAPE: values.tape,
      SVC_REPLAY_SPEED: values.speed,
    })
    const say = (line: string) => void process.stdout.write(line + '\n')
    // One owner per data folder, held from before anything in it opens until this process exits (issue 31: a stopped
    // service kept working while a second one opened the same folder). Other commands (svc release, record build)
    // keep their own finer locks and may run beside it.
    restrictUmask()
    const dataDir = resolve(config.SVC_DATA_DIR)
    await openDataFolder(dataDir)
    const folder = await DirLock.acquire(dataDir, log, 'one svc start per data folder: it is free once that process has exited')
    // Freed in the exit itself (synchronously, after the last of our code ran), whichever way the process ends, except
    // past the stop deadline (below).
    let freeAtExit = true
    process.once('exit', () => {
      if (freeAtExit) folder.releaseSync()
    })
    const abort = new AbortController()
    const steps = new StopSteps(log)
    let app: ServiceApp | null = null
    let phase = 'starting'
    let deadline: NodeJS.Timeout | null = null
    let signalledAt = 0
    const stop = (signal: NodeJS.Signals) => {
      if (abort.signal.aborted) {
        log.warn({ signal, running: steps.running() }, 'already stopping; the stop deadline still holds')
        return
      }
      signalledAt = Date.now()
      log.info({ signal, phase, deadlineMs: config.SVC_STOP_DEADLINE_MS }, 'stop signal')
      abort.abort()
      void app?.server.close()
      // Past the deadline the process ends anyway, non-zero, naming what still ran. The folder's LOCK stays behind
      // with this (then dead) pid: the next start takes it over as stale, after nothing of this process can write
      // (a file write already handed to a libuv thread included).
      deadline = setTimeout(() => {
        freeAtExit = false
        log.error({ phase, running: steps.running(), deadlineMs: config.SVC_STOP_DEADLINE_MS }, 'stop deadline passed: exiting with work still running')
        say(`svc: stop deadline (${config.SVC_STOP_DEADLINE_MS} ms) passed while ${phase}; still running: ${steps.running().map((s) => s.step).join(', ') || 'the start'}; exiting`)
        process.exit(STOP_DEADLINE_EXIT)
      }, config.SVC_STOP_DEADLINE_MS)
    }
    // Before the start: a signal while it rebuilds state, warms up or builds the bootstrap release stops it too.
    process.on('SIGINT', stop)
    process.on('SIGTERM', stop)
    try {
      try {
        app = await ServiceApp.start(config, say, { signal: abort.signal, stopSteps: steps })
      } catch (err) {
        if (!abort.signal.aborted) throw err
        phase = 'stopping'
        return finish(0)
      }
      phase = 'running (warm-up, bootstrap release, serving)'
      try {
        // Once ready, not before: the restore and the warm-up allocate GBs at once, and a tight heap growth there
        // took a restart from 7.7 s to 13.7 s. V8 reads the factor at each full collection (issue 31, docs/decisions.md).
        await app.run(abort.signal, { onReady: () => servingHeap(v8FlagsOf(config)) })
      } finally {
        phase = 'stopping'
        await app.close()
      }
      return finish(0)
    } finally {
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
    }

    /**
     * Everything this process started has ended: say so, then free the folder and exit in one tick, so nothing of
     * this process (an untracked timer, a stray promise chain) runs once another instance may own the folder.
     */
    function finish(exitCode: number): never {
      if (deadline) clearTimeout(deadline)
      if (signalledAt) log.info({ ms: Date.now() - signalledAt }, 'everything started has stopped')
      say('svc: stopped')
      process.exit(exitCode) // frees the folder (the exit handler above)
    }
  },
}

/**
 * The serving heap, once ready (issue 31, steady RSS): V8's growing factor (SVC_HEAP_GROWTH_PERCENT), then one full
 * collection, so the heap the factor grows from is the live state's and not what the restore left: a restarted
 * service that ran no full collection in its first minute held ~900 MiB of heap over a live ~550 (README, "Restart
 * from state snapshots"). None when V8 keeps its own choice (no flags). Without --expose-gc at start: the flag is set
 * for this one call and the collection runs through a fresh context's `gc`.
 */
function servingHeap(flags: readonly string[]): void {
  if (flags.length === 0) return
  for (const flag of flags) setFlagsFromString(flag)
  const started = Date.now()
  setFlagsFromString('--expose-gc')
  ;(runInNewContext('gc') as () => void)()
  log.info({ ms: Date.now() - started, heapUsed: process.memoryUsage().heapUsed }, 'one full collection at ready')
}
