/**
 * Everything the Arena knows about one payer, folded from its journals and the call events (ArenaProjection owns the
 * folding; this is the state and the small derivations of it). Stored in the projection's state snapshot (issue 31).
 */
import type { HotNotification } from './HotNotification.ts'
import type { PeriodCounters } from './quests.ts'

/** One graded (or void) call in grading order. */
export interface GradedEntry {
  call_id: string
  /** graded_at, epoch ms. */
  at: number
  /** null: void (neither extends nor breaks a streak). */
  correct: boolean | null
}

export interface SeasonStats {
  xp: number
  calls: number
  graded: number
  correct: number
}

export interface Completion {
  quest: string
  period_key: string
  xp: number
  completed_at: string
}

/** One read mark (an arena.settings `read` record): the ids given, or every id up to `through`. */
export interface ReadMark {
  ids: number[] | null
  through: number
  at: string
}

/** A flag's history: (instant, value) in journal order; the value at an instant is the last one set at or before it. */
export type FlagHistory = Array<{ at: number; value: boolean }>

export function flagAt(history: FlagHistory, at: number): boolean {
  let v = false
  for (const h of history) {
    if (h.at > at) break
    v = h.value
  }
  return v
}

export class PayerState {
  xp = 0
  /** Experience awarded but not yet durable (staged by the writer): counted when deciding a rank-up, never shown. */
  xpStaged = 0
  badges: string[] = []
  /** Bits (Arena's BADGE_BITS) of badges known held, durable or staged: a cache of a fact that never turns false. */
  badgesHeld = 0
  completions: Completion[] = []
  calls = 0
  graded = 0
  correct = 0
  voided = 0
  beatHouse = 0
  markets: string[] = []
  /** Graded calls ordered by (graded_at, call_id), those inside the Arena's window: the streak is read from its tail. */
  gradedList: GradedEntry[] = []
  /** The run at the end of the graded calls trimmed off the list (issue 31): where a recount of the list starts. */
  prefix = { streak: 0, longest: 0 }
  streak = 0
  longest = 0
  /** Quest counters by period key (2026-03-02 or 2026-W10). */
  counters = new Map<string, PeriodCounters>()
  seasons = new Map<string, SeasonStats>()
  optIn: FlagHistory = []
  agent: FlagHistory = []
  preferences: Record<string, boolean> = {}
  /**
   * The feed's hot rows (issue 31, Bounded memory): those created inside the Arena's window, in the order applied (id
   * order: one payer's records sit on one partition); older ones are read back from the sealed Parquet (ColdFeed.ts).
   */
  notifications: HotNotification[] = []
  /**
   * The feed's keys (ArenaProjection.hasNotification): per ref, a bit for each kind of a hot row with the derived key
   * kind|ref|payer. Keyed by the rows' own ref strings, so it adds no string; null until the first row.
   */
  feedRefs: Map<string, number> | null = null
  /** Hot notification id → read instant (the first mark covering it). */
  readAt = new Map<number, string>()
  /** Highest notification id allocated (durable or staged). */
  seq = 0
  /** Highest notification id applied (durable): ids are dense per payer, so 1..lastId all exist, hot or cold. */
  lastId = 0
  /** The highest id of a notification created before the window (left memory or about to): no cold row is above it. */
  coldMax = 0
  /** Read marks in compact form: every id up to readThrough (the highest mark-all) is read … */
  readThrough = 0
  /** … and these ids above it were marked one by one (cleared by the next mark-all past them). */
  readIds = new Set<number>()
  /** The read marks applied inside the window, kept for the read_at of cold rows until the sink has sealed them. */
  marks: ReadMark[] = []
  /** Index (in RANKS) of the highest rank a rank_up notification was written or staged for; 0: none needed. */
  rankNotified = 0
  /** Asks that earned XP on askDay (durable or staged): the daily cap. */
  askDay = ''
  askCount = 0

  constructor(readonly payer: string) {}

  /** Whether notification `id` is read (the marks alone decide, hot or cold). */
  isRead(id: number): boolean {
    return id <= this.readThrough || this.readIds.has(id)
  }

  /**
   * Unread notifications of every kind, hot and cold (ids are dense: 1..lastId). A mark may name ids not applied yet
   * (a replica read it first: ArenaProjection.applyRead): only the ids up to lastId count.
   */
  get unreadTotal(): number {
    if (this.readThrough >= this.lastId) return 0
    let marked = this.readIds.size
    for (const id of this.readIds) if (id > this.lastId) marked--
    return this.lastId - this.readThrough - marked
  }

  get optedIn(): boolean {
    return this.optIn.length > 0 && this.optIn[this.optIn.length - 1]!.value
  }

  get isAgent(): boolean {
    return this.agent.length > 0 && this.agent[this.agent.length - 1]!.value
  }

  season(key: string): SeasonStats {
    let s = this.seasons.get(key)
    if (!s) {
      s = { xp: 0, calls: 0, graded: 0, correct: 0 }
      this.seasons.set(key, s)
    }
    return s
  }

  /**
   * Places a graded call in grading order and updates the streak: appended (the usual case) it extends or resets the
   * current run; arriving out of order it recomputes both from the list.
   */
  addGraded(e: GradedEntry): void {
    const list = this.gradedList
    const last = list[list.length - 1]
    if (!last || last.at < e.at || (last.at === e.at && last.call_id < e.call_id)) {
      list.push(e)
      if (e.correct === true) {
        this.streak++
        if (this.streak > this.longest) this.longest = this.streak
      } else if (e.correct === false) {
        this.streak = 0
      }
      return
    }
    let i = list.length
    while (i > 0 && (list[i - 1]!.at > e.at || (list[i - 1]!.at === e.at && list[i - 1]!.call_id > e.call_id))) i--
    list.splice(i, 0, e)
    const s = streakOf(list.map((x) => x.correct), this.prefix)
    this.streak = s.streak
    this.longest = s.longest
  }

  /** The list and prefix with the entries graded before `cutoff` folded into the prefix (not changing this state). */
  trimmedAt(cutoff: number): { list: GradedEntry[]; prefix: { streak: number; longest: number } } {
    let i = 0
    while (i < this.gradedList.length && this.gradedList[i]!.at < cutoff) i++
    if (i === 0) return { list: this.gradedList, prefix: this.prefix }
    const run = streakOf(this.gradedList.slice(0, i).map((x) => x.correct), this.prefix)
    return { list: this.gradedList.slice(i), prefix: run }
  }

  /** Trims the entries graded before `cutoff` into the prefix; returns their call ids. */
  trim(cutoff: number): string[] {
    const { list, prefix } = this.trimmedAt(cutoff)
    if (list === this.gradedList) return []
    const gone = this.gradedList.slice(0, this.gradedList.length - list.length).map((x) => x.call_id)
    this.gradedList = list
    this.prefix = prefix
    return gone
  }

  get accuracy(): number | null {
    return this.graded === 0 ? null : this.correct / this.graded
  }
}

/**
 * Consecutive correct graded calls at the end of the sequence, and the longest run anywhere. Void calls (null) neither
 * extend nor break a run (docs/decisions.md).
 */
export function streakOf(results: ReadonlyArray<boolean | null>, from: { streak: number; longest: number } = { streak: 0, longest: 0 }): { streak: number; longest: number } {
  let streak = from.streak
  let longest = from.longest
  for (const r of results) {
    if (r === true) {
      streak++
      if (streak > longest) longest = streak
    } else if (r === false) {
      streak = 0
    }
  }
  return { streak, longest }
}
