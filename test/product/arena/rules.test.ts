/** The Arena's pure rules with known answers: levels, ranks, the discount, periods and seasons, quests, badges, streaks, handles. */
import t from 'tap'
import { BADGES, houseLeanedAgainst } from '../../../product/arena/badges.ts'
import { publicIdOf } from '../../../product/arena/handles.ts'
import { handleOf } from '../../../product/duel/index.ts'
import { LEVELS, RANKS, discountedCredits, levelForCredits, rankOf } from '../../../product/arena/levels.ts'
import { dayOf, isoWeekByKey, isoWeekOf } from '../../../product/arena/periods.ts'
import { QUESTS, measure, questPeriod } from '../../../product/arena/quests.ts'
import { streakOf } from '../../../product/arena/PayerState.ts'
import { priceOf } from '../../../product/billing/pricing.ts'

t.test('levels: credit bands partition the prices; the decision price is Level 1 at every rung of its base', async (t) => {
  t.equal(levelForCredits(1000).level, 1)
  t.equal(levelForCredits(100).level, 1)
  t.equal(levelForCredits(1001).level, 2)
  t.equal(levelForCredits(2500).level, 2)
  t.equal(levelForCredits(2501).level, 3)
  t.equal(levelForCredits(1_000_000).level, 3)
  for (let i = 1; i < LEVELS.length; i++) t.equal(LEVELS[i]!.credit_band.min, LEVELS[i - 1]!.credit_band.max! + 1, 'bands are contiguous')
  t.ok(LEVELS.every((l, i) => i === 0 || (l.ask_xp > LEVELS[i - 1]!.ask_xp && l.correct_call_xp > LEVELS[i - 1]!.correct_call_xp)), 'higher levels earn more')
})

t.test('ranks: thresholds, next rank, remaining XP and progress; Oracle is the top', async (t) => {
  t.same(rankOf(0), { rank: 'Analyst', discount: 0, next_rank: 'Forecaster', remaining_xp: 500, progress: 0 })
  t.same(rankOf(250), { rank: 'Analyst', discount: 0, next_rank: 'Forecaster', remaining_xp: 250, progress: 0.5 })
  t.same(rankOf(500), { rank: 'Forecaster', discount: 0.05, next_rank: 'Strategist', remaining_xp: 1500, progress: 0 })
  t.same(rankOf(1999).rank, 'Forecaster')
  t.same(rankOf(2000).rank, 'Strategist')
  t.same(rankOf(10_000), { rank: 'Oracle', discount: 0.2, next_rank: null, remaining_xp: 0, progress: 1 })
  t.equal(RANKS[RANKS.length - 1]!.name, 'Oracle')
  t.same(RANKS.slice(0, 2).map((r) => r.name), ['Analyst', 'Forecaster'])
})

t.test('discount: only the premium above the 1,000-credit judgment floor, rounded down, never below the floor', async (t) => {
  t.equal(discountedCredits(1000, 0.2), 1000, 'at the floor nothing is discounted')
  t.equal(discountedCredits(500, 0.2), 500, 'under the floor nothing is discounted')
  t.equal(discountedCredits(1563, 0), 1563, 'no discount at Analyst')
  t.equal(priceOf('decision.deep', 2).credits, 1563)
  t.equal(discountedCredits(1563, 0.05), 1563 - 28, '5% of the 563 premium is 28.15 → 28')
  t.equal(discountedCredits(1563, 0.2), 1563 - 112, '20% of 563 is 112.6 → 112')
  t.equal(discountedCredits(2000, 1), 1000, 'a full discount lands on the floor')
})

t.test('periods: UTC days and ISO weeks (keys, bounds, year edges) and their inverse', async (t) => {
  const d = dayOf(Date.parse('2026-03-04T23:59:59.999Z'))
  t.same(d, { key: '2026-03-04', starts_at: Date.parse('2026-03-04T00:00:00Z'), ends_at: Date.parse('2026-03-05T00:00:00Z') })
  const w = isoWeekOf(Date.parse('2026-03-04T12:00:00Z')) // a Wednesday
  t.same(w, { key: '2026-W10', starts_at: Date.parse('2026-03-02T00:00:00Z'), ends_at: Date.parse('2026-03-09T00:00:00Z') })
  t.equal(isoWeekOf(Date.parse('2026-03-08T23:59:59.999Z')).key, '2026-W10', 'Sunday closes the week')
  t.equal(isoWeekOf(Date.parse('2026-03-09T00:00:00Z')).key, '2026-W11', 'Monday opens the next')
  t.equal(isoWeekOf(Date.parse('2021-01-03T12:00:00Z')).key, '2020-W53', 'early January can belong to the previous ISO year')
  t.equal(isoWeekOf(Date.parse('2024-12-30T00:00:00Z')).key, '2025-W01', 'late December can belong to the next ISO year')
  t.same(isoWeekByKey('2026-W10'), w)
  t.same(isoWeekByKey('2020-W53'), isoWeekOf(Date.parse('2021-01-03T12:00:00Z')))
  t.equal(isoWeekByKey('2026-W54'), null)
  t.equal(isoWeekByKey('nonsense'), null)
})

t.test('quests: daily ones expire at UTC midnight, weekly ones at the ISO week end; progress is the measured counter', async (t) => {
  const at = Date.parse('2026-03-04T10:00:00Z')
  t.equal(questPeriod('daily', at).ends_at, Date.parse('2026-03-05T00:00:00Z'))
  t.equal(questPeriod('weekly', at).ends_at, Date.parse('2026-03-09T00:00:00Z'))
  const c = { calls_locked: 2, correct_calls: 1, markets: ['BTC', 'ETH'] }
  t.equal(measure('calls_locked', c), 2)
  t.equal(measure('correct_calls', c), 1)
  t.equal(measure('markets_called', c), 2)
  t.equal(measure('calls_locked', undefined), 0)
  t.ok(QUESTS.some((q) => q.cadence === 'daily') && QUESTS.some((q) => q.cadence === 'weekly'))
  t.equal(new Set(QUESTS.map((q) => q.key)).size, QUESTS.length, 'quest keys are unique')
})

t.test('badges: each rule against known facts', async (t) => {
  const none = { calls: 0, graded: 0, correct: 0, longest_streak: 0, markets: 0, beat_house: 0 }
  const earned = (f: typeof none) => BADGES.filter((b) => b.earned(f)).map((b) => b.key)
  t.same(earned(none), [])
  t.same(earned({ ...none, calls: 1 }), ['first_call'])
  t.same(earned({ ...none, calls: 3, graded: 3, correct: 3, longest_streak: 3, markets: 3 }), ['first_call', 'first_correct', 'streak_3', 'all_markets'])
  t.ok(earned({ ...none, calls: 20, graded: 20, correct: 13 }).includes('sharpshooter'), '13/20 = 65%')
  t.notOk(earned({ ...none, calls: 20, graded: 20, correct: 12 }).includes('sharpshooter'), '12/20 = 60%')
  t.ok(earned({ ...none, calls: 100, graded: 100 }).includes('centurion'))
  t.ok(earned({ ...none, beat_house: 1 }).includes('beat_the_house'))
  t.equal(houseLeanedAgainst('obtains', 0.3), true)
  t.equal(houseLeanedAgainst('obtains', 0.5), false)
  t.equal(houseLeanedAgainst('not', 0.7), true)
  t.equal(new Set(BADGES.map((b) => b.key)).size, BADGES.length, 'badge keys are unique')
})

t.test('streaks: void calls neither extend nor break a run', async (t) => {
  t.same(streakOf([]), { streak: 0, longest: 0 })
  t.same(streakOf([true, true, false, true]), { streak: 1, longest: 2 })
  t.same(streakOf([true, null, true, null]), { streak: 2, longest: 2 })
  t.same(streakOf([true, true, true, false]), { streak: 0, longest: 3 })
})

t.test('handles and card ids: derived, stable, never the address or a piece of it', async (t) => {
  const a = '0xAbCdEf0123456789abcdef0123456789ABCDEF01'
  t.equal(handleOf(a), handleOf(a.toLowerCase()), 'case does not matter')
  t.match(handleOf(a), /^[a-z]+-[a-z]+-[0-9a-f]{4}$/)
  t.match(publicIdOf(a), /^[0-9a-f]{20}$/)
  t.notOk(a.toLowerCase().includes(publicIdOf(a).slice(0, 8)), 'no address prefix in the card id')
  t.not(handleOf(a), handleOf('0x1111111111111111111111111111111111111111'))
})
