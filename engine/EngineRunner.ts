/**
 * The engine as one running stream processor: it consumes `venue.ticks`, feeds the live features (DecisionEngine) and
 * the resolution history (ResolutionEngine), makes decisions at a fixed cadence with the parameters of the release it
 * is given, resolves clocks as event time passes them, and appends both to the ledger.
 *
 * - Parameters: the engine never fits. What it serves comes from one sealed release (ServedRelease.ts), given at start
 *   (`release`) and switched by useRelease() when an operator activates another or rolls back; with none, every sold
 *   market question refuses insufficient_confidence with reason no_active_release.
 * - Training window (docs/decisions.md): per asset, ticks with event time ≤ the cut, where the cut is `trainUntil`
 *   if given, else the asset's first tick + `trainDays` (default 30). Cadence decisions start at the cut. Before the
 *   first tick past the cut is folded in, `atCut` is awaited once: the service builds, evaluates and activates its
 *   bootstrap release from that window there (record/releases/bootstrap.ts), so no decision is made before it has a
 *   release to make it with.
 * - Decision cadence: from the cut on, each sold market question is decided for each asset at every multiple of its
 *   horizon (UTC epoch grid, the dataset's cadence), i.e. at each clock's close, so there is always one open clock per
 *   question and asset while data flows. A question the market lacks an input for (funding on a bar-only tape) gets
 *   no cadence decision (unavailable, as in the dataset).
 * - Order per tick of asset A at time t: decisions at grid instants < t (every tick ≤ the instant is in), then clocks
 *   of A due at t are resolved, then the tick is folded in. Ticks of one asset share a partition, so the result is a
 *   function of the log's per-asset order only: both logs give the same rows.
 * - Account-scoped questions (S09..S11) are not on the cadence (they need a subject); API asks read the wired wallet
 *   provider (`walletProvider`, at `accountClock`), and their clocks are resolved by the AccountResolver's passes
 *   (every `accountResolveIntervalMs` of wall time, in the account clock's time; AccountResolver.ts).
 * - Restart (issue 31): with `checkpoints`, the engine is a checkpointed processor. Its tick-derived state (live
 *   features, the resolution history, per-asset cadence state, the ticks count: EngineTickState.ts) is snapshotted
 *   every `everyMs` and at a clean stop, tied to the ticks positions it reflects, and those positions are then
 *   committed for the group; a start loads the snapshot (restoreState) and the consumer reads only the tail after it.
 *   A snapshot is captured only at a batch boundary after the ledger flush (and not while the clock is deciding; a
 *   timer that finds a batch in progress has it taken when that batch ends, so a busy consumer still checkpoints), so
 *   every decision and outcome the state has passed is durable in the ledger: a crash after a snapshot re-reads a tail
 *   whose cadence decisions re-derive the same ids (deduped, no new rows) and whose resolved clocks are skipped
 *   (deduped on decision_id). A missing, corrupt, old-schema or ahead-of-log snapshot falls back to the full rebuild
 *   from offset 0, which gives the same state. Past the cut in a restored state the `atCut` hook does not run again;
 *   a hook aborted by a stop leaves the tick past the cut unread, so the next start runs it. Without `checkpoints`
 *   (memory only) every start rebuilds from the beginning and nothing is committed.
 * - Live venue (`live`): API decisions are made at the clock's present, so an input the venue stopped sending shows
 *   its true age (stale_input past its budget). Cadence decisions are made live or not at all: a grid instant is
 *   decided by the first tick past it only when that tick was received within `toleranceMs` of the instant (ticks a
 *   backfill or gap repair fetched hours later never make a backdated decision); an instant no tick passed within
 *   `fallbackDelayMs` (the venue is down or silent) is decided by the clock from what the engine holds, which refuses
 *   stale_input once an input is past its budget; and one grid instant gets one cadence decision per question and
 *   asset, whichever of the two came first. Every rule reads only the log (received_at) and the ledger, so a restart
 *   re-derives the same rows. Tapes and the simulated venue (received_at = event time) are unaffected.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { join } from 'node:path'
import { childLogger } from '../common/logger.ts'
import { validateOptions } from '../common/validation.ts'
import { tickTime, type Tick } from '../ingest/Tick.ts'
import type { Clock } from '../common/Clock.ts'
import type { ConsumedBatch, EventLog, LogConsumer } from '../pipeline/log/EventLog.ts'
import { decodeTickRecord } from '../pipeline/TickEnvelope.ts'
import { topicNames, type TopicNames } from '../pipeline/topics.ts'
import type { QuestionModel } from '../models/QuestionModel.ts'
import { RESOLUTION_GRACE_MS } from '../models/Dataset.ts'
import { soldMarketQuestions } from '../models/questions/index.ts'
import { DecisionEngine } from './DecisionEngine.ts'
import { LedgerView } from './LedgerView.ts'
import { LiveFeatures } from './LiveFeatures.ts'
import { Replayer } from './Replayer.ts'
import { DecisionLedger } from './DecisionLedger.ts'
import { EngineError } from './EngineError.ts'
import { FitStore } from './FitStore.ts'
import { ResolutionEngine } from './ResolutionEngine.ts'
import { AccountResolver } from './AccountResolver.ts'
import type { Subscription } from './LedgerBus.ts'
import type { WalletProvider } from '../ingest/wallet/WalletProvider.ts'
import { QuestionCatalog } from './QuestionCatalog.ts'
import { DAY_MS } from '../common/time.ts'
import { ServedRelease } from './ServedRelease.ts'
import { EngineTickState, type CadenceState } from './EngineTickState.ts'
import { Checkpointer } from '../pipeline/state/Checkpointer.ts'
import { restoreState } from '../pipeline/state/restoreState.ts'
import type { CheckpointSettings } from '../pipeline/state/StateStore.ts'
import type { ConsumerPosition } from '../pipeline/log/EventLog.ts'
import type { RestoredState } from '../pipeline/state/restoreState.ts'
import type { Logger } from 'pino'
import { topicSpecs } from '../pipeline/topics.ts'

const log = childLogger('engine-runner')

export interface EngineRunnerOptions {
  log: EventLog
  /** $DATA: the parameters of every release served go to <dataDir>/fits (replay reads them). Null: memory only. */
  dataDir: string | null
  names?: TopicNames
  partitions?: number
  /** Make cadence decisions (default true). */
  cadence?: boolean
  /** Days of each asset's first ticks before the cadence starts: the bootstrap release's window (default 30). */
  trainDays?: number
  /** Absolute training cut (epoch ms), overriding trainDays. */
  trainUntil?: number | null
  /** The release served from the start (default none: market questions refuse no_active_release until useRelease). */
  release?: ServedRelease | null
  /**
   * Awaited once, before the first tick past the training cut is folded in (and so before any cadence decision):
   * the service's bootstrap release runs here. A rejection is logged; the engine goes on with whatever it serves.
   */
  atCut?: ((cut: number, signal: AbortSignal) => Promise<void>) | null
  /** Consumer group of the ticks consumer (default 'svc.engine'); the ledger follower uses `${groupId}.ledger`. */
  groupId?: string
  /** Event time of API decisions (default: the newest tick the engine has seen). */
  clock?: Clock | null
  /** The wallet provider account-scoped questions read (default none: they answer PROVIDER_DOWN). */
  walletProvider?: WalletProvider | null
  /** Time of account decisions and account clock resolution (default: the engine clock; svc start: wall time). */
  accountClock?: Clock | null
  /** Wall-time period of the account resolution passes (default 60 000; 0: no timer, the caller runs passes). */
  accountResolveIntervalMs?: number
  /** The live venue: decisions in the clock's present, cadence decided live or by the clock (see the file comment). */
  live?: LiveCadenceOptions | null
  /**
   * State snapshots (issue 31): the tick-derived state and the ledger index each restore from their snapshot and read
   * only the tail (see the file comment). Absent: rebuild at every start.
   */
  checkpoints?: CheckpointSettings | null
  /** Where the restore and checkpoint lines go (default the engine-runner logger; a test captures them). */
  stateLogger?: Logger | null
  /** Whether this instance appends the decisions and outcomes it derives (DecisionLedgerOptions.appendsDerived). */
  appendsDerived?: (() => boolean) | null
}

export interface LiveCadenceOptions {
  /** The present (the service's clock). */
  clock: Clock
  /** A tick received more than this after a grid instant does not decide it. Default RESOLUTION_GRACE_MS (5 min). */
  toleranceMs?: number
  /** A grid instant no tick passed within this is decided by the clock. Default RESOLUTION_GRACE_MS. */
  fallbackDelayMs?: number
  /** Wall ms between the clock's checks. Default 1000. */
  checkEveryMs?: number
}

const OPTIONS_SCHEMA = {
  type: 'object',
  required: ['dataDir'],
  properties: {
    dataDir: { type: ['string', 'null'] },
    partitions: { type: 'integer', minimum: 1 },
    cadence: { type: 'boolean' },
    trainDays: { type: 'number', exclusiveMinimum: 0 },
    trainUntil: { type: ['number', 'null'] },
    groupId: { type: 'string', minLength: 1 },
    accountResolveIntervalMs: { type: 'integer', minimum: 0 },
    live: {},
    release: {},
    atCut: {},
    checkpoints: {},
    stateLogger: {},
  },
} as const

type AssetState = CadenceState

export interface EngineRunnerStats {
  ticks: number
  decisionsStaged: number
  outcomesStaged: number
  openClocks: number
  ledger: { decisions: number; outcomes: number }
  /** The release served (null: none active). */
  release: string | null
  /** Live venue: grid instants not decided live (their first tick came too late: a backfill, a repaired gap; or the clock
   * found them further back than the delay plus the tolerance): skipped, never decided late. */
  cadenceSkippedNotLive: number
  /** Live venue: grid instants decided by the clock because no tick passed them in time. */
  cadenceByClock: number
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b)
}

export class EngineRunner {
  /** The live features and the engine's event time. */
  readonly live: LiveFeatures
  /** The write path: decisions composed from the live features and appended to the ledger. */
  readonly engine: DecisionEngine
  /** Replay and state verification. */
  readonly replayer: Replayer
  /** The free reads of the ledger. */
  readonly reads: LedgerView
  readonly resolver: ResolutionEngine
  readonly accountResolver: AccountResolver
  readonly ledger: DecisionLedger
  private readonly questions: readonly QuestionModel[]
  private readonly step: number
  private readonly assets = new Map<string, AssetState>()
  private readonly processed = new Map<number, number>()
  /** The tick-derived state as a checkpointed store (EngineTickState.ts). */
  readonly tickState: EngineTickState
  private checkpointer: Checkpointer | null = null
  /** The ticks topic's partitions the consumer was started on (what a checkpoint's positions cover). */
  private tickPartitions = 0
  /** A batch is being folded in, or its ledger writes are not durable yet: no checkpoint now. */
  private inBatch = false
  /** A periodic checkpoint found the state between positions: it is taken when the batch in progress ends. */
  private checkpointDue = false
  /** How this start got its tick-derived state (null without `checkpoints`). */
  restored: RestoredState | null = null
  /** The `atCut` hook: pending until the first tick past a cut, then its promise (awaited once). */
  private cutHook: Promise<void> | null = null
  /** Aborted when the runner closes: a cut hook in progress (the bootstrap release) stops, and no tick waits on it. */
  private readonly stopping = new AbortController()
  private clocks: Subscription | null = null
  private consumer: LogConsumer | undefined
  private running: Promise<void> | undefined
  private failure: Error | undefined
  private readonly counters = { ticks: 0, decisionsStaged: 0, outcomesStaged: 0, cadenceSkippedNotLive: 0, cadenceByClock: 0 }
  /** Live venue: the newest cadence instant decided per question and asset (from the ledger, so a restart knows it). */
  private readonly cadenceHigh = new Map<string, number>()
  private liveTimer: NodeJS.Timeout | null = null
  private liveRound: Promise<void> | null = null

  private constructor(
    private readonly options: Required<Pick<EngineRunnerOptions, 'cadence' | 'trainDays'>> & EngineRunnerOptions,
    private readonly names: TopicNames,
    ledger: DecisionLedger,
    fits: FitStore,
  ) {
    this.ledger = ledger
    this.questions = soldMarketQuestions()
    this.step = this.questions.map((q) => q.horizonMs).reduce(gcd)
    this.resolver = new ResolutionEngine({ ledger })
    this.live = new LiveFeatures(options.clock ?? options.live?.clock ?? null, options.accountClock ?? null)
    const catalog = new QuestionCatalog()
    this.engine = new DecisionEngine({ ledger, fits, live: this.live, catalog, walletProvider: options.walletProvider ?? null })
    this.replayer = new Replayer(ledger.index, fits)
    this.reads = new LedgerView(ledger.index, this.live, this.replayer, catalog)
    this.accountResolver = new AccountResolver({ ledger, provider: options.walletProvider ?? null, clock: { now: () => this.live.accountNow() ?? -Infinity } })
    const counters = this.counters
    this.tickState = new EngineTickState(`${options.groupId ?? 'svc.engine'}.ticks`, {
      live: this.live,
      features: this.live.state,
      resolver: this.resolver,
      cadence: this.assets,
      ticks: {
        get value() {
          return counters.ticks
        },
        set value(n: number) {
          counters.ticks = n
        },
      },
    })
  }

  /** A decision's clock goes to the resolver that can read its outcome: ticks for markets, the provider for wallets. */
  private register(d: Parameters<ResolutionEngine['register']>[0]): void {
    if (this.accountResolver.owns(d)) this.accountResolver.register(d)
    else this.resolver.register(d)
    if (d.payment_rail === 'none' && d.subject === null) {
      const key = `${d.question_id}|${d.asset}`
      const at = Date.parse(d.created_at)
      if (at > (this.cadenceHigh.get(key) ?? -Infinity)) this.cadenceHigh.set(key, at)
    }
  }

  /**
   * The first cadence instant by which every sold market question has decided its first clock after the training
   * `cut` and resolved it (first grid instant of its horizon at or after the cut, + horizon + resolution grace), and
   * strictly after `after` (e.g. the newest tick already replayed) when given. svc start replays the tape at full
   * speed up to this instant: its first paced second then already has open clocks and resolved feed chips, and the
   * next cadence decision comes due at once (its resolution a grace later).
   */
  static primedAt(cut: number, after: number | null = null): number {
    const questions = soldMarketQuestions()
    const step = questions.map((q) => q.horizonMs).reduce(gcd)
    let resolved = cut
    for (const q of questions) resolved = Math.max(resolved, Math.ceil(cut / q.horizonMs) * q.horizonMs + q.horizonMs + RESOLUTION_GRACE_MS)
    const from = after === null ? resolved : Math.max(resolved, after)
    return (Math.floor(from / step) + 1) * step
  }

  static async start(options: EngineRunnerOptions): Promise<EngineRunner> {
    const { log: eventLog, clock, names: givenNames, walletProvider, accountClock, checkpoints, stateLogger: _l, appendsDerived, ...plain } = options
    validateOptions('EngineRunner options', OPTIONS_SCHEMA, plain, (message) => new EngineError('VALIDATION', message))
    const names = givenNames ?? topicNames()
    const groupId = options.groupId ?? 'svc.engine'
    const ledger = await DecisionLedger.open({ log: eventLog, names, partitions: options.partitions, groupId: `${groupId}.ledger`, checkpoints, appendsDerived: appendsDerived ?? null })
    let runner: EngineRunner
    try {
      const fits = await FitStore.open(options.dataDir === null ? null : join(options.dataDir, 'fits'))
      runner = new EngineRunner({ ...options, cadence: options.cadence ?? true, trainDays: options.trainDays ?? 30 }, names, ledger, fits)
      if (options.release) await runner.useRelease(options.release)
      // Every decision in the ledger, then each new one (this engine's, or another writer's), starts its clock: a
      // synchronous subscriber, so a clock staged in a tick is tracked before the next tick is folded in.
      runner.clocks = ledger.bus.decisions.subscribe('engine-runner.clocks', (d) => runner.register(d))
      let startAt: ConsumerPosition[] | undefined
      const checkpoints = options.checkpoints ?? null
      if (checkpoints) {
        await eventLog.ensureTopics(topicSpecs(names, options.partitions).filter((t) => t.name === names.ticks))
        const restored = await restoreState({ log: eventLog, snapshots: checkpoints.snapshots, store: runner.tickState, topics: [names.ticks], logger: options.stateLogger ?? log })
        runner.restored = restored
        startAt = restored.from
        runner.tickPartitions = startAt.length
        for (const p of startAt) runner.processed.set(p.partition, p.next)
        // Restored past a cut: the hook ran in the process that passed it (the bootstrap release is in the store).
        if (restored.restored && [...runner.assets.values()].some((a) => a.serving)) runner.cutHook = Promise.resolve()
      }
      runner.consumer = await eventLog.createConsumer({ groupId, topics: [names.ticks], fromBeginning: true, ...(startAt ? { startAt } : {}) })
      if (checkpoints) {
        const consumer = runner.consumer
        runner.checkpointer = new Checkpointer({
          snapshots: checkpoints.snapshots,
          store: runner.tickState,
          everyMs: checkpoints.everyMs,
          capture: () => runner.capture(),
          commit: async (positions) => {
            await consumer.commitPositions(positions)
          },
          logger: options.stateLogger ?? log,
        })
      }
    } catch (err) {
      await ledger.close()
      throw err
    }
    runner.running = runner.consumer.run((batch) => runner.handle(batch))
    runner.checkpointer?.start()
    runner.running.catch((err: unknown) => {
      runner.failure = err instanceof Error ? err : new Error(String(err))
      log.error({ err }, 'engine consumer stopped')
    })
    void clock
    void walletProvider
    void accountClock
    const every = options.accountResolveIntervalMs ?? 60_000
    if (every > 0) runner.accountResolver.start(every)
    if (options.live) runner.startLiveCadence(options.live)
    return runner
  }

  /** The clock's checks for grid instants no tick passed (live venue only). */
  private startLiveCadence(o: LiveCadenceOptions): void {
    this.liveTimer = setInterval(() => {
      if (this.liveRound) return
      this.liveRound = this.decideByClock(o).catch((err: unknown) => log.error({ err }, 'deciding by the clock failed')).finally(() => {
        this.liveRound = null
      })
    }, o.checkEveryMs ?? 1000)
    this.liveTimer.unref()
  }

  /**
   * Decides every grid instant that no tick has passed `fallbackDelayMs` after it, while the engine holds everything
   * the log has (else the ticks it has not read yet decide). An instant further back than the delay plus the tolerance
   * was missed (the service was not running): it is skipped, never decided late.
   */
  private async decideByClock(o: LiveCadenceOptions): Promise<void> {
    const ends = await this.ledger.log.endOffsets(this.names.ticks)
    if (!ends.every((e, p) => (this.processed.get(p) ?? 0) >= e)) return
    const now = o.clock.now()
    const delay = o.fallbackDelayMs ?? RESOLUTION_GRACE_MS
    const tolerance = o.toleranceMs ?? RESOLUTION_GRACE_MS
    let staged = false
    // Several instances: only the one that appends (the venue feed's holder) decides by the clock; another passes the
    // instant undecided and reads the holder's decision from the ledger. What the clock decides depends on when an
    // instance looked at what it had read, so replicas deciding it too could stage a decision no holder ever writes.
    const decides = this.options.appendsDerived?.() ?? true
    for (const [asset, s] of this.assets) {
      if (!s.serving) continue
      while (s.nextGrid + delay <= now) {
        if (!decides) {
          // passed: the holder's record, if any, arrives through the ledger
        } else if (now - s.nextGrid <= delay + tolerance) {
          this.counters.cadenceByClock++
          this.decideAt(asset, s.nextGrid)
          staged = true
        } else this.counters.cadenceSkippedNotLive++
        s.nextGrid += this.step
      }
    }
    if (staged) await this.ledger.flush()
  }

  /**
   * The ticks positions the tick-derived state reflects now, or null between positions: mid-batch, a batch whose
   * ledger writes are not durable yet, or the clock deciding (the Checkpointer retries at its next interval).
   */
  private capture(): ConsumerPosition[] | null {
    if (this.inBatch || this.liveRound !== null) {
      // A busy consumer is almost always mid-batch when the timer fires: take it at the batch's end instead.
      this.checkpointDue = true
      return null
    }
    return Array.from({ length: this.tickPartitions }, (_, partition) => ({ topic: this.names.ticks, partition, next: this.processed.get(partition) ?? 0 }))
  }

  /** Writes a snapshot of the tick-derived state now (at the next batch boundary's state); null when skipped. */
  async checkpoint(): Promise<void> {
    await this.checkpointer?.checkpoint()
  }

  private async handle(batch: ConsumedBatch): Promise<void> {
    // Cleared only once the batch's ledger writes are durable (a failed flush leaves it set until a redelivery flushes).
    this.inBatch = true
    // A redelivered batch (after a failed flush) skips the ticks already folded in; what they staged is still staged.
    await this.ledger.flush()
    let next = this.processed.get(batch.partition) ?? 0
    for (const r of batch.records) {
      if (r.offset < next) continue
      let tick: Tick | null = null
      try {
        tick = decodeTickRecord(r).tick
      } catch (err) {
        log.warn({ partition: r.partition, offset: r.offset, err: (err as Error).message }, 'undecodable tick skipped (the sink keeps it among the rejects)')
      }
      if (tick && this.options.atCut && tick.kind !== 'universe') {
        const s = this.assetState(tick.asset, tickTime(tick))
        // Stopped while the hook ran: this tick stays unread, so the state never passes a cut whose hook did not finish.
        if (!s.serving && tickTime(tick) > s.cut && !(await this.passCut(s))) break
      }
      if (tick) this.onTick(tick)
      next = r.offset + 1
      this.processed.set(batch.partition, next)
    }
    await this.ledger.flush()
    this.inBatch = false
    if (this.checkpointDue && this.checkpointer) {
      this.checkpointDue = false
      void this.checkpointer.checkpoint().catch(() => undefined)
    }
  }

  private assetState(asset: string, time: number): AssetState {
    let s = this.assets.get(asset)
    if (!s) {
      const cut = this.options.trainUntil ?? time + this.options.trainDays * DAY_MS
      s = { cut, serving: false, nextGrid: Math.ceil(Math.max(cut, time) / this.step) * this.step, last: -Infinity }
      this.assets.set(asset, s)
    }
    return s
  }

  /**
   * Awaits the `atCut` hook (once per process) before the first tick past a training cut is folded in. False when the
   * runner is stopping (the hook may not have finished: the tick is not folded in).
   */
  private async passCut(s: AssetState): Promise<boolean> {
    const signal = this.stopping.signal
    this.cutHook ??= this.options.atCut!(s.cut, signal).catch((err: unknown) => {
      if (!signal.aborted) log.error({ err, cut: new Date(s.cut).toISOString() }, 'the training-cut hook failed; serving the release in force')
    })
    await Promise.race([this.cutHook, new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))])
    return !signal.aborted
  }

  /**
   * Serves `release` from the next decision on (an ask already composing finishes on the one it read). The cadence,
   * the API asks and the funding surfaces all read it through the DecisionEngine.
   */
  async useRelease(release: ServedRelease): Promise<void> {
    const before = this.engine.release.version
    await this.engine.useRelease(release)
    const st = release.status()
    const refused = Object.entries(st.families).filter(([, v]) => v !== 'served')
    log.info({ release: st.version, previous: before, checksum_verified: st.checksum_verified, refused: Object.fromEntries(refused) }, st.version === null ? 'no release served' : 'serving release')
  }

  private onTick(tick: Tick): void {
    this.counters.ticks++
    if (tick.kind === 'universe') return
    const time = tickTime(tick)
    const s = this.assetState(tick.asset, time)
    if (time > s.last) {
      if (!s.serving && time > s.cut) s.serving = true
      if (this.options.cadence && s.serving) {
        const live = this.options.live
        const receivedAt = live ? Date.parse(tick.provenance.received_at) : 0
        while (s.nextGrid < time) {
          if (live && receivedAt - s.nextGrid > (live.toleranceMs ?? RESOLUTION_GRACE_MS)) this.counters.cadenceSkippedNotLive++
          else this.decideAt(tick.asset, s.nextGrid)
          s.nextGrid += this.step
        }
      }
      this.counters.outcomesStaged += this.resolver.advance(tick.asset, time)
      s.last = time
    }
    try {
      this.live.observe(tick)
      this.resolver.observe(tick)
    } catch (err) {
      log.warn({ asset: tick.asset, kind: tick.kind, at: tick.provenance.timestamp, err: (err as Error).message }, 'tick out of order for its series; skipped')
    }
  }

  private decideAt(asset: string, at: number): void {
    let journaled: ReturnType<LiveFeatures['journaled']> | undefined
    for (const q of this.questions) {
      if (at % q.horizonMs !== 0) continue
      // Live venue: one cadence decision per instant (the clock may have decided it before a late tick arrived).
      if (this.options.live && (this.cadenceHigh.get(`${q.id}|${asset}`) ?? -Infinity) >= at) continue
      journaled ??= this.live.journaled(asset, at)
      const { record, isNew } = this.engine.compose(q, asset, null, at, null, journaled)
      if (!isNew) continue
      // Unavailable on this market: no cadence decision (the dataset's rule); an API ask still records the refusal.
      if (record.refusal_reason?.startsWith('input_unavailable:')) continue
      if (this.engine.stage(record).isNew) this.counters.decisionsStaged++
    }
  }

  /**
   * Resolves once the engine has handled every tick the log held when called, and its ledger writes are durable.
   * Rejects after `timeoutMs`, or as soon as `signal` aborts (e.g. the process is stopping).
   */
  async waitForTicks(timeoutMs = 120_000, signal?: AbortSignal): Promise<void> {
    const ends = await this.ledger.log.endOffsets(this.names.ticks)
    const deadline = Date.now() + timeoutMs
    for (;;) {
      if (this.failure) throw this.failure
      signal?.throwIfAborted()
      if (ends.every((e, p) => (this.processed.get(p) ?? 0) >= e)) break
      if (Date.now() > deadline) throw new Error(`engine did not catch up with ${this.names.ticks} within ${timeoutMs} ms`)
      await sleep(20)
    }
    await this.ledger.flush()
  }

  stats(): EngineRunnerStats {
    return { ...this.counters, openClocks: this.resolver.openCount() + this.accountResolver.openCount(), ledger: this.ledger.index.size, release: this.engine.release.version }
  }

  get failed(): Error | undefined {
    return this.failure
  }

  /** Idempotent: a second call awaits the first. */
  close(): Promise<void> {
    this.closing ??= this.closeOnce()
    return this.closing
  }

  private closing: Promise<void> | null = null

  private async closeOnce(): Promise<void> {
    this.stopping.abort()
    if (this.liveTimer) clearInterval(this.liveTimer)
    await this.liveRound
    this.clocks?.unsubscribe()
    await this.accountResolver.close()
    await this.consumer?.stop()
    await this.running?.catch(() => undefined)
    await this.ledger.flush().catch((err: unknown) => log.error({ err }, 'final ledger flush failed'))
    // The final snapshot (skipped if the last batch's writes did not become durable), then its positions committed.
    await this.checkpointer?.stop({ final: true })
    await this.ledger.close()
  }
}
