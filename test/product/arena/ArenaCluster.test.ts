/**
 * The Arena on several instances (issue 32): two Arenas on one log, each folding every call event (each instance's duel
 * follows every call) and writing only the awards of the payers whose partition it owns (`writesFor`), compared with
 * one Arena alone on an embedded log of its own that sees the same events, asks and settings:
 * - every award once in the journals, and the same awards (experience ids, notification keys with their ids) as the
 *   single instance writes; each instance's profiles and boards are the single instance's (the journals followed);
 * - a partition moved while its owner's writer has awards queued: the owner defers what it has not begun sending, the
 *   new owner writes it;
 * - an owner that stops (its partition unowned for a while, then the instance closed) leaves its payers' awards to the
 *   instance that takes the partition over (takeOver): the deferred grades and what the state implies, once;
 * - a restarted instance that takes its partition back writes nothing twice.
 * Both logs.
 */
import t from 'tap'
import type { PaidCall } from '../../../pipeline/journal/PaidCall.ts'
import { UnitOfWork } from '../../../pipeline/journal/UnitOfWork.ts'
import type { EventLog } from '../../../pipeline/log/EventLog.ts'
import { EXPERIENCE } from '../../../pipeline/records/experienceRecord.ts'
import { NOTIFICATIONS } from '../../../pipeline/records/notificationRecord.ts'
import { Arena } from '../../../product/arena/Arena.ts'
import type { CallLocked } from '../../../product/duel/index.ts'
import { TestCallEvents, TestClock } from '../../helpers/callEvents.ts'
import { forEachLog, makeEmbeddedFactory, readAll } from '../../helpers/logs.ts'
import { seeded } from '../../helpers/stateSnapshots.ts'
import { until } from '../../helpers/until.ts'

const T0 = Date.parse('2026-03-02T09:00:00.000Z')
const PAYERS = Array.from({ length: 6 }, (_, i) => `0x${String(i + 1).repeat(40)}`)
const ASSETS = ['BTC', 'ETH', 'SOL']
/** The payer partitions of this test: the payer's index modulo 2 (the service: the draws journal's partition). */
const partitionOf = (payer: string) => PAYERS.indexOf(payer.toLowerCase()) % 2

type Instance = 'a' | 'b'

interface Awards {
  xp: string[]
  notes: string[]
}

async function awardsOf(log: EventLog): Promise<Awards> {
  const xp = (await readAll(log, EXPERIENCE.name)).map((r) => EXPERIENCE.decode(r.value)).map((x) => `${x.payer} ${x.id} ${x.xp}`)
  const notes = (await readAll(log, NOTIFICATIONS.name)).map((r) => NOTIFICATIONS.decode(r.value)).map((n) => `${n.key} #${n.id}`)
  return { xp, notes }
}

const sorted = (xs: string[]) => [...xs].sort()

t.test('two instances write each award once, the awards one instance writes; a partition taken over is awarded once', (t) =>
  forEachLog(t, async (t, makeLog, kind) => {
    const log = await makeLog()
    // The single instance's log: embedded whichever log the cluster runs on (what it writes is the reference).
    const { makeLog: makeAlone } = await makeEmbeddedFactory(t)
    const alone = await makeAlone()
    const rnd = seeded(kind === 'kafka' ? 5 : 29)
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!
    const events = new TestCallEvents()
    const clock = new TestClock(T0)
    const owner = new Map<number, Instance | null>([[0, 'a'], [1, 'b']])
    const writesFor = (me: Instance) => (payer: string) => owner.get(partitionOf(payer)) === me
    const openInstance = (me: Instance) => Arena.open({ log, clock, events, partitions: 3, groupId: `${me}.arena`, writesFor: writesFor(me) })
    const arenas: Record<Instance, Arena | null> = { a: await openInstance('a'), b: await openInstance('b') }
    const single = await Arena.open({ log: alone, clock, events, partitions: 3 })
    t.teardown(async () => {
      for (const a of [arenas.a, arenas.b, single]) await a?.close()
    })
    const open = new Set<CallLocked>()
    let decision = 0

    /** Calls locked and graded, asks at the payer's owner, settings at either instance; the single Arena gets each too. */
    const run = async (steps: number) => {
      for (let i = 0; i < steps; i++) {
        const payer = pick(PAYERS)
        clock.t += 60_000 * (1 + Math.floor(rnd() * 180))
        const r = rnd()
        if (r < 0.4) open.add(events.lock(payer, clock.t, { asset: pick(ASSETS), call: rnd() < 0.5 ? 'obtains' : 'not' }))
        else if (r < 0.8 && open.size > 0) {
          const c = [...open][Math.floor(rnd() * open.size)]!
          open.delete(c)
          events.grade(c, clock.t, rnd() < 0.6 ? 'correct' : rnd() < 0.7 ? 'wrong' : 'void')
        } else if (r < 0.9) {
          // A paid ask is served by the payer's owner (forwarded there): its XP joins the paid call's unit.
          const home = arenas[owner.get(partitionOf(payer)) ?? 'a']
          if (!home) continue
          const d = `d-${++decision}`
          for (const arena of [home, single]) {
            const unit = new UnitOfWork()
            arena.recordAskIn(unit, { payer } as PaidCall, { decision_id: d, question_id: 'S05_funding_flip', asset: 'BTC' })
            await unit.commit()
          }
        } else {
          const at = arenas[pick(['a', 'b'] as const)] ?? arenas.b!
          const flag = rnd() < 0.7
          await at.optIn(payer, flag)
          await single.optIn(payer, flag)
        }
      }
    }

    /** Every award written and read back everywhere; then the instances' journals hold the single instance's awards. */
    const settled = async (what: string, live: Arena[]) => {
      for (const arena of [...live, single]) await arena.idle()
      const expected = await awardsOf(alone)
      let got: Awards = { xp: [], notes: [] }
      await until(`${what}: the cluster's journals hold the single instance's awards`, async () => {
        got = await awardsOf(log)
        return got.notes.length >= expected.notes.length && got.xp.length >= expected.xp.length
      }, 30_000).catch(() => undefined)
      t.equal(new Set(got.xp).size, got.xp.length, `${what}: no experience award twice (${got.xp.length})`)
      t.equal(new Set(got.notes).size, got.notes.length, `${what}: no notification twice (${got.notes.length})`)
      t.same(sorted(got.xp), sorted(expected.xp), `${what}: the experience awards one instance writes`)
      t.same(sorted(got.notes), sorted(expected.notes), `${what}: the notifications one instance writes, with its ids`)
      // Each instance's replica: what the single instance shows, for every payer, whoever wrote it.
      for (const arena of live) await until(`${what}: a replica caught up`, () => PAYERS.every((p) => arena.profile(p).xp === single.profile(p).xp), 30_000).catch(() => undefined)
      for (const [i, arena] of live.entries()) {
        t.same(PAYERS.map((p) => arena.profile(p)), PAYERS.map((p) => single.profile(p)), `${what}: instance ${i + 1}'s profiles are the single instance's`)
        const board = { sort: 'xp', track: 'human', scope: 'lifetime', limit: 50 } as const
        t.same(arena.leaderboard(board), single.leaderboard(board), `${what}: instance ${i + 1}'s board is the single instance's`)
      }
      return got
    }

    await run(kind === 'kafka' ? 120 : 300)
    const first = await settled('both instances up', [arenas.a!, arenas.b!])
    t.ok(first.notes.length > 50, `${first.notes.length} notifications, ${first.xp.length} experience awards`)

    // A rebalance moves partition 1 away from b while b's writer has awards queued: b writes the round it is sending
    // and defers the rest; a takes the partition over and writes them, each once.
    const before = (await awardsOf(log)).notes.length
    for (const payer of PAYERS.filter((p) => partitionOf(p) === 1)) for (let i = 0; i < 40; i++) events.lock(payer, (clock.t += 1000), { asset: ASSETS[i % 3]! })
    owner.set(1, null)
    // Both writers done (the single instance's too: what it derived is the reference, so it must be written first).
    await arenas.b!.idle()
    await single.idle()
    const written = (await awardsOf(log)).notes.length - before
    const derived = (await awardsOf(alone)).notes.length - before
    t.ok(written < derived, `b wrote ${written} of the ${derived} notifications it had queued before the partition moved`)
    owner.set(1, 'a')
    await arenas.a!.takeOver((payer) => partitionOf(payer) === 1)
    await settled('partition 1 moved from b to a with awards queued', [arenas.a!, arenas.b!])
    owner.set(1, 'b')
    await arenas.b!.takeOver((payer) => partitionOf(payer) === 1)

    // Partition 0 loses its owner (a rebalance, or a frozen owner): its payers' events are folded everywhere and awarded
    // nowhere; then instance a dies and b takes the partition over.
    owner.set(0, null)
    await run(kind === 'kafka' ? 40 : 100)
    await arenas.a!.close()
    arenas.a = null
    await run(kind === 'kafka' ? 40 : 100)
    await arenas.b!.idle()
    const missing = (await awardsOf(alone)).notes.length - (await awardsOf(log)).notes.length
    t.ok(missing > 0, `${missing} notifications of partition 0's payers wait for a new owner`)
    owner.set(0, 'b')
    await arenas.b!.takeOver((payer) => partitionOf(payer) === 0)
    await settled('b took partition 0 over', [arenas.b!])

    // Instance a restarts (its journals rebuilt, every call event replayed: all awarded already) and takes its
    // partition back; the calls go on on both.
    arenas.a = await openInstance('a')
    owner.set(0, 'a')
    await arenas.a.takeOver((payer) => partitionOf(payer) === 0)
    await run(kind === 'kafka' ? 60 : 150)
    const last = await settled('a rejoined', [arenas.a, arenas.b!])
    t.ok(last.notes.length > first.notes.length, `${last.notes.length - first.notes.length} notifications since both were up`)
  }),
)
