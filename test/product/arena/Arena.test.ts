/**
 * The Arena over a real embedded log, driven by real call-event channels: XP and notifications from graded calls,
 * idempotency under redelivery, quests and seasons under a controlled clock, the agent track, ask XP atomic with the
 * paid call's unit of work, and a restart that rebuilds identical profiles, boards and feeds.
 */
import t from 'tap'
import { Arena } from '../../../product/arena/Arena.ts'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { UnitOfWork } from '../../../pipeline/journal/UnitOfWork.ts'
import type { PaidCall } from '../../../pipeline/journal/PaidCall.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { TestCallEvents, TestClock } from '../../helpers/callEvents.ts'

const A = '0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'
const B = '0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'
const T0 = Date.parse('2026-03-02T09:00:00.000Z') // Monday of 2026-W10
const H = 3_600_000

async function open(t: Parameters<typeof makeTempDir>[0], dir?: string) {
  const d = dir ?? (await makeTempDir(t, 'svc-arena-'))
  const log = await EmbeddedLog.open(d)
  const clock = new TestClock(T0)
  const events = new TestCallEvents()
  const arena = await Arena.open({ log, clock, events })
  return { dir: d, log, clock, events, arena, close: async () => { await arena.close(); await log.close() } }
}

t.test('a correct graded call earns correct-call XP once, however often it is delivered; wrong and void earn none', async (t) => {
  const s = await open(t)
  t.teardown(s.close)
  const c1 = s.events.lock(A, T0)
  const g1 = s.events.grade(c1, T0 + H, 'correct')
  s.events.redeliver(g1)
  s.events.grade(s.events.lock(A, T0 + 1), T0 + H + 1, 'wrong')
  s.events.grade(s.events.lock(A, T0 + 2), T0 + H + 2, 'void')
  await s.arena.idle()
  const p = s.arena.profile(A)
  // correct call 50 + badges first_call 10 and first_correct 25 + quests daily_lock_3 30 and daily_correct_1 25 (the
  // house's 0.6 leaned with the call, so no beat_the_house)
  t.equal(p.xp, 50 + 10 + 25 + 30 + 25)
  t.same(s.arena.projection.peek(A)!.completions.map((c) => c.quest).sort(), ['daily_correct_1', 'daily_lock_3'])
  t.same(p.stats, { calls: 3, graded: 2, correct: 1, void: 1, accuracy: 0.5, streak: 0, longest_streak: 1, markets_covered: 1 })
  t.same([...p.badges].sort(), ['first_call', 'first_correct'])
  const feed = (await s.arena.notifications(A))
  t.equal(feed.notifications.filter((n) => n.kind === 'call_resolved').length, 3, 'one call_resolved per call, the redelivery adds none')
  t.equal(feed.unread_count, feed.notifications.length)
})

t.test('streaks: consecutive correct calls extend (notified), a wrong one ends it (notified), a void one changes nothing', async (t) => {
  const s = await open(t)
  t.teardown(s.close)
  let at = T0
  for (const r of ['correct', 'correct', 'void', 'correct', 'wrong'] as const) {
    s.events.grade(s.events.lock(A, at), at + H, r)
    at += 2 * H
  }
  await s.arena.idle()
  const p = s.arena.profile(A)
  t.equal(p.stats.streak, 0)
  t.equal(p.stats.longest_streak, 3, 'the void call did not break the run')
  const kinds = (await s.arena.notifications(A)).notifications.map((n) => n.kind)
  t.equal(kinds.filter((k) => k === 'streak_extended').length, 2, 'streak 2 and 3')
  t.equal(kinds.filter((k) => k === 'streak_ended').length, 1)
  t.ok(p.badges.includes('streak_3'))
  const ended = (await s.arena.notifications(A)).notifications.find((n) => n.kind === 'streak_ended')!
  t.same(ended.payload, { ended_streak: 3, streak: 0 })
  t.match(ended.ref, /^call-/, 'ref names the call that ended it')
})

t.test('quests: progress in the current UTC day and ISO week; completion awards XP once; a new day expires the daily quests', async (t) => {
  const s = await open(t)
  t.teardown(s.close)
  s.events.lock(A, T0, { asset: 'BTC' })
  s.events.lock(A, T0 + 1000, { asset: 'ETH' })
  await s.arena.idle()
  let q = s.arena.quests(A).quests.find((x) => x.key === 'daily_lock_3')!
  t.match(q, { progress: 2, target: 3, completed: false, expires_at: '2026-03-03T00:00:00.000Z', period_key: '2026-03-02' })
  s.events.lock(A, T0 + 2000, { asset: 'SOL' })
  s.events.lock(A, T0 + 3000, { asset: 'SOL' })
  await s.arena.idle()
  const board = s.arena.quests(A)
  q = board.quests.find((x) => x.key === 'daily_lock_3')!
  t.match(q, { progress: 3, completed: true })
  t.match(board.quests.find((x) => x.key === 'weekly_markets_3')!, { progress: 3, completed: true, expires_at: '2026-03-09T00:00:00.000Z' })
  t.same(board.recent_completions.map((c) => c.quest).sort(), ['daily_lock_3', 'weekly_markets_3'])
  // first_call 10 + all_markets 25 + daily_lock_3 30 + weekly_markets_3 75
  t.equal(s.arena.profile(A).xp, 10 + 25 + 30 + 75, 'the fourth lock completes nothing twice')
  t.equal((await s.arena.notifications(A)).notifications.filter((n) => n.kind === 'quest_complete').length, 2)
  // The controlled clock crosses midnight: the daily quest is a new one, the weekly one keeps its progress.
  s.clock.t = Date.parse('2026-03-03T00:00:00.000Z')
  const next = s.arena.quests(A).quests
  t.match(next.find((x) => x.key === 'daily_lock_3')!, { progress: 0, completed: false, period_key: '2026-03-03', expires_at: '2026-03-04T00:00:00.000Z' })
  t.match(next.find((x) => x.key === 'weekly_lock_15')!, { progress: 4, period_key: '2026-W10' })
  t.match(s.arena.nextAction(A).action, { kind: 'quest', quest: 'weekly_lock_15', remaining: 11 }, 'the open quest nearest to done (4 of 15)')
})

t.test('seasons: the clock rolls the season over; the ended season is frozen, humans and agents ranked apart', async (t) => {
  const s = await open(t)
  t.teardown(s.close)
  await s.arena.optIn(A, true)
  await s.arena.optIn(B, true)
  await s.arena.setAgent(B, true)
  s.events.grade(s.events.lock(A, T0), T0 + H, 'correct')
  s.events.grade(s.events.lock(B, T0), T0 + H, 'correct')
  await s.arena.idle()
  let season = s.arena.season()!
  t.match(season.season, { season_key: '2026-W10', starts_at: '2026-03-02T00:00:00.000Z', ends_at: '2026-03-09T00:00:00.000Z', frozen: false })
  t.equal(season.season.seconds_remaining, (Date.parse('2026-03-09T00:00:00Z') - T0) / 1000)
  t.same(season.boards.human.map((r) => r.rank), [1])
  t.same(season.boards.agent.map((r) => r.rank), [1])
  t.not(season.boards.human[0]!.handle, season.boards.agent[0]!.handle)
  const w10 = season.boards
  // Next week: new season, W10 frozen as it stood; later activity and a later opt-out do not touch it.
  s.clock.t = Date.parse('2026-03-09T08:00:00.000Z')
  s.events.grade(s.events.lock(A, s.clock.t), s.clock.t + H, 'correct')
  await s.arena.idle()
  await s.arena.optIn(A, false)
  season = s.arena.season()!
  t.equal(season.season.season_key, '2026-W11')
  t.equal(season.previous.season_key, '2026-W10')
  t.equal(season.previous.frozen, true)
  t.same(season.previous.boards, w10, 'the frozen board is the one at season end')
  t.same(season.boards.human, [], 'A opted out: not on the live board')
  t.same(s.arena.season('2026-W10')!.boards, w10)
})

t.test('the agent track never changes rank, XP or price; opt-in only changes visibility', async (t) => {
  const s = await open(t)
  t.teardown(s.close)
  for (let i = 0; i < 12; i++) s.events.grade(s.events.lock(A, T0 + i * 1000, { asset: (['BTC', 'ETH', 'SOL'] as const)[i % 3] }), T0 + H + i, 'correct')
  await s.arena.idle()
  const before = s.arena.profile(A)
  const price = s.arena.creditsFor(A, 1563)
  t.ok(before.xp >= 500, 'past Forecaster')
  t.equal(price, 1563 - Math.floor((563 * before.discount * 10000) / 10000))
  await s.arena.setAgent(A, true)
  const after = s.arena.profile(A)
  t.equal(after.is_agent, true)
  t.same({ ...after, is_agent: false }, before, 'only the track moved')
  t.equal(s.arena.creditsFor(A, 1563), price)
  t.same(s.arena.leaderboard({ sort: 'xp', track: 'agent', scope: 'lifetime', limit: 10 }).rows, [], 'not opted in: not visible')
  await s.arena.optIn(A, true)
  t.equal(s.arena.leaderboard({ sort: 'xp', track: 'agent', scope: 'lifetime', limit: 10 }).rows.length, 1)
  t.same(s.arena.leaderboard({ sort: 'xp', track: 'human', scope: 'lifetime', limit: 10 }).rows, [])
  t.ok((await s.arena.notifications(A)).notifications.some((n) => n.kind === 'rank_up' && n.ref === 'Forecaster'), 'rank_up names the rank')
})

t.test('ask XP joins the paid unit of work: written with it, or not at all; capped per UTC day', async (t) => {
  const s = await open(t)
  t.teardown(s.close)
  const paid = (): PaidCall & { unit: UnitOfWork } => ({ kind: 'paid', payment_id: 'p', rail: 'credits', payer: A, unit: new UnitOfWork() })
  const dropped = paid()
  s.arena.recordAskIn(dropped.unit, dropped, { decision_id: 'd-0', question_id: 'S05_funding_flip', asset: 'BTC' })
  dropped.unit.abort()
  t.equal(s.arena.profile(A).xp, 0, 'an aborted unit awards nothing')
  for (let i = 0; i < 25; i++) {
    const call = paid()
    s.arena.recordAskIn(call.unit, call, { decision_id: `d-${i}`, question_id: 'S05_funding_flip', asset: 'BTC' })
    await call.unit.commit()
  }
  t.equal(s.arena.profile(A).xp, 20 * 10, 'twenty asks a day earn ask XP')
  const again = paid()
  s.arena.recordAskIn(again.unit, again, { decision_id: 'd-3', question_id: 'S05_funding_flip', asset: 'BTC' })
  await again.unit.commit()
  t.equal(s.arena.profile(A).xp, 200, 'the same decision never earns twice')
  s.clock.t += 86_400_000
  const tomorrow = paid()
  s.arena.recordAskIn(tomorrow.unit, tomorrow, { decision_id: 'd-new', question_id: 'S05_funding_flip', asset: 'BTC' })
  await tomorrow.unit.commit()
  t.equal(s.arena.profile(A).xp, 210)
})

t.test('notifications: unread first then newest, read marks by id or all, preferences suppress only on explicit false', async (t) => {
  const s = await open(t)
  t.teardown(s.close)
  for (let i = 0; i < 3; i++) s.events.grade(s.events.lock(A, T0 + i), T0 + H + i, 'wrong')
  await s.arena.idle()
  let feed = (await s.arena.notifications(A))
  const ids = feed.notifications.map((n) => n.id)
  t.same(ids, [...ids].sort((a, b) => b - a), 'newest first')
  const r = await s.arena.markRead(A, [ids[1]!])
  t.equal(r.marked, 1)
  feed = (await s.arena.notifications(A))
  t.equal(feed.notifications[feed.notifications.length - 1]!.id, ids[1], 'the read one sorts after the unread ones')
  t.ok(feed.notifications[feed.notifications.length - 1]!.read_at)
  t.equal(feed.unread_count, ids.length - 1)
  t.equal((await s.arena.markRead(A, null)).unread_count, 0)
  t.equal((await s.arena.markRead(A, null)).marked, 0, 'nothing left to mark')
  await s.arena.setPreferences(A, { call_resolved: false })
  t.equal((await s.arena.notifications(A)).notifications.filter((n) => n.kind === 'call_resolved').length, 0)
  t.match(s.arena.preferences(A).preferences, { call_resolved: false, badge_earned: true, rank_up: true })
  await s.arena.setPreferences(A, { call_resolved: true })
  t.ok((await s.arena.notifications(A)).notifications.some((n) => n.kind === 'call_resolved'))
})

t.test('a seeded population over a month drives the boards; a restart rebuilds identical profiles, boards and feeds', async (t) => {
  const s = await open(t)
  const players = Array.from({ length: 1000 }, (_, i) => `0x${(i + 1).toString(16).padStart(40, '0')}`)
  let seed = 42
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31)
  await Promise.all(players.map(async (p, i) => {
    if (i % 3 !== 0) await s.arena.optIn(p, true)
    if (i % 4 === 0) await s.arena.setAgent(p, true)
  }))
  const month = 30 * 86_400_000
  for (let k = 0; k < 6000; k++) {
    const p = players[Math.floor(rand() * players.length)]!
    const skill = 0.35 + (players.indexOf(p) % 10) * 0.05
    const at = T0 + Math.floor((k / 6000) * month)
    const c = s.events.lock(p, at, { asset: (['BTC', 'ETH', 'SOL'] as const)[k % 3], call: rand() < 0.5 ? 'obtains' : 'not', house_probability: rand() })
    s.events.grade(c, at + H, rand() < 0.05 ? 'void' : rand() < skill ? 'correct' : 'wrong')
  }
  await s.arena.idle()
  s.clock.t = T0 + month
  const snapshot = async (a: Arena) => ({
    boards: (['xp', 'accuracy', 'streak'] as const).flatMap((sort) =>
      (['human', 'agent'] as const).flatMap((track) => (['lifetime', 'season'] as const).map((scope) => a.leaderboard({ sort, track, scope, limit: 200 })))),
    season: a.season(),
    past: a.season('2026-W11'),
    profiles: players.slice(0, 50).map((p) => a.profile(p)),
    feeds: await Promise.all(players.slice(0, 50).map((p) => a.notifications(p))),
  })
  const before = await snapshot(s.arena)
  const xp = before.boards[0]!.rows
  t.equal(xp.length, 200, 'the lifetime human XP board is full')
  t.ok(xp.every((r, i) => i === 0 || xp[i - 1]!.xp >= r.xp), 'sorted by XP')
  const acc = before.boards.find((b) => b.sort === 'accuracy' && b.track === 'human' && b.scope === 'lifetime')!.rows
  t.ok(acc.every((r, i) => i === 0 || acc[i - 1]!.accuracy! >= r.accuracy!), 'sorted by accuracy')
  t.ok(before.past!.season.frozen && before.past!.boards.human.length > 0 && before.past!.boards.agent.length > 0, 'a past season froze both boards')
  t.ok(xp.every((r) => !JSON.stringify(r).includes('0x')), 'no address on a board')
  await s.close()
  // The duel replays its events to every new subscriber at a start: the same channels, to the rebuilt Arena.
  const reopened = await reopen(t, s.dir, s.events)
  reopened.clock.t = T0 + month
  t.same(await snapshot(reopened.arena), before, 'identical after the restart')
})

/** Opens an Arena over an existing data dir with the given events (replayed to it on subscribe). */
async function reopen(t: Parameters<typeof makeTempDir>[0], dir: string, events: TestCallEvents) {
  const log = await EmbeddedLog.open(dir)
  const clock = new TestClock(T0)
  const arena = await Arena.open({ log, clock, events })
  await arena.idle()
  t.teardown(async () => { await arena.close(); await log.close() })
  return { arena, clock }
}
