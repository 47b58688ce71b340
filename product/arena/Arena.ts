/**
 * The Arena (spec, What the service does 6; Arena resources; Events 3): XP, ranks, quests, badges, seasons, boards and
 * the notification feed over graded calls. It owns three journals (pipeline/records: arena.experience,
 * arena.notifications, arena.settings) and reacts to the duel's call events (product/duel CallEvents), never to the
 * duel's internals and never to billing data.
 *
 * Start: the projection is restored from its state snapshot and the journals' tails after it (or, with no usable
 * snapshot, every journal is read from the beginning), and the journals stay followed while the Arena is open
 * (pipeline/state/CheckpointedFollowers.ts): what another instance of a cluster writes (its payers' awards, an opt-in or
 * a read mark sent to it) reaches this one's profiles, boards and cards within the follower's fetch wait. Then the call channels
 * are subscribed with replay (the duel's hot calls, issue 31; a projection rebuilt from nothing first folds the duel's
 * whole history, CallEvents.history). The projection knows every call it folded inside
 * the window (by call id, in the snapshot too; older ones cannot be replayed again), so a replayed event already folded is skipped; the others are folded and every
 * award they imply is computed; an award whose deterministic id is already in the journal is not written again. A
 * restart therefore changes no XP, rank, board, streak or notification, and an event that arrived while the service
 * was down is awarded now. A snapshot is taken only while no award is staged or queued (consistent): a folded event's
 * awards are then in the state, so skipping it at the next start loses none.
 *
 * Writes: the awards one event implies (XP, quest completions, badges, notifications) are appended as one atomic unit
 * (UnitOfWork on the one event log), in event order through one queue; ids are reserved when an event is folded, so
 * a later event never awards what an earlier one is still writing. The ask XP of a paid decision joins that call's
 * own unit of work (recordAskIn), so it exists exactly when the paid decision does.
 *
 * Several instances (issue 32): every instance folds every call event (each follows the duel's journals), but a payer's
 * awards are written by one instance only, the owner of the payer's partition (`writesFor`, the payers lease that also
 * serializes its credits), so no award is written twice and a payer's notification ids stay dense. The others derive
 * the same awards and keep them deferred (DeferredAwards.ts) until they read the owner's rows. When this instance takes
 * a partition over (takeOver: at start, or from an instance that died), it reads its journals to their ends, writes
 * what is still deferred for the partition's payers (what the previous owner never wrote), then whatever their state
 * implies that no award holds (a quest reached, a badge, a rank): the ids are deterministic, so nothing the previous
 * owner wrote is written again.
 */
import { randomUUID } from 'node:crypto'
import type { Clock } from '../../common/Clock.ts'
import { canonicalJson } from '../../common/jcs.ts'
import { childLogger } from '../../common/logger.ts'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Subscription } from '../../engine/LedgerBus.ts'
import { Journal } from '../../pipeline/journal/Journal.ts'
import type { PaidCall } from '../../pipeline/journal/PaidCall.ts'
import { UnitOfWork } from '../../pipeline/journal/UnitOfWork.ts'
import type { EventLog } from '../../pipeline/log/EventLog.ts'
import { CheckpointedFollowers, followOwnWrites } from '../../pipeline/state/CheckpointedFollowers.ts'
import type { RestoredState } from '../../pipeline/state/restoreState.ts'
import type { CheckpointSettings } from '../../pipeline/state/StateStore.ts'
import type { Logger } from 'pino'
import { RetryPolicy } from '../../pipeline/work/RetryPolicy.ts'
import { ARENA_SETTINGS, type ArenaSettingRow } from '../../pipeline/records/arenaSettingRecord.ts'
import { EXPERIENCE, type ExperienceRow } from '../../pipeline/records/experienceRecord.ts'
import { NOTIFICATIONS, type NotificationRow } from '../../pipeline/records/notificationRecord.ts'
import { byResolution, type CallEvents, type CallGraded, type CallLocked } from '../duel/index.ts'
import { BADGES, badgeAwardId } from './badges.ts'
import { ArenaProjection, type BoardScope, type BoardSort, type BoardTrack } from './ArenaProjection.ts'
import { ASK_XP_DAILY_CAP, DECISION_BASE_CREDITS, RANKS, discountedCredits, levelForCredits, rankIndexOf, rankOf } from './levels.ts'
import { QUESTS, measure, questAwardId, questPeriod, type QuestMetric } from './quests.ts'
import type { PayerState } from './PayerState.ts'
import { NotificationStreams } from './NotificationStreams.ts'
import { ColdFeed, type FeedTableReader } from './ColdFeed.ts'
import { periodEndOfKey } from './periods.ts'
import { DeferredAwards } from './DeferredAwards.ts'
import { DAY_MS } from '../../common/time.ts'

const log = childLogger('arena')

/** Events' awards per append: a round stays well under the log's per-send size. */
const WRITE_ROUND = 500
/** A round that failed is retried with the same records until it is written or the Arena closes (waits up to 3 s). */
const ROUND_RETRY = new RetryPolicy({ attempts: Number.POSITIVE_INFINITY, baseMs: 100, factor: 5, capMs: 3000 })

/** One bit per badge (PayerState.badgesHeld). */
const BADGE_BITS = new Map(BADGES.map((b, i) => [b.key, 2 ** i]))
/** One bit per quest, by its index in QUESTS (PeriodCounters.questsHeld). */
const QUEST_BITS = QUESTS.map((_, i) => 2 ** i)
const LOCK_METRICS: readonly QuestMetric[] = ['calls_locked', 'markets_called']
const CORRECT_METRICS: readonly QuestMetric[] = ['correct_calls']
const ALL_METRICS: readonly QuestMetric[] = [...LOCK_METRICS, ...CORRECT_METRICS]

export interface ArenaOptions {
  log: EventLog
  clock: Clock
  /** The duel's events; absent: none yet (attach() later). */
  events?: CallEvents | null
  partitions?: number
  /** State snapshots (issue 31); absent or null: the projection is rebuilt from the journals at every start. */
  checkpoints?: CheckpointSettings | null
  /** The duel's hot window (SVC_HOT_WINDOW_DAYS): graded calls' ids older than it leave the folded sets. Absent: all stay. */
  hotWindowMs?: number
  /**
   * The record's DuckDB (the catalog's views): notifications that left memory are read back from the sealed Parquet
   * (ColdFeed.ts). Absent: the feed shows what memory holds.
   */
  cold?: FeedTableReader | null
  /** Whether rows past the window may leave memory now (app: the sink is sealing, or a start is folding). Absent: always. */
  evictable?: () => boolean
  /**
   * Several instances (issue 32): whether this instance writes a payer's awards now (it owns the payer's partition and
   * has caught up with it). Absent or null: every payer's (one instance).
   */
  writesFor?: ((payer: string) => boolean) | null
  /** DEFERRED_TTL_MS unless given (tests). */
  deferredTtlMs?: number
  /** Consumer group prefix of the journals' followers (default 'svc.arena'). */
  groupId?: string
  logger?: Logger
}

/** How long awards derived for another instance's payer wait for its rows before they are released (DeferredAwards). */
const DEFERRED_TTL_MS = 60_000

/** What one event awards, written as one unit. */
interface Awards {
  experience: ExperienceRow[]
  notifications: NotificationRow[]
}

/** A paid ask, as the decision route knows it. */
export interface Ask {
  decision_id: string
  question_id: string
  asset: string
}

export class Arena {
  readonly projection: ArenaProjection
  /** Each payer's notifications as a live stream (GET /v1/streams/notifications). */
  readonly notificationStreams: NotificationStreams
  /** Ids staged by the writer and not yet applied: reserved, so no later event awards them again. */
  private readonly staged = new Set<string>()
  private readonly subscriptions: Subscription[] = []
  private closed = false
  private followers: CheckpointedFollowers | null = null
  /** Awards derived for payers another instance writes, until its rows are read (staged meanwhile). */
  private readonly deferred: DeferredAwards
  private readonly expiry: NodeJS.Timeout | null
  /** Payer partitions being taken over: their payers' awards are deferred until the journals are read to their ends. */
  private readonly takingOver = new Set<(payer: string) => boolean>()
  /** While attach() folds the duel's history. */
  private foldingHistory = false
  private readonly writesFor: ((payer: string) => boolean) | null
  /** The feed's rows that left memory, read through DuckDB (issue 31); null: none are read back. */
  readonly cold: ColdFeed | null

  private constructor(
    options: Pick<ArenaOptions, 'hotWindowMs' | 'cold' | 'evictable' | 'writesFor' | 'deferredTtlMs'>,
    private readonly clock: Clock,
    private readonly experience: Journal<typeof EXPERIENCE.schema>,
    private readonly notes: Journal<typeof NOTIFICATIONS.schema>,
    private readonly settings: Journal<typeof ARENA_SETTINGS.schema>,
  ) {
    this.projection = new ArenaProjection({ hotWindowMs: options.hotWindowMs ?? Infinity, ...(options.evictable ? { evictable: options.evictable } : {}) })
    this.cold = options.cold ? new ColdFeed(options.cold) : null
    this.notificationStreams = new NotificationStreams(this.projection, this.cold)
    this.writesFor = options.writesFor ?? null
    const ttl = options.deferredTtlMs ?? DEFERRED_TTL_MS
    this.deferred = new DeferredAwards(ttl)
    this.expiry = this.writesFor ? setInterval(() => this.release(this.deferred.expire(Date.now())), Math.min(ttl, 10_000)).unref() : null
  }

  static async open(options: ArenaOptions): Promise<Arena> {
    const partitions = options.partitions !== undefined ? { partitions: options.partitions } : {}
    const [experience, notes, settings] = await Promise.all([
      Journal.open({ log: options.log, def: EXPERIENCE, ...partitions }),
      Journal.open({ log: options.log, def: NOTIFICATIONS, ...partitions }),
      Journal.open({ log: options.log, def: ARENA_SETTINGS, ...partitions }),
    ])
    const arena = new Arena(options, options.clock, experience, notes, settings)
    // Notifications before settings: a read mark applies to the notifications it names.
    const p = arena.projection
    const logger = options.logger ?? log
    const group = options.groupId ?? 'svc.arena'
    // The window the grades will set, known before the journals are read: every grade the events hold is folded below
    // (or was, before a restored snapshot), so the projection's newest grade ends at least this new.
    const newestGrade = options.events?.newestGrade?.() ?? null
    if (newestGrade !== null && Number.isFinite(options.hotWindowMs ?? Infinity)) p.coldFrom(newestGrade - options.hotWindowMs!)
    arena.followers = await CheckpointedFollowers.open({
      log: options.log,
      store: p,
      checkpoints: options.checkpoints ?? null,
      logger,
      journals: [
        followOwnWrites(experience, { group: `${group}.experience`, what: 'experience', logger }, (r) => arena.applyFollowedExperience(r)),
        followOwnWrites(notes, { group: `${group}.notifications`, what: 'notification', logger }, (r) => arena.applyFollowedNotification(r)),
        followOwnWrites(settings, { group: `${group}.settings`, what: 'setting', logger }, (r) => p.applySetting(r)),
      ],
      // A folded event whose awards are not durable yet (staged: queued, or deferred to another instance) is in no journal.
      snapshotWhen: () => arena.staged.size === 0 && arena.queued === 0 && !arena.foldingHistory,
    })
    // A rebuilt projection folds every call the duel ever had (its channels replay only the hot ones, issue 31). A
    // restored one has folded what left the duel's memory, unless its snapshot is older than that: then it folds the
    // history from its own window on (what is older it folded before its newest grade), skipping ids it holds.
    if (options.events) {
      const e = options.events
      const hotSince = e.hotSince?.() ?? null
      const stale = hotSince !== null && (p.newestGraded === null || p.newestGraded < hotSince)
      await arena.attach(e, { history: !arena.followers.restored?.restored ? 'all' : stale ? 'window' : 'none' })
    }
    p.coldFrom(null)
    // A crash between an XP record and its rank_up notification: write the missing ones now.
    for (const s of arena.projection.payers.values()) arena.checkRankUp(s, arena.clock.now())
    return arena
  }

  /** How the state started and a snapshot on demand; null without checkpoint settings (memory only). */
  get checkpoints(): { restored: RestoredState; checkpoint(): Promise<unknown> } | null {
    const f = this.followers
    return f?.restored ? { restored: f.restored, checkpoint: () => f.checkpoint() } : null
  }

  /** Whether this instance writes the payer's awards now (always on one instance). */
  private writes(payer: string): boolean {
    if (this.writesFor === null) return true
    if (!this.writesFor(payer)) return false
    for (const taking of this.takingOver) if (taking(payer)) return false
    return true
  }

  /** Another writer's experience row (or one of ours read back after a restart): it settles a deferred one. */
  private applyFollowedExperience(row: ExperienceRow): void {
    const settled = this.deferred.size > 0 ? this.deferred.settleExperience(row) : null
    if (settled) {
      this.staged.delete(settled.id)
      this.projection.payer(settled.payer).xpStaged -= settled.xp
    }
    this.projection.applyExperience(row)
  }

  private applyFollowedNotification(row: NotificationRow): void {
    if (this.deferred.size > 0) {
      const { settled, released } = this.deferred.settleNotification(row)
      if (settled) this.staged.delete(settled.key)
      this.release(released)
    }
    this.projection.applyNotification(row)
  }

  /**
   * Deferred awards the owner did not write as derived here: no longer held by this instance. The memos of holding (a
   * badge's or a quest's bit, the rank announced) are undone, so that a later derivation here (as the payer's new
   * owner) asks the journal's rows again.
   */
  private release(rows: { experience: ExperienceRow[]; notifications: NotificationRow[] }): void {
    for (const r of rows.experience) {
      this.staged.delete(r.id)
      const s = this.projection.payer(r.payer)
      s.xpStaged -= r.xp
      if (r.kind === 'badge') s.badgesHeld &= ~(BADGE_BITS.get(r.ref) ?? 0)
      else if (r.kind === 'quest') {
        const [quest, period] = r.ref.split(':')
        const c = s.counters.get(period ?? '')
        const i = QUESTS.findIndex((q) => q.key === quest)
        if (c && i >= 0) c.questsHeld = (c.questsHeld ?? 0) & ~QUEST_BITS[i]!
      }
    }
    for (const n of rows.notifications) {
      this.staged.delete(n.key)
      const s = this.projection.payer(n.payer)
      if (n.kind === 'rank_up' && s.rankNotified === RANKS.findIndex((r) => r.name === n.ref)) s.rankNotified--
    }
  }

  /**
   * Several instances: this instance now writes the awards of the payers `owned` selects (a payer partition it took, at
   * its start or from an instance that died). First its journals are read to their ends, so every award the previous
   * owner wrote is held and settles what was deferred here (meanwhile the partition's new awards are deferred too);
   * then what is still deferred for those payers is written, in the order derived, numbered after each payer's last
   * notification; then whatever each payer's state implies and no award holds (quests reached in the periods still
   * counted, badges, a rank), which covers what an owner that died folded and never wrote. Ids are deterministic, so
   * nothing held is written again.
   */
  async takeOver(owned: (payer: string) => boolean, signal?: AbortSignal): Promise<void> {
    if (this.closed || !this.followers) return
    this.takingOver.add(owned)
    try {
      await this.followers.caughtUp(this.experience.log, signal)
    } finally {
      this.takingOver.delete(owned)
    }
    if (this.closed || signal?.aborted) return
    const mine = (payer: string) => owned(payer) && this.writes(payer)
    const taken = new Set<string>()
    for (const { payer, groups } of this.deferred.take(mine)) {
      const s = this.projection.payer(payer)
      let id = s.lastId
      for (const g of groups) for (const n of g.notifications) n.id = ++id
      s.seq = id
      taken.add(payer)
      for (const g of groups) this.push(g)
    }
    const now = this.clock.now()
    for (const s of this.projection.payers.values()) {
      if (!mine(s.payer)) continue
      // Ids allocated here for awards the previous owner wrote otherwise (released): the next one follows the journal's.
      if (!taken.has(s.payer)) s.seq = s.lastId
      this.awardState(s, now)
    }
  }

  /**
   * Subscribes to the duel's call events (its hot calls replayed, then live), after folding the duel's history when
   * asked: all of it (a rebuild) or from the projection's window on (a snapshot older than the duel's window).
   *
   * The replayed grades come in the order the duel re-learned its resolutions at this start, not the order they were
   * first graded in (a log's partitions are read back in another interleaving). Folded in that order a payer's record
   * passed through states it never had (a run of three correct calls that a wrong call, replayed later, had broken in
   * the first run), and a restart wrote badges and notifications the first run never did. So the replay, which the
   * bus delivers synchronously within subscribe(), is collected and folded in resolution order (graded_at, then
   * call_id: the order PayerState keeps a payer's grades in), the order in which they were first graded.
   */
  async attach(events: CallEvents, options: { history?: 'all' | 'window' | 'none' } = {}): Promise<void> {
    if (options.history && options.history !== 'none' && events.history) {
      // Calls graded before the projection's window were folded and their ids dropped: never folded again.
      const since = options.history === 'window' ? this.projection.cutoff() : null
      // The fold spans the journal's read (the locks are folded as read): no snapshot of a history half folded.
      this.foldingHistory = true
      try {
        await events.history({ since, locked: (e) => this.onLocked(e), graded: (e) => this.onGraded(e) })
      } finally {
        this.foldingHistory = false
      }
    }
    this.subscriptions.push(events.locked.subscribe('arena', (e) => this.onLocked(e)))
    let replayed: CallGraded[] | null = []
    // A restored projection skips what it folded before sorting: a million replayed grades, a handful new.
    this.subscriptions.push(events.graded.subscribe('arena', (e) => (replayed === null ? this.onGraded(e) : this.projection.hasGraded(e.call_id) ? undefined : void replayed.push(e))))
    const inResolutionOrder = replayed.sort(byResolution)
    replayed = null
    for (const e of inResolutionOrder) this.onGraded(e)
  }

  /** Resolves once every event delivered so far was handled and every award written and read back by its follower. */
  async idle(): Promise<void> {
    for (;;) {
      for (const sub of this.subscriptions) await sub.idle()
      const settled = !this.experience.writesUnsettled && !this.notes.writesUnsettled && !this.settings.writesUnsettled
      if (this.writer === null && this.queued === 0 && (settled || this.closed)) return
      await (this.writer ?? sleep(1))
    }
  }

  // ---- events -----------------------------------------------------------------------------------------------------

  private onLocked(e: CallLocked): void {
    const p = this.projection
    if (p.applyLocked(e)) {
      const s = p.payer(e.payer)
      const at = Date.parse(e.locked_at)
      const awards: Awards = { experience: [], notifications: [] }
      this.questAwards(s, at, LOCK_METRICS, awards)
      this.awardBadges(s, at, awards)
      this.rankUp(s, at, awards)
      this.push(awards)
    }
  }

  private onGraded(e: CallGraded): void {
    const p = this.projection
    const folded = p.applyGraded(e)
    if (folded) {
      const s = p.payer(e.payer)
      const at = Date.parse(e.graded_at)
      const awards: Awards = { experience: [], notifications: [] }
      let xp = 0
      let level: number | null = null
      if (e.status === 'graded' && e.correct === true) {
        const l = levelForCredits(DECISION_BASE_CREDITS)
        xp = l.correct_call_xp
        level = l.level
        this.award(s, { id: `call:${e.call_id}`, kind: 'correct_call', xp, ref: e.call_id, level, created_at: e.graded_at }, awards)
      }
      this.notify(s, 'call_resolved', e.call_id, () => ({
        call_id: e.call_id, decision_id: e.decision_id, question_id: e.question_id, asset: e.asset, call: e.call, outcome: e.outcome,
        status: e.status, correct: e.correct, xp,
      }), at, awards)
      if (s.streak > folded.streakBefore && s.streak >= 2) this.notify(s, 'streak_extended', e.call_id, () => ({ streak: s.streak }), at, awards)
      else if (folded.streakBefore >= 2 && s.streak < folded.streakBefore) this.notify(s, 'streak_ended', e.call_id, () => ({ ended_streak: folded.streakBefore, streak: s.streak }), at, awards)
      if (e.status === 'graded' && e.correct === true) this.questAwards(s, at, CORRECT_METRICS, awards)
      this.awardBadges(s, at, awards)
      this.rankUp(s, at, awards)
      this.push(awards)
    }
  }

  /**
   * What a payer's state implies and no award holds (a payer taken over from another instance, which may have died
   * between folding an event and writing its awards): the quests its counters reach in every period still counted
   * (dated at the period's end, or now within it), its badges and its rank.
   */
  private awardState(s: PayerState, now: number): void {
    const awards: Awards = { experience: [], notifications: [] }
    for (const key of [...s.counters.keys()].sort()) {
      const end = periodEndOfKey(key)
      if (end === null) continue
      // Within the period: now; a period over: its last instant; a period ahead of the wall clock: its first.
      const start = end - (key.includes('-W') ? 7 * DAY_MS : DAY_MS)
      this.questAwards(s, Math.min(end - 1, Math.max(now, start)), ALL_METRICS, awards)
    }
    this.awardBadges(s, now, awards)
    this.rankUp(s, now, awards)
    this.push(awards)
  }

  /**
   * Awards computed when their events were folded, not yet durable, in event order: every queued event's rows in two
   * flat arrays, and per event where its rows end in each (two numbers an event), so rounds are cut at event
   * boundaries; events before queueHead are written. A replay folds every event before the writer's first round, so
   * this holds a whole history's awards at once (1.8M notifications at 1M calls): rows only, not an object and two
   * arrays per event. Rounds are taken by moving the head, never by splicing the front off (which copied the whole rest
   * once per round), and the arrays are compacted once the head passes half of them.
   */
  private queuedExperience: ExperienceRow[] = []
  private queuedNotifications: NotificationRow[] = []
  private queueEnds: number[] = []
  private queueHead = 0
  private writer: Promise<void> | null = null

  /** Events queued and not yet written. */
  private get queued(): number {
    return this.queueEnds.length / 2 - this.queueHead
  }

  /**
   * Queues an event's awards for the writer. Handlers stay synchronous (a replay of a million events is a fold, and a
   * live burst is not one fsync per event): the writer appends everything queued as one unit per round (group commit)
   * and retries a failed round with the same records, so nothing computed is ever dropped or computed twice.
   */
  private push(awards: Awards): void {
    if (awards.experience.length === 0 && awards.notifications.length === 0) return
    // One event's awards are one payer's. Another instance writes them: deferred, still staged (DeferredAwards.ts).
    const payer = (awards.experience[0] ?? awards.notifications[0])!.payer
    if (!this.writes(payer)) {
      this.deferred.add(payer, awards, Date.now())
      return
    }
    for (const r of awards.experience) this.queuedExperience.push(r)
    for (const n of awards.notifications) this.queuedNotifications.push(n)
    this.queueEnds.push(this.queuedExperience.length, this.queuedNotifications.length)
    this.startWriter()
  }

  private startWriter(): void {
    this.writer ??= this.drain().finally(() => {
      this.writer = null
      // Queued between the drain's last look and now: start again (a push in between found a writer and left it).
      if (this.queued > 0 && !this.closed) this.startWriter()
    })
  }

  private async drain(): Promise<void> {
    while (this.queued > 0) {
      const from = this.queueHead
      const to = Math.min(from + WRITE_ROUND, this.queueEnds.length / 2)
      const round = this.writesFor === null ? this.rows(from, to) : this.stillOwned(from, to)
      try {
        await ROUND_RETRY.run(() => this.write(round), {
          retryable: () => !this.closed,
          onRetry: (err, attempt) => log.error({ err, awards: round.experience.length + round.notifications.length, attempt }, 'arena awards not written; retrying'),
        })
      } catch (err) {
        log.error({ err, awards: round.experience.length + round.notifications.length }, 'arena awards not written; closing')
        return
      }
      // Taken only once written: a failed round stays at the head and is retried with the same records.
      this.queueHead = to
      this.compactQueue()
    }
  }

  /** The queued rows of events [from, to). */
  private rows(from: number, to: number): Awards {
    return {
      experience: this.queuedExperience.slice(from === 0 ? 0 : this.queueEnds[2 * from - 2]!, this.queueEnds[2 * to - 2]!),
      notifications: this.queuedNotifications.slice(from === 0 ? 0 : this.queueEnds[2 * from - 1]!, this.queueEnds[2 * to - 1]!),
    }
  }

  /**
   * Several instances: the queued rows of events [from, to) whose payer this instance still writes. An event queued
   * before its payer's partition moved on (a rebalance) is deferred instead, as if derived for another instance's payer:
   * the new owner's rows settle it. Narrows a moved partition's double write to a round already being sent.
   */
  private stillOwned(from: number, to: number): Awards {
    const kept: Awards = { experience: [], notifications: [] }
    for (let e = from; e < to; e++) {
      const event = this.rows(e, e + 1)
      const payer = (event.experience[0] ?? event.notifications[0])?.payer
      if (payer === undefined) continue
      if (this.writes(payer)) {
        kept.experience.push(...event.experience)
        kept.notifications.push(...event.notifications)
      } else this.deferred.add(payer, event, Date.now())
    }
    return kept
  }

  private compactQueue(): void {
    const events = this.queueEnds.length / 2
    if (this.queueHead === events) {
      this.queuedExperience = []
      this.queuedNotifications = []
      this.queueEnds = []
      this.queueHead = 0
    } else if (this.queueHead >= 65_536 && this.queueHead * 2 >= events) {
      const x = this.queueEnds[2 * this.queueHead - 2]!
      const n = this.queueEnds[2 * this.queueHead - 1]!
      this.queuedExperience = this.queuedExperience.slice(x)
      this.queuedNotifications = this.queuedNotifications.slice(n)
      this.queueEnds = this.queueEnds.slice(2 * this.queueHead).map((end, i) => end - (i % 2 === 0 ? x : n))
      this.queueHead = 0
    }
  }

  private async write(awards: Awards): Promise<void> {
    if (awards.experience.length === 0 && awards.notifications.length === 0) return
    const unit = new UnitOfWork()
    if (awards.experience.length > 0) unit.add(this.experience, awards.experience)
    if (awards.notifications.length > 0) unit.add(this.notes, awards.notifications)
    // The journals count the unit unsettled (no snapshot) until its effects are applied (CheckpointedFollowers).
    await unit.commit().then(() => this.applyAwards(awards))
  }

  private applyAwards(awards: Awards): void {
    for (const r of awards.experience) {
      this.projection.applyExperience(r)
      this.staged.delete(r.id)
      this.projection.payer(r.payer).xpStaged -= r.xp
    }
    for (const n of awards.notifications) {
      this.projection.applyNotification(n)
      this.staged.delete(n.key)
    }
  }

  private held(id: string): boolean {
    return this.staged.has(id) || this.projection.hasExperience(id)
  }

  private award(s: PayerState, row: Omit<ExperienceRow, 'payer'>, awards: Awards): boolean {
    if (this.held(row.id)) return false
    this.staged.add(row.id)
    s.xpStaged += row.xp
    awards.experience.push({ ...row, payer: s.payer })
    return true
  }

  /** The payload is built only for a notification not held yet: a restart re-derives a million that are. */
  private notify(s: PayerState, kind: string, ref: string, payload: () => Record<string, unknown>, at: number, awards: Awards): void {
    const key = `${kind}|${ref}|${s.payer}`
    if (this.staged.has(key) || this.projection.holdsNotification(s, kind, ref)) return
    this.staged.add(key)
    s.seq++
    // In the key order the journal stores it (canonical JSON): the feed shows the same bytes before and after a restart.
    const stored = JSON.parse(canonicalJson(payload())) as Record<string, unknown>
    awards.notifications.push({ key, payer: s.payer, id: s.seq, kind, ref, payload: stored, created_at: new Date(at).toISOString() })
  }

  /**
   * Quests on these metrics whose target the payer's counters now reach in the event's periods. A completion, once
   * held (staged or durable), is held for good, so the period's counters remember it (a bit per quest) and every later
   * event of the period skips it without building and looking up its id: a daily_correct_1 is reached again by every
   * correct call of the day.
   */
  private questAwards(s: PayerState, at: number, metrics: readonly QuestMetric[], awards: Awards): void {
    for (let i = 0; i < QUESTS.length; i++) {
      const q = QUESTS[i]!
      if (!metrics.includes(q.metric)) continue
      const period = questPeriod(q.cadence, at)
      const counters = s.counters.get(period.key)
      if (!counters || ((counters.questsHeld ?? 0) & QUEST_BITS[i]!) !== 0 || measure(q.metric, counters) < q.target) continue
      const ref = `${q.key}:${period.key}`
      const iso = new Date(at).toISOString()
      if (this.award(s, { id: questAwardId(q.key, period.key, s.payer), kind: 'quest', xp: q.xp, ref, level: null, created_at: iso }, awards)) {
        this.notify(s, 'quest_complete', ref, () => ({ quest: q.key, title: q.title, period_key: period.key, xp: q.xp }), at, awards)
      }
      counters.questsHeld = (counters.questsHeld ?? 0) | QUEST_BITS[i]!
    }
  }

  /**
   * Whether a badge is held (durable or staged). Holding is for good (an id staged is written or retried, never
   * dropped; a durable one stays), so a yes is kept in the payer's bit mask and the id never looked up again: every
   * event asks this of every badge whose rule holds, a million times over in a replay.
   */
  private badgeHeld(s: PayerState, key: string): boolean {
    const bit = BADGE_BITS.get(key)!
    if ((s.badgesHeld & bit) !== 0) return true
    if (!this.held(badgeAwardId(key, s.payer))) return false
    s.badgesHeld |= bit
    return true
  }

  private awardBadges(s: PayerState, at: number, awards: Awards): void {
    for (const b of this.projection.newBadges(s, (key) => this.badgeHeld(s, key))) {
      const iso = new Date(at).toISOString()
      if (this.award(s, { id: badgeAwardId(b.key, s.payer), kind: 'badge', xp: b.xp, ref: b.key, level: null, created_at: iso }, awards)) {
        this.notify(s, 'badge_earned', b.key, () => ({ badge: b.key, title: b.title, xp: b.xp }), at, awards)
      }
    }
  }

  /** A rank_up notification when durable plus staged XP passes a rank not yet announced (one per rank reached). */
  private rankUp(s: PayerState, at: number, awards: Awards): void {
    const i = rankIndexOf(s.xp + s.xpStaged)
    if (i <= s.rankNotified) return
    s.rankNotified = i
    const r = RANKS[i]!
    this.notify(s, 'rank_up', r.name, () => ({ rank: r.name, xp: s.xp + s.xpStaged, discount: r.discount }), at, awards)
  }

  private checkRankUp(s: PayerState, at: number): void {
    const awards: Awards = { experience: [], notifications: [] }
    this.rankUp(s, at, awards)
    this.push(awards)
  }

  // ---- the paid ask -----------------------------------------------------------------------------------------------

  /**
   * Ask XP for a paid decision, staged in the paid call's own unit of work: written atomically with the decision and
   * the payment, or not at all. The payer comes from the payment (the decision record carries none). At most
   * ASK_XP_DAILY_CAP asks per payer per UTC day earn XP; a re-served decision is never passed here (it is not charged).
   */
  recordAskIn(unit: UnitOfWork, payment: PaidCall, ask: Ask): void {
    if (!payment.payer) return
    const s = this.projection.payer(payment.payer)
    const id = `ask:${ask.decision_id}`
    if (this.held(id)) return
    const now = this.clock.now()
    const day = new Date(now).toISOString().slice(0, 10)
    if (s.askDay !== day) {
      s.askDay = day
      s.askCount = 0
    }
    if (s.askCount >= ASK_XP_DAILY_CAP) return
    const level = levelForCredits(DECISION_BASE_CREDITS)
    const row: ExperienceRow = { id, payer: s.payer, kind: 'ask', xp: level.ask_xp, ref: ask.decision_id, level: level.level, created_at: new Date(now).toISOString() }
    s.askCount++
    s.xpStaged += row.xp
    this.staged.add(id)
    unit.add(this.experience, [row], {
      applied: () => {
        this.staged.delete(id)
        s.xpStaged -= row.xp
        // applyExperience counts the ask toward the day again: undo the reservation's count first.
        s.askCount--
        this.projection.applyExperience(row)
        this.checkRankUp(s, now)
      },
      aborted: () => {
        this.staged.delete(id)
        s.xpStaged -= row.xp
        if (s.askDay === day) s.askCount--
      },
    })
  }

  // ---- prices -----------------------------------------------------------------------------------------------------

  /** The rank discount of a payer's credits price (only the premium above the judgment floor is discounted). */
  creditsFor(payer: string, credits: number): number {
    const s = this.projection.peek(payer)
    return s ? discountedCredits(credits, rankOf(s.xp).discount) : credits
  }

  // ---- counts for the operator funnel (it is the funnel's ArenaFunnelSource) ---------------

  /** Experience awards recorded, by kind (rows of the journal, not XP points). */
  xpAwardsByKind(): Record<string, number> {
    return { ...this.projection.awardsByKind }
  }

  questCompletions(): number {
    return this.projection.awardsByKind.quest ?? 0
  }

  badgeAwards(): number {
    return this.projection.awardsByKind.badge ?? 0
  }

  // ---- reads ------------------------------------------------------------------------------------------------------

  levels() {
    return this.projection.levels()
  }

  profile(payer: string) {
    return this.projection.profile(payer, this.clock.now())
  }

  quests(payer: string) {
    return this.projection.questBoard(payer, this.clock.now())
  }

  nextAction(payer: string) {
    return this.projection.nextAction(payer, this.clock.now())
  }

  season(seasonKey?: string) {
    return this.projection.season(this.clock.now(), seasonKey)
  }

  leaderboard(q: { sort: BoardSort; track: BoardTrack; scope: BoardScope; limit: number }) {
    return this.projection.leaderboard(q, this.clock.now())
  }

  card(publicId: string) {
    return this.projection.card(publicId, this.clock.now())
  }

  notifications(payer: string, q: { limit?: number; cursor?: string | null } = {}) {
    return this.projection.notifications(payer, q, this.cold)
  }

  preferences(payer: string) {
    return { payer: payer.toLowerCase(), preferences: this.projection.preferences(payer) }
  }

  // ---- settings ---------------------------------------------------------------------------------------------------

  private async setting(payer: string, row: Pick<ArenaSettingRow, 'kind'> & Partial<ArenaSettingRow>): Promise<void> {
    const full: ArenaSettingRow = {
      id: `as_${randomUUID()}`, payer: payer.toLowerCase(), kind: row.kind, value: row.value ?? null, preferences: row.preferences ?? null,
      ids: row.ids ?? null, through: row.through ?? null, created_at: new Date(this.clock.now()).toISOString(),
    }
    await this.settings.append([full]).then(() => this.projection.applySetting(full))
  }

  async optIn(payer: string, optIn: boolean) {
    await this.setting(payer, { kind: 'opt_in', value: optIn })
    const s = this.projection.payer(payer)
    return { payer: s.payer, board_opt_in: s.optedIn, public_id: this.projection.profile(payer, this.clock.now()).public_id }
  }

  async setAgent(payer: string, isAgent: boolean) {
    await this.setting(payer, { kind: 'agent', value: isAgent })
    return { payer: payer.toLowerCase(), is_agent: this.projection.payer(payer).isAgent }
  }

  async setPreferences(payer: string, preferences: Record<string, boolean>) {
    await this.setting(payer, { kind: 'preferences', preferences })
    return this.preferences(payer)
  }

  /** Marks the ids given (or every unread one) as read; a mark that would change nothing writes nothing. */
  async markRead(payer: string, ids: number[] | null) {
    // Decided from the running marks (issue 31): an id that left memory is marked as exactly as a hot one.
    const changing = this.projection.markable(payer, ids)
    if (changing.count > 0) {
      // "Every unread" means every durable one now: a notification still being written gets a later id and stays unread.
      await this.setting(payer, ids ? { kind: 'read', ids: changing.ids } : { kind: 'read', through: changing.through })
    }
    return { payer: payer.toLowerCase(), marked: changing.count, unread_count: await this.projection.unreadShown(payer, this.cold) }
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    if (this.expiry) clearInterval(this.expiry)
    for (const s of this.subscriptions) s.unsubscribe()
    // Awards still queued are not lost: they are recomputed from the replayed events at the next start.
    await this.writer
    // The final snapshot (skipped when awards are left unwritten: their events are folded again from the last one).
    await this.followers?.stop()
    await Promise.all([this.experience.close(), this.notes.close(), this.settings.close()])
  }
}
