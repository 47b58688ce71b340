/**
 * The composition root: the whole service in one process, wired from one validated configuration (app/config.ts),
 * opened in dependency order and closed in the reverse one.
 *
 *   open:  catalog DDL → event log → pipeline (sink idle) → market state and providers → engine runner → billing
 *          → payment rails → HTTP server
 *   run:   warm-up replay at full speed up to the first primed instant, then the paced replay; the sink starts when
 *          the warm-up ends
 *   close: server (drain) → record job (a run in progress finishes) → x402 nonces → billing → market → engine → pipeline (seal, commit) → event log
 *
 * `svc start` (cli/commands/start.ts) parses flags into the configuration and runs this.
 */
import { access, mkdir } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { codedError } from '../common/CodedError.ts'
import { childLogger } from '../common/logger.ts'
import { systemClock } from '../common/Clock.ts'
import { EngineRunner } from '../engine/EngineRunner.ts'
import { EngineServices } from '../engine/EngineServices.ts'
import { readTape } from '../ingest/TapeReader.ts'
import { SyntheticMarket } from '../ingest/SyntheticMarket.ts'
import { TapeWriter } from '../ingest/TapeWriter.ts'
import type { EventLog } from '../pipeline/log/EventLog.ts'
import { openEventLog } from '../pipeline/log/openEventLog.ts'
import { Pipeline } from '../pipeline/Pipeline.ts'
import { newestReplayedTime, tapeIdOf } from '../pipeline/TapeProducer.ts'
import { BillingService } from '../product/billing/BillingService.ts'
import { MeasuredRecord } from '../record/MeasuredRecord.ts'
import { RecordDb } from '../record/RecordDb.ts'
import { RecordJob } from '../record/RecordJob.ts'
import { RecordSchedule } from '../record/RecordSchedule.ts'
import { CompactionSchedule } from '../pipeline/sinks/CompactionSchedule.ts'
import { ParquetCompactor } from '../pipeline/sinks/ParquetCompactor.ts'
import { sinkTables } from '../pipeline/sinks/sinkTables.ts'
import { ReleaseStore } from '../record/releases/ReleaseStore.ts'
import { CreditsPaymentGate } from '../serving/payments/CreditsPaymentGate.ts'
import { RailRouter } from '../serving/payments/RailRouter.ts'
import { FacilitatorClient } from '../serving/payments/x402/FacilitatorClient.ts'
import { X402PaymentGate } from '../serving/payments/x402/X402PaymentGate.ts'
import { Server } from '../serving/Server.ts'
import { Catalog } from '../sql/Catalog.ts'
import { eventLogOf, topicNamesOf, trainUntilOf, type AppConfig } from './config.ts'
import { marketWiringOf, openMarketServices, type MarketWiring } from './openMarketServices.ts'
import { openWalletWiring, walletWiringOf } from './walletWiring.ts'

const log = childLogger('app')

const DAY_MS = 86_400_000
const DEFAULT_TAPE_HOURS = 45 * 24

export const APP_ERRORS = {
  APP_CONFIG: { retryable: false, meaning: 'a configuration the app cannot run with that the schema cannot see (an empty tape)' },
} as const

export class AppConfigError extends codedError(APP_ERRORS) {
  constructor(message: string) {
    super('APP_CONFIG', message)
  }
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  )
}

/** Event time of the tape's first record. */
async function firstEventTime(tape: string): Promise<number> {
  for await (const entry of readTape(tape)) return entry.time
  throw new AppConfigError(`tape ${tape} is empty`)
}

/**
 * The default tape: seed 1, BTC/ETH/SOL, 45 days — a 7-day volatility baseline, the 30-day training window
 * (SVC_TRAIN_DAYS) and eight days of live replay after it. Generated once into the data folder.
 */
async function defaultTape(dataDir: string, say: (line: string) => void): Promise<string> {
  const tape = join(dataDir, 'tapes', `synthetic-seed1-${DEFAULT_TAPE_HOURS}h.ndjson.gz`)
  if (await exists(tape)) return tape
  await mkdir(join(dataDir, 'tapes'), { recursive: true })
  say(`svc: first start in ${dataDir}: generating the default ${DEFAULT_TAPE_HOURS / 24}-day tape ${tape}`)
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

export class ServiceApp {
  private closing: Promise<void> | null = null

  private constructor(
    private readonly config: AppConfig,
    readonly dataDir: string,
    readonly tape: string,
    readonly server: Server,
    private readonly eventLog: EventLog,
    private readonly pipeline: Pipeline,
    private readonly runner: EngineRunner,
    private readonly market: MarketWiring,
    private readonly billing: BillingService,
    private readonly x402: X402PaymentGate | null,
    private readonly record: { db: RecordDb; job: RecordJob; schedule: RecordSchedule; releases: ReleaseStore; compaction: CompactionSchedule | null },
    private readonly say: (line: string) => void,
  ) {}

  /** Opens every part in dependency order and starts serving; `say` prints the newcomer's status lines. */
  static async start(config: AppConfig, say: (line: string) => void): Promise<ServiceApp> {
    const trainUntil = trainUntilOf(config)
    const dataDir = resolve(config.SVC_DATA_DIR)
    const names = topicNamesOf(config)
    const partitions = config.SVC_PARTITIONS
    await mkdir(dataDir, { recursive: true })
    const tape = resolve(config.SVC_TAPE ?? (await defaultTape(dataDir, say)))
    await Catalog.apply(dataDir)
    const eventLog = await openEventLog(eventLogOf(config))
    // Short sink age so data lands in Parquet within seconds of being replayed. The sink starts when the warm-up ends:
    // no API read comes from Parquet, and in this one process it would take a third of the warm-up's CPU; it then
    // catches up on the history in the background.
    const pipeline = await Pipeline.start({ dataDir, log: eventLog, names, partitions, sink: { maxAgeMs: 5_000 }, startSink: false })
    const market = await openMarketServices({ log: eventLog, ticksTopic: names.ticks, options: marketWiringOf(config) })
    const wallet = openWalletWiring(walletWiringOf(config), { providers: market.providers, clock: systemClock })
    const runner = await EngineRunner.start({
      log: eventLog, dataDir, names, partitions, trainDays: config.SVC_TRAIN_DAYS, trainUntil,
      walletProvider: wallet.provider, accountClock: wallet.accountClock,
    })
    const engine = new EngineServices(runner)
    market.attachDecisions(engine) // the paid funding surfaces record S06/S07 through the engine
    // Credits on the event log: balances rebuilt from billing.draws, unanswered debits reversed before serving.
    const billing = await BillingService.open({ log: eventLog, clock: systemClock, opsToken: config.SVC_OPS_TOKEN ?? null, topic: names.draws, partitions })
    const payTo = config.SVC_PAY_TO ?? null
    // x402 per call when a recipient is configured: nonces in <data>/x402, settlement through SVC_FACILITATOR_URL (or the default).
    const facilitator = payTo ? new FacilitatorClient(config.SVC_FACILITATOR_URL ? { url: config.SVC_FACILITATOR_URL } : {}) : null
    const x402 = payTo && facilitator ? await X402PaymentGate.open({ payTo, dataDir: join(dataDir, 'x402'), facilitator }) : null
    const paymentGate = new RailRouter({ payTo, credits: new CreditsPaymentGate(billing.ledger, payTo), ...(x402 ? { x402 } : {}) })
    // The measured record: batch tables over the sealed Parquet, read by the record routes and the price ladder.
    const recordDb = await RecordDb.open(dataDir)
    const releases = await ReleaseStore.open(dataDir, recordDb) // one DuckDB for the record and the releases
    const recordJob = await RecordJob.open(recordDb, { releases })
    const record = new MeasuredRecord(recordDb, { releases })
    const recordSchedule = new RecordSchedule(recordJob, config.SVC_RECORD_INTERVAL_S * 1000, () => record.invalidate())
    // Closed days' small sink files merged on a schedule; the ledger's only once the record job has counted them.
    const compaction = config.SVC_COMPACT_INTERVAL_S > 0
      ? new CompactionSchedule(
          await ParquetCompactor.open({ dataDir, dirs: sinkTables(names).map((t) => t.dir), consumed: () => RecordJob.consumedFiles(recordDb) }),
          config.SVC_COMPACT_INTERVAL_S * 1000,
        )
      : null
    const server = await Server.start({
      port: config.PORT,
      host: config.HOST,
      config: {
        payTo,
        baseUrl: config.SVC_BASE_URL ?? null, // the schema admits no path, so no trailing slash
        docsUrl: config.SVC_DOCS_URL ?? null,
        maxBodyBytes: config.SVC_MAX_BODY_BYTES,
        trustProxy: config.SVC_TRUST_PROXY,
      },
      services: {
        billing, paymentGate, market: market.market, providers: market.providers, ledger: engine, engine,
        record, ladder: record, releases, ...wallet.services,
      },
    })
    const logKind = config.SVC_LOG
    for (const line of [
      `svc: listening on ${server.url}  (try ${server.url}/healthz, ${server.url}/v1/pricing, ${server.url}/openapi.json)`,
      `svc: event log   ${logKind === 'kafka' ? `kafka ${config.KAFKA_BROKERS}` : join(dataDir, 'log')}`,
      `svc: parquet     ${join(dataDir, 'parquet')}`,
      `svc: duckdb      ${Catalog.path(dataDir)}  (duckdb -readonly ${Catalog.path(dataDir)} "select kind, count(*) from ticks group by 1")`,
      `svc: replaying   ${tape} at speed ${config.SVC_REPLAY_SPEED}`,
      payTo
        ? `svc: payments to ${payTo} (x402 on eip155:8453 via ${facilitator?.url})`
        : 'svc: SVC_PAY_TO unset: no x402 recipient; paid routes take credits (x-svc-payer) and their 402 challenge offers no address',
    ]) say(line)
    recordSchedule.start()
    compaction?.start()
    return new ServiceApp(config, dataDir, tape, server, eventLog, pipeline, runner, market, billing, x402, { db: recordDb, job: recordJob, schedule: recordSchedule, releases, compaction }, say)
  }

  /**
   * Replays the tape until it ends (then keeps serving) or `signal` aborts. Warm-up: the history up to the training
   * cut, and past it until every sold question has resolved a clock, goes through at full speed, so models are fitted
   * and the API shows open clocks and feed chips within seconds; the rest of the tape then plays at the paced speed. A
   * restart also catches up at full speed to the next cadence instant after what the log already holds (the producer
   * resumes exactly where it stopped).
   */
  async run(signal: AbortSignal): Promise<void> {
    const { config, pipeline, runner, server, say } = this
    const speed = config.SVC_REPLAY_SPEED
    const cut = trainUntilOf(config) ?? (await firstEventTime(this.tape)) + config.SVC_TRAIN_DAYS * DAY_MS
    const tapeId = await tapeIdOf(this.tape)
    const resumedAt = await newestReplayedTime(this.eventLog, pipeline.names.ticks, tapeId)
    const paceFrom = EngineRunner.primedAt(cut, resumedAt)
    say(
      `svc: warming up: replaying at full speed past the training cut ${new Date(cut).toISOString()} up to ${new Date(paceFrom).toISOString()}${resumedAt === null ? '' : ` (resuming after ${new Date(resumedAt).toISOString()})`}`,
    )
    const result = await pipeline.replay({
      tape: this.tape,
      tapeId,
      speed,
      paceFrom,
      signal,
      onPaceStart: ({ produced }) => {
        say(`svc: warm-up done (${produced} records); now replaying at speed ${speed}`)
        pipeline.startSink()
        // Tell the newcomer when the engine has caught up with the warm-up and the API shows it.
        runner.waitForTicks(120_000, signal).then(
          () => {
            const stats = runner.stats()
            say(`svc: ready: ${stats.openClocks} open clocks, ${stats.ledger.outcomes} resolved decisions (curl ${server.url}/v1/clocks/open, ${server.url}/v1/feed?limit=5)`)
          },
          (err: unknown) => {
            if (!signal.aborted) log.warn({ err }, 'the engine did not catch up with the warm-up')
          },
        )
      },
    })
    if (!result.aborted) {
      await pipeline.drain() // starts the sink if the replay never paced (speed 0, or a tape ending before paceFrom)
      say(`svc: replay finished (${result.produced} records produced, ${result.skipped} already in the log); still serving`)
      await new Promise<void>((resolveStop) => signal.addEventListener('abort', () => resolveStop(), { once: true }))
    }
  }

  /** Closes in the reverse order of opening: nothing is written after the part that would store it has closed. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.server.close()
      await this.record.compaction?.stop()
      await this.record.schedule.stop()
      await this.record.job.close()
      this.record.releases.close()
      this.record.db.close()
      await this.x402?.close()
      await this.billing.close()
      await this.market.close()
      await this.runner.close()
      await this.pipeline.close()
      await this.eventLog.close()
    })()
    return this.closing
  }
}
