/**
 * Daily and weekly quests (spec, Arena resources: "active daily and weekly quests each with target, measured progress,
 * XP reward and expiry instant, plus recent completions"). Pure: a quest is a target on one measured counter over a
 * UTC day or an ISO week; progress is measured from the call events whose own time falls in the period, so a replay
 * measures the same progress and completes the same quests. A completion is an experience record with id
 * quest:<key>:<period>:<payer>, so once only. Documented in docs/arena.md.
 */
import { dayOf, isoWeekOf, type Period } from './periods.ts'

export type QuestCadence = 'daily' | 'weekly'
/** calls_locked: calls locked (locked_at in the period); correct_calls: correct graded calls (graded_at); markets_called: distinct assets called on. */
export type QuestMetric = 'calls_locked' | 'correct_calls' | 'markets_called'

export interface QuestDef {
  key: string
  cadence: QuestCadence
  title: string
  metric: QuestMetric
  target: number
  xp: number
}

export const QUESTS: readonly QuestDef[] = Object.freeze([
  { key: 'daily_lock_3', cadence: 'daily', title: 'Lock 3 calls today', metric: 'calls_locked', target: 3, xp: 30 },
  { key: 'daily_correct_1', cadence: 'daily', title: 'Get a call right today', metric: 'correct_calls', target: 1, xp: 25 },
  { key: 'weekly_lock_15', cadence: 'weekly', title: 'Lock 15 calls this week', metric: 'calls_locked', target: 15, xp: 100 },
  { key: 'weekly_correct_8', cadence: 'weekly', title: 'Get 8 calls right this week', metric: 'correct_calls', target: 8, xp: 150 },
  { key: 'weekly_markets_3', cadence: 'weekly', title: 'Call BTC, ETH and SOL this week', metric: 'markets_called', target: 3, xp: 75 },
])

export function questPeriod(cadence: QuestCadence, ms: number): Period {
  return cadence === 'daily' ? dayOf(ms) : isoWeekOf(ms)
}

/** The counters one payer accumulated in one period. */
export interface PeriodCounters {
  calls_locked: number
  correct_calls: number
  /** Distinct assets called on (a handful at most). */
  markets: string[]
  /** Bits (by index in QUESTS) of this period's quests known completed, durable or staged: the Arena's memo. */
  questsHeld?: number
}

export function emptyCounters(): PeriodCounters {
  return { calls_locked: 0, correct_calls: 0, markets: [], questsHeld: 0 }
}

export function measure(metric: QuestMetric, c: PeriodCounters | undefined): number {
  if (!c) return 0
  if (metric === 'calls_locked') return c.calls_locked
  if (metric === 'correct_calls') return c.correct_calls
  return c.markets.length
}

/** The experience id of a completion: once per quest, period and payer. */
export function questAwardId(key: string, periodKey: string, payer: string): string {
  return `quest:${key}:${periodKey}:${payer}`
}
