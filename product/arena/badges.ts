/**
 * Badges: documented keys and rules (docs/arena.md), each awarded once per payer (experience id badge:<key>:<payer>)
 * the first time its rule holds after a call event. Pure: a rule reads only the payer's measured facts.
 */
export interface BadgeFacts {
  calls: number
  graded: number
  correct: number
  /**
   * The longest run of correct graded calls, in the order the calls resolve: not the current streak, which passes
   * through different values when grades arrive in another order (a replay), while the longest run of what is known
   * only grows as a payer's resolved calls are learned in order.
   */
  longest_streak: number
  /** Distinct assets called on, lifetime. */
  markets: number
  /** Correct calls where the house's frozen probability leaned to the other side. */
  beat_house: number
}

export interface BadgeDef {
  key: string
  title: string
  rule: string
  xp: number
  earned(f: BadgeFacts): boolean
}

export const BADGES: readonly BadgeDef[] = Object.freeze([
  { key: 'first_call', title: 'First call', rule: 'lock your first call', xp: 10, earned: (f) => f.calls >= 1 },
  { key: 'first_correct', title: 'On the board', rule: 'your first correct graded call', xp: 25, earned: (f) => f.correct >= 1 },
  { key: 'streak_3', title: 'Hat trick', rule: 'a streak of 3 correct graded calls', xp: 25, earned: (f) => f.longest_streak >= 3 },
  { key: 'streak_10', title: 'Unbroken', rule: 'a streak of 10 correct graded calls', xp: 100, earned: (f) => f.longest_streak >= 10 },
  { key: 'beat_the_house', title: 'Beat the house', rule: "a correct call where the house's frozen probability leaned the other way", xp: 50, earned: (f) => f.beat_house >= 1 },
  { key: 'all_markets', title: 'Full coverage', rule: 'calls on BTC, ETH and SOL', xp: 25, earned: (f) => f.markets >= 3 },
  { key: 'sharpshooter', title: 'Sharpshooter', rule: 'at least 20 graded calls at 65% accuracy or better', xp: 100, earned: (f) => f.graded >= 20 && f.correct / f.graded >= 0.65 },
  { key: 'centurion', title: 'Centurion', rule: '100 graded calls', xp: 100, earned: (f) => f.graded >= 100 },
])

export function badgeAwardId(key: string, payer: string): string {
  return `badge:${key}:${payer}`
}

/** Whether the house leaned against the outcome a correct call named (a probability exactly 0.5 leans nowhere). */
export function houseLeanedAgainst(call: 'obtains' | 'not', houseProbability: number): boolean {
  return call === 'obtains' ? houseProbability < 0.5 : houseProbability > 0.5
}
