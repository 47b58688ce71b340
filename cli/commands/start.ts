/**
 * `svc start` (what `npm start` runs): the whole service in one process. It generates a seeded synthetic tape on
 * first start (or takes SVC_TAPE), warms up at full speed until the models are fitted and every sold question has a
 * resolved clock, replays the rest at an accelerated speed through the event log into Parquet and the DuckDB
 * catalog, and serves the API. SIGTERM/SIGINT stop the replay, drain in-flight requests, seal what the sink
 * buffers and commit.
 */
import { parseArgs } from 'node:util'
import { access, mkdir } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { UsageError, type Command } from '../Command.ts'
import { childLogger } from '../../common/logger.ts'
import { SyntheticMarket } from '../../ingest/SyntheticMarket.ts'
import { TapeWriter } from '../../ingest/TapeWriter.ts'
import { readTape } from '../../ingest/TapeReader.ts'
import { openEventLog, eventLogConfig } from '../../pipeline/log/openEventLog.ts'
import { Pipeline } from '../../pipeline/Pipeline.ts'
import { newestReplayedTime, tapeIdOf } from '../../pipeline/TapeProducer.ts'
import { Catalog } from '../../sql/Catalog.ts'
import { Server } from '../../serving/Server.ts'
import { marketWiringFromEnv, openMarketServices } from '../../app/openMarketServices.ts'
import { RailRouter } from '../../serving/payments/RailRouter.ts'
import { FacilitatorClient } from '../../serving/payments/x402/FacilitatorClient.ts'
import { X402PaymentGate } from '../../serving/payments/x402/X402PaymentGate.ts'
import { BillingService } from '../../product/billing/BillingService.ts'
import { systemClock } from '../../common/Clock.ts'
import { EngineRunner } from '../../engine/EngineRunner.ts'
import { EngineServices } from '../../engine/EngineServices.ts'
import { MeasuredRecord } from '../../record/MeasuredRecord.ts'
import { openWalletWiring, walletWiringFromEnv } from '../../app/walletWiring.ts'
import { CreditsPaymentGate } from '../../serving/payments/CreditsPaymentGate.ts'

const log = childLogger('start')

const usage = `Usage: svc start [--port N] [--host H] [--data-dir DIR] [--tape TAPE] [--speed S]

Runs the service in one process: replays a tape through the event log into Parquet + DuckDB and serves the API.

Options (environment in brackets):
  --port N        listen port (PORT, default 8080; 0 picks a free one)
  --host H        listen address (HOST, default 127.0.0.1)
  --data-dir DIR  data folder (SVC_DATA_DIR, default ./data)
  --tape TAPE     tape to replay (SVC_TAPE); default: a seeded 45-day BTC/ETH/SOL tape generated on first start
  --speed S       replay speed after the warm-up, event time per wall time (SVC_REPLAY_SPEED, default 60: a minute
                  per second)
Also: SVC_LOG=kafka with KAFKA_BROKERS to run on Kafka; SVC_PAY_TO to accept payments (unset: paid routes 503
except with credits, x-svc-payer); SVC_FACILITATOR_URL for x402 settlement; SVC_OPS_TOKEN to enable operator routes (grants, rate-lock issue, surge).
Engine: fits each question per asset on its first SVC_TRAIN_DAYS days (default 30) or up to SVC_TRAIN_UNTIL (ISO
instant), then decides at every clock's close and resolves clocks as the tape passes them.
Warm-up: the tape up to the training cut, and on until every sold question has resolved a clock, replays at full
speed (a restart: up to the next cadence hour after what the log holds), then at --speed; the Parquet sink starts
when the warm-up ends and catches up in the background.
Market: SVC_UNIVERSE=replay|hyperliquid (default replay), SVC_HL_BASE_URL, SVC_COINGECKO_URL, SVC_COINGECKO_KEY.
Wallets: SVC_WALLET_PROVIDER=hyperliquid|none (default none: wallet/risk routes 503, S09..S11 PROVIDER_DOWN).
`

const DEFAULT_TAPE_HOURS = 45 * 24

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  )
}

/** Event time of the tape's first record. */
async function firstEventTime(tape: string): Promise<number> {
  for await (const entry of readTape(tape)) return entry.time
  throw new UsageError(`tape ${tape} is empty`)
}

/**
 * The default tape: seed 1, BTC/ETH/SOL, 45 days — a 7-day volatility baseline, the 30-day training window
 * (SVC_TRAIN_DAYS) and eight days of live replay after it. Generated once into the data folder.
 */
async function defaultTape(dataDir: string): Promise<string> {
  const tape = join(dataDir, 'tapes', `synthetic-seed1-${DEFAULT_TAPE_HOURS}h.ndjson.gz`)
  if (await exists(tape)) return tape
  await mkdir(join(dataDir, 'tapes'), { recursive: true })
  process.stdout.write(`svc: first start in ${dataDir}: generating the default ${DEFAULT_TAPE_HOURS / 24}-day tape ${tape}\n`)
  // Level 1: compressing is what bounds writing this tape, and the file is written once and read at every start.
  const writer = TapeWriter.open(tape, { gzipLevel: 1 })
  try {
    const n = await new SyntheticMarket({ seed: 1, hours: DEFAULT_TAPE_HOURS, assets: ['BTC', 'ETH', 'SOL'] }).writeTo(writer)
    await writer.close()
    log.info({ tape, records: n }, 'generated the default synthetic tape')
  } catch (err) {
    await writer.abort()
    throw err
  }
  return tape
}

export const command: Command = {
  name: 'start',
  summary: 'Run the whole service: replay a tape into Parquet + DuckDB and serve the API',
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
    const port = Number(values.port ?? process.env.PORT ?? 8080)
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be 0..65535`)
    const host = values.host ?? process.env.HOST ?? '127.0.0.1'
    const speed = Number(values.speed ?? process.env.SVC_REPLAY_SPEED ?? 60)
    if (!Number.isFinite(speed) || speed < 0) throw new UsageError('--speed must be a number >= 0')
    const dataDir = resolve(values['data-dir'] ?? process.env.SVC_DATA_DIR ?? 'data')
    const env: NodeJS.ProcessEnv = { ...process.env, SVC_DATA_DIR: dataDir }
    const logKind = eventLogConfig(env).SVC_LOG

    await mkdir(dataDir, { recursive: true })
    const tape = resolve(values.tape ?? process.env.SVC_TAPE ?? (await defaultTape(dataDir)))
    await Catalog.apply(dataDir)
    const eventLog = await openEventLog(env)
    // Short sink age so data lands in Parquet within seconds of being replayed. The sink starts when the warm-up ends:
    // no API read comes from Parquet, and in this one process it would take a third of the warm-up's CPU; it then
    // catches up on the history in the background.
    const pipeline = await Pipeline.start({ dataDir, log: eventLog, sink: { maxAgeMs: 5_000 }, startSink: false })
    const marketWiring = await openMarketServices({ log: eventLog, ticksTopic: pipeline.names.ticks, options: marketWiringFromEnv(env) })
    const trainDays = Number(env.SVC_TRAIN_DAYS ?? 30)
    const trainUntil = env.SVC_TRAIN_UNTIL ? Date.parse(env.SVC_TRAIN_UNTIL) : null
    if (!(trainDays > 0) || (trainUntil !== null && !Number.isFinite(trainUntil))) throw new UsageError('SVC_TRAIN_DAYS must be > 0 and SVC_TRAIN_UNTIL an ISO instant')
    const wallet = openWalletWiring(walletWiringFromEnv(env), { providers: marketWiring.providers, clock: systemClock })
    const runner = await EngineRunner.start({ log: eventLog, dataDir, names: pipeline.names, trainDays, trainUntil, walletProvider: wallet.provider, accountClock: wallet.accountClock })
    const engine = new EngineServices(runner.engine)
    marketWiring.attachDecisions(engine) // the paid funding surfaces record S06/S07 through the engine
    const payTo = process.env.SVC_PAY_TO
    // Credits on the event log: balances rebuilt from billing.draws, unanswered debits reversed before serving.
    const billing = await BillingService.open({ log: eventLog, clock: systemClock, opsToken: process.env.SVC_OPS_TOKEN || null })
    const payToOrNull = payTo || null
    // x402 per call when a recipient is configured: nonces in <data>/x402, settlement through SVC_FACILITATOR_URL (or the default).
    const facilitator = payTo ? FacilitatorClient.fromEnv(env) : null
    const x402 = payTo && facilitator ? await X402PaymentGate.open({ payTo, dataDir: join(dataDir, 'x402'), facilitator }) : null
    const paymentGate = new RailRouter({
      payTo: payToOrNull,
      credits: new CreditsPaymentGate(billing.ledger, payToOrNull),
      ...(x402 ? { x402 } : {}),
    })
    const server = await Server.start({
      port,
      host,
      config: { payTo: payToOrNull },
      services: { billing, paymentGate, market: marketWiring.market, providers: marketWiring.providers, ledger: engine, engine, record: new MeasuredRecord(runner.ledger.index), ...wallet.services },
    })

    process.stdout.write(
      [
        `svc: listening on ${server.url}  (try ${server.url}/healthz, ${server.url}/v1/pricing, ${server.url}/openapi.json)`,
        `svc: event log   ${logKind === 'kafka' ? `kafka ${env.KAFKA_BROKERS}` : join(dataDir, 'log')}`,
        `svc: parquet     ${join(dataDir, 'parquet')}`,
        `svc: duckdb      ${Catalog.path(dataDir)}  (duckdb -readonly ${Catalog.path(dataDir)} "select kind, count(*) from ticks group by 1")`,
        `svc: replaying   ${tape} at speed ${speed}`,
        payTo ? `svc: payments to ${payTo} (x402 on eip155:8453 via ${facilitator?.url})` : 'svc: SVC_PAY_TO unset: no x402 recipient; paid routes take credits (x-svc-payer) and their 402 challenge offers no address',
        '',
      ].join('\n'),
    )

    const abort = new AbortController()
    let stopping: Promise<void> | null = null
    const stop = () => {
      stopping ??= (async () => {
        abort.abort()
        await server.close()
      })()
    }
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)

    try {
      // Warm-up: the history up to the training cut, and past it until every sold question has resolved a clock,
      // goes through at full speed, so models are fitted and the API shows open clocks and feed chips within seconds;
      // the rest of the tape then plays at the paced speed. A restart also catches up at full speed to the next
      // cadence instant after what the log already holds (the producer resumes exactly where it stopped).
      const cut = trainUntil ?? (await firstEventTime(tape)) + trainDays * 86_400_000
      const tapeId = await tapeIdOf(tape)
      const resumedAt = await newestReplayedTime(eventLog, pipeline.names.ticks, tapeId)
      const paceFrom = EngineRunner.primedAt(cut, resumedAt)
      process.stdout.write(
        `svc: warming up: replaying at full speed past the training cut ${new Date(cut).toISOString()} up to ${new Date(paceFrom).toISOString()}${resumedAt === null ? '' : ` (resuming after ${new Date(resumedAt).toISOString()})`}\n`,
      )
      const result = await pipeline.replay({
        tape,
        tapeId,
        speed,
        paceFrom,
        signal: abort.signal,
        onPaceStart: ({ produced }) => {
          process.stdout.write(`svc: warm-up done (${produced} records); now replaying at speed ${speed}\n`)
          pipeline.startSink()
          // Tell the newcomer when the engine has caught up with the warm-up and the API shows it.
          runner.waitForTicks(120_000, abort.signal).then(
            () => {
              const stats = runner.stats()
              process.stdout.write(
                `svc: ready: ${stats.openClocks} open clocks, ${stats.ledger.outcomes} resolved decisions (curl ${server.url}/v1/clocks/open, ${server.url}/v1/feed?limit=5)\n`,
              )
            },
            (err: unknown) => {
              if (!abort.signal.aborted) log.warn({ err }, 'the engine did not catch up with the warm-up')
            },
          )
        },
      })
      if (!result.aborted) {
        await pipeline.drain() // starts the sink if the replay never paced (speed 0, or a tape ending before paceFrom)
        process.stdout.write(`svc: replay finished (${result.produced} records produced, ${result.skipped} already in the log); still serving\n`)
        await new Promise<void>((resolveStop) => abort.signal.addEventListener('abort', () => resolveStop(), { once: true }))
      }
      await stopping
      return 0
    } finally {
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
      await server.close()
      await x402?.close()
      await billing.close()
      await marketWiring.close()
      await runner.close()
      await pipeline.close()
      await eventLog.close()
      process.stdout.write('svc: stopped\n')
    }
  },
}
