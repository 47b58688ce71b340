/**
 * The operator funnel: snapshots computed from the sources (ports.ts) every interval and on demand, each appended to
 * the `ops.funnel` journal (pipeline/records/funnelRecord.ts), so the trend is restored from the log at every start
 * (its state snapshot + the tail, or the whole journal).
 *
 *   const funnel = await FunnelService.open({ log, clock, adminKey, intervalMs, sources: { ledger: bus, draws } })
 *   funnel.start()                       // periodic snapshots (common/PeriodicTask.ts)
 *   await funnel.report(30)              // GET /v1/admin/economy-funnel: newest snapshot, trend, window
 *   await funnel.close()
 *
 * Spec (Authentication 4): "The funnel route uses header x-admin-key", compared in constant time like the operator
 * token. The route exists only where this part is wired, and the composition root wires it only with an admin key.
 *
 * Checkpointed (issue 31; pipeline/state/OwnWritesCheckpoint.ts): the state is the kept trend (at most FUNNEL_LIMIT_MAX
 * snapshots), snapshotted with positions that may lag behind the funnel snapshots already appended here; a funnel
 * snapshot whose id the trend holds is not kept twice, so reading it again from the log changes nothing. All funnel
 * snapshots share one key, hence one partition: the trend's order is the log's.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto'
import type { Logger } from 'pino'
import { canonicalJson } from '../../common/jcs.ts'
import { childLogger } from '../../common/logger.ts'
import type { Clock } from '../../common/Clock.ts'
import { PeriodicTask } from '../../common/PeriodicTask.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import { Journal } from '../../pipeline/journal/Journal.ts'
import type { EventLog } from '../../pipeline/log/EventLog.ts'
import { FUNNEL_RECORD_VERSION, FUNNEL_SNAPSHOTS, type FunnelActivation, type FunnelSnapshot } from '../../pipeline/records/funnelRecord.ts'
import { topicNames } from '../../pipeline/topics.ts'
import { OwnWritesCheckpoint, tailOf } from '../../pipeline/state/OwnWritesCheckpoint.ts'
import type { CheckpointSettings, StateStore } from '../../pipeline/state/StateStore.ts'
import { computeFunnel, drawFacts } from './computeFunnel.ts'
import { FunnelTally } from './FunnelTally.ts'
import type { FunnelSources } from './ports.ts'

export const ADMIN_KEY_HEADER = 'x-admin-key'
/** Trend length served when the query names none, and the most it may name (GET ?limit). */
export const FUNNEL_LIMIT_DEFAULT = 30
export const FUNNEL_LIMIT_MAX = 500

/** The funnel part of a snapshot as served (the journal's bookkeeping fields left out). */
export interface FunnelView {
  at: string
  window_calls: number
  xp_by_kind: Record<string, number> | null
  steps: FunnelSnapshot['steps']
}

export interface TrendItem extends FunnelView {
  activation: FunnelActivation
}

/** Spec (Operator funnel): the route's response data. */
export interface FunnelReport {
  funnel: FunnelView | null
  activation: FunnelActivation
  trend: TrendItem[]
  window: { limit: number; snapshots: number; newest_at: string | null; oldest_at: string | null }
}

/** What the serving layer calls (serving/Services.ts `funnel`). */
export interface FunnelReads {
  /** Throws OPS_FORBIDDEN (reason ADMIN_KEY_REJECTED) unless `key` is the configured admin key. */
  requireAdmin(key: string | undefined): void
  report(limit: number): Promise<FunnelReport>
}

export interface FunnelServiceOptions {
  log: EventLog
  clock: Clock
  /** SVC_ADMIN_KEY: required, since the funnel is wired only where an admin key is configured. */
  adminKey: string
  /** Between periodic snapshots, and the age past which a read takes a fresh one first. */
  intervalMs: number
  sources: FunnelSources
  /** Snapshot topic; default pipeline/topics.ts. */
  topic?: string
  partitions?: number
  /** State snapshots of the trend (issue 31); absent: rebuilt from the journal at every start. */
  checkpoints?: CheckpointSettings | null
  logger?: Logger
}

/** The snapshot rows' schema: one funnel snapshot each (FUNNEL_SNAPSHOTS, canonical JSON order), oldest first. */
export const FUNNEL_STATE_SCHEMA = 1

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest()

/** An activation with nothing measured: what the report says before the first snapshot. */
const NO_ACTIVATION: FunnelActivation = {
  activated_payers: null,
  graded_calls: null,
  first_lock_to_first_grade: { median_ms: null, n: null, window_calls: null },
}

const viewOf = (s: FunnelSnapshot): FunnelView => ({ at: s.taken_at, window_calls: s.window_calls, xp_by_kind: s.xp_by_kind, steps: s.steps })

export class FunnelService implements FunnelReads, StateStore {
  readonly name = 'ops.funnel'
  readonly schema = FUNNEL_STATE_SCHEMA
  private readonly adminDigest: Buffer
  /** The newest snapshots, oldest first; at most FUNNEL_LIMIT_MAX are kept (no read asks for more). */
  private readonly recent: FunnelSnapshot[] = []
  /** The ids in `recent`: a snapshot read again from the log (a lagging state position) is not kept twice. */
  private readonly recentIds = new Set<string>()
  /** The state's snapshots: how it was restored at start, a snapshot on demand; null in memory only. */
  checkpoints: OwnWritesCheckpoint | null = null
  private inFlight: Promise<FunnelSnapshot> | null = null
  private readonly task: PeriodicTask

  private constructor(
    private readonly journal: Journal<typeof FUNNEL_SNAPSHOTS.schema>,
    private readonly clock: Clock,
    private readonly tally: FunnelTally,
    private readonly sources: FunnelSources,
    private readonly intervalMs: number,
    adminKey: string,
  ) {
    if (adminKey.length === 0) throw new Error('FunnelService: an admin key is required (the route exists only with one)')
    this.adminDigest = digest(adminKey)
    this.task = new PeriodicTask({ name: 'funnel-schedule', intervalMs, run: () => this.snapshot() })
  }

  /** Opens the journal and rebuilds the trend from it; subscribes to the sources (they replay what they hold). */
  static async open(o: FunnelServiceOptions): Promise<FunnelService> {
    const journal = await Journal.open({ log: o.log, def: FUNNEL_SNAPSHOTS, topic: o.topic ?? topicNames().funnel, ...(o.partitions ? { partitions: o.partitions } : {}) })
    const tally = new FunnelTally(o.sources)
    const service = new FunnelService(journal, o.clock, tally, o.sources, o.intervalMs, o.adminKey)
    service.checkpoints = await OwnWritesCheckpoint.open({
      store: service,
      sources: [tailOf(journal, (s) => service.keep(s))],
      checkpoints: o.checkpoints ?? null,
      logger: o.logger ?? childLogger('funnel'),
    })
    return service
  }

  private keep(s: FunnelSnapshot): void {
    if (this.recentIds.has(s.snapshot_id)) return
    this.recent.push(s)
    this.recentIds.add(s.snapshot_id)
    if (this.recent.length > FUNNEL_LIMIT_MAX) this.recentIds.delete(this.recent.shift()!.snapshot_id)
  }

  *rows(): Iterable<unknown> {
    // Canonical key order: a snapshot kept live and the same one decoded from the log are equal rows.
    for (const s of this.recent) yield JSON.parse(canonicalJson(s)) as unknown
  }

  load(rows: readonly unknown[]): void {
    if (this.recent.length > 0) throw new Error('the funnel trend is not empty')
    if (rows.length > FUNNEL_LIMIT_MAX) throw new Error(`${rows.length} snapshots, more than the ${FUNNEL_LIMIT_MAX} kept`)
    const checked = rows.map((r, i) => {
      try {
        return FUNNEL_SNAPSHOTS.check(r)
      } catch (err) {
        throw new Error(`row ${i}: ${(err as Error).message}`)
      }
    })
    if (new Set(checked.map((s) => s.snapshot_id)).size !== checked.length) throw new Error('a snapshot id appears twice')
    for (const s of checked) this.keep(s)
  }

  /**
   * Spec (Authentication 4): the key is compared in constant time. Both sides are hashed first so timingSafeEqual
   * compares equal-length digests and the key's length does not leak; a missing header is refused the same way.
   */
  requireAdmin(key: string | undefined): void {
    if (key === undefined || !timingSafeEqual(digest(key), this.adminDigest)) {
      throw new ServiceError('OPS_FORBIDDEN', { detail: { reason: 'ADMIN_KEY_REJECTED', field: `/headers/${ADMIN_KEY_HEADER}` } })
    }
  }

  /** Computes a snapshot from the sources now and appends it; concurrent callers share one. */
  snapshot(): Promise<FunnelSnapshot> {
    this.inFlight ??= this.take().finally(() => {
      this.inFlight = null
    })
    return this.inFlight
  }

  private async take(): Promise<FunnelSnapshot> {
    const { ledger, draws, calls, arena } = {
      ledger: this.tally.ledgerFacts(),
      draws: this.sources.draws ? drawFacts(this.sources.draws.allRows()) : null,
      calls: this.tally.callFacts(),
      arena: this.sources.arena
        ? { xpByKind: this.sources.arena.xpAwardsByKind(), questCompletions: this.sources.arena.questCompletions(), badgeAwards: this.sources.arena.badgeAwards() }
        : null,
    }
    const computed = computeFunnel({ ledger, draws, calls, arena })
    const wired = Object.entries({ ledger, billing: draws, duel: calls, arena }).filter(([, v]) => v !== null).map(([k]) => k)
    const snapshot: FunnelSnapshot = {
      v: FUNNEL_RECORD_VERSION,
      snapshot_id: `fs_${randomUUID()}`,
      taken_at: new Date(this.clock.now()).toISOString(),
      ...computed,
      sources: wired.length > 0 ? wired.join(',') : null,
    }
    const write = this.journal.append([snapshot]).then(() => this.keep(snapshot))
    await (this.checkpoints ? this.checkpoints.track(write) : write)
    return snapshot
  }

  /**
   * The route's answer: the newest snapshot (a fresh one first when the newest is older than the interval, so a read
   * never shows a stale funnel), the newest `limit` snapshots newest first, and the window they come from.
   */
  async report(limit: number): Promise<FunnelReport> {
    const newest = this.recent.at(-1)
    if (!newest || this.clock.now() - Date.parse(newest.taken_at) >= this.intervalMs) await this.snapshot()
    const trend = this.recent.slice(-limit).reverse()
    const head = trend[0] ?? null
    return {
      funnel: head ? viewOf(head) : null,
      activation: head ? head.activation : NO_ACTIVATION,
      trend: trend.map((s) => ({ ...viewOf(s), activation: s.activation })),
      // The window is what the trend covers: the limit asked, the snapshots returned, their newest and oldest instants.
      window: { limit, snapshots: trend.length, newest_at: head?.taken_at ?? null, oldest_at: trend.at(-1)?.taken_at ?? null },
    }
  }

  start(): void {
    this.task.start()
  }

  async close(): Promise<void> {
    await this.task.stop()
    await this.inFlight?.catch(() => undefined)
    await this.checkpoints?.close()
    this.tally.close()
    await this.journal.close()
  }
}
