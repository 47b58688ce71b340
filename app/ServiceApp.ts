/**
 * The composition root: the whole service in one process, wired from one validated configuration (app/config.ts),
 * opened in dependency order and closed in the reverse one.
 *
 *   open:  catalog DDL → event log → pipeline (sink idle) → market state and providers → engine runner → billing
 *          → duel (on the engine's outcome bus) → Arena (on the duel's call events) → delivery (on the outcome bus) → operator funnel (only with SVC_ADMIN_KEY) → payment rails → record job → HTTP server
 *   run:   the venue's history at full speed, then live: by default the simulated venue generated up to now and then
 *          at 1x in the present; with SVC_VENUE=hyperliquid the live venue connector's backfill (or repair since the
 *          last run), then its stream; with SVC_TAPE a dated tape up to the first primed instant, then paced at
 *          SVC_REPLAY_SPEED. The market routes answer once the market state and the engine hold the warm-up; the
 *          Parquet sink starts then and seals its backlog in the background (never a gate of readiness)
 *   close: server (drain) → release wiring (a bootstrap release in progress stops) → funnel → record job (a run in progress finishes) → x402 nonces → payer proofs → delivery → Arena → duel → billing → market → engine → venue sink → pipeline (seal, commit) → event log
 *
 * `svc start` (cli/commands/start.ts) parses flags into the configuration and runs this.
 */
import { StateSnapshots } from '../pipeline/state/StateSnapshots.ts'
import type { CheckpointSettings } from '../pipeline/state/StateStore.ts'
import { readFile } from 'node:fs/promises'
import { basename, join, resolve } from 'node:path'
import { Registry } from 'prom-client'
import { codedError } from '../common/CodedError.ts'
import { childLogger } from '../common/logger.ts'
import { systemClock, type Clock } from '../common/Clock.ts'
import { PeriodicTask } from '../common/PeriodicTask.ts'
import { StopSteps } from '../common/StopSteps.ts'
import { EngineRunner } from '../engine/EngineRunner.ts'
import { EngineServices } from '../engine/EngineServices.ts'
import { LedgerStreams } from '../engine/LedgerStreams.ts'
import { readTape } from '../ingest/TapeReader.ts'
import { SimulatedVenue } from '../ingest/SimulatedVenue.ts'
import { SIMULATED_SOURCE } from '../ingest/SyntheticMarket.ts'
import { CANONICAL_ASSETS } from '../ingest/Tick.ts'
import { writeFileAtomic } from '../pipeline/log/atomicFile.ts'
import { openDataFolder, restrictUmask } from '../pipeline/log/dataModes.ts'
import type { EventLog } from '../pipeline/log/EventLog.ts'
import { openEventLog } from '../pipeline/log/openEventLog.ts'
import { Pipeline } from '../pipeline/Pipeline.ts'
import { EmbeddedLog } from '../pipeline/log/EmbeddedLog.ts'
import { TickRetention } from '../pipeline/TickRetention.ts'
import { newestReplayedTime, tapeIdOf } from '../pipeline/TapeProducer.ts'
import { Arena } from '../product/arena/Arena.ts'
import { BillingService } from '../product/billing/BillingService.ts'
import { DuelService } from '../product/duel/DuelService.ts'
import { DeliveryKeyMissing, type DeliveryService } from '../product/delivery/DeliveryService.ts'
import { openDelivery } from './openDelivery.ts'
import { openAnswerKeyring } from '../record/answerKeys/answerKeyFile.ts'
import { QuestionCatalog } from '../engine/QuestionCatalog.ts'
import { FunnelService } from '../product/funnel/FunnelService.ts'
import { DataTimeline } from '../product/platform/DataTimeline.ts'
import { MeasuredRecord } from '../record/MeasuredRecord.ts'
import { RecordDb } from '../record/RecordDb.ts'
import { RecordJob } from '../record/RecordJob.ts'
import { ParquetCompactor } from '../pipeline/sinks/ParquetCompactor.ts'
import { sinkTables } from '../pipeline/sinks/sinkTables.ts'
import { ReleaseStore } from '../record/releases/ReleaseStore.ts'
import { releaseHealth } from '../product/platform/releaseHealth.ts'
import { openReleaseWiring, type ReleaseWiring } from './releaseWiring.ts'
import { CreditsPaymentGate } from '../serving/payments/CreditsPaymentGate.ts'
import { Journal } from '../pipeline/journal/Journal.ts'
import { RailRouter } from '../serving/payments/RailRouter.ts'
import { PayerProof } from '../product/identity/PayerProof.ts'
import { PayerSessions } from '../product/identity/PayerSessions.ts'
import { PAYER_PROOFS } from '../pipeline/records/payerProofRecord.ts'
import { secretKeyFile } from './secretKeyFile.ts'
import { FacilitatorClient } from '../serving/payments/x402/FacilitatorClient.ts'
import { X402PaymentGate } from '../serving/payments/x402/X402PaymentGate.ts'
import { ServiceMetrics } from '../serving/metrics/ServiceMetrics.ts'
import { Server } from '../serving/Server.ts'
import { Catalog } from '../sql/Catalog.ts'
import { accessLogShareOf, eventLogOf, tickRetentionMsOf, topicNamesOf, trainUntilOf, type AppConfig } from './config.ts'
import { marketWiringOf, openMarketServices, type MarketWiring } from './openMarketServices.ts'
import { openWalletWiring, walletWiringOf } from './walletWiring.ts'
import { HL_DEFAULT_BASE_URL, HyperliquidInfoClient } from '../ingest/hyperliquid/HyperliquidInfoClient.ts'
import { HL_DEFAULT_WS_URL } from '../ingest/hyperliquid/HyperliquidStream.ts'
import { RestWeightBudget, type RestWeightBudgetOptions } from '../ingest/hyperliquid/RestWeightBudget.ts'
import { HL_VENUE_SOURCE, type HyperliquidConnectorOptions } from '../pipeline/venue/HyperliquidConnector.ts'
import { LiveVenueFeed } from '../pipeline/venue/LiveVenueFeed.ts'
import { SimulatedVenueResume } from '../pipeline/venue/SimulatedVenueResume.ts'
import { LogError } from '../pipeline/log/LogError.ts'
import { decodeTickValue } from '../pipeline/TickEnvelope.ts'
import { openLease, type Lease, type LeaseMember } from '../pipeline/log/Lease.ts'
import { openPartitionLease } from '../pipeline/log/PartitionLease.ts'
import { PAYERS_LEASE, PAYERS_LEASE_TOPIC, PayerOwnership } from '../product/billing/PayerOwnership.ts'
import { RepeatRefunds } from '../product/billing/RepeatRefunds.ts'
import { ClusterAnswerKeys } from '../record/answerKeys/ClusterAnswerKeys.ts'
import { PayerOwners } from '../serving/cluster/PayerOwners.ts'
import { PeerForwarder } from '../serving/cluster/PeerForwarder.ts'
import { keyBytes } from '../common/AtRestCipher.ts'
import { createHmac } from 'node:crypto'
import { startProgress, type Progress } from '../common/progress.ts'
import { progressOf } from './config.ts'
import { DAY_MS, MINUTE_MS } from '../common/time.ts'

const log = childLogger('app')

/** The simulated venue's seed: one fixed market, so two folders started the same day tell the same story. */
const SIMULATED_SEED = 1
/** The Parquet sink's consumer group: its committed offsets are what retention counts as sealed. */
const SINK_GROUP = 'svc.parquet-sink'
/** The lease whose holder feeds the venue when several instances share one cluster (pipeline/log/Lease.ts). */
const VENUE_FEED_LEASE = 'venue-feed'
/** The lease whose holder delivers hooks, endpoints, push and alerts (DeliveryService's dispatchLease). */
const DELIVERY_LEASE = 'delivery'
/** How often a start still catching up with its warm-up says so (it waits as long as it takes). */
const CATCH_UP_LOG_EVERY_MS = 60_000

export const APP_ERRORS = {
  APP_CONFIG: { retryable: false, meaning: 'a configuration the app cannot run with that the schema cannot see (an empty tape, a history shorter than the training window)' },
} as const

export class AppConfigError extends codedError(APP_ERRORS) {
  constructor(message: string) {
    super('APP_CONFIG', message)
  }
}

/** The first record of a tape: its event time starts the training window, its provenance says whether it is simulated. */
async function firstEntryOf(tape: string): Promise<{ time: number; simulated: boolean }> {
  for await (const entry of readTape(tape)) return { time: entry.time, simulated: entry.tick.provenance.source === SIMULATED_SOURCE }
  throw new AppConfigError(`tape ${tape} is empty`)
}

/** What `<data>/venue.json` keeps: the simulated venue's origin, chosen once per folder so history never moves. */
interface VenueFile {
  seed: number
  assets: string[]
  origin: string
}

/**
 * `<data>/venue.json` of a live venue folder: which venue the history came from and the training cut fixed at its first
 * start (the end of the first backfill), so a restart fits on the same window and the folder never mixes venues.
 */
interface LiveVenueFile {
  venue: 'hyperliquid'
  base_url: string
  ws_url: string
  coins: string[]
  bar_interval: string
  train_until: string
  history_days: number
}

/** The live venue's markets: the canonical assets, as the venue names its coins. */
const LIVE_COINS = [...CANONICAL_ASSETS]
/** The models' bars (the real tapes the releases are evaluated on are 1 h; the venue serves 5000 of them, 208 days). */
const LIVE_BAR_INTERVAL = '1h'
/** The backfill covers the training window and the week before it that the volatility baseline (pk_7d) needs. */
const BASELINE_DAYS = 7

/** Test knobs of the live connector (a compressed session shortens its timings); not configuration. */
export type LiveVenueTiming = Omit<Partial<HyperliquidConnectorOptions>, 'coins' | 'client' | 'wsUrl' | 'clock' | 'sink' | 'resume' | 'historyMs' | 'onProgress'>

async function readVenueFile(dataDir: string): Promise<(Partial<VenueFile> & Partial<LiveVenueFile>) | null> {
  return readFile(join(dataDir, 'venue.json'), 'utf8').then(
    (text) => JSON.parse(text) as Partial<VenueFile> & Partial<LiveVenueFile>,
    (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null
      throw err
    },
  )
}

/**
 * The live venue of this data folder: the one recorded in venue.json, or (first start) one whose training cut is now,
 * recorded before any tick is fetched. A folder that holds another venue's history is refused.
 */
async function liveVenueOf(dataDir: string, config: AppConfig, clock: Clock): Promise<LiveVenueFile> {
  const kept = await readVenueFile(dataDir)
  const baseUrl = (config.SVC_HL_BASE_URL ?? HL_DEFAULT_BASE_URL).replace(/\/+$/, '')
  const wsUrl = config.SVC_HL_WS_URL ?? HL_DEFAULT_WS_URL
  if (kept) {
    if (kept.venue !== 'hyperliquid') {
      throw new AppConfigError(`${dataDir} holds the simulated venue's history (venue.json): give the live venue a data folder of its own (SVC_DATA_DIR)`)
    }
    if (kept.base_url !== baseUrl) {
      throw new AppConfigError(`${dataDir} holds history from ${kept.base_url}, not ${baseUrl} (SVC_HL_BASE_URL): give this venue a data folder of its own`)
    }
    return { ...(kept as LiveVenueFile), ws_url: wsUrl }
  }
  const record: LiveVenueFile = {
    venue: 'hyperliquid',
    base_url: baseUrl,
    ws_url: wsUrl,
    coins: LIVE_COINS,
    bar_interval: LIVE_BAR_INTERVAL,
    train_until: new Date(trainUntilOf(config) ?? clock.now()).toISOString(),
    history_days: config.SVC_TRAIN_DAYS + BASELINE_DAYS,
  }
  await writeFileAtomic(join(dataDir, 'venue.json'), JSON.stringify(record, null, 2) + '\n')
  return record
}

/**
 * Several instances (SVC_CLUSTER=on): the simulated venue whose ticks the cluster's log already holds (the tape id of
 * its newest records names seed and origin), or null while it holds none.
 */
async function loggedVenueOf(eventLog: EventLog, ticksTopic: string): Promise<{ seed: number; originMs: number } | null> {
  const last = await eventLog.lastRecords(ticksTopic).catch((err: unknown) => {
    if (err instanceof LogError && err.code === 'LOG_UNKNOWN_TOPIC') return []
    throw err
  })
  for (const record of last) {
    const tape = record ? decodeTickValue(record.value).tape : null
    const venue = tape ? SimulatedVenue.parseTapeId(tape) : null
    if (venue) return venue
  }
  return null
}

/**
 * The simulated venue this data folder recorded in venue.json, or null at its first start (firstSimulatedVenue then
 * chooses one once the event log is open). Checked before anything opens: a folder of the live venue, or a history too
 * short to train on, is refused.
 */
async function keptSimulatedVenueOf(dataDir: string, config: AppConfig): Promise<SimulatedVenue | null> {
  const kept = await readVenueFile(dataDir)
  if (kept?.venue === 'hyperliquid') {
    throw new AppConfigError(`${dataDir} holds the live venue's history (venue.json): the simulated venue needs a data folder of its own (SVC_DATA_DIR), or set SVC_VENUE=hyperliquid`)
  }
  if (kept) return new SimulatedVenue({ seed: kept.seed!, assets: kept.assets as SimulatedVenue['assets'], originMs: Date.parse(kept.origin!) })
  if (trainUntilOf(config) === null && config.SVC_SIM_HISTORY_DAYS <= config.SVC_TRAIN_DAYS) {
    throw new AppConfigError(
      `SVC_SIM_HISTORY_DAYS (${config.SVC_SIM_HISTORY_DAYS}) must exceed SVC_TRAIN_DAYS (${config.SVC_TRAIN_DAYS}): the models are fitted on the first SVC_TRAIN_DAYS of the history and sell only after it`,
    )
  }
  return null
}

/**
 * The simulated venue of a data folder's first start: one whose origin is the UTC midnight SVC_SIM_HISTORY_DAYS before now, recorded
 * atomically in venue.json before any tick is produced.
 */
async function firstSimulatedVenue(dataDir: string, config: AppConfig, clock: Clock, eventLog: EventLog): Promise<SimulatedVenue> {
  // Several instances: one joining a cluster whose log holds the venue already generates the same records (its first
  // start's own origin would name another tape, and a takeover would append the whole history again under it). Read
  // through the service's own event log, not a connection of its own.
  const cluster = config.SVC_CLUSTER === 'on' ? await loggedVenueOf(eventLog, topicNamesOf(config).ticks) : null
  const venue = cluster
    ? new SimulatedVenue({ seed: cluster.seed, assets: CANONICAL_ASSETS, originMs: cluster.originMs })
    : new SimulatedVenue({ seed: SIMULATED_SEED, assets: CANONICAL_ASSETS, originMs: SimulatedVenue.originBefore(clock.now(), config.SVC_SIM_HISTORY_DAYS * DAY_MS) })
  const record: VenueFile = { seed: venue.seed, assets: [...venue.assets], origin: new Date(venue.originMs).toISOString() }
  await writeFileAtomic(join(dataDir, 'venue.json'), JSON.stringify(record, null, 2) + '\n')
  return venue
}

/** Where the ticks come from: the simulated venue in the present (default), the live venue, or a dated tape (SVC_TAPE). */
type VenueFeed =
  /** `reopen`: the generator's resume point read again from its checkpoint and the log (an instance taking over the feed). */
  | { mode: 'present'; venue: SimulatedVenue; resume: SimulatedVenueResume; reopen: () => Promise<SimulatedVenueResume> }
  | { mode: 'live'; venue: LiveVenueFile; connector: LiveVenueFeed; progress: { bar: Progress | null } }
  | { mode: 'replay'; tape: string; firstTime: number }

/** What opened so far, for closing a start that stops or fails part-way: `first` closes before the rest (last first). */
interface Opened {
  first: Array<[string, () => unknown]>
  rest: Array<[string, () => unknown]>
}

export interface StartDeps {
  /** The present (default the system clock; a test may run the service in a controlled present). */
  clock?: Clock
  venueTiming?: LiveVenueTiming
  restBudget?: RestWeightBudgetOptions
  /** A stop signal while starting: the start closes what it opened and rejects with the signal's reason. */
  signal?: AbortSignal
  /** Where the steps of a stop are recorded (svc start reads it when its deadline passes). */
  stopSteps?: StopSteps
}

export class ServiceApp {
  private closing: Promise<void> | null = null

  private constructor(
    private readonly config: AppConfig,
    readonly dataDir: string,
    private readonly feed: VenueFeed,
    /** Who feeds the venue: the one holder of this lease among the instances of a cluster (SVC_CLUSTER; else this one). */
    private readonly feedLease: Lease,
    private readonly deliveryLease: Lease,
    private readonly clock: Clock,
    private readonly timeline: DataTimeline,
    readonly server: Server,
    private readonly eventLog: EventLog,
    private readonly pipeline: Pipeline,
    private readonly runner: EngineRunner,
    private readonly market: MarketWiring,
    private readonly billing: BillingService,
    /** The duel; the Arena subscribes to its events (duel.events, product/duel/CallEvents.ts). */
    readonly duel: DuelService,
    private readonly arena: Arena,
    /** null: its records are sealed under a key this start lacks (DeliveryKeyMissing); its routes answer 503. */
    private readonly delivery: DeliveryService | null,
    private readonly funnel: FunnelService | null,
    private readonly x402: X402PaymentGate | null,
    /** Used sign-in nonces and bearer sessions (product/identity/PayerSessions.ts). */
    private readonly proofs: { sessions: PayerSessions; journal: Journal<typeof PAYER_PROOFS.schema> },
    private readonly record: { db: RecordDb; job: RecordJob; schedule: PeriodicTask; releases: ReleaseStore; served: ReleaseWiring; compaction: PeriodicTask | null; compactor: ParquetCompactor | null; retention: PeriodicTask | null },
    private readonly say: (line: string) => void,
    /** What close() is still waiting for (svc start names it when its stop deadline passes). */
    readonly stopSteps: StopSteps,
  ) {}

  /**
   * Opens every part in dependency order and starts serving; `say` prints the newcomer's status lines. `clock` is the
   * present (default the system clock; a test may run the service in a controlled present).
   */
  static async start(config: AppConfig, say: (line: string) => void, deps: StartDeps = {}): Promise<ServiceApp> {
    const steps = deps.stopSteps ?? new StopSteps(log)
    const opened: Opened = { first: [], rest: [] }
    try {
      return await ServiceApp.open(config, say, deps, opened, steps)
    } catch (err) {
      // A stop signal (or a failure) while opening: what opened closes, last first, before the caller may free the
      // data folder; the bootstrap release's wiring first, so a build in progress stops at its next step.
      if (deps.signal?.aborted) log.info({ opened: opened.rest.map(([name]) => name) }, 'stop signal while starting: closing what opened')
      for (const [name, close] of [...opened.first, ...opened.rest.reverse()]) {
        await steps.run(name, close).catch((closeErr: unknown) => log.warn({ err: closeErr, part: name }, 'closing after a failed or stopped start failed'))
      }
      throw err
    }
  }

  private static async open(config: AppConfig, say: (line: string) => void, deps: StartDeps, opened: Opened, stopSteps: StopSteps): Promise<ServiceApp> {
    // Between the parts that take long to open (each rebuilds its state from the log), a stop signal stops the start.
    const checkpoint = () => deps.signal?.throwIfAborted()
    const closes = (name: string, close: () => unknown) => {
      opened.rest.push([name, close])
      checkpoint()
    }
    const clock = deps.clock ?? systemClock
    let trainUntil = trainUntilOf(config)
    const dataDir = resolve(config.SVC_DATA_DIR)
    const names = topicNamesOf(config)
    const partitions = config.SVC_PARTITIONS
    if (config.SVC_VENUE === 'hyperliquid' && config.SVC_TAPE !== undefined) {
      throw new AppConfigError('SVC_TAPE replays a dated tape and SVC_VENUE=hyperliquid streams the live venue: set one of them')
    }
    if (config.SVC_CLUSTER === 'on') {
      if (config.SVC_LOG !== 'kafka' || config.KAFKA_INSTANCE_ID === undefined) {
        throw new AppConfigError('SVC_CLUSTER=on runs several instances on one Kafka cluster: set SVC_LOG=kafka, KAFKA_BROKERS and this instance\'s own KAFKA_INSTANCE_ID')
      }
      // The live venue's training cut is the first start's present on one instance; the instances of a cluster each fit
      // on the history the log holds and must cut it at one instant, or their releases and decisions would differ.
      if (config.SVC_VENUE === 'hyperliquid' && config.SVC_TRAIN_UNTIL === undefined) {
        throw new AppConfigError('SVC_CLUSTER=on with the live venue fits every instance on one training cut: set SVC_TRAIN_UNTIL, the same instant on each (e.g. the first start\'s date)')
      }
      if (config.SVC_SIGNING_SECRET === undefined || keyBytes(config.SVC_SIGNING_SECRET) === null) {
        throw new AppConfigError('SVC_CLUSTER=on forwards a payer\'s requests to the instance that owns the payer, signed with the secret every instance shares: set the same SVC_SIGNING_SECRET (32 bytes) on each')
      }
    }
    // Files 0600, folders 0700 (pipeline/log/dataModes.ts): our writers pass the modes; DuckDB's files follow the umask.
    restrictUmask()
    await openDataFolder(dataDir)
    let simulated = true
    let liveFile: LiveVenueFile | null = null
    let simulatedVenue: SimulatedVenue | null = null
    /** The simulated venue's first start in this folder: it is chosen once the event log is open. */
    let firstSimulatedStart = false
    let replay: { tape: string; firstTime: number } | null = null
    if (config.SVC_VENUE === 'hyperliquid') {
      liveFile = await liveVenueOf(dataDir, config, clock)
      trainUntil = Date.parse(liveFile.train_until)
      simulated = false
    } else if (config.SVC_TAPE === undefined) {
      simulatedVenue = await keptSimulatedVenueOf(dataDir, config)
      firstSimulatedStart = simulatedVenue === null
    } else {
      const tape = resolve(config.SVC_TAPE)
      const first = await firstEntryOf(tape)
      simulated = first.simulated
      replay = { tape, firstTime: first.time }
    }
    checkpoint()
    await Catalog.apply(dataDir)
    // Every checkpointed stream processor's snapshots (issue 31): a restart loads them and reads only the log's tail.
    const checkpoints: CheckpointSettings = { snapshots: await StateSnapshots.open(join(dataDir, 'state')), everyMs: config.SVC_STATE_SNAPSHOT_S * 1000 }
    const eventLog = await openEventLog(eventLogOf(config))
    closes('event log', () => eventLog.close())
    // A first start chooses its simulated venue here, where the event log can say which one a cluster already feeds.
    if (firstSimulatedStart) simulatedVenue = await firstSimulatedVenue(dataDir, config, clock, eventLog)
    // What runs once per cluster runs under a lease (issue 32; pipeline/log/Lease.ts): on one instance both are this
    // instance's; with SVC_CLUSTER=on the instances' Kafka groups say who holds each.
    const member: LeaseMember = { instance: config.KAFKA_INSTANCE_ID ?? 'this', url: config.PORT === 0 ? null : `http://${config.HOST}:${config.PORT}` }
    const feedLease = await openLease(eventLog, VENUE_FEED_LEASE, member, config.SVC_CLUSTER === 'on')
    closes('venue feed lease', () => feedLease.close())
    const deliveryLease = await openLease(eventLog, DELIVERY_LEASE, member, config.SVC_CLUSTER === 'on')
    closes('delivery lease', () => deliveryLease.close())
    // Short sink age so data lands in Parquet within seconds of being replayed. The sink starts once the service is
    // ready (run(): the market state and the engine hold the warm-up): no API read needs the newest ticks in Parquet,
    // and in this one process it would take a third of the warm-up's CPU; it then catches up on the history in the
    // background.
    const pipeline = await Pipeline.start({ dataDir, log: eventLog, names, partitions, sinkGroup: SINK_GROUP, ticksRetentionMs: tickRetentionMsOf(config), sink: { maxAgeMs: 5_000 }, startSink: false })
    closes('pipeline', () => pipeline.close())
    // One REST budget for every call this process makes to the venue (the venue meters per IP).
    const hlBudget = new RestWeightBudget(deps.restBudget)
    let feed: VenueFeed
    /** The newest venue event time the market state has read from the log (set once it is open). */
    let loggedEventTime: () => number | null = () => null
    if (liveFile) {
      const client = new HyperliquidInfoClient({ baseUrl: liveFile.base_url, timeoutMs: 10_000, budget: hlBudget, clock })
      const progress: { bar: Progress | null } = { bar: null }
      // Several instances: the holder of the venue-feed lease runs the connector; the others report the venue as the
      // log shows it (their market state's newest tick) and take the feed over from where the log ends.
      const connector = await LiveVenueFeed.open({
        sink: { log: eventLog, ticksTopic: names.ticks, source: HL_VENUE_SOURCE, partitions },
        connector: {
          ...(deps.venueTiming ?? {}),
          coins: liveFile.coins,
          barInterval: liveFile.bar_interval,
          historyMs: liveFile.history_days * DAY_MS,
          client,
          wsUrl: liveFile.ws_url,
          clock,
          onProgress: ({ done, total }) => {
            progress.bar ??= startProgress('svc: backfill', total, 'requests', progressOf(config))
            progress.bar.setTotal(total)
            progress.bar.update(done)
          },
        },
        feeds: () => feedLease.held,
        readEventTime: () => loggedEventTime(),
      })
      closes('venue sink', () => connector.close())
      feed = { mode: 'live', venue: liveFile, connector, progress }
    } else if (simulatedVenue) {
      // The generator's checkpoint beside the processors' snapshots: a restart generates only the gap (issue 31).
      const venue = simulatedVenue
      const reopen = () => SimulatedVenueResume.open({ venue, snapshots: checkpoints.snapshots, log: eventLog, topic: names.ticks, everyMs: checkpoints.everyMs })
      feed = { mode: 'present', venue, resume: await reopen(), reopen }
    } else feed = { mode: 'replay', ...replay! }
    const connector = feed.mode === 'live' ? feed.connector : null
    let timeline: DataTimeline | null = null
    const market = await openMarketServices({
      log: eventLog,
      ticksTopic: names.ticks,
      options: marketWiringOf(config),
      clock,
      wallFreshness: feed.mode !== 'replay',
      warmingUp: () => timeline!.warmingUp,
      liveVenue: connector,
      checkpoints,
      ...(liveFile ? { hlClient: new HyperliquidInfoClient({ baseUrl: liveFile.base_url, timeoutMs: 5_000, budget: hlBudget, clock }) } : {}),
    })
    closes('market', () => market.close())
    loggedEventTime = () => market.state.health().eventTime
    timeline = new DataTimeline({
      mode: feed.mode === 'replay' ? 'replay' : 'present',
      source: feed.mode === 'live' ? HL_VENUE_SOURCE : feed.mode === 'present' || simulated ? SIMULATED_SOURCE : basename(feed.tape),
      simulated,
      speed: feed.mode === 'replay' ? config.SVC_REPLAY_SPEED : 1,
      eventTime: () => market.state.health().eventTime,
      clock,
      ...(connector ? { venue: connector } : {}),
    })
    const wallet = openWalletWiring(walletWiringOf(config), { providers: market.providers, clock })
    // The measured record and the releases: batch tables over the sealed Parquet, one DuckDB for both.
    const recordDb = await RecordDb.open(dataDir)
    closes('record db', () => recordDb.close())
    const releases = await ReleaseStore.open(dataDir, recordDb)
    closes('release store', () => releases.close())
    // What the engine serves is the active release and nothing else: loaded before the first decision, then followed
    // (svc release activate / rollback in another process switch it within a second). Set below, once it exists.
    const served = await openReleaseWiring({ releases, eventLog, ticksTopic: names.ticks, config, say })
    opened.first.push(['release wiring (bootstrap release)', () => served.close()])
    const runner = await EngineRunner.start({
      log: eventLog, dataDir, names, partitions, trainDays: config.SVC_TRAIN_DAYS, trainUntil,
      walletProvider: wallet.provider, accountClock: wallet.accountClock,
      // The live venue: API decisions in the present, cadence decided live or by the clock (EngineRunner).
      ...(feed.mode === 'live' ? { live: { clock } } : {}),
      ...served.engineOptions(),
      // Snapshots of the tick-derived state and the ledger index: a restart reads only the log after them (issue 31).
      checkpoints,
      // Several instances: every engine derives the same decisions and outcomes; the venue feed's holder appends them.
      ...(config.SVC_CLUSTER === 'on' ? { appendsDerived: () => feedLease.held } : {}),
    })
    closes('engine runner (fits, decisions)', () => runner.close())
    await served.attach(runner)
    market.providers.computed('release', 'model', releaseHealth(() => served.follower.current))
    const engine = new EngineServices(runner)
    // The live streams follow the ledger's journals themselves, for the log positions their cursors are made of.
    const ledgerStreams = await LedgerStreams.open({ ledger: runner.ledger, clockOf: (d) => runner.reads.clockOf(d), window: { ms: config.SVC_HOT_WINDOW_DAYS * DAY_MS } })
    closes('ledger streams', () => ledgerStreams.close())
    market.attachDecisions(engine) // the paid funding surfaces record S06/S07 through the engine
    // Credits on the event log: balances rebuilt from billing.draws, unanswered debits reversed before serving.
    // Several instances: each payer partition's owner reverses its unanswered debits when it takes the partition.
    const clustered = config.SVC_CLUSTER === 'on'
    const billing = await BillingService.open({ log: eventLog, clock, opsToken: config.SVC_OPS_TOKEN ?? null, topic: names.draws, partitions, checkpoints, recover: !clustered })
    closes('billing', () => billing.close())
    // Several instances (issue 32): one owner per draws partition serializes its payers' holds and debits; the others
    // forward those requests to it. The lease is joined once this instance knows its URL (after the server starts).
    const ownership = clustered ? new PayerOwnership(billing.ledger, (await eventLog.endOffsets(names.draws)).length, childLogger('payer-ownership')) : null
    // A repeat (identical inputs answered at once through two instances, the ledger keeping the journal's first) is not
    // charged: its payer's owner reverses the later one's debit (product/billing/RepeatRefunds.ts).
    const repeatRefunds = new RepeatRefunds(billing.ledger, (payer) => ownership?.serves(payer) ?? true, childLogger('repeat-refunds'))
    const repeats = runner.ledger.bus.repeats.subscribe('billing.repeat-refunds', (d) => repeatRefunds.note(d))
    closes('repeat refunds', () => {
      repeats.unsubscribe()
      repeatRefunds.close()
    })
    const payerOwners = ownership ? new PayerOwners(ownership, new PeerForwarder(keyBytes(config.SVC_SIGNING_SECRET!)!), childLogger('payer-owners')) : null
    // The duel: calls and opt-ins on the event log, graded from the engine's outcome bus. Its clocks run in the engine's
    // event time (the time horizon_end is measured in), as the open-clocks read does.
    const questionCatalog = new QuestionCatalog()
    // Rows past the hot window leave memory while the Parquet sink is sealing, and while the duel and the Arena fold
    // their journals here: the sink starts at ready and seals from its committed offsets, so every row in the log now
    // reaches Parquet (a rebuild of a year that held every row until ready ran out of memory: README, issue 31). What
    // a rebuild drops before the sink has sealed it is read back cold once sealed, as after a restored snapshot.
    let folding = true
    const evictable = () => folding || pipeline.sealing
    const duel = await DuelService.open({
      log: eventLog,
      names,
      partitions,
      ledger: {
        decision: (id) => runner.ledger.index.decision(id),
        clockNow: (questionId) => questionCatalog.clockFor(questionId, runner.live),
        resolutions: runner.ledger.bus.resolutions,
      },
      now: () => runner.live.now() ?? clock.now(),
      wallNow: () => clock.now(),
      checkpoints,
      // Bounded memory (issue 31): graded calls past the window are read back from the sealed Parquet through the
      // record's DuckDB (the catalog's views), and leave memory only when `evictable`.
      hotWindowMs: config.SVC_HOT_WINDOW_DAYS * DAY_MS,
      cold: recordDb,
      evictable,
    })
    closes('duel', () => duel.close())
    // The Arena: its journals rebuilt before serving, then the duel's call events (replayed from the beginning).
    // Its notification feed keeps the same window: older rows are read back through the record's DuckDB (issue 31).
    // Several instances: a payer's awards are written by its owner alone, which takes them over with the partition.
    const arena = await Arena.open({
      log: eventLog, clock, partitions, events: duel.events, checkpoints, hotWindowMs: config.SVC_HOT_WINDOW_DAYS * DAY_MS, cold: recordDb, evictable,
      writesFor: ownership ? (payer) => ownership.serves(payer) : null,
    })
    closes('arena', () => arena.close())
    folding = false
    const arenaTakeovers = ownership?.onServing((partition, signal) => {
      arena.takeOver((payer) => ownership.partitionOf(payer) === partition, signal).catch((err: unknown) => {
        if (!signal.aborted) log.warn({ err, partition }, "taking over a payer partition's Arena awards failed: its deferred calls wait for the next owner")
      })
    })
    closes('arena takeovers', () => arenaTakeovers?.())
    // Delivery: its journals rebuilt, then the outcome bus (replayed from the beginning, so a resolution written while
    // the service was down is delivered now) and the decisions channel (alert watches), in the engine's event time.
    let delivery: DeliveryService | null = null
    try {
      delivery = await openDelivery({
        config, dataDir, log: eventLog, clock, partitions, checkpoints, dispatchLease: deliveryLease,
        ledger: {
          decision: (id) => runner.ledger.index.decision(id),
          clockNow: () => runner.live.now() ?? clock.now(),
          resolutions: runner.ledger.bus.resolutions,
          decisions: runner.ledger.bus.decisions,
        },
      })
    } catch (err) {
      if (!(err instanceof DeliveryKeyMissing)) throw err
      // Loud, not fatal (docs/decisions.md): the rest of the service serves; delivery refuses (503 SERVICE_UNWIRED on
      // its routes) and /readyz shows the delivery stage down until the service starts with the key.
      log.error({ err: err.message, code: err.code, unreadable: err.unreadable }, 'delivery refused to start: its records are sealed under a key this start lacks')
      market.providers.computed('delivery', 'delivery', () => ({ status: 'down', last_success_at: null, latency_ms: null, error_class: err.code }))
    }
    closes('delivery', () => delivery?.close())
    // The operator funnel exists only with an admin key (spec: otherwise its route does not exist): snapshots of the
    // ledger bus, the credit rows, the duel's call events and the Arena's award counts, on their own journal.
    const funnel = config.SVC_ADMIN_KEY
      ? await FunnelService.open({
          log: eventLog, clock, adminKey: config.SVC_ADMIN_KEY, intervalMs: config.SVC_FUNNEL_INTERVAL_S * 1000,
          topic: names.funnel, partitions, sources: { ledger: runner.ledger.bus, draws: billing.ledger, calls: duel.events, arena }, checkpoints,
        })
      : null
    closes('funnel', () => funnel?.close())
    const payTo = config.SVC_PAY_TO ?? null
    // x402 per call when a recipient is configured: nonces in <data>/x402, settlement through SVC_FACILITATOR_URL (or the default).
    const facilitator = payTo ? new FacilitatorClient(config.SVC_FACILITATOR_URL ? { url: config.SVC_FACILITATOR_URL } : {}) : null
    const x402 = payTo && facilitator ? await X402PaymentGate.open({ payTo, dataDir: join(dataDir, 'x402'), facilitator }) : null
    // Proof of payer control: used nonces and sessions on their journal (restored here), the nonce key in the data folder.
    closes('x402 nonces', () => x402?.close())
    const proofJournal = await Journal.open({ log: eventLog, def: PAYER_PROOFS, partitions })
    closes('payer proofs', () => proofJournal.close())
    const payerSessions = await PayerSessions.restore(proofJournal, clock.now(), { checkpoints })
    closes('payer sessions (final snapshot)', () => payerSessions.close())
    // Several instances: a session opened on one proves its payer on all (within the follower's fetch wait), and a
    // challenge one issued verifies on another (the nonce key derived from the secret they share, not per data folder).
    if (clustered) await payerSessions.followCluster('svc.payer-sessions', () => clock.now())
    const nonceKey = clustered
      ? createHmac('sha256', keyBytes(config.SVC_SIGNING_SECRET!)!).update('svc.siwx-nonce.v1').digest()
      : await secretKeyFile(join(dataDir, 'auth', 'siwx-nonce.key'))
    const paymentGate = new RailRouter({ payTo, credits: new CreditsPaymentGate(billing.ledger, payTo, arena), ...(x402 ? { x402 } : {}) })
    // The crowd benchmark (benchmarks.crowd) comes from the duel's graded calls through this one narrow port.
    const recordJob = await RecordJob.open(recordDb, { releases, crowd: () => duel.crowdBenchmark() })
    closes('record job', () => recordJob.close())
    const record = new MeasuredRecord(recordDb, { releases })
    served.onSwitch(() => record.invalidate())
    // The record build and compaction never run at once: a compaction deleting files a record run is reading would
    // fail that run (it would retry at the next tick, but for nothing).
    let batchChain: Promise<unknown> = Promise.resolve()
    const oneAtATime = (job: () => Promise<unknown>): Promise<unknown> => {
      const next = batchChain.then(job, job)
      batchChain = next.catch(() => undefined)
      return next
    }
    const recordSchedule = new PeriodicTask({
      name: 'record-schedule',
      intervalMs: config.SVC_RECORD_INTERVAL_S * 1000,
      immediately: true,
      run: () => oneAtATime(async () => {
        const summary = await recordJob.run()
        if (!summary.idle) record.invalidate()
      }),
    })
    // The one metrics registry (GET /metrics): the event log's consumer lag and the ledger's bus, read where they live.
    const metrics = new ServiceMetrics(new Registry())
    metrics.watchLag(eventLog)
    metrics.watchLedger(runner.ledger.bus)
    // Closed days' small sink files merged on a schedule; the ledger's only once the record job has counted them.
    const compactor = config.SVC_COMPACT_INTERVAL_S > 0
      ? await ParquetCompactor.open({ dataDir, dirs: sinkTables(names).map((t) => t.dir), consumed: () => RecordJob.consumedFiles(recordDb) })
      : null
    closes('compactor', () => compactor?.close())
    const compaction = compactor
      ? new PeriodicTask({ name: 'compaction-schedule', intervalMs: config.SVC_COMPACT_INTERVAL_S * 1000, run: () => oneAtATime(() => compactor.compact()) })
      : null
    // Ticks leave the embedded log once sealed, out of every feature window and behind every committed position
    // (pipeline/TickRetention.ts); on Kafka the ticks topic's retention.ms does it.
    const tickRetention = eventLog instanceof EmbeddedLog && config.SVC_RETENTION_INTERVAL_S > 0
      ? new TickRetention({ log: eventLog, ticksTopic: names.ticks, sinkGroup: SINK_GROUP, keepMs: tickRetentionMsOf(config) })
      : null
    const retention = tickRetention
      ? new PeriodicTask({ name: 'tick-retention', intervalMs: config.SVC_RETENTION_INTERVAL_S * 1000, run: () => tickRetention.run() })
      : null
    // Wall time, not the data clock: key windows are when the operator rotated, and a replay's virtual time restarts.
    const answerKeys = await openAnswerKeyring({ dataDir, configuredKey: config.SVC_ANSWER_KEY ?? null, now: Date.now, worker: true })
    closes('answer keys', () => answerKeys.close())
    // Several instances (issue 32): each publishes its keys on the log and every instance publishes them all.
    if (clustered) {
      const clusterKeys = await ClusterAnswerKeys.open({ log: eventLog, instance: member.instance, own: answerKeys.ownKeys, now: Date.now, partitions, logger: childLogger('answer-keys') })
      closes('cluster answer keys', () => clusterKeys.close())
      answerKeys.useCluster(clusterKeys)
    }
    const server = await Server.start({
      port: config.PORT,
      host: config.HOST,
      config: {
        payTo,
        baseUrl: config.SVC_BASE_URL ?? null, // the schema admits no path, so no trailing slash
        docsUrl: config.SVC_DOCS_URL ?? null,
        maxBodyBytes: config.SVC_MAX_BODY_BYTES,
        trustProxy: config.SVC_TRUST_PROXY,
        streamMaxBufferedBytes: config.SVC_STREAM_MAX_BUFFERED_BYTES,
        streamMaxPerIp: config.SVC_STREAM_MAX_PER_IP,
        accessLog: accessLogShareOf(config),
        mcpOrigins: config.SVC_MCP_ORIGINS?.split(',') ?? [],
        corsOrigins: config.SVC_CORS_ORIGINS?.split(',') ?? [],
        sessionTtlS: config.SVC_SESSION_TTL_S,
        rateLimits: {
          ip: { burst: config.SVC_RATE_IP_BURST, refillPerSec: config.SVC_RATE_IP_PER_S },
          payer: { burst: config.SVC_RATE_PAYER_BURST, refillPerSec: config.SVC_RATE_PAYER_PER_S },
        },
      },
      services: {
        clock, dataTime: timeline,
        billing, duel, paymentGate, market: market.market, providers: market.providers, ledger: engine, streams: ledgerStreams, engine,
        record, ladder: record, releases, ...wallet.services, metrics, arena, ...(delivery ? { delivery } : {}), answerKeys, ...(funnel ? { funnel } : {}),
        payerProof: (origin) => PayerProof.create({ origin, sessions: payerSessions, nonceKey, sessionTtlS: config.SVC_SESSION_TTL_S }),
        ...(payerOwners ? { payerOwners } : {}),
        ...(ownership ? { cluster: { status: () => ({ instance: member.instance, venue_feed_here: feedLease.held, payer_partitions: ownership.owners() }) } } : {}),
      },
    })
    closes('server', () => server.close())
    // The leases' members name the URL this instance answers on once it listens (PORT=0 picks one); the group
    // metadata carries it from the next rebalance on.
    member.url = server.url
    if (ownership) {
      ownership.attach(await openPartitionLease(eventLog, PAYERS_LEASE, member, { topic: PAYERS_LEASE_TOPIC, partitions: ownership.partitions, clustered }))
      closes('payers lease', () => ownership.close())
    }
    const logKind = config.SVC_LOG
    for (const line of [
      `svc: listening on ${server.url}  (try ${server.url}/healthz, ${server.url}/v1/pricing, ${server.url}/openapi.json)`,
      `svc: event log   ${logKind === 'kafka' ? `kafka ${config.KAFKA_BROKERS}` : join(dataDir, 'log')}`,
      `svc: parquet     ${join(dataDir, 'parquet')}`,
      `svc: duckdb      ${Catalog.path(dataDir)}  (duckdb -readonly ${Catalog.path(dataDir)} "select kind, count(*) from ticks group by 1")`,
      feed.mode === 'present'
        ? `svc: venue     simulated (seed ${feed.venue.seed}, history from ${new Date(feed.venue.originMs).toISOString()}), live in the present at 1x`
        : feed.mode === 'live'
          ? `svc: venue     hyperliquid ${feed.venue.base_url} + ${feed.venue.ws_url} (${feed.venue.coins.join(', ')}, ${feed.venue.bar_interval} bars; fitted up to ${feed.venue.train_until}; /readyz data.venue shows the connector)`
          : `svc: replaying   ${feed.tape} at speed ${config.SVC_REPLAY_SPEED} (answers live in the tape's virtual time)`,
      payTo
        ? `svc: payments to ${payTo} (x402 on eip155:8453 via ${facilitator?.url})`
        : 'svc: SVC_PAY_TO unset: no x402 recipient; paid routes take credits (x-svc-payer, proven by a sign-in-with-x session) and their 402 challenge offers no address',
    ]) say(line)
    recordSchedule.start()
    compaction?.start()
    retention?.start()
    funnel?.start()
    return new ServiceApp(config, dataDir, feed, feedLease, deliveryLease, clock, timeline, server, eventLog, pipeline, runner, market, billing, duel, arena, delivery, funnel, x402, { sessions: payerSessions, journal: proofJournal }, { db: recordDb, job: recordJob, schedule: recordSchedule, releases, served, compaction, compactor, retention }, say, stopSteps)
  }

  /**
   * Feeds the venue until `signal` aborts. Warm-up at full speed, then live:
   * - present (default): the simulated venue's history up to now (after a restart, only the gap since the stop), then
   *   each minute's ticks as the clock reaches them, so every instant served is the present.
   * - live (SVC_VENUE=hyperliquid): the connector's backfill over REST (a restart: the repair since the newest tick in
   *   the log), then the venue's stream, until the signal.
   * - replay (SVC_TAPE): the tape up to the training cut and on until every sold question has resolved a clock (after
   *   a restart, up to the next cadence instant after what the log holds), then paced at SVC_REPLAY_SPEED; when the
   *   tape ends the service keeps serving.
   * The market routes answer once the market state and the engine have caught up with the warm-up; the sink starts
   * then, and `hooks.onReady` runs just before (svc start sets its serving V8 flags there and collects once).
   */
  async run(signal: AbortSignal, hooks: { onReady?: () => void } = {}): Promise<void> {
    const { pipeline, runner, server, say, feedLease } = this
    // Once per run, whoever calls first: a replica warms as soon as it reads the log, a feeder when its warm-up paces.
    let warmed = false
    let readySaid = false
    const warm = () => {
      // Old prices are never served: the market routes (and /readyz) answer 503 WARMING_UP until the market state and
      // the engine hold all the warm-up produced, so open clocks and prices are of the present when it says ready.
      // Waited for without a give-up: a bounded wait that timed out left the service warming up for good (issue 31, a
      // year of history); a slow catch-up is logged instead. The Parquet sink starts only then: its backlog (a year
      // of unsealed ticks after a first start) is sealed in the background and never gates readiness; its lag is
      // svc_consumer_lag{group="svc.parquet-sink"} on /metrics.
      if (warmed) return
      warmed = true
      const caughtUp = async (what: string, wait: (timeoutMs: number) => Promise<void>) => {
        const started = Date.now()
        const slow = setInterval(() => log.warn({ waitedMs: Date.now() - started }, `${what} is still catching up with the warm-up; not ready yet`), CATCH_UP_LOG_EVERY_MS)
        try {
          await wait(Infinity)
        } finally {
          clearInterval(slow)
        }
      }
      Promise.all([
        caughtUp('the market state', (ms) => this.market.state.caughtUp(ms, signal)),
        caughtUp('the engine', (ms) => runner.waitForTicks(ms, signal)),
      ]).then(
        () => {
          // Before the routes answer: what svc start does at ready (its V8 settings, one full collection) pauses no request.
          hooks.onReady?.()
          this.timeline.markWarm()
          pipeline.startSink()
        },
        (err: unknown) => {
          if (!signal.aborted) log.warn({ err }, 'the market state or the engine stopped before catching up with the warm-up; not ready')
        },
      )
    }
    const sayReady = () => {
      if (readySaid) return
      readySaid = true
      // Tell the newcomer when the engine has caught up with the warm-up and the API shows it.
      void runner.waitForTicks(3_600_000, signal).then(
        () => {
          const stats = runner.stats()
          say(`svc: ready: ${stats.openClocks} open clocks, ${stats.ledger.outcomes} resolved decisions (curl ${server.url}/v1/clocks/open, ${server.url}/v1/feed?limit=5)`)
        },
        (err: unknown) => {
          if (!signal.aborted) log.warn({ err }, 'the engine did not catch up with the warm-up')
        },
      )
    }
    // Several instances (SVC_CLUSTER=on): only the holder of the venue-feed lease feeds the venue; the others read
    // the ticks it appends from the log (their processors are replicas) and the first to get the lease when it leaves
    // or dies feeds on from where the log ends. On one instance the lease is always held and this loop runs once.
    for (;;) {
      if (!feedLease.held) {
        const holder = await feedLease.holder().catch(() => null)
        say(`svc: replica: ${holder ? `instance ${holder.instance} (${holder.url ?? 'no url'})` : 'another instance'} feeds the venue; this one reads it from the log and takes the feed over if that instance stops`)
        warm()
        sayReady()
        try {
          await feedLease.acquired(signal)
        } catch {
          return
        }
        say('svc: this instance now holds the venue feed lease: it feeds the venue on from where the log ends')
        if (this.feed.mode === 'present') this.feed.resume = await this.feed.reopen()
        if (this.feed.mode === 'live') await this.feed.connector.reopen()
      }
      const moved = new AbortController()
      const off = feedLease.onChange((held) => {
        if (!held) moved.abort(new Error('the venue feed lease moved to another instance'))
      })
      try {
        await this.feedVenue(AbortSignal.any([signal, moved.signal]), warm, sayReady)
      } finally {
        off()
      }
      if (signal.aborted || !moved.signal.aborted) return
      say('svc: the venue feed lease moved to another instance: this one stops feeding and reads the venue from the log')
    }
  }

  /** The venue feed of the lease's holder (run()), until `signal` aborts; `warm` and `sayReady` once it has paced. */
  private async feedVenue(signal: AbortSignal, warm: () => void, sayReady: () => void): Promise<void> {
    const { config, pipeline, say, feed } = this
    if (feed.mode === 'live') {
      const { connector, venue } = feed
      const resumed = connector.written
      say(
        Number.isFinite(resumed)
          ? `svc: warming up: repairing bars and funding since ${new Date(resumed).toISOString()} over REST (${venue.base_url})`
          : `svc: warming up: backfilling ${venue.history_days} days of ${venue.bar_interval} bars and hourly funding of ${venue.coins.join(', ')} over REST (${venue.base_url}); the models fit on it`,
      )
      await connector.run(signal, () => {
        feed.progress.bar?.stop()
        const s = connector.status()
        say(`svc: warm-up done (${s.backfill.ticks} ticks fetched); now streaming ${venue.ws_url}`)
        warm()
        sayReady()
      })
      return
    }
    const live = feed.mode === 'present'
    const tapeId = live ? feed.venue.tapeId : await tapeIdOf(feed.tape)
    const resumedAt = await newestReplayedTime(this.eventLog, pipeline.names.ticks, tapeId)
    const resuming = resumedAt === null ? '' : ` (resuming after ${new Date(resumedAt).toISOString()})`
    let paceFrom: number
    if (live) {
      // Everything up to this instant is history; the first record after it waits for the clock.
      paceFrom = this.clock.now() + 1
      const from = feed.resume.from
      const fromCheckpoint = from ? ` from the generator's checkpoint at ${new Date(feed.venue.checkpointTime(from)).toISOString()} (line ${from.market.ticks})` : ''
      say(`svc: warming up: simulating the venue at full speed up to now, ${new Date(paceFrom - 1).toISOString()}${resuming}${fromCheckpoint}`)
    } else {
      const cut = trainUntilOf(config) ?? feed.firstTime + config.SVC_TRAIN_DAYS * DAY_MS
      paceFrom = EngineRunner.primedAt(cut, resumedAt)
      say(`svc: warming up: replaying at full speed past the training cut ${new Date(cut).toISOString()} up to ${new Date(paceFrom).toISOString()}${resuming}`)
    }
    // The warm-up is the longest silent stretch of a first start (issue 33 item 7): a bar on a terminal, progress lines
    // off one, in minutes of venue history from where this run starts up to where pacing begins.
    const warmFrom = resumedAt ?? (live ? feed.venue.originMs : feed.firstTime)
    const warmMinutes = Math.max(0, Math.ceil((paceFrom - warmFrom) / MINUTE_MS))
    let warmBar: Progress | null = warmMinutes > 0 ? startProgress('svc: warm-up', warmMinutes, 'minutes of history', progressOf(config)) : null
    const warmDone = () => {
      warmBar?.update(warmMinutes)
      warmBar?.stop()
      warmBar = null
    }
    const result = await pipeline.replay({
      ...(live ? { source: feed.resume.source(), liveClock: this.clock, onDurable: (line: number) => feed.resume.onDurable(line) } : { tape: feed.tape, speed: config.SVC_REPLAY_SPEED }),
      tapeId,
      paceFrom,
      signal,
      onProgress: ({ eventTime }) => {
        if (warmBar && eventTime !== null) warmBar.update(Math.min(warmMinutes, Math.max(0, Math.floor((eventTime - warmFrom) / MINUTE_MS))))
      },
      onPaceStart: ({ produced }) => {
        warmDone()
        say(live ? `svc: warm-up done (${produced} records); now live in the present at 1x` : `svc: warm-up done (${produced} records); now replaying at speed ${config.SVC_REPLAY_SPEED}`)
        warm()
        sayReady()
      },
    })
    warmBar?.stop() // aborted, or a tape that ended before paceFrom
    warmBar = null
    // At a stop, the checkpoint of the newest minute appended: the next start generates only what comes after it.
    if (live) await feed.resume.save().catch((err: unknown) => log.warn({ err }, 'the simulated venue checkpoint was not written; the next start regenerates from the last one'))
    if (!result.aborted) {
      await pipeline.drain() // starts the sink if the replay never paced (speed 0, or a tape ending before paceFrom)
      warm()
      say(`svc: replay finished (${result.produced} records produced, ${result.skipped} already in the log); still serving`)
      await new Promise<void>((resolveStop) => signal.addEventListener('abort', () => resolveStop(), { once: true }))
    }
  }

  /** Closes in the reverse order of opening: nothing is written after the part that would store it has closed. */
  close(): Promise<void> {
    const step = <T>(name: string, fn: () => T | Promise<T>) => this.stopSteps.run(name, fn)
    this.closing ??= (async () => {
      await step('server (drain)', () => this.server.close())
      await step('ledger streams', () => (this.server.services.streams as LedgerStreams | undefined)?.close())
      // First: a bootstrap release in progress stops at its next step (its store closes below).
      await step('release wiring (bootstrap release)', () => this.record.served.close())
      this.server.services.metrics?.close()
      await step('answer keys', () => this.server.services.answerKeys?.close())
      await step('funnel', () => this.funnel?.close())
      await step('tick retention', () => this.record.retention?.stop())
      await step('compaction schedule', () => this.record.compaction?.stop())
      await step('compactor', () => this.record.compactor?.close())
      await step('record schedule (a record run)', () => this.record.schedule.stop())
      await step('record job', () => this.record.job.close())
      this.record.releases.close()
      this.record.db.close()
      await step('x402 nonces', () => this.x402?.close())
      await step('payer sessions (final snapshot)', () => this.proofs.sessions.close())
      await step('payer proofs', () => this.proofs.journal.close())
      await step('delivery', () => this.delivery?.close())
      // Leaving the group hands delivery to another instance at once (its book reads what this one recorded first).
      await step('delivery lease', () => this.deliveryLease.close())
      await step('arena', () => this.arena.close())
      await step('duel', () => this.duel.close())
      await step('billing', () => this.billing.close())
      await step('market', () => this.market.close())
      await step('engine runner (fits, decisions)', () => this.runner.close())
      if (this.feed.mode === 'live') await step('venue sink', () => (this.feed as { connector: LiveVenueFeed }).connector.close())
      // The feed has stopped (run()'s signal): leaving the lease's group hands the feed to another instance at once.
      await step('venue feed lease', () => this.feedLease.close())
      await step('pipeline (sink seal, commit)', () => this.pipeline.close())
      await step('event log', () => this.eventLog.close())
    })()
    return this.closing
  }
}
