/**
 * The Arena's in-memory projection: a fold of the three Arena journals (experience, notifications, settings) and the
 * duel's call events, and every read the routes answer from it. No I/O and no clock of its own: reads take `now`, so
 * a test holds time still and a restart (the same records and events folded again) answers the same.
 *
 * Ranks are derived at read time from XP (never stored); boards are sorted once per change and cached, so a read is a
 * lookup and a slice.
 */
import { deepFreeze } from '../../common/deepFreeze.ts'
import { sharedTexts } from '../../common/sharedTexts.ts'
import { encodeCursor } from '../../common/Cursor.ts'
import { CURSOR_FIELD, decodePosition, pageOf } from '../../common/pageCursor.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import type { CallGraded, CallLocked } from '../duel/index.ts'
import type { ArenaSettingRow } from '../../pipeline/records/arenaSettingRecord.ts'
import type { ExperienceRow } from '../../pipeline/records/experienceRecord.ts'
import type { NotificationRow } from '../../pipeline/records/notificationRecord.ts'
import { BADGES, houseLeanedAgainst } from './badges.ts'
import { handleOf } from '../duel/index.ts'
import { publicIdOf } from './handles.ts'
import { JUDGMENT_FLOOR_CREDITS } from '../billing/index.ts'
import { ASK_XP_DAILY_CAP, LEVELS, RANKS, rankIndexOf, rankOf } from './levels.ts'
import { isoWeekByKey, isoWeekOf, periodOverBy, type Period } from './periods.ts'
import { QUESTS, emptyCounters, measure, questPeriod } from './quests.ts'
import { flagAt, PayerState, type ReadMark, type SeasonStats } from './PayerState.ts'
import { derivedKey, HotNotification } from './HotNotification.ts'
import type { ColdFeed, ColdScope } from './ColdFeed.ts'
import type { StateStore } from '../../pipeline/state/StateStore.ts'
import type { PeriodCounters } from './quests.ts'

export type BoardSort = 'xp' | 'accuracy' | 'streak'
export type BoardTrack = 'human' | 'agent'
export type BoardScope = 'lifetime' | 'season'

/** Notification kinds the Arena writes (docs/arena.md); preferences may name these and any other kind. */
export const NOTIFICATION_KINDS = ['call_resolved', 'quest_complete', 'badge_earned', 'rank_up', 'streak_extended', 'streak_ended'] as const

/** The kinds' names as held strings, to share with rows read back from the journal. */
const KIND_NAMES = new Map<string, string>(NOTIFICATION_KINDS.map((k) => [k, k]))

/** A bit per kind the Arena writes: a payer's feed index holds, per ref, the kinds of its rows (PayerState.feedRefs). */
const KIND_BITS = new Map<string, number>(NOTIFICATION_KINDS.map((k, i) => [k, 1 << i]))

export const FEED_LIMIT = 50
/** The notification history's cursor scope: positions are [payer, id]; a page lists the ids below it. */
const NOTIFICATIONS_CURSOR = 'notifications'
export const SEASON_BOARD_LIMIT = 50
export const RECENT_COMPLETIONS = 10

export interface BoardRow {
  rank: number
  handle: string
  public_id: string
  title: string
  xp: number
  calls: number
  graded: number
  correct: number
  accuracy: number | null
  streak: number
  longest_streak: number
}

export interface BoardAnswer {
  readonly sort: BoardSort
  readonly track: BoardTrack
  readonly scope: BoardScope
  readonly rows: readonly BoardRow[]
}

export interface SeasonRow {
  rank: number
  handle: string
  public_id: string
  xp: number
  calls: number
  graded: number
  correct: number
  accuracy: number | null
}

const iso = (ms: number) => new Date(ms).toISOString()
const lower = (payer: string) => payer.toLowerCase()

/** Ids per row of the id lists in a snapshot (a million calls: a hundred rows, not one line of 40 MB). */
const IDS_PER_ROW = 10_000

export class ArenaProjection implements StateStore {
  /** The Arena's state store (issue 31; Arena.ts tells when a snapshot of it is consistent). */
  readonly name = 'arena.projection'
  /**
   * 3: the feed keeps the hot window and the read marks are compact (issue 31, Bounded memory). 4: so do the award ids
   * (asks with their instant), the quest completions and the period counters. 5: a notification's payload is its JSON
   * text (HotNotification: what the feed holds, so a load neither parses nor re-serializes it).
   */
  readonly schema = 5
  /** The newest graded_at folded (ms): graded calls older than it minus the window leave the id sets; null: none. */
  private newest: number | null = null
  /** The newest value the payers' graded lists were last trimmed at. */
  private trimmedAt: number | null = null

  /**
   * hotWindowMs (SVC_HOT_WINDOW_DAYS, issue 31): how long a graded call's id stays folded, in event time after the newest
   * grade; the duel's is the same window measured from its newest resolution (never older than this one's newest),
   * so no id leaves here that the duel's replay could deliver again. Infinity: every id stays.
   */
  constructor(private readonly options: { hotWindowMs: number; evictable?: () => boolean } = { hotWindowMs: Infinity }) {}
  /**
   * Notifications created before this instant (ms) left memory at the last eviction; null: none did. Not state: the
   * drop waits for the sink (evictable), the snapshot never holds a notification past the window either way.
   */
  private evictedBefore: number | null = null
  /**
   * While the journals are read at an open, notifications created before this instant (ms) leave memory as they are
   * read instead of after the grades are folded (coldFrom); null: none. Not state.
   */
  private coldBefore: number | null = null
  /** Whether a row was read cold since coldFrom was set: its key is held until the open ends (coldFrom(null)). */
  private readCold = false
  readonly payers = new Map<string, PayerState>()
  /**
   * Experience ids held (the first record per id counts; a later duplicate is ignored), but asks': a correct call's
   * leaves with the call (trim), a quest's once its period ended before the window, a badge's never (one per badge).
   */
  private readonly experienceIds = new Set<string>()
  /** Ask awards' ids with their instant (ms): the id names the decision, not when, and an ask leaves at the window. */
  private readonly askIds = new Map<string, number>()
  /** Quest award ids by period key: a period's leave together once it ended before the window. */
  private readonly questIdsByPeriod = new Map<string, string[]>()
  /** Experience rows (awards, not XP points) by kind: what the operator funnel counts as xp_award, quest and badge steps. */
  readonly awardsByKind: Record<string, number> = {}
  /**
   * The notification keys held (the journal identity: a replayed event does not notify twice), without a string of
   * their own: a row whose key is the derived kind|ref|payer of its feed's owner (every row the Arena writes) is found
   * by its ref and kind in the owner's feed index (PayerState.feedRefs, keyed by the row's own ref string); any other
   * row's key is held here as it came.
   */
  private readonly otherKeys = new Set<string>()
  /**
   * One copy of each text the feed's rows repeat: their payloads' parts around the ref (HotNotification) and their
   * instants. A hot window of a million calls repeats fewer than 2,000 parts and ~1,000 instants, so the table is
   * bounded (it starts over when full: what it shared stays shared).
   */
  private readonly feedText = sharedTexts(8192)
  private readonly lockedCalls = new Set<string>()
  private readonly gradedCalls = new Set<string>()
  private readonly byPublicId = new Map<string, string>()
  /** Setting record ids applied: a setting re-read in a restored state's tail is not applied twice (opt-in history). */
  private readonly settingIds = new Set<string>()
  /** Bumped by every change a board could show; board caches are keyed by it. */
  private version = 0
  private readonly boards = new Map<string, { version: number; rows: BoardRow[]; byLimit: Map<number, BoardAnswer> }>()
  private readonly seasonBoards = new Map<string, { version: number; human: SeasonRow[]; agent: SeasonRow[]; rankOf: Map<string, number> }>()

  payer(payer: string): PayerState {
    // Keys are lower case, so a hit on the string as given is the lower-cased one's hit (and skips lower-casing it).
    const hit = this.payers.get(payer)
    if (hit) return hit
    const key = lower(payer)
    let s = this.payers.get(key)
    if (!s) {
      s = new PayerState(key)
      this.payers.set(key, s)
      this.byPublicId.set(publicIdOf(key), key)
    }
    return s
  }

  peek(payer: string): PayerState | undefined {
    return this.payers.get(payer) ?? this.payers.get(lower(payer))
  }

  hasExperience(id: string): boolean {
    return this.experienceIds.has(id) || this.askIds.has(id)
  }

  /**
   * Holds an award's id unless it is already past the window: an award applied after its call was trimmed (its write
   * queued behind a replay that moved the window on) or of a period that is over is never re-derived, and a rebuild,
   * which reads every id before the window moves, drops it at the trim: both end holding the same ids.
   */
  private holdExperience(id: string, kind: string, at: number): void {
    const cutoff = this.cutoff()
    if (cutoff !== null && at < cutoff && (kind === 'ask' || id.startsWith('call:'))) return
    if (kind === 'ask') {
      this.askIds.set(id, at)
      return
    }
    const period = questPeriodOfId(id)
    if (period !== null && cutoff !== null && periodOverBy(period, cutoff)) return
    this.experienceIds.add(id)
    if (period === null) return
    const ids = this.questIdsByPeriod.get(period)
    if (ids) ids.push(id)
    else this.questIdsByPeriod.set(period, [id])
  }

  /** Whether a notification of this key is held (in a feed, hot). */
  hasNotification(key: string): boolean {
    if (this.otherKeys.has(key)) return true
    // An indexed row's kind and payer hold no '|' (indexBit), so its key splits back into one (kind, ref, payer).
    const i = key.indexOf('|')
    const j = key.lastIndexOf('|')
    if (i < 0 || j === i) return false
    const bit = KIND_BITS.get(key.slice(0, i))
    if (bit === undefined) return false
    const refs = this.payers.get(key.slice(j + 1))?.feedRefs
    return refs != null && ((refs.get(key.slice(i + 1, j)) ?? 0) & bit) !== 0
  }

  /** hasNotification(kind|ref|payer of s) without building the key (the Arena's writer asks for every event it folds). */
  holdsNotification(s: PayerState, kind: string, ref: string): boolean {
    const bit = KIND_BITS.get(kind)
    if (bit === undefined || s.payer.includes('|')) return this.hasNotification(derivedKey(kind, ref, s.payer))
    if (((s.feedRefs?.get(ref) ?? 0) & bit) !== 0) return true
    return this.otherKeys.size > 0 && this.otherKeys.has(derivedKey(kind, ref, s.payer))
  }

  /** The kind's bit when the row is found through its feed's index, 0 when its key is held in otherKeys. */
  private indexBit(s: PayerState, n: HotNotification): number {
    if (!n.keyDerived || n.payer !== s.payer || s.payer.includes('|')) return 0
    return KIND_BITS.get(n.kind) ?? 0
  }

  private holdKey(s: PayerState, n: HotNotification): void {
    this.holdKeyOf(s, n.ref, this.indexBit(s, n), n.key)
  }

  /** Holds a key: in the payer's ref index under the kind's bit, or whole in otherKeys (bit 0). */
  private holdKeyOf(s: PayerState, ref: string, bit: number, key: string): void {
    if (bit === 0) {
      this.otherKeys.add(key)
      return
    }
    const refs = (s.feedRefs ??= new Map())
    refs.set(ref, (refs.get(ref) ?? 0) | bit)
  }

  private dropKey(s: PayerState, n: HotNotification): void {
    const bit = this.indexBit(s, n)
    if (bit === 0) {
      this.otherKeys.delete(n.key)
      return
    }
    const left = (s.feedRefs?.get(n.ref) ?? 0) & ~bit
    if (left === 0) s.feedRefs?.delete(n.ref)
    else s.feedRefs!.set(n.ref, left)
  }

  /** Whether a graded (or void) call is folded: a restored state skips the duel's replay of it before sorting. */
  hasGraded(callId: string): boolean {
    return this.gradedCalls.has(callId)
  }

  // ---- the state store (pipeline/state/StateStore.ts) ---------------------------------------------------------------

  /**
   * The state as rows: the award counts, one row per payer (in payer order; lists in the order they are kept, maps in
   * key order), then the experience ids and the locked call ids, sorted, in rows of IDS_PER_ROW. What is derivable is
   * left out and rebuilt by load: graded call ids (the payers' graded lists), notification keys (their feeds), public
   * ids; and so are the memo bits (badgesHeld, questsHeld: re-learned by a look-up) and staged XP (a snapshot is taken
   * only with nothing staged).
   */
  *rows(): Iterable<unknown> {
    yield { t: 'kinds', kinds: Object.keys(this.awardsByKind).sort().map((k) => [k, this.awardsByKind[k]]), newest: this.newest }
    // Written as trimmed at the window whether or not a trim ran yet, so equal states give equal rows.
    const cutoff = this.cutoff()
    const outside = new Set<string>()
    for (const key of [...this.payers.keys()].sort()) {
      const s = this.payers.get(key)!
      const trimmed = cutoff === null ? { list: s.gradedList, prefix: s.prefix } : s.trimmedAt(cutoff)
      const periods = cutoff === null ? { completions: s.completions, counters: [...s.counters.keys()] } : periodsAt(s, cutoff)
      for (let i = 0; i < s.gradedList.length - trimmed.list.length; i++) outside.add(s.gradedList[i]!.call_id)
      const hot = cutoff === null ? s.notifications : s.notifications.filter((n) => Date.parse(n.created_at) >= cutoff)
      let coldMax = s.coldMax
      if (hot !== s.notifications) for (const n of s.notifications) if (n.id > coldMax && Date.parse(n.created_at) < cutoff!) coldMax = n.id
      yield {
        t: 'payer', payer: s.payer, xp: s.xp, badges: s.badges, completions: periods.completions.map((c) => [c.quest, c.period_key, c.xp, c.completed_at]),
        calls: s.calls, graded: s.graded, correct: s.correct, voided: s.voided, beat_house: s.beatHouse, markets: s.markets,
        graded_list: trimmed.list.map((g) => [g.call_id, g.at, g.correct]), prefix: [trimmed.prefix.streak, trimmed.prefix.longest], streak: s.streak, longest: s.longest,
        counters: periods.counters.sort().map((k) => { const c = s.counters.get(k)!; return [k, c.calls_locked, c.correct_calls, c.markets] }),
        seasons: [...s.seasons.keys()].sort().map((k) => { const x = s.seasons.get(k)!; return [k, x.xp, x.calls, x.graded, x.correct] }),
        opt_in: s.optIn.map((f) => [f.at, f.value]), agent: s.agent.map((f) => [f.at, f.value]),
        preferences: Object.keys(s.preferences).sort().map((k) => [k, s.preferences[k]]),
        // The feed of the window (written as evicted at the window whether or not the drop ran yet): a tuple, the
        // key and payer only where they are not the ones derived.
        notifications: hot.map((n) => {
          const row: unknown[] = [n.id, n.kind, n.ref, n.payloadText, n.created_at]
          if (!n.keyDerived || n.payer !== s.payer) row.push(n.key, n.payer)
          return row
        }),
        read_at: hot.filter((n) => s.readAt.has(n.id)).map((n) => n.id).sort((a, b) => a - b).map((id) => [id, s.readAt.get(id)]),
        seq: s.seq, last_id: s.lastId, cold_max: coldMax, read_through: s.readThrough, read_ids: [...s.readIds].sort((a, b) => a - b),
        marks: (cutoff === null ? s.marks : s.marks.filter((m) => Date.parse(m.at) >= cutoff)).map((m) => [m.at, m.through, m.ids]),
        rank_notified: s.rankNotified, ask_day: s.askDay, ask_count: s.askCount,
      }
    }
    // The award ids as trimmed at the window too: a call's with the call, a quest's with its period.
    const awardsOut = new Set<string>()
    if (cutoff !== null) {
      for (const id of outside) awardsOut.add(`call:${id}`)
      for (const [period, ids] of this.questIdsByPeriod) if (periodOverBy(period, cutoff)) for (const id of ids) awardsOut.add(id)
    }
    for (const [t, set, out] of [['experience_ids', this.experienceIds, awardsOut], ['locked_calls', this.lockedCalls, outside], ['setting_ids', this.settingIds, null]] as const) {
      const ids = (out === null || out.size === 0 ? [...set] : [...set].filter((id) => !out.has(id))).sort()
      for (let i = 0; i < ids.length; i += IDS_PER_ROW) yield { t, ids: ids.slice(i, i + IDS_PER_ROW) }
    }
    const asks = [...this.askIds].filter(([, at]) => cutoff === null || at >= cutoff).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    for (let i = 0; i < asks.length; i += IDS_PER_ROW) yield { t: 'ask_ids', ids: asks.slice(i, i + IDS_PER_ROW) }
  }

  /** Replaces the (empty) state with a snapshot's rows; every row is checked before anything changes. */
  load(rows: readonly unknown[]): void {
    if (this.payers.size > 0 || this.experienceIds.size > 0 || this.askIds.size > 0) throw new Error('the Arena projection already holds state')
    const payers: PayerState[] = []
    const ids: Record<'experience_ids' | 'locked_calls' | 'setting_ids', string[][]> = { experience_ids: [], locked_calls: [], setting_ids: [] }
    const asks: Array<Array<[string, number]>> = []
    const one = sharedTexts()
    let kinds: Array<[string, number]> | null = null
    let newest: number | null = null
    rows.forEach((raw, i) => {
      try {
        const r = raw as Record<string, any>
        if (r?.t === 'kinds') {
          kinds = pairs(r.kinds, isNum)
          if (r.newest !== null && !isNum(r.newest)) throw new Error('newest is not a number')
          newest = r.newest as number | null
        }
        else if (r?.t === 'payer') payers.push(payerOf(r, one, this.feedText))
        else if (r?.t === 'experience_ids' || r?.t === 'locked_calls' || r?.t === 'setting_ids') ids[r.t as keyof typeof ids].push(strings(r.ids, r.t === 'locked_calls' ? one : undefined))
        else if (r?.t === 'ask_ids') asks.push(pairs(r.ids, isNum))
        else throw new Error(`unknown row kind ${JSON.stringify(r?.t)}`)
      } catch (err) {
        throw new Error(`row ${i}: ${(err as Error).message}`)
      }
    })
    if (kinds === null) throw new Error('no award counts row')
    for (const [k, n] of kinds as Array<[string, number]>) this.awardsByKind[k] = n
    this.newest = newest
    this.trimmedAt = newest
    // The snapshot holds the feed of the window only: what is older is read from the Parquet.
    this.evictedBefore = this.cutoff()
    for (const s of payers) {
      this.payers.set(s.payer, s)
      this.byPublicId.set(publicIdOf(s.payer), s.payer)
      for (const g of s.gradedList) this.gradedCalls.add(g.call_id)
      for (const n of s.notifications) this.holdKey(s, n)
    }
    for (const chunk of ids.experience_ids) for (const id of chunk) this.holdExperience(id, 'award', Number.POSITIVE_INFINITY)
    for (const chunk of asks) for (const [id, at] of chunk) this.askIds.set(id, at)
    for (const chunk of ids.locked_calls) for (const id of chunk) this.lockedCalls.add(id)
    for (const chunk of ids.setting_ids) for (const id of chunk) this.settingIds.add(id)
    this.version++
  }

  // ---- folds ------------------------------------------------------------------------------------------------------

  applyExperience(row: ExperienceRow): void {
    if (this.hasExperience(row.id)) return
    const at = Date.parse(row.created_at)
    this.holdExperience(row.id, row.kind, at)
    this.awardsByKind[row.kind] = (this.awardsByKind[row.kind] ?? 0) + 1
    const s = this.payer(row.payer)
    s.xp += row.xp
    s.season(isoWeekOf(at).key).xp += row.xp
    if (row.kind === 'badge') s.badges.push(row.ref)
    else if (row.kind === 'quest') {
      const [quest, period_key] = splitQuestRef(row.ref)
      s.completions.push({ quest, period_key, xp: row.xp, completed_at: row.created_at })
    } else if (row.kind === 'ask') {
      const day = row.created_at.slice(0, 10)
      if (s.askDay !== day) {
        s.askDay = day
        s.askCount = 0
      }
      s.askCount++
    }
    this.version++
  }

  /** Told of every notification as it enters the feed (the payer-scoped live stream, product/arena/notificationStream.ts). */
  onNotification: ((row: NotificationRow) => void) | null = null

  /**
   * Before an open reads the journals: the window's start the folded grades will set (the call history's newest grade
   * less the window, CallEvents.newestGrade), so a rebuild holds no row it would drop once the grades are folded (at
   * 365 days a rebuild held all 2,039,715 notifications of the year, 2.3 GiB, before its first trim). It must not be
   * later than that start: a row dropped here would otherwise be missing from the snapshot's window. null: ends it.
   */
  coldFrom(at: number | null): void {
    this.coldBefore = at
    if (at !== null || !this.readCold) return
    // The open is over: the keys of rows read cold leave with them (held, they kept the fold from awarding them again).
    this.readCold = false
    this.otherKeys.clear()
    for (const s of this.payers.values()) {
      s.feedRefs = null
      for (const n of s.notifications) this.holdKey(s, n)
    }
  }

  applyNotification(row: NotificationRow): void {
    if (this.hasNotification(row.key)) return
    const s = this.payer(row.payer)
    // One payer's records sit on one partition in id order, so an id not above the newest applied is a copy (a
    // retried append) of one that left memory with its key.
    if (row.id <= s.lastId) return
    if (this.coldBefore !== null && Date.parse(row.created_at) < this.coldBefore && (this.options.evictable?.() ?? true)) {
      // Read and dropped at once, as evict() drops a held row: its running state stays, the row is read back cold. Its
      // key stays until the open ends: the history fold derives its award again and must find it written.
      const derived = row.key === derivedKey(row.kind, row.ref, row.payer) && row.payer === s.payer && !s.payer.includes('|')
      this.holdKeyOf(s, row.ref, derived ? (KIND_BITS.get(row.kind) ?? 0) : 0, row.key)
      this.readCold = true
      this.count(s, row)
      if (row.id > s.coldMax) s.coldMax = row.id
      if (this.evictedBefore === null || this.coldBefore > this.evictedBefore) this.evictedBefore = this.coldBefore
      return
    }
    // A row read back from the journal brings its own copies of the payer and the kind; the feed holds every row (a
    // million at a restart), so it keeps the copies already held instead (same text, one string).
    if (row.payer === s.payer) row.payer = s.payer
    row.kind = KIND_NAMES.get(row.kind) ?? row.kind
    row.created_at = this.feedText(row.created_at)
    const n = HotNotification.of(row, this.feedText)
    this.holdKey(s, n)
    s.notifications.push(n)
    this.count(s, row)
    // Marked read before it was applied (a replica read the mark first: applyRead): read since the first mark naming it.
    if (s.isRead(n.id)) {
      const mark = s.marks.find((m) => (m.ids ? m.ids.includes(n.id) : n.id <= m.through))
      if (mark) s.readAt.set(n.id, mark.at)
    }
    this.onNotification?.(row)
  }

  /** A notification's running state, held or left cold: the newest id, the sequence, the highest rank notified. */
  private count(s: PayerState, row: NotificationRow): void {
    s.lastId = row.id
    if (row.id > s.seq) s.seq = row.id
    if (row.kind === 'rank_up') {
      const i = RANKS.findIndex((r) => r.name === row.ref)
      if (i > s.rankNotified) s.rankNotified = i
    }
  }

  applySetting(row: ArenaSettingRow): void {
    if (this.settingIds.has(row.id)) return
    this.settingIds.add(row.id)
    const s = this.payer(row.payer)
    const at = Date.parse(row.created_at)
    if (row.kind === 'opt_in') s.optIn.push({ at, value: row.value === true })
    else if (row.kind === 'agent') s.agent.push({ at, value: row.value === true })
    else if (row.kind === 'preferences') Object.assign(s.preferences, row.preferences ?? {})
    else if (row.kind === 'read') {
      this.applyRead(s, row)
      return
    }
    this.version++
  }

  /**
   * A read mark, on the compact marks (issue 31): a mark-all raises "read through" to its id and clears the ids marked
   * one by one below it; a mark by ids adds those above it. Hot rows it newly covers get their read_at; cold ones take
   * theirs from the marks (ColdFeed.readAt, and `marks`).
   *
   * The mark is applied as written, not clamped to the newest id applied here: its writer (Arena.markRead, the payer's
   * owner) chose its ids among those it held, so "later ones stay unread" was decided there. A replica reads the
   * settings and the notifications journals apart (issue 32), and may read a mark before the notifications it names;
   * clamped, that mark was lost on the replica (its unread count differed from the owner's until a restart). Rows
   * applied after their mark take their read_at from it (applyNotification).
   */
  private applyRead(s: PayerState, row: ArenaSettingRow): void {
    if (row.ids) {
      const changed: number[] = []
      for (const id of row.ids) {
        if (id < 1 || s.isRead(id)) continue
        s.readIds.add(id)
        changed.push(id)
      }
      if (changed.length === 0) return
      const wanted = new Set(changed)
      for (const n of s.notifications) if (wanted.has(n.id) && !s.readAt.has(n.id)) s.readAt.set(n.id, row.created_at)
      s.marks.push({ ids: changed, through: 0, at: row.created_at })
      return
    }
    const through = row.through ?? 0
    if (through <= s.readThrough) return
    for (const n of s.notifications) if (n.id > s.readThrough && n.id <= through && !s.readAt.has(n.id)) s.readAt.set(n.id, row.created_at)
    s.readThrough = through
    for (const id of s.readIds) if (id <= through) s.readIds.delete(id)
    s.marks.push({ ids: null, through, at: row.created_at })
  }

  /** A locked call; false when already folded (events are at-least-once). */
  applyLocked(e: CallLocked): boolean {
    if (this.lockedCalls.has(e.call_id)) return false
    this.lockedCalls.add(e.call_id)
    const s = this.payer(e.payer)
    const at = Date.parse(e.locked_at)
    s.calls++
    // concat, not push: an exact-size array (a push grows a handful of assets to room for 17, for a million counters).
    if (!s.markets.includes(e.asset)) s.markets = s.markets.concat(e.asset)
    for (const p of [questPeriod('daily', at), questPeriod('weekly', at)]) {
      const c = this.counters(s, p.key)
      c.calls_locked++
      if (!c.markets.includes(e.asset)) c.markets = c.markets.concat(e.asset)
    }
    s.season(isoWeekOf(at).key).calls++
    this.version++
    return true
  }

  /** Event time (ms) before which graded calls' ids left the folded sets; null: none did. */
  cutoff(): number | null {
    return this.newest === null ? null : this.newest - this.options.hotWindowMs
  }

  /** The newest graded_at folded (ms); null before any. */
  get newestGraded(): number | null {
    return this.newest
  }

  /** Trims every payer's graded list at the window, and drops the trimmed calls' ids (they cannot come back). */
  trim(): void {
    const cutoff = this.cutoff()
    if (cutoff === null) return
    this.trimmedAt = this.newest
    for (const s of this.payers.values()) {
      for (const id of s.trim(cutoff)) {
        this.gradedCalls.delete(id)
        this.lockedCalls.delete(id)
        this.experienceIds.delete(`call:${id}`)
      }
      const periods = periodsAt(s, cutoff)
      if (periods.completions !== s.completions) s.completions = periods.completions
      if (periods.counters.length < s.counters.size) for (const k of [...s.counters.keys()]) if (periodOverBy(k, cutoff)) s.counters.delete(k)
    }
    for (const [period, ids] of this.questIdsByPeriod) {
      if (!periodOverBy(period, cutoff)) continue
      for (const id of ids) this.experienceIds.delete(id)
      this.questIdsByPeriod.delete(period)
    }
    for (const [id, at] of this.askIds) if (at < cutoff) this.askIds.delete(id)
    if (this.options.evictable?.() ?? true) this.evict(cutoff)
  }

  /**
   * Drops the notifications created before `cutoff` (and the read marks made before it) from every payer's feed:
   * they are in the sealed Parquet (the drop runs only while the sink is sealing), read back by ColdFeed.
   */
  private evict(cutoff: number): void {
    for (const s of this.payers.values()) {
      if (s.notifications.length > 0 && s.notifications.some((n) => Date.parse(n.created_at) < cutoff)) {
        const kept: HotNotification[] = []
        for (const n of s.notifications) {
          if (Date.parse(n.created_at) >= cutoff) kept.push(n)
          else {
            this.dropKey(s, n)
            s.readAt.delete(n.id)
            if (n.id > s.coldMax) s.coldMax = n.id
          }
        }
        s.notifications = kept
      }
      if (s.marks.length > 0 && Date.parse(s.marks[0]!.at) < cutoff) s.marks = s.marks.filter((m) => Date.parse(m.at) >= cutoff)
    }
    // Never back: rows read cold at an open (coldFrom) may lie past a trim's cutoff while the grades are folded.
    if (this.evictedBefore === null || cutoff > this.evictedBefore) this.evictedBefore = cutoff
  }

  /** A graded or void call; null when already folded, else the streak before it. */
  applyGraded(e: CallGraded): { streakBefore: number } | null {
    if (this.gradedCalls.has(e.call_id)) return null
    this.gradedCalls.add(e.call_id)
    const s = this.payer(e.payer)
    const at = Date.parse(e.graded_at)
    if (this.newest === null || at > this.newest) {
      this.newest = at
      // A trim walks every payer: once the window moved by a tenth of itself.
      if (Number.isFinite(this.options.hotWindowMs) && (this.trimmedAt === null || at - this.trimmedAt >= this.options.hotWindowMs / 10)) this.trim()
    }
    const streakBefore = s.streak
    const correct = e.status === 'void' ? null : e.correct === true
    s.addGraded({ call_id: e.call_id, at, correct })
    if (correct === null) s.voided++
    else {
      s.graded++
      const season = s.season(isoWeekOf(at).key)
      season.graded++
      if (correct) {
        s.correct++
        season.correct++
        if (houseLeanedAgainst(e.call, e.house_probability)) s.beatHouse++
        for (const p of [questPeriod('daily', at), questPeriod('weekly', at)]) this.counters(s, p.key).correct_calls++
      }
    }
    this.version++
    return { streakBefore }
  }

  private counters(s: PayerState, key: string) {
    let c = s.counters.get(key)
    if (!c) {
      c = emptyCounters()
      s.counters.set(key, c)
    }
    return c
  }

  // ---- reads ------------------------------------------------------------------------------------------------------

  /** The ladder contract (GET /v1/arena/levels). */
  levels() {
    return {
      levels: LEVELS.map((l) => ({ ...l, credit_band: { ...l.credit_band } })),
      ranks: RANKS.map((r, i) => ({ rank: r.name, order: i + 1, xp_threshold: r.xp, discount: r.discount, top: i === RANKS.length - 1 })),
      judgment_floor_credits: JUDGMENT_FLOOR_CREDITS,
      ask_xp_daily_cap: ASK_XP_DAILY_CAP,
    }
  }

  /** Quests of the periods holding `now`, with progress measured in each. */
  quests(payer: string, now: number) {
    const s = this.peek(payer)
    return QUESTS.map((q) => {
      const p = questPeriod(q.cadence, now)
      const progress = Math.min(q.target, measure(q.metric, s?.counters.get(p.key)))
      const done = s?.completions.find((c) => c.quest === q.key && c.period_key === p.key)
      return {
        key: q.key, cadence: q.cadence, title: q.title, metric: q.metric, period_key: p.key, target: q.target, progress,
        completed: done !== undefined, completed_at: done?.completed_at ?? null, xp_reward: q.xp, expires_at: iso(p.ends_at),
      }
    })
  }

  questBoard(payer: string, now: number) {
    const s = this.peek(payer)
    const recent = (s?.completions ?? []).slice(-RECENT_COMPLETIONS).reverse()
    return { payer: lower(payer), quests: this.quests(payer, now), recent_completions: recent.map((c) => ({ ...c })) }
  }

  /** The single recommended next action: the open quest closest to done (then soonest expiry, then key). */
  nextAction(payer: string, now: number) {
    const open = this.quests(payer, now).filter((q) => !q.completed)
    open.sort((a, b) => b.progress / b.target - a.progress / a.target || Date.parse(a.expires_at) - Date.parse(b.expires_at) || a.key.localeCompare(b.key))
    const q = open[0]
    if (!q) {
      return {
        payer: lower(payer),
        action: { kind: 'lock_call' as const, quest: null, title: 'Every quest of this period is complete: lock a call on an open clock', remaining: 0, xp_reward: 0, expires_at: null, route: 'POST /v1/calls' },
      }
    }
    return {
      payer: lower(payer),
      action: {
        kind: 'quest' as const, quest: q.key, title: q.title, remaining: q.target - q.progress, xp_reward: q.xp_reward, expires_at: q.expires_at,
        route: q.metric === 'correct_calls' || q.metric === 'calls_locked' || q.metric === 'markets_called' ? 'POST /v1/calls' : 'GET /v1/clocks/open',
      },
    }
  }

  /** Frozen profiles by payer: valid while nothing changed and the day (quests, season) is the same. */
  private readonly profiles = new Map<string, { version: number; day: number; profile: ReturnType<ArenaProjection['buildProfile']> }>()

  profile(payer: string, now: number) {
    const key = lower(payer)
    const day = Math.floor(now / 86_400_000)
    const hit = this.profiles.get(key)
    if (hit && hit.version === this.version && hit.day === day) return hit.profile
    if (this.profiles.size >= 10_000) this.profiles.clear()
    const profile = deepFreeze(this.buildProfile(payer, now))
    this.profiles.set(key, { version: this.version, day, profile })
    return profile
  }

  private buildProfile(payer: string, now: number) {
    const s = this.peek(payer) ?? new PayerState(lower(payer))
    const r = rankOf(s.xp)
    const season = isoWeekOf(now)
    const ss = s.seasons.get(season.key)
    return {
      payer: s.payer,
      rank: r.rank,
      xp: s.xp,
      next_rank: r.next_rank,
      remaining_xp: r.remaining_xp,
      progress: r.progress,
      discount: r.discount,
      stats: {
        calls: s.calls, graded: s.graded, correct: s.correct, void: s.voided, accuracy: s.accuracy, streak: s.streak,
        longest_streak: s.longest, markets_covered: s.markets.length,
      },
      badges: [...s.badges],
      board_opt_in: s.optedIn,
      is_agent: s.isAgent,
      public_id: publicIdOf(s.payer),
      handle: handleOf(s.payer),
      season: {
        season_key: season.key, xp: ss?.xp ?? 0, calls: ss?.calls ?? 0, correct: ss?.correct ?? 0,
        board_rank: this.seasonBoard(season, now).rankOf.get(s.payer) ?? null,
      },
      quests: this.quests(payer, now),
    }
  }

  /** The card of an opted-in payer, without its address; null for an unknown or not-visible id (one 404 for both). */
  card(publicId: string, now: number) {
    const payer = this.byPublicId.get(publicId)
    const s = payer ? this.payers.get(payer) : undefined
    if (!s || !s.optedIn) return null
    const r = rankOf(s.xp)
    const season = isoWeekOf(now)
    const ss = s.seasons.get(season.key)
    return {
      public_id: publicId, handle: handleOf(s.payer), rank: r.rank, xp: s.xp, is_agent: s.isAgent,
      stats: { calls: s.calls, graded: s.graded, correct: s.correct, accuracy: s.accuracy, streak: s.streak, longest_streak: s.longest, markets_covered: s.markets.length },
      badges: [...s.badges],
      season: { season_key: season.key, xp: ss?.xp ?? 0, calls: ss?.calls ?? 0, correct: ss?.correct ?? 0, board_rank: this.seasonBoard(season, now).rankOf.get(s.payer) ?? null },
    }
  }

  /**
   * Board rows: visible entries are opted-in payers with measured activity (at least one graded call, so accuracy is
   * measured; docs/decisions.md) on the asked track. Sorted once per change; the same frozen rows are served until
   * the next change.
   */
  leaderboard(q: { sort: BoardSort; track: BoardTrack; scope: BoardScope; limit: number }, now: number) {
    const season = q.scope === 'season' ? isoWeekOf(now).key : null
    const key = `${q.sort}|${q.track}|${season ?? 'lifetime'}`
    let hit = this.boards.get(key)
    if (!hit || hit.version !== this.version) {
      hit = { version: this.version, rows: this.buildBoard(q.sort, q.track, season), byLimit: new Map() }
      this.boards.set(key, hit)
    }
    let answer = hit.byLimit.get(q.limit)
    if (!answer) {
      // The whole answer frozen: the envelope serializes a frozen value once and reuses the bytes.
      answer = deepFreeze({ sort: q.sort, track: q.track, scope: q.scope, rows: hit.rows.slice(0, q.limit) })
      hit.byLimit.set(q.limit, answer)
    }
    return answer
  }

  private buildBoard(sort: BoardSort, track: BoardTrack, season: string | null): BoardRow[] {
    const entries: Array<{ s: PayerState; xp: number; calls: number; graded: number; correct: number }> = []
    for (const s of this.payers.values()) {
      if (!s.optedIn || s.isAgent !== (track === 'agent')) continue
      const st: SeasonStats | undefined = season ? s.seasons.get(season) : undefined
      const graded = season ? (st?.graded ?? 0) : s.graded
      if (graded === 0) continue
      entries.push({ s, xp: season ? (st?.xp ?? 0) : s.xp, calls: season ? (st?.calls ?? 0) : s.calls, graded, correct: season ? (st?.correct ?? 0) : s.correct })
    }
    const acc = (e: (typeof entries)[number]) => e.correct / e.graded
    entries.sort((a, b) => {
      const primary =
        sort === 'xp' ? b.xp - a.xp
        : sort === 'accuracy' ? acc(b) - acc(a) || b.graded - a.graded
        : b.s.streak - a.s.streak || b.s.longest - a.s.longest
      return primary || b.xp - a.xp || (a.s.payer < b.s.payer ? -1 : 1)
    })
    return entries.map((e, i) =>
      Object.freeze({
        rank: i + 1, handle: handleOf(e.s.payer), public_id: publicIdOf(e.s.payer), title: RANKS[rankIndexOf(e.s.xp)]!.name, xp: e.xp,
        calls: e.calls, graded: e.graded, correct: e.correct, accuracy: e.correct / e.graded, streak: e.s.streak, longest_streak: e.s.longest,
      }),
    )
  }

  /**
   * One season's boards, humans and agents ranked apart by season XP (then correct calls). A season that has ended is
   * frozen: its rows count only records timed inside it, and visibility and track as they stood at its end.
   */
  seasonBoard(season: Period, now: number): { human: SeasonRow[]; agent: SeasonRow[]; rankOf: Map<string, number> } {
    const ended = now >= season.ends_at
    const key = `${season.key}|${ended ? 'frozen' : 'live'}`
    const hit = this.seasonBoards.get(key)
    if (hit && hit.version === this.version) return hit
    const at = ended ? season.ends_at - 1 : Number.POSITIVE_INFINITY
    const human: Array<{ s: PayerState; st: SeasonStats }> = []
    const agent: Array<{ s: PayerState; st: SeasonStats }> = []
    for (const s of this.payers.values()) {
      const st = s.seasons.get(season.key)
      if (!st || st.graded === 0) continue
      const visible = ended ? flagAt(s.optIn, at) : s.optedIn
      if (!visible) continue
      const isAgent = ended ? flagAt(s.agent, at) : s.isAgent
      ;(isAgent ? agent : human).push({ s, st })
    }
    const rankOf = new Map<string, number>()
    const rows = (list: typeof human): SeasonRow[] => {
      list.sort((a, b) => b.st.xp - a.st.xp || b.st.correct - a.st.correct || (a.s.payer < b.s.payer ? -1 : 1))
      return list.map((e, i) => {
        rankOf.set(e.s.payer, i + 1)
        return Object.freeze({
          rank: i + 1, handle: handleOf(e.s.payer), public_id: publicIdOf(e.s.payer), xp: e.st.xp, calls: e.st.calls, graded: e.st.graded,
          correct: e.st.correct, accuracy: e.st.correct / e.st.graded,
        })
      })
    }
    const out = { version: this.version, human: rows(human), agent: rows(agent), rankOf }
    this.seasonBoards.set(key, out)
    return out
  }

  season(now: number, seasonKey?: string) {
    const current = isoWeekOf(now)
    const asked = seasonKey ? isoWeekByKey(seasonKey) : current
    if (!asked) return null
    const previous = isoWeekOf(asked.starts_at - 1)
    const boardsOf = (p: Period) => {
      const b = this.seasonBoard(p, now)
      return { human: b.human.slice(0, SEASON_BOARD_LIMIT), agent: b.agent.slice(0, SEASON_BOARD_LIMIT) }
    }
    return {
      season: {
        season_key: asked.key, starts_at: iso(asked.starts_at), ends_at: iso(asked.ends_at),
        seconds_remaining: Math.max(0, Math.ceil((asked.ends_at - now) / 1000)), frozen: now >= asked.ends_at,
      },
      boards: boardsOf(asked),
      previous: { season_key: previous.key, starts_at: iso(previous.starts_at), ends_at: iso(previous.ends_at), frozen: now >= previous.ends_at, boards: boardsOf(previous) },
    }
  }

  // ---- notifications ----------------------------------------------------------------------------------------------

  private enabled(s: PayerState, kind: string): boolean {
    return s.preferences[kind] !== false
  }

  /** Kinds the payer switched off (left out of the feed, its count and its stream). */
  private hidden(s: PayerState): string[] {
    return Object.keys(s.preferences).filter((k) => s.preferences[k] === false)
  }

  /** What ColdFeed needs to read the payer's cold rows; null when none left memory. */
  coldScope(s: PayerState): ColdScope | null {
    const before = this.evictedBefore
    if (before === null || s.coldMax === 0) return null
    return {
      payer: s.payer, before: iso(before), hot: s.notifications.filter((n) => Date.parse(n.created_at) < before).map((n) => n.id),
      readThrough: s.readThrough, readIds: [...s.readIds], hidden: this.hidden(s),
    }
  }

  /** Unread notifications of the kinds shown, hot and cold (running state; DuckDB only for cold rows of hidden kinds). */
  private async unreadCount(s: PayerState, hotUnread: number, hotUnreadShown: number, scope: ColdScope | null, cold: ColdFeed | null): Promise<number> {
    const coldUnread = s.unreadTotal - hotUnread
    if (coldUnread === 0 || scope === null || scope.hidden.length === 0) return hotUnreadShown + coldUnread
    return hotUnreadShown + coldUnread - (cold ? await cold.count(scope, scope.hidden, false) : 0)
  }

  /** The read_at of read cold rows: the earliest mark covering each, sealed (DuckDB) or kept in memory (the window's). */
  private async coldReadAt(s: PayerState, rows: readonly NotificationRow[], cold: ColdFeed): Promise<Map<number, string>> {
    const out = await cold.readAt(s.payer, rows.map((n) => n.id))
    for (const n of rows) {
      for (const m of s.marks) {
        if (!(m.ids ? m.ids.includes(n.id) : n.id <= m.through)) continue
        const was = out.get(n.id)
        if (was === undefined || m.at < was) out.set(n.id, m.at)
        break
      }
    }
    return out
  }

  /**
   * Without a cursor, the inbox: unread first, then newest first; at most `limit` (50); kinds switched off in the
   * preferences are left out (and uncounted). The inbox's order moves as rows are read, so it cannot be walked; its
   * next_cursor (null when it shows every row) starts the history instead: every row, read or not, newest first by id
   * (the payer's own ordinal, assigned in append order, so new rows only extend it), each page after the id its cursor
   * names. The history's first page therefore repeats rows the inbox showed. A cursor of another payer is refused.
   *
   * Rows that left memory (issue 31) are merged in from the sealed Parquet (`cold`) in the same order, read or unread by
   * the same running marks; DuckDB is asked only when a cold row could be on the page (no cold id above the page's
   * last hot one: coldMax).
   */
  async notifications(payer: string, q: { limit?: number; cursor?: string | null } = {}, cold: ColdFeed | null = null) {
    const limit = q.limit ?? FEED_LIMIT
    const s = this.peek(payer)
    const before = q.cursor ? decodePosition(NOTIFICATIONS_CURSOR, q.cursor, ['string', 'number'] as const) : null
    if (before !== null && before[0] !== lower(payer)) {
      throw new ServiceError('VALIDATION', { message: `${CURSOR_FIELD}: a cursor of another payer's notifications`, detail: { reason: 'INVALID_CURSOR', field: CURSOR_FIELD } })
    }
    // The id goes to DuckDB as a BIGINT (a cold page): an edited token's fraction or huge number is refused here.
    if (before !== null && (!Number.isSafeInteger(before[1]) || before[1] < 0)) {
      throw new ServiceError('VALIDATION', { message: `${CURSOR_FIELD}: not a cursor this service issued`, detail: { reason: 'INVALID_CURSOR', field: CURSOR_FIELD } })
    }
    if (!s) return { payer: lower(payer), unread_count: 0, notifications: [], next_cursor: null }
    const scope = cold ? this.coldScope(s) : null
    const unread: NotificationRow[] = []
    const read: NotificationRow[] = []
    const history: NotificationRow[] = []
    let hotUnread = 0
    for (let i = s.notifications.length - 1; i >= 0; i--) {
      const n = s.notifications[i]!
      const isRead = s.isRead(n.id)
      if (!isRead) hotUnread++
      if (!this.enabled(s, n.kind)) continue
      ;(isRead ? read : unread).push(n)
      if (before !== null && n.id < before[1]) history.push(n)
    }
    const unread_count = await this.unreadCount(s, hotUnread, unread.length, scope, cold)
    // Cold rows that may belong among the first `want` of a hot list ordered newest first.
    const needsCold = (hot: readonly NotificationRow[], want: number) => scope !== null && cold !== null && (hot.length < want || hot[want - 1]!.id < s.coldMax)
    const merged = (hot: NotificationRow[], more: NotificationRow[]) => (more.length === 0 ? hot : [...hot, ...more].sort((a, b) => b.id - a.id))
    let rows: NotificationRow[]
    let next_cursor: string | null
    if (before === null) {
      const top = needsCold(unread, limit) && unread_count > unread.length ? merged(unread, await cold!.rows(scope!, { read: false, order: 'desc', limit })) : unread
      const room = Math.max(0, limit - unread_count)
      const readTop = room > 0 && needsCold(read, room) ? merged(read, await cold!.rows(scope!, { read: true, order: 'desc', limit: room })) : read
      rows = [...top.slice(0, limit), ...readTop.slice(0, room)]
      // The history is offered when the inbox leaves a row out: every shown row is the ids 1..lastId less hidden kinds.
      let hiddenRows = 0
      for (const n of s.notifications) if (!this.enabled(s, n.kind)) hiddenRows++
      if (scope !== null && scope.hidden.length > 0 && cold) hiddenRows += await cold.count(scope, scope.hidden, null)
      next_cursor = rows.length < s.lastId - hiddenRows ? encodeCursor(NOTIFICATIONS_CURSOR, [s.payer, s.lastId + 1]) : null
    } else {
      // Ids are appended in order, but a rebuilt journal's order is the log's: sort rather than trust it.
      history.sort((a, b) => b.id - a.id)
      const all = needsCold(history, limit + 1) ? merged(history, await cold!.rows(scope!, { read: null, below: before[1], order: 'desc', limit: limit + 1 })) : history
      const page = pageOf(NOTIFICATIONS_CURSOR, all, limit, (n) => [s.payer, n.id])
      rows = page.items
      next_cursor = page.next_cursor
    }
    // Rows from memory carry their read_at; read rows from Parquet take theirs from the marks.
    const hotIds = scope === null ? null : new Set(s.notifications.map((n) => n.id))
    const coldRead = hotIds === null ? [] : rows.filter((n) => !hotIds.has(n.id) && s.isRead(n.id))
    const coldAt = coldRead.length > 0 && cold ? await this.coldReadAt(s, coldRead, cold) : new Map<number, string>()
    return {
      payer: s.payer,
      unread_count,
      notifications: rows.map((n) => ({ id: n.id, kind: n.kind, ref: n.ref, payload: n.payload, created_at: n.created_at, read_at: s.readAt.get(n.id) ?? coldAt.get(n.id) ?? null })),
      next_cursor,
    }
  }

  /** Whether the payer's toggles let a notification of `kind` through (the feed and the live stream agree). */
  shows(payer: string, kind: string): boolean {
    const s = this.peek(payer)
    return s === undefined || this.enabled(s, kind)
  }

  /** The payer's hot notifications with an id above `afterId` (and at most `upTo`), in id order, shown kinds only. */
  notificationsAfter(payer: string, afterId: number, upTo = Infinity): NotificationRow[] {
    const s = this.peek(payer)
    if (!s) return []
    return s.notifications.filter((n) => n.id > afterId && n.id <= upTo && this.enabled(s, n.kind)).sort((a, b) => a.id - b.id)
  }

  /**
   * What a read mark would change: the ids given that exist (ids are dense: 1..lastId, hot or cold) and are unread, or
   * for a mark of every one the count of unread ones; read from the running marks alone.
   */
  markable(payer: string, ids: readonly number[] | null): { ids: number[]; count: number; through: number } {
    const s = this.peek(payer)
    if (!s) return { ids: [], count: 0, through: 0 }
    if (ids === null) return { ids: [], count: s.unreadTotal, through: s.lastId }
    const out = [...new Set(ids)].filter((id) => id >= 1 && id <= s.lastId && !s.isRead(id)).sort((a, b) => a - b)
    return { ids: out, count: out.length, through: s.lastId }
  }

  /** The unread count the feed shows (the mark route's answer). */
  async unreadShown(payer: string, cold: ColdFeed | null = null): Promise<number> {
    const s = this.peek(payer)
    if (!s) return 0
    let hotUnread = 0
    let shown = 0
    for (const n of s.notifications) {
      if (s.isRead(n.id)) continue
      hotUnread++
      if (this.enabled(s, n.kind)) shown++
    }
    return this.unreadCount(s, hotUnread, shown, cold ? this.coldScope(s) : null, cold)
  }

  /** Every kind the Arena writes plus any the payer named, each true unless explicitly switched off. */
  preferences(payer: string): Record<string, boolean> {
    const s = this.peek(payer)
    const out: Record<string, boolean> = {}
    for (const k of NOTIFICATION_KINDS) out[k] = true
    if (s) Object.assign(out, s.preferences)
    return out
  }

  /** Badge keys a payer's facts now satisfy and it does not hold yet. */
  newBadges(s: PayerState, held: (key: string) => boolean): typeof BADGES {
    const facts = { calls: s.calls, graded: s.graded, correct: s.correct, longest_streak: s.longest, markets: s.markets.length, beat_house: s.beatHouse }
    // The rule first: it is arithmetic on the facts, and a badge whose rule does not hold needs no look-up.
    return BADGES.filter((b) => b.earned(facts) && !held(b.key))
  }

  /** Number of payers folded (bench and logs). */
  get size(): number {
    return this.payers.size
  }
}

// ---- snapshot rows (load checks every field before the state changes) -------------------------------------------------

const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v)
const isStr = (v: unknown): v is string => typeof v === 'string'
const isBool = (v: unknown): v is boolean => typeof v === 'boolean'

function need<T>(v: unknown, ok: (v: unknown) => v is T, what: string): T {
  if (!ok(v)) throw new Error(`${what}: ${JSON.stringify(v)?.slice(0, 80)}`)
  return v
}

function list(v: unknown, what = 'a list'): unknown[] {
  if (!Array.isArray(v)) throw new Error(`not ${what}`)
  return v
}

/** `one`: strings repeated elsewhere in the snapshot (a call id, a market, a period key) held once (sharedTexts). */
function strings(v: unknown, one?: (text: string) => string): string[] {
  return list(v).map((x) => (one ? one(need(x, isStr, 'not a string')) : need(x, isStr, 'not a string')))
}

function pairs<T>(v: unknown, ok: (v: unknown) => v is T): Array<[string, T]> {
  return list(v).map((p) => {
    const [k, x] = list(p, 'a pair')
    return [need(k, isStr, 'not a key'), need(x, ok, 'not a value')]
  })
}

/** The period key inside a quest award's id (quests.ts questAwardId: quest:<quest>:<period>:<payer>); null for another id. */
function questPeriodOfId(id: string): string | null {
  if (!id.startsWith('quest:')) return null
  const parts = id.split(':')
  return parts.length === 4 ? parts[2]! : null
}

/**
 * A payer's quest completions and period counters as trimmed at the window: a period that ended before `cutoff` takes
 * no more events (every event folded is inside the window), so its counters leave; its completions leave too, but the
 * last RECENT_COMPLETIONS stay (the quest board shows them). Returns the payer's own list when nothing leaves.
 */
function periodsAt(s: PayerState, cutoff: number): { completions: PayerState['completions']; counters: string[] } {
  const keep = s.completions.length - RECENT_COMPLETIONS
  let completions = s.completions
  if (s.completions.some((c, i) => i < keep && periodOverBy(c.period_key, cutoff))) completions = s.completions.filter((c, i) => i >= keep || !periodOverBy(c.period_key, cutoff))
  return { completions, counters: [...s.counters.keys()].filter((k) => !periodOverBy(k, cutoff)) }
}

function payerOf(r: Record<string, any>, one: (text: string) => string, feedText: (text: string) => string): PayerState {
  const s = new PayerState(need(r.payer, isStr, 'payer'))
  s.xp = need(r.xp, isNum, 'xp')
  // A call's id is in its graded entry, its locked id and its notifications' refs, a period key in completions and
  // counters, a quest, market or instant in many payers' rows: each is held once (one), as a rebuild would not.
  s.badges = strings(r.badges, one)
  s.completions = list(r.completions).map((c) => {
    const [quest, period_key, xp, completed_at] = list(c)
    return { quest: one(need(quest, isStr, 'quest')), period_key: one(need(period_key, isStr, 'period')), xp: need(xp, isNum, 'xp'), completed_at: one(need(completed_at, isStr, 'completed_at')) }
  })
  s.calls = need(r.calls, isNum, 'calls')
  s.graded = need(r.graded, isNum, 'graded')
  s.correct = need(r.correct, isNum, 'correct')
  s.voided = need(r.voided, isNum, 'voided')
  s.beatHouse = need(r.beat_house, isNum, 'beat_house')
  s.markets = strings(r.markets, one)
  s.gradedList = list(r.graded_list).map((g) => {
    const [call_id, at, correct] = list(g)
    if (correct !== null && !isBool(correct)) throw new Error('graded correct')
    return { call_id: one(need(call_id, isStr, 'call_id')), at: need(at, isNum, 'at'), correct: correct as boolean | null }
  })
  const [ps, pl] = list(r.prefix, 'prefix')
  s.prefix = { streak: need(ps, isNum, 'prefix streak'), longest: need(pl, isNum, 'prefix longest') }
  s.streak = need(r.streak, isNum, 'streak')
  s.longest = need(r.longest, isNum, 'longest')
  for (const c of list(r.counters)) {
    const [k, calls_locked, correct_calls, markets] = list(c)
    const counters: PeriodCounters = { calls_locked: need(calls_locked, isNum, 'calls_locked'), correct_calls: need(correct_calls, isNum, 'correct_calls'), markets: strings(markets, one), questsHeld: 0 }
    s.counters.set(one(need(k, isStr, 'period')), counters)
  }
  for (const x of list(r.seasons)) {
    const [k, xp, calls, graded, correct] = list(x)
    s.seasons.set(one(need(k, isStr, 'season')), { xp: need(xp, isNum, 'xp'), calls: need(calls, isNum, 'calls'), graded: need(graded, isNum, 'graded'), correct: need(correct, isNum, 'correct') })
  }
  const flags = (v: unknown) => list(v).map((f) => {
    const [at, value] = list(f)
    return { at: need(at, isNum, 'at'), value: need(value, isBool, 'flag') }
  })
  s.optIn = flags(r.opt_in)
  s.agent = flags(r.agent)
  for (const [k, v] of pairs(r.preferences, isBool)) s.preferences[k] = v
  s.notifications = list(r.notifications).map((raw) => {
    const [id, kind, ref, payload, created_at, key, payer] = list(raw, 'a notification')
    // The payload's JSON text, checked to be an object once here (reads parse it again).
    if (typeof payload !== 'string' || !payload.startsWith('{')) throw new Error('notification payload')
    const k = need(kind, isStr, 'kind')
    const f = one(need(ref, isStr, 'ref'))
    return HotNotification.held(
      key === undefined ? null : need(key, isStr, 'key'), payer === undefined ? s.payer : need(payer, isStr, 'payer'),
      need(id, isNum, 'id'), KIND_NAMES.get(k) ?? k, f, payload, feedText(need(created_at, isStr, 'created_at')), feedText,
    )
  })
  for (const x of list(r.read_at)) {
    const [id, at] = list(x)
    s.readAt.set(need(id, isNum, 'id'), need(at, isStr, 'read at'))
  }
  s.seq = need(r.seq, isNum, 'seq')
  s.lastId = need(r.last_id, isNum, 'last_id')
  s.coldMax = need(r.cold_max, isNum, 'cold_max')
  s.readThrough = need(r.read_through, isNum, 'read_through')
  for (const id of list(r.read_ids)) s.readIds.add(need(id, isNum, 'read id'))
  s.marks = list(r.marks).map((m): ReadMark => {
    const [at, through, ids] = list(m, 'a read mark')
    return { at: need(at, isStr, 'mark at'), through: need(through, isNum, 'mark through'), ids: ids === null ? null : list(ids).map((id) => need(id, isNum, 'mark id')) }
  })
  s.rankNotified = need(r.rank_notified, isNum, 'rank_notified')
  s.askDay = need(r.ask_day, isStr, 'ask_day')
  s.askCount = need(r.ask_count, isNum, 'ask_count')
  return s
}

function splitQuestRef(ref: string): [string, string] {
  const i = ref.lastIndexOf(':')
  return i < 0 ? [ref, ''] : [ref.slice(0, i), ref.slice(i + 1)]
}
