/**
 * Backbone acceptance (issue 2), over both logs:
 * - a 7-day generated tape replayed through the log into Parquet/DuckDB gives row counts equal to the tape's, and the
 *   sql/ views answer over them;
 * - SIGKILLing `svc pipeline run` mid-replay (twice) and restarting it gives the same final tables as an
 *   uninterrupted run: no loss, no duplicates.
 */
import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { SyntheticMarket } from '../../ingest/SyntheticMarket.ts'
import { TapeWriter } from '../../ingest/TapeWriter.ts'
import { withCatalog } from '../../sql/Catalog.ts'
import { EmbeddedLog } from '../../pipeline/log/EmbeddedLog.ts'
import { Pipeline } from '../../pipeline/Pipeline.ts'
import { kafkaBrokers, kafkaSkip } from '../helpers/logs.ts'
import { makeTempDir } from '../helpers/tmp.ts'

const SVC = new URL('../../bin/svc.js', import.meta.url).pathname

interface RunEnv {
  SVC_LOG: 'embedded' | 'kafka'
  KAFKA_BROKERS?: string
  KAFKA_TOPIC_PREFIX?: string
  KAFKA_SESSION_TIMEOUT_MS?: string
}

function startRun(tape: string, dataDir: string, env: RunEnv): ChildProcess {
  return spawn(process.execPath, [SVC, 'pipeline', 'run', '--tape', tape, '--data-dir', dataDir], {
    env: { ...process.env, ...env, LOG_LEVEL: 'warn', SVC_PROGRESS_MS: '600000' },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
}

function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  let stderr = ''
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, stderr })))
}

async function sealedDataFiles(dataDir: string): Promise<number> {
  const root = join(dataDir, 'parquet', 'venue.ticks')
  let n = 0
  const walk = async (dir: string): Promise<void> => {
    let entries
    try {
      entries = await readdir(dir, { withFileTypes: true })
    } catch {
      return
    }
    for (const e of entries) {
      if (e.isDirectory()) await walk(join(dir, e.name))
      else if (/^p\d+-\d+-\d+\.parquet$/.test(e.name)) n++
    }
  }
  await walk(root)
  return n
}

async function logBytes(dataDir: string): Promise<number> {
  let total = 0
  const walk = async (dir: string): Promise<void> => {
    let entries
    try {
      entries = await readdir(dir, { withFileTypes: true })
    } catch {
      return
    }
    for (const e of entries) {
      const p = join(dir, e.name)
      if (e.isDirectory()) await walk(p)
      // Temp files come and go under the running process.
      else total += (await stat(p).catch(() => ({ size: 0 }))).size
    }
  }
  await walk(join(dataDir, 'log'))
  return total
}

/** Runs until `ready()` holds, then SIGKILLs; says how the run ended when it finished (or failed) first. */
async function killWhen(child: ChildProcess, ready: () => Promise<boolean>): Promise<{ killed: boolean; ended: string }> {
  const exited = exitOf(child)
  let done = false
  void exited.then(() => (done = true))
  while (!done) {
    if (await ready()) {
      child.kill('SIGKILL')
      const result = await exited
      if (result.signal === 'SIGKILL') return { killed: true, ended: 'SIGKILL' }
      return { killed: false, ended: `exit ${result.code}: ${result.stderr.slice(-1500)}` }
    }
    await sleep(20)
  }
  const result = await exited
  return { killed: false, ended: `finished first, exit ${result.code}: ${result.stderr.slice(-1500)}` }
}

/** A fingerprint of the whole ticks table: counts, uniqueness, and an ordered digest of every row. */
async function fingerprint(dataDir: string) {
  return withCatalog(dataDir, { readOnly: true }, async (catalog) => {
    const [row] = await catalog.query(`
      SELECT count(*) AS n,
             count(DISTINCT (log_partition, log_offset)) AS distinct_offsets,
             count(DISTINCT tape_seq) AS distinct_seq,
             min(tape_seq) AS min_seq, max(tape_seq) AS max_seq,
             md5(string_agg(concat_ws('|', log_partition, log_offset, tape_seq, kind, asset, ts, price, close, rate, oi, bid, ask), ';'
                 ORDER BY log_partition, log_offset)) AS digest
      FROM ticks`)
    return row!
  })
}

const tapeDir = await makeTempDir(t, 'svc-pipeline-tape-')
const tape = join(tapeDir, 'seed11-7d.ndjson')
const writer = TapeWriter.open(tape)
const tapeRecords = await new SyntheticMarket({ seed: 11, hours: 168, assets: ['BTC', 'ETH', 'SOL'] }).writeTo(writer)
await writer.close()

async function runToEnd(dataDir: string, env: RunEnv) {
  const result = await exitOf(startRun(tape, dataDir, env))
  if (result.code !== 0) throw new Error(`pipeline run exited ${result.code}: ${result.stderr}`)
  return result
}

function envFor(kind: 'embedded' | 'kafka'): RunEnv {
  if (kind === 'embedded') return { SVC_LOG: 'embedded' }
  return { SVC_LOG: 'kafka', KAFKA_BROKERS: kafkaBrokers()!.join(','), KAFKA_TOPIC_PREFIX: `t${randomBytes(5).toString('hex')}.`,
    // The broker's floor: a SIGKILLed run's successor waits for the dead member's session to lapse before it consumes.
    KAFKA_SESSION_TIMEOUT_MS: '6000' }
}

const skipKafka = kafkaSkip(t)

for (const kind of ['embedded', 'kafka'] as const) {
  t.test(kind, { skip: kind === 'kafka' ? skipKafka : false }, async (t) => {
    const cleanDir = await makeTempDir(t, `svc-pipeline-${kind}-clean-`)
    await runToEnd(cleanDir, envFor(kind))
    const clean = await fingerprint(cleanDir)

    t.test('row counts equal the tape and the views answer', async (t) => {
      t.equal(Number(clean.n), tapeRecords, 'one row per tape record')
      t.equal(Number(clean.distinct_offsets), tapeRecords, 'no log offset twice')
      t.equal(Number(clean.distinct_seq), tapeRecords, 'no tape record twice')
      t.equal(Number(clean.min_seq), 1)
      t.equal(Number(clean.max_seq), tapeRecords)
      await withCatalog(cleanDir, { readOnly: true }, async (catalog) => {
        const byKind = await catalog.query(`SELECT kind, count(*) AS n FROM ticks GROUP BY kind ORDER BY kind`)
        const kinds = Object.fromEntries(byKind.map((r) => [r.kind as string, Number(r.n)]))
        t.equal(kinds.bar, 3 * 168 * 60, 'one 1m bar per asset-minute')
        t.equal(kinds.funding, 3 * 168, 'one funding settlement per asset-hour')
        t.ok((kinds.liquidation ?? 0) > 0, 'liquidation bursts landed')
        const [bars] = await catalog.query(`SELECT count(*) AS n FROM bars WHERE asset = 'BTC'`)
        t.equal(Number(bars!.n), 168 * 60, 'bars view answers per asset')
        const hourly = await catalog.query(`SELECT count(*) AS n FROM hourly_ohlc WHERE asset = 'ETH'`)
        t.equal(Number(hourly[0]!.n), 168, 'hourly_ohlc view: one row per hour')
        const [fund] = await catalog.query(`SELECT count(*) AS n, min(rate) AS lo, max(rate) AS hi FROM funding WHERE asset = 'SOL'`)
        t.equal(Number(fund!.n), 168)
        t.ok(Number(fund!.lo) <= 1.25e-5 && Number(fund!.hi) >= 1.25e-5, 'funding straddles the neutral rate')
      })
    })

    t.test('SIGKILL mid-replay, twice, then restart: same tables as the uninterrupted run', async (t) => {
      const dir = await makeTempDir(t, `svc-pipeline-${kind}-crash-`)
      const env = envFor(kind)
      // First kill while the log is still filling; second once the sink has sealed files.
      const killedEarly = await killWhen(startRun(tape, dir, env), async () =>
        kind === 'embedded' ? (await logBytes(dir)) > 8_000_000 : (await sealedDataFiles(dir)) >= 1,
      )
      t.ok(killedEarly.killed, 'first run was SIGKILLed before finishing', { ended: killedEarly.ended })
      const sealedBefore = await sealedDataFiles(dir)
      const killedLate = await killWhen(startRun(tape, dir, env), async () => (await sealedDataFiles(dir)) >= sealedBefore + 3)
      t.ok(killedLate.killed, 'second run was SIGKILLed before finishing', { ended: killedLate.ended })
      const final = await runToEnd(dir, env)
      t.match(final.stderr, /already in log [1-9]\d*/, 'the restart resumed after records already in the log')
      const crashed = await fingerprint(dir)
      t.same(crashed, clean, 'identical counts, uniqueness and row digest')
    })
  })
}

t.test('startSink false: the sink stays idle until startSink() or drain(), then catches up', async (t) => {
  const dataDir = await makeTempDir(t, 'svc-pipeline-deferred-')
  const small = join(dataDir, 'small.ndjson')
  const w = TapeWriter.open(small)
  const n = await new SyntheticMarket({ seed: 5, hours: 1, assets: ['BTC', 'ETH'] }).writeTo(w)
  await w.close()
  const log = await EmbeddedLog.open(join(dataDir, 'log'))
  t.teardown(() => log.close())

  const idle = await Pipeline.start({ dataDir, log, startSink: false, sinkGroup: 'never-started' })
  await idle.close()
  t.pass('a pipeline whose sink never started closes')

  const pipeline = await Pipeline.start({ dataDir, log, startSink: false, sink: { maxAgeMs: 0, checkIntervalMs: 0 } })
  await pipeline.replay({ tape: small })
  await sleep(300)
  t.equal(pipeline.sink.stats().received, 0, 'nothing consumed while idle')
  t.equal(await sealedDataFiles(dataDir), 0, 'nothing sealed')
  pipeline.startSink()
  pipeline.startSink()
  await pipeline.drain()
  t.equal(pipeline.sink.stats().rowsWritten, n, 'then every record is sealed')
  await pipeline.close()
})
