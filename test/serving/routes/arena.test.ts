/**
 * The Arena routes over real HTTP on 127.0.0.1, one server for the file: a real Arena and a real BillingService on
 * one embedded log, the call events on real channels, the credits rail with the Arena's rank discount, and the real
 * billing routes (packs and plans bought through a test rail that authorizes every x402 call).
 */
import t from 'tap'
import { Arena } from '../../../product/arena/Arena.ts'
import { UNMEASURED_LADDER } from '../../../product/billing/pricing.ts'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { BillingService } from '../../../product/billing/BillingService.ts'
import { CreditsPaymentGate } from '../../../serving/payments/CreditsPaymentGate.ts'
import { RailRouter } from '../../../serving/payments/RailRouter.ts'
import { ROUTES } from '../../../serving/routes/registry.ts'
import { AuthorizingPaymentGate } from '../../helpers/serving/AuthorizingPaymentGate.ts'
import { OPS_TOKEN } from '../../helpers/serving/billing.ts'
import { jsonCaller, PAY_TO, withServer } from '../../helpers/serving/server.ts'
import { WorkBook, workRoutes } from '../../helpers/serving/workRoutes.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { TestCallEvents, TestClock } from '../../helpers/callEvents.ts'

const A = '0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'
const B = '0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'
const BUYER = '0xcccccccccccccccccccccccccccccccccccccccc'
const T0 = Date.parse('2026-03-04T09:00:00.000Z')
const H = 3_600_000

const dir = await makeTempDir(t, 'svc-arena-routes-')
const log = await EmbeddedLog.open(dir)
const clock = new TestClock(T0)
const events = new TestCallEvents()
const arena = await Arena.open({ log, clock, events })
const billing = await BillingService.open({ log, clock, opsToken: OPS_TOKEN })
t.teardown(async () => {
  await arena.close()
  await billing.close()
  await log.close()
})
// Rung 2: decision.deep costs 1,563 credits, 563 above the judgment floor (what a rank discount may take from).
const server = await withServer(t, {
  routes: [...ROUTES, ...workRoutes(new WorkBook())],
  services: {
    clock, arena, billing, ladder: { measures: async () => ({ ...UNMEASURED_LADDER, rung: 2 }) },
    paymentGate: new RailRouter({ payTo: PAY_TO, credits: new CreditsPaymentGate(billing.ledger, PAY_TO, arena), x402: new AuthorizingPaymentGate(BUYER) }),
  },
})

const call = jsonCaller(server)

// A: twelve correct calls over all three markets (past Forecaster); B: one wrong call.
for (let i = 0; i < 12; i++) events.grade(events.lock(A, T0 + i * 1000, { asset: (['BTC', 'ETH', 'SOL'] as const)[i % 3] }), T0 + H + i, 'correct')
events.grade(events.lock(B, T0), T0 + H, 'wrong')
await arena.idle()

t.test('GET /v1/arena/levels publishes the ladder contract', async (t) => {
  const r = await call('GET', '/v1/arena/levels')
  t.equal(r.status, 200)
  t.same(r.body.data.ranks.map((x: { rank: string }) => x.rank), ['Analyst', 'Forecaster', 'Strategist', 'Oracle'])
  t.match(r.body.data.levels[0], { level: 1, credit_band: { min: 0, max: 1000 }, ask_xp: 10, correct_call_xp: 50 })
  t.equal(r.body.data.judgment_floor_credits, 1000)
})

t.test('profile: every spec field, by header payer or query payer; default not on the boards', async (t) => {
  const byHeader = await call('GET', '/v1/arena/profile', undefined, { payer: A })
  const byQuery = await call('GET', `/v1/arena/profile?payer=${A}`)
  t.equal(byHeader.status, 200)
  t.same(byHeader.body.data, byQuery.body.data)
  const p = byHeader.body.data
  for (const f of ['payer', 'rank', 'xp', 'next_rank', 'remaining_xp', 'progress', 'discount', 'stats', 'badges', 'board_opt_in', 'is_agent', 'season', 'quests']) t.ok(f in p, f)
  for (const f of ['calls', 'correct', 'streak', 'longest_streak', 'markets_covered']) t.ok(f in p.stats, `stats.${f}`)
  for (const f of ['season_key', 'xp', 'calls', 'correct', 'board_rank']) t.ok(f in p.season, `season.${f}`)
  t.match(p, { rank: 'Forecaster', board_opt_in: false, is_agent: false, stats: { calls: 12, correct: 12, streak: 12, markets_covered: 3 } })
  t.equal(p.season.season_key, '2026-W10')
  t.equal(p.season.board_rank, null, 'not opted in: no board rank')
})

t.test('bad input is a 400 VALIDATION envelope, never a 500', async (t) => {
  for (const [method, path, body, headers] of [
    ['GET', '/v1/arena/profile', undefined, {}],
    ['GET', '/v1/arena/profile?payer=0x12', undefined, {}],
    ['GET', `/v1/arena/profile?payer=${A}`, undefined, { payer: B }],
    ['GET', '/v1/arena/leaderboard?limit=0', undefined, {}],
    ['GET', '/v1/arena/leaderboard?limit=201', undefined, {}],
    ['GET', '/v1/arena/leaderboard?sort=brier', undefined, {}],
    ['GET', '/v1/arena/leaderboard?track=robot', undefined, {}],
    ['GET', '/v1/arena/leaderboard?scope=forever', undefined, {}],
    ['GET', '/v1/arena/season?season_key=2026-W99', undefined, {}],
    ['POST', '/v1/arena/opt-in', { opt_in: true }, {}],
    ['POST', '/v1/arena/opt-in', { opt_in: 'yes' }, { payer: A }],
    ['POST', '/v1/arena/agent', {}, { payer: A }],
    ['POST', '/v1/arena/notifications/read', { payer: A, ids: [0] }, {}],
    ['PUT', '/v1/arena/notifications/preferences', { payer: A, preferences: { rank_up: 'no' } }, {}],
    ['PUT', '/v1/arena/notifications/preferences', { payer: A, preferences: { 'Bad Kind': false } }, {}],
  ] as const) {
    const r = await call(method, path, body, headers as Record<string, string>)
    t.equal(r.status, 400, `${method} ${path} ${JSON.stringify(body ?? '')}`)
    t.equal(r.body.error?.code, 'VALIDATION')
  }
})

t.test('opt-in, boards, cards: visible only when opted in; the card 404 is one answer for unknown and hidden ids', async (t) => {
  const hiddenId = (await call('GET', '/v1/arena/profile', undefined, { payer: B })).body.data.public_id
  const hidden = await call('GET', `/v1/arena/card/${hiddenId}`)
  const unknown = await call('GET', '/v1/arena/card/00000000000000000000')
  t.equal(hidden.status, 404)
  t.equal(unknown.status, 404)
  t.equal(hidden.body.error.code, 'CARD_NOT_FOUND')
  t.same({ ...hidden.body.error, request_id: null }, { ...unknown.body.error, request_id: null }, 'indistinguishable')
  t.same((await call('GET', '/v1/arena/leaderboard')).body.data.rows, [], 'nobody opted in: an empty board is data')
  const o = await call('POST', '/v1/arena/opt-in', { opt_in: true }, { payer: A })
  t.match(o, { status: 200, body: { data: { board_opt_in: true } } })
  await call('POST', '/v1/arena/opt-in', { opt_in: true }, { payer: B })
  const board = await call('GET', '/v1/arena/leaderboard?sort=accuracy&limit=1')
  t.equal(board.body.data.rows.length, 1)
  t.match(board.body.data.rows[0], { rank: 1, xp: Number, graded: 12, correct: 12, accuracy: 1, streak: 12 })
  const card = await call('GET', `/v1/arena/card/${board.body.data.rows[0].public_id}`)
  t.equal(card.status, 200)
  t.notOk(JSON.stringify(card.body.data).toLowerCase().includes(A.slice(2, 10)), 'the card never shows the address')
  t.notOk(JSON.stringify(board.body.data).toLowerCase().includes('0x'), 'the board never shows an address')
  const season = await call('GET', '/v1/arena/season')
  t.match(season.body.data.season, { season_key: '2026-W10', seconds_remaining: (Date.parse('2026-03-09T00:00:00Z') - T0) / 1000 })
  t.equal(season.body.data.boards.human.length, 2)
  t.same(season.body.data.boards.agent, [])
  const agent = await call('POST', '/v1/arena/agent', { is_agent: true }, { payer: B })
  t.match(agent.body.data, { is_agent: true })
  t.equal((await call('GET', '/v1/arena/leaderboard?track=agent&scope=season')).body.data.rows.length, 1)
})

t.test('quests and next-action answer from open quest progress', async (t) => {
  const q = await call('GET', `/v1/arena/quests?payer=${B}`)
  t.equal(q.status, 200)
  t.match(q.body.data.quests.find((x: { key: string }) => x.key === 'daily_correct_1'), { progress: 0, target: 1, xp_reward: 25, expires_at: '2026-03-05T00:00:00.000Z' })
  const n = await call('GET', '/v1/arena/next-action', undefined, { payer: B })
  t.match(n.body.data.action, { kind: 'quest', route: 'POST /v1/calls' })
  t.ok(n.body.data.action.remaining >= 1)
})

t.test('notifications: feed, read marks, preferences', async (t) => {
  const feed = await call('GET', '/v1/arena/notifications', undefined, { payer: A })
  t.equal(feed.status, 200)
  t.ok(feed.body.data.notifications.length <= 50)
  t.equal(feed.body.data.unread_count, feed.body.data.notifications.length)
  t.ok(feed.body.data.notifications.some((n: { kind: string; ref: string }) => n.kind === 'rank_up' && n.ref === 'Forecaster'))
  t.ok(feed.body.data.notifications.every((n: { id: number; read_at: null }) => Number.isInteger(n.id) && n.read_at === null))
  const first = feed.body.data.notifications[0].id
  const one = await call('POST', '/v1/arena/notifications/read', { payer: A, ids: [first] })
  t.match(one.body.data, { marked: 1, unread_count: feed.body.data.unread_count - 1 })
  const all = await call('POST', '/v1/arena/notifications/read', { payer: A })
  t.equal(all.body.data.unread_count, 0)
  const put = await call('PUT', '/v1/arena/notifications/preferences', { payer: A, preferences: { badge_earned: false } })
  t.match(put.body.data.preferences, { badge_earned: false, rank_up: true })
  const get = await call('GET', `/v1/arena/notifications/preferences?payer=${A}`)
  t.same(get.body.data, put.body.data)
  const after = await call('GET', '/v1/arena/notifications', undefined, { payer: A })
  t.notOk(after.body.data.notifications.some((n: { kind: string }) => n.kind === 'badge_earned'), 'an explicit false suppresses the kind')
})

t.test('the rank discount takes only from the premium above the judgment floor, on the credits debit', async (t) => {
  t.equal((await call('POST', '/v1/billing/grants', { action: 'grant', payer: A, credits: 10_000, ref: 'g-a' }, { 'x-svc-ops': OPS_TOKEN })).status, 200)
  await call('POST', '/v1/billing/grants', { action: 'grant', payer: B, credits: 10_000, ref: 'g-b' }, { 'x-svc-ops': OPS_TOKEN })
  const a = await call('POST', '/v1/test/work', { question_id: 'S02_liquidation_cascade', n: 1 }, { 'x-svc-payer': A })
  const b = await call('POST', '/v1/test/work', { question_id: 'S02_liquidation_cascade', n: 1 }, { 'x-svc-payer': B })
  t.equal(a.status, 200)
  t.equal(b.headers.get('x-svc-credits-charged'), '1563', 'an Analyst pays list price')
  t.equal(a.headers.get('x-svc-credits-charged'), String(1563 - 28), 'a Forecaster saves 5% of the 563 premium')
})

t.test('money never buys rank: buying packs and plans leaves XP, rank and boards as they were', async (t) => {
  await call('POST', '/v1/arena/opt-in', { opt_in: true }, { payer: BUYER })
  events.grade(events.lock(BUYER, T0 + 5000), T0 + H + 5000, 'correct')
  await arena.idle()
  const snapshot = async () => ({
    profile: (await call('GET', `/v1/arena/profile?payer=${BUYER}`)).body.data,
    boards: await Promise.all(['xp', 'accuracy', 'streak'].map(async (s) => (await call('GET', `/v1/arena/leaderboard?sort=${s}&limit=200`)).body.data)),
    season: (await call('GET', '/v1/arena/season')).body.data,
  })
  const before = await snapshot()
  const pack = await call('POST', '/v1/billing/packs/booster_2m4', { payer: BUYER }, { 'payment-signature': 'test' })
  const plan = await call('POST', '/v1/billing/plans/desk_pro', { payer: BUYER }, { 'payment-signature': 'test' })
  t.equal(pack.status, 200)
  t.equal(plan.status, 200)
  t.ok((await call('GET', `/v1/billing/credits?payer=${BUYER}`)).body.data.balance_credits >= 3_400_000, 'the credits landed')
  await arena.idle()
  t.same(await snapshot(), before, 'identical XP, rank and boards')
})

t.test('notifications: the inbox hands a cursor into the history, walked newest first by id, each row once', async (t) => {
  const E = '0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee'
  for (let i = 0; i < 20; i++) events.grade(events.lock(E, T0 + 9000 + i * 1000, { asset: (['BTC', 'ETH', 'SOL'] as const)[i % 3] }), T0 + H + 9000 + i, i % 4 === 0 ? 'wrong' : 'correct')
  await arena.idle()
  const whole = (await call('GET', '/v1/arena/notifications', undefined, { payer: E })).body.data
  t.ok(whole.notifications.length > 20 && whole.notifications.length < 50, `${whole.notifications.length} notifications`)
  t.equal(whole.next_cursor, null, 'an inbox that shows every row has no cursor')
  // Some read, some not: the inbox order (unread first) is not the history's.
  const readIds = whole.notifications.filter((n: { id: number }) => n.id % 3 === 0).map((n: { id: number }) => n.id)
  await call('POST', '/v1/arena/notifications/read', { payer: E, ids: readIds })
  const inbox = (await call('GET', `/v1/arena/notifications?payer=${E}&limit=6`)).body.data
  t.equal(inbox.notifications.length, 6)
  t.ok(inbox.notifications.every((n: { read_at: string | null }) => n.read_at === null), 'the inbox still shows unread rows first')
  t.type(inbox.next_cursor, 'string')
  const seen: number[] = []
  let cursor: string | null = inbox.next_cursor
  while (cursor !== null) {
    const page: any = (await call('GET', `/v1/arena/notifications?payer=${E}&limit=6&cursor=${cursor}`)).body.data
    seen.push(...page.notifications.map((n: { id: number }) => n.id))
    cursor = page.next_cursor
    // New notifications while walking get ids above the walk's start: never listed by it.
    events.grade(events.lock(E, T0 + 90_000 + seen.length, { asset: 'BTC' }), T0 + H + 90_000 + seen.length, 'correct')
    await arena.idle()
  }
  t.same(seen, whole.notifications.map((n: { id: number }) => n.id).sort((a: number, b: number) => b - a), 'every row present at the start, once, newest first by id')
  const other = await call('GET', `/v1/arena/notifications?payer=${A}&cursor=${inbox.next_cursor}`, undefined, { payer: A })
  t.match([other.status, other.body.error.detail], [400, { reason: 'INVALID_CURSOR', field: '/query/cursor' }], "another payer's cursor is refused")
})
