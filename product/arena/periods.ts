/**
 * The Arena's calendar, all UTC and pure: quest days (UTC calendar day) and weeks, and seasons (ISO-8601 weeks,
 * Monday 00:00Z to the next Monday). Spec (Arena resources): "season_key (ISO week)".
 */
import { DAY_MS } from '../../common/time.ts'

export interface Period {
  /** 2026-03-02 for a day, 2026-W10 for an ISO week. */
  key: string
  starts_at: number
  /** Exclusive end: the next period's start. */
  ends_at: number
}

/**
 * Periods by day number, computed once: every call event asks for its day and week (a replay of a million events asks
 * a few million times for the same few dozen), and building a key formats a date. Frozen, since callers share them.
 */
const days = new Map<number, Period>()
const weeks = new Map<number, Period>()
const PERIOD_CACHE_MAX = 4096

function remember(cache: Map<number, Period>, day: number, p: Period): Period {
  if (cache.size >= PERIOD_CACHE_MAX) cache.clear()
  cache.set(day, Object.freeze(p))
  return p
}

export function dayOf(ms: number): Period {
  const day = Math.floor(ms / DAY_MS)
  const hit = days.get(day)
  if (hit) return hit
  const start = day * DAY_MS
  return remember(days, day, { key: new Date(start).toISOString().slice(0, 10), starts_at: start, ends_at: start + DAY_MS })
}

/** The ISO week holding `ms`: weeks start on Monday; week 1 holds the year's first Thursday. */
export function isoWeekOf(ms: number): Period {
  const day = Math.floor(ms / DAY_MS)
  return weeks.get(day) ?? remember(weeks, day, isoWeekOfDay(day))
}

function isoWeekOfDay(day: number): Period {
  // 1970-01-01 was a Thursday: (day + 3) mod 7 is 0 on Mondays.
  const weekday = (((day + 3) % 7) + 7) % 7
  const monday = day - weekday
  const thursday = monday + 3
  const year = new Date(thursday * DAY_MS).getUTCFullYear()
  const jan1 = Date.UTC(year, 0, 1) / DAY_MS
  const week = Math.floor((thursday - jan1) / 7) + 1
  return { key: `${year}-W${String(week).padStart(2, '0')}`, starts_at: monday * DAY_MS, ends_at: (monday + 7) * DAY_MS }
}

/** The ISO week a season key names (inverse of isoWeekOf); null for a malformed key. */
export function isoWeekByKey(key: string): Period | null {
  const m = /^(\d{4})-W(\d{2})$/.exec(key)
  if (!m) return null
  const year = Number(m[1])
  const week = Number(m[2])
  const jan4 = Date.UTC(year, 0, 4) / DAY_MS
  const jan4Weekday = (((jan4 + 3) % 7) + 7) % 7
  const p = isoWeekOf((jan4 - jan4Weekday + (week - 1) * 7) * DAY_MS)
  return p.key === key ? p : null
}

export const seasonOf = isoWeekOf

/**
 * The end (exclusive, ms) of the period a quest key names: a day (2026-03-02) or an ISO week (2026-W10); null for a
 * key that names neither. Cached: a trim asks it of every payer's few period keys.
 */
const periodEnds = new Map<string, number | null>()

export function periodEndOfKey(key: string): number | null {
  const hit = periodEnds.get(key)
  if (hit !== undefined) return hit
  let end: number | null = null
  if (/^\d{4}-\d{2}-\d{2}$/.test(key)) {
    const start = Date.parse(`${key}T00:00:00Z`)
    end = Number.isFinite(start) && new Date(start).toISOString().slice(0, 10) === key ? start + DAY_MS : null
  } else end = isoWeekByKey(key)?.ends_at ?? null
  if (periodEnds.size >= PERIOD_CACHE_MAX) periodEnds.clear()
  periodEnds.set(key, end)
  return end
}

/** Whether the period a key names ended at or before `cutoff` (ms): nothing inside the window can still count in it. */
export function periodOverBy(key: string, cutoff: number): boolean {
  const end = periodEndOfKey(key)
  return end !== null && end <= cutoff
}
