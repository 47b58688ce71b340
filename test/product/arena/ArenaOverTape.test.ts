/**
 * Issue 16 acceptance: "A seeded population (for example 1,000 human and agent players calling over a month of
 * replayed tape) drives the boards in a test". Nothing here is synthetic but the players: the engine `svc start` runs
 * replays the recorded OKX SOL tape (../shared/tapes) three hours at a time, so its decisions are real claims on open clocks and
 * its resolutions come from the tape; 1,000 seeded players (a fifth on the agent track, two thirds opted in) lock calls
 * on those open clocks through the real POST /v1/calls (credits rail, paid at the decision price); the duel grades them
 * from the engine's outcome bus and the Arena folds the duel's events, wired as app/ServiceApp.ts wires them.
 *
 * Checked: every call is graded or voided exactly as its decision's outcome says; the duel's scoreboards, the Arena's
 * profiles and its boards agree with those expected grades; season boards of ended ISO weeks are frozen and rank humans
 * and agents apart; a restart of engine, duel and Arena on the same data rebuilds identical profiles and boards.
 */
import { withProof } from '../../helpers/serving/signIn.ts'
import t from 'tap'
import { join } from 'node:path'
import { ENGINE_CUT, engineRelease, engineTicks } from '../../../bench/engineFixture.ts'
import { EngineRunner } from '../../../engine/EngineRunner.ts'
import { QuestionCatalog } from '../../../engine/QuestionCatalog.ts'
import { tickKey, tickTime, type Tick } from '../../../ingest/Tick.ts'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { encodeTickEnvelope } from '../../../pipeline/TickEnvelope.ts'
import { topicNames, topicSpecs } from '../../../pipeline/topics.ts'
import { Arena } from '../../../product/arena/Arena.ts'
import { isoWeekOf } from '../../../product/arena/periods.ts'
import { BillingService } from '../../../product/billing/BillingService.ts'
import { DuelService } from '../../../product/duel/DuelService.ts'
import { CreditsPaymentGate } from '../../../serving/payments/CreditsPaymentGate.ts'
import { RailRouter } from '../../../serving/payments/RailRouter.ts'
import { RateLimiter } from '../../../serving/RateLimiter.ts'
import { Server } from '../../../serving/Server.ts'
import { PAY_TO } from '../../helpers/serving/server.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const DAY = 86_400_000
/** The month of play: from two days after the training cut, 30 days (the tape runs on to 2026-08-22). */
const START = ENGINE_CUT + 2 * DAY
const DAYS = 30
const PLAYERS = 1000
/** The replay moves in steps of this much event time; players call on the clocks open at the end of each. */
const STEP = 3 * 3_600_000
const CALLS_PER_STEP = 15

const players = Array.from({ length: PLAYERS }, (_, i) => `0x${(0xa000 + i).toString(16).padStart(40, '0')}`)
const isAgent = (i: number) => i % 5 === 0
const isOptedIn = (i: number) => i % 3 !== 0
/** How often player i sides with the house's claim (0.35..0.80): skill differs, so the boards have an order. */
const followsHouse = (i: number) => 0.35 + (i % 10) * 0.05

let seed = 20260622
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31)

const ticks = await engineTicks()
const dir = await makeTempDir(t, 'svc-arena-tape-')
const names = topicNames({})

/** The engine, the duel, the Arena and the server over the data in `dir`, wired as ServiceApp wires them. */
async function openWorld() {
  const log = await EmbeddedLog.open(join(dir, 'log'))
  await log.ensureTopics(topicSpecs(names, 3))
  const runner = await EngineRunner.start({ log, dataDir: join(dir, 'engine-data'), names, trainUntil: ENGINE_CUT, release: await engineRelease() })
  const catalog = new QuestionCatalog()
  const eventTime = () => runner.live.now() ?? START
  const clock = { now: eventTime }
  const duel = await DuelService.open({
    log,
    ledger: {
      decision: (id) => runner.ledger.index.decision(id),
      clockNow: (questionId) => catalog.clockFor(questionId, runner.live),
      resolutions: runner.ledger.bus.resolutions,
    },
    now: eventTime,
    wallNow: eventTime,
  })
  const arena = await Arena.open({ log, clock, events: duel.events })
  const billing = await BillingService.open({ log, clock, opsToken: null })
  const server = await Server.start({
    port: 0,
    config: { payTo: PAY_TO },
    services: {
      clock, billing, duel, arena,
      paymentGate: new RailRouter({ payTo: PAY_TO, credits: new CreditsPaymentGate(billing.ledger, PAY_TO) }),
      rateLimiter: new RateLimiter({ ip: { burst: 1e9, refillPerSec: 1e9 }, payer: { burst: 1e9, refillPerSec: 1e9 } }),
    },
  })
  const close = async () => {
    await server.close()
    await arena.close()
    await duel.close()
    await billing.close()
    await runner.close()
    await log.close()
  }
  return { log, runner, duel, arena, billing, server, close }
}

let world = await openWorld()
t.teardown(() => world.close())

/** Produces ticks in [from, to) as the tape producer does, then waits until the engine has handled them. */
let produced = 0
async function replayUntil(to: number): Promise<void> {
  const batch: Tick[] = []
  while (produced < ticks.length && tickTime(ticks[produced]!) < to) batch.push(ticks[produced++]!)
  if (batch.length > 0) {
    const producer = await world.log.createProducer()
    const first = produced - batch.length
    await producer.send(names.ticks, batch.map((x, j) => ({ key: tickKey(x), value: encodeTickEnvelope({ seq: first + j + 1, tape: 'okx-sol', tick: x }), timestamp: tickTime(x) })))
    await producer.close()
  }
  await world.runner.waitForTicks()
  await world.arena.idle()
}

interface Lock { payer: string; decision_id: string; call: 'obtains' | 'not' }

t.test('1,000 players calling over a month of replayed tape drive the boards; a restart rebuilds them identically', async (t) => {
  await replayUntil(START)
  for (const p of players) await world.billing.grant({ payer: p, credits: 2_000_000, ref: 'arena-tape' })
  await Promise.all(players.map(async (p, i) => {
    if (isOptedIn(i)) {
      await world.arena.optIn(p, true)
      await world.duel.optIn(p, true)
    }
    if (isAgent(i)) await world.arena.setAgent(p, true)
  }))

  const locks: Lock[] = []
  const taken = new Set<string>()
  let refusedClosed = 0
  for (let step = 1; step <= (DAYS * DAY) / STEP; step++) {
    await replayUntil(START + step * STEP)
    const now = world.runner.live.now()!
    const open = world.runner.ledger.index.unresolvedClaims().filter((d) => Date.parse(d.horizon_end) > now)
    if (open.length === 0) continue
    const asks: Array<Lock & { i: number }> = []
    for (let k = 0; k < CALLS_PER_STEP; k++) {
      // Skewed: a few players call often (the call boards need 10 graded calls), most now and then.
      const i = Math.floor(PLAYERS * rand() ** 2)
      const d = open[Math.floor(rand() * open.length)]!
      if (taken.has(`${i}|${d.decision_id}`)) continue
      taken.add(`${i}|${d.decision_id}`)
      const houseSide = d.probability >= 0.5 ? 'obtains' : 'not'
      const call = rand() < followsHouse(i) ? houseSide : houseSide === 'obtains' ? 'not' : 'obtains'
      asks.push({ i, payer: players[i]!, decision_id: d.decision_id, call })
    }
    for (let k = 0; k < asks.length; k += 16) {
      await Promise.all(asks.slice(k, k + 16).map(async (a) => {
        const res = await fetch(`${world.server.url}/v1/calls`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(await withProof(world.server, '/v1/calls', { 'x-svc-payer': a.payer })) },
          body: JSON.stringify({ decision_id: a.decision_id, call: a.call }),
        })
        const body = (await res.json()) as { error?: { code: string } }
        if (res.status === 201) locks.push({ payer: a.payer, decision_id: a.decision_id, call: a.call })
        else if (res.status === 409 && body.error?.code === 'CLOCK_CLOSED') refusedClosed++
        else t.fail(`POST /v1/calls answered ${res.status}: ${JSON.stringify(body)}`)
      }))
    }
  }
  // Everything called resolves: the tape runs on for weeks after the month.
  await replayUntil(START + (DAYS + 10) * DAY)
  const callers = new Set(locks.map((l) => l.payer))
  t.ok(locks.length >= 2000, `${locks.length} calls locked on the engine's open clocks (${refusedClosed} refused as closed)`)
  t.ok(callers.size >= 600, `${callers.size} distinct players called`)
  // Between two hourly bars only the 240 m clocks (S04) are open: a 60 m clock (S01) opens at one bar and closes at
  // the next, so in replayed event time it is never open to a call (on a live venue the wall clock runs in between).
  const questions = new Set(locks.map((l) => world.runner.ledger.index.decision(l.decision_id)!.question_id))
  t.ok(questions.has('S04_drawdown_risk'), `calls on ${[...questions].join(', ')}`)

  // The expected grade of every call, from the engine's own outcomes.
  const expected = new Map<string, { calls: number; graded: number; correct: number; void: number; open: number }>()
  let resolved = 0
  for (const l of locks) {
    const e = expected.get(l.payer) ?? { calls: 0, graded: 0, correct: 0, void: 0, open: 0 }
    e.calls++
    const o = world.runner.ledger.index.outcome(l.decision_id)
    if (!o) e.open++
    else if (o.outcome === 'unresolvable') e.void++
    else {
      e.graded++
      resolved++
      if ((l.call === 'obtains') === (o.outcome === 'obtains')) e.correct++
    }
    expected.set(l.payer, e)
  }
  t.ok(resolved >= locks.length * 0.9, `${resolved} of ${locks.length} calls were graded by the tape's outcomes`)

  const mismatches: string[] = []
  for (const [payer, e] of expected) {
    const s = await world.duel.scoreboard(payer)
    if (s.calls !== e.calls || s.graded !== e.graded || s.correct !== e.correct || s.void !== e.void || s.open !== e.open) {
      mismatches.push(`duel ${payer}: ${JSON.stringify({ calls: s.calls, graded: s.graded, correct: s.correct, void: s.void, open: s.open })} ≠ ${JSON.stringify(e)}`)
    }
    const p = world.arena.profile(payer).stats
    if (p.calls !== e.calls || p.graded !== e.graded || p.correct !== e.correct || p.void !== e.void) {
      mismatches.push(`arena ${payer}: ${JSON.stringify(p)} ≠ ${JSON.stringify(e)}`)
    }
  }
  t.same(mismatches.slice(0, 5), [], 'every scoreboard and profile counts exactly the grades the tape gave')

  // Lifetime boards: opted-in players with graded calls, humans and agents apart, in order.
  const byPublic = new Map(players.map((p, i) => [world.arena.profile(p).public_id, i]))
  for (const track of ['human', 'agent'] as const) {
    const board = world.arena.leaderboard({ sort: 'xp', track, scope: 'lifetime', limit: 200 })
    t.ok(board.rows.length >= 100, `${track} board: ${board.rows.length} rows (200 shown at most)`)
    const wrongTrack = board.rows.filter((r) => isAgent(byPublic.get(r.public_id)!) !== (track === 'agent') || !isOptedIn(byPublic.get(r.public_id)!))
    t.same(wrongTrack, [], `${track} board: only opted-in players of its track`)
    t.ok(board.rows.every((r, k) => k === 0 || board.rows[k - 1]!.xp >= r.xp), `${track} board sorted by XP`)
    const accuracy = world.arena.leaderboard({ sort: 'accuracy', track, scope: 'lifetime', limit: 200 }).rows
    t.ok(accuracy.every((r, k) => k === 0 || (accuracy[k - 1]!.accuracy ?? 0) >= (r.accuracy ?? 0)), `${track} accuracy board sorted by accuracy`)
  }
  // The skilled (followsHouse high) should on the whole out-rank the contrarians when the house is right more often.
  const publicBoard = world.duel.publicBoard('all')
  t.ok(publicBoard.entries.length > 0, `the public call board lists ${publicBoard.entries.length} players with ≥ 10 graded calls`)

  // Seasons: every ISO week of the month that has ended is frozen, humans and agents ranked apart by season XP.
  const now = world.runner.live.now()!
  let frozenWeeks = 0
  for (let at = START; at < START + DAYS * DAY; at += 7 * DAY) {
    const week = isoWeekOf(at)
    const season = world.arena.season(week.key)!
    if (!season.season.frozen) continue
    frozenWeeks++
    const { human, agent } = season.boards
    t.ok(human.length + agent.length > 0, `season ${week.key}: ${human.length} human and ${agent.length} agent rows`)
    for (const rows of [human, agent]) t.ok(rows.every((r, k) => r.rank === k + 1 && (k === 0 || rows[k - 1]!.xp >= r.xp)), `season ${week.key}: ranked by season XP`)
  }
  t.ok(frozenWeeks >= 4, `${frozenWeeks} ended seasons are frozen (event time now ${new Date(now).toISOString()})`)
  t.ok(world.duel.crowdBenchmark() !== null, 'the crowd benchmark is measured (≥ 10 graded calls per question)')

  // A restart rebuilds identical profiles and boards from the log.
  const snapshot = async () => {
    const a = world.arena
    return JSON.stringify({
      profiles: players.slice(0, 300).map((p) => a.profile(p)),
      boards: (['xp', 'accuracy', 'streak'] as const).flatMap((sort) =>
        (['human', 'agent'] as const).flatMap((track) => (['lifetime', 'season'] as const).map((scope) => a.leaderboard({ sort, track, scope, limit: 200 })))),
      seasons: [0, 7, 14, 21, 28].map((d) => a.season(isoWeekOf(START + d * DAY).key)),
      notifications: await Promise.all(players.slice(0, 100).map((p) => a.notifications(p))),
      duel: { public: world.duel.publicBoard('all'), scoreboards: await Promise.all(players.slice(0, 100).map((p) => world.duel.scoreboard(p))) },
    })
  }
  const before = await snapshot()
  const kindsBefore = world.arena.xpAwardsByKind()
  await world.close()
  world = await openWorld()
  await world.runner.waitForTicks()
  await world.arena.idle()
  const after = await snapshot()
  t.same(world.arena.xpAwardsByKind(), kindsBefore, 'no award is written by a restart')
  let at = 0
  while (at < before.length && before[at] === after[at]) at++
  t.equal(at, before.length, `profiles, boards, seasons, notifications and call boards are identical after a restart${at < before.length ? `; first difference: …${before.slice(Math.max(0, at - 300), at + 80)}… vs …${after.slice(Math.max(0, at - 300), at + 80)}…` : ''}`)
  t.equal(after.length, before.length)
})
