/**
 * The Arena checkpointed (issue 31): for random cuts of a generated history of locked and graded calls, settings (opt
 * in, agent track, preferences, read marks) and paid asks, the projection from (the snapshot taken at the cut + the
 * journals' tails + the duel's replay of every call event) equals the full rebuild, no award is written twice (a
 * restored Arena skips the replayed events it folded), events that arrive while the Arena is down are awarded once at
 * the restart; a corrupt, older-schema or ahead-of-log snapshot falls back to the rebuild with one log line and the
 * same state. Both logs.
 */
import t from 'tap'
import type { PaidCall } from '../../../pipeline/journal/PaidCall.ts'
import { UnitOfWork } from '../../../pipeline/journal/UnitOfWork.ts'
import type { EventLog } from '../../../pipeline/log/EventLog.ts'
import { StateSnapshots } from '../../../pipeline/state/StateSnapshots.ts'
import { stateDigest, type CheckpointSettings } from '../../../pipeline/state/StateStore.ts'
import { EXPERIENCE } from '../../../pipeline/records/experienceRecord.ts'
import { NOTIFICATIONS } from '../../../pipeline/records/notificationRecord.ts'
import { Arena } from '../../../product/arena/Arena.ts'
import { RECENT_COMPLETIONS } from '../../../product/arena/ArenaProjection.ts'
import { periodEndOfKey } from '../../../product/arena/periods.ts'
import type { CallLocked } from '../../../product/duel/index.ts'
import { TestCallEvents, TestClock } from '../../helpers/callEvents.ts'
import { forEachLog, readAll } from '../../helpers/logs.ts'
import { capturingLogger, cutPoints, keepSnapshot, readSnapshot, seeded, spoilSnapshot, type BadSnapshot } from '../../helpers/stateSnapshots.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import type { Logger } from 'pino'

const T0 = Date.parse('2026-03-02T09:00:00.000Z')
const PAYERS = Array.from({ length: 5 }, (_, i) => `0x${String(i + 1).repeat(40)}`)
const ASSETS = ['BTC', 'ETH', 'SOL']
const STORE = 'arena.projection'

interface World {
  events: TestCallEvents
  clock: TestClock
  open: Set<CallLocked>
}

/** One step of a generated history; `events` marks the steps a down Arena can miss (the duel goes on without it). */
type Step = { events: boolean; run: (w: World, arena: Arena | null) => Promise<void> }

function history(rnd: () => number, n: number): Step[] {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!
  let decision = 0
  return Array.from({ length: n }, () => {
    const payer = pick(PAYERS)
    // Time only moves forward, a few minutes to a few hours a step: grades arrive in resolution order (live and replay).
    const dt = 60_000 * (1 + Math.floor(rnd() * 240))
    const r = rnd()
    const tick = (w: World) => (w.clock.t += dt)
    if (r < 0.4) {
      const asset = pick(ASSETS)
      const call = rnd() < 0.5 ? 'obtains' : 'not'
      return { events: true, run: async (w) => void w.open.add(w.events.lock(payer, tick(w), { asset, call })) }
    }
    if (r < 0.75) {
      const result = rnd() < 0.6 ? 'correct' : rnd() < 0.8 ? 'wrong' : 'void'
      const which = rnd()
      return {
        events: true,
        run: async (w) => {
          const open = [...w.open]
          if (open.length === 0) return
          const c = open[Math.floor(which * open.length)]!
          w.open.delete(c)
          w.events.grade(c, tick(w), result)
        },
      }
    }
    if (r < 0.85) {
      const d = ++decision
      return {
        events: false,
        run: async (w, arena) => {
          tick(w)
          const unit = new UnitOfWork()
          arena!.recordAskIn(unit, { payer } as PaidCall, { decision_id: `d-${d}`, question_id: 'S05_funding_flip', asset: 'BTC' })
          await unit.commit()
        },
      }
    }
    const kind = rnd()
    const flag = rnd() < 0.6
    return {
      events: false,
      run: async (w, arena) => {
        tick(w)
        if (kind < 0.35) await arena!.optIn(payer, flag)
        else if (kind < 0.55) await arena!.setAgent(payer, flag)
        else if (kind < 0.7) await arena!.setPreferences(payer, { streak_extended: flag })
        else if (kind < 0.85) await arena!.markRead(payer, null)
        else {
          // Two rows of the inbox and one id anywhere in the feed (with a window: often one that left memory).
          const last = arena!.projection.peek(payer)?.lastId ?? 0
          const ids = (await arena!.notifications(payer)).notifications.slice(0, 2).map((x) => x.id)
          await arena!.markRead(payer, last > 0 ? [...ids, 1 + Math.floor(((kind - 0.85) / 0.15) * last)] : ids)
        }
      },
    }
  })
}

async function awardIds(log: EventLog): Promise<{ xp: string[]; notes: string[] }> {
  const xp = (await readAll(log, EXPERIENCE.name)).map((r) => (JSON.parse(r.value.toString('utf8')) as { id: string }).id)
  const notes = (await readAll(log, NOTIFICATIONS.name)).map((r) => (JSON.parse(r.value.toString('utf8')) as { key: string }).key)
  return { xp, notes }
}

/** Bounded (issue 31): the duel's replay holds only calls graded inside this window, the Arena drops older ids. */
const WINDOW_MS = 3 * 24 * 3_600_000

for (const bounded of [false, true])
t.test(`snapshot at random cuts + tail + replayed call events == full rebuild; no award twice; bad snapshots rebuild${bounded ? ' (hot window of 3 days)' : ''}`, (t) =>
  forEachLog(t, async (t, makeLog, kind) => {
    const log = await makeLog()
    const rnd = seeded(kind === 'kafka' ? 11 : 47)
    const steps = history(rnd, kind === 'kafka' ? 150 : 500)
    const cuts = cutPoints(rnd, steps.length, kind === 'kafka' ? 2 : 4)
    const { logger } = capturingLogger()
    const w: World = { events: new TestCallEvents(bounded ? WINDOW_MS : Infinity), clock: new TestClock(T0), open: new Set() }
    const open = (checkpoints: CheckpointSettings | null, l: Logger = logger) =>
      Arena.open({ log, clock: w.clock, events: w.events, partitions: 3, checkpoints, logger: l, ...(bounded ? { hotWindowMs: WINDOW_MS } : {}) })
    const live = await StateSnapshots.open(await makeTempDir(t))
    const kept = await Promise.all(cuts.map(async () => StateSnapshots.open(await makeTempDir(t))))

    // The live Arena through the history; at each cut a snapshot (kept aside), also one asked for with awards queued.
    let arena = await open({ snapshots: live, everyMs: 0 })
    t.equal(arena.checkpoints?.restored.reason, 'missing', 'the first start has no snapshot')
    let done = 0
    for (const [c, cut] of cuts.entries()) {
      for (; done < cut; done++) await steps[done]!.run(w, arena)
      // A new payer's first lock (a badge, a quest step, notifications) and a snapshot asked for at once: the call is
      // folded and its awards queued, not durable, so none is taken (a restart from it would skip the call for good).
      w.events.lock(`0x${'f'.repeat(39)}${c}`, (w.clock.t += 1000), { asset: 'ETH' })
      // (Embedded only: on Kafka the end-offset read before the capture outlasts the award write, so the snapshot may
      // be taken, rightly, with the awards durable.)
      const early = await arena.checkpoints!.checkpoint()
      if (kind === 'embedded') t.equal(early, null, `cut ${cut}: no snapshot while awards are queued`)
      await arena.idle()
      // (On Kafka an early snapshot whose end-offset read already saw the awards leaves nothing to move: then it is the one.)
      t.ok((await arena.checkpoints!.checkpoint()) ?? (kind === 'kafka' ? early : null), `cut ${cut}: a snapshot is written once the awards are`)
      await keepSnapshot(live, kept[c]!, STORE)
      if (c === 1) {
        // A restart between cuts: the final snapshot at close, restored (the replay skips what it folded).
        await arena.close()
        arena = await open({ snapshots: live, everyMs: 0 })
        t.equal(arena.checkpoints?.restored.restored, true, `cut ${cut}: the restart restores its snapshot`)
        await arena.idle()
      }
    }
    // The rest of the history; the Arena stops two thirds of the way into it and the duel's events go on without it.
    const down = done + Math.floor((steps.length - done) * 0.66)
    for (; done < down; done++) await steps[done]!.run(w, arena)
    await arena.idle()
    await arena.close()
    let missed = 0
    for (; done < steps.length; done++) {
      if (steps[done]!.events) {
        await steps[done]!.run(w, null)
        missed++
      }
    }
    t.ok(missed > 0, `${missed} call events while the Arena is down`)
    if (bounded) {
      const since = w.events.hotSince()!
      const gone = w.events.gradedLog.filter((g) => Date.parse(g.graded_at) < since).length
      t.ok(gone > 0, `${gone} of ${w.events.gradedLog.length} grades are past the window: not replayed, their ids dropped`)
      const payers = [...arena.projection.payers.values()]
      const left = payers.reduce((n, s) => n + s.lastId - s.notifications.length, 0)
      t.ok(left > 0, `${left} of ${payers.reduce((n, s) => n + s.lastId, 0)} notifications left memory (the snapshots hold the window's)`)
      // What grew with history before schema 4 keeps the window too: award ids, quest completions, period counters.
      const cutoff = arena.projection.cutoff()!
      const rows = [...arena.projection.rows()] as Array<Record<string, any>>
      const ids = rows.filter((r) => r.t === 'experience_ids').flatMap((r) => r.ids as string[])
      const gradedAt = new Map(w.events.gradedLog.map((g) => [g.call_id, Date.parse(g.graded_at)]))
      const callIds = ids.filter((id) => id.startsWith('call:'))
      t.ok(callIds.length > 0 && callIds.every((id) => gradedAt.get(id.slice(5))! >= cutoff), `${callIds.length} correct-call award ids held, none of a call graded before the window`)
      const over = (key: string) => periodEndOfKey(key)! <= cutoff
      const questIds = ids.filter((id) => id.startsWith('quest:'))
      t.ok(questIds.every((id) => !over(id.split(':')[2]!)), `${questIds.length} quest award ids held, none of a period over before the window`)
      const payerRows = rows.filter((r) => r.t === 'payer')
      t.ok(payerRows.every((r) => (r.counters as Array<[string]>).every(([k]) => !over(k))), 'no period counters of a period over')
      t.ok(payerRows.every((r) => (r.completions as Array<[string, string]>).slice(0, -RECENT_COMPLETIONS).every(([, k]) => !over(k))), 'quest completions of a period over: only among the last shown')
      const everQuests = (await awardIds(log)).xp.filter((id) => id.startsWith('quest:')).length
      t.ok(questIds.length < everQuests, `${everQuests - questIds.length} of ${everQuests} quest award ids left memory`)
    }
    const before = await awardIds(log)
    arena = await open({ snapshots: live, everyMs: 0 })
    t.equal(arena.checkpoints?.restored.restored, true, 'the restart after the outage restores the final snapshot')
    await arena.idle()
    const liveDigest = stateDigest(arena.projection)
    await arena.close()
    const awarded = await awardIds(log)
    t.ok(awarded.notes.length > before.notes.length, 'the events missed while down are awarded at the restart')
    t.equal(new Set(awarded.xp).size, awarded.xp.length, `no experience award written twice (${awarded.xp.length})`)
    t.equal(new Set(awarded.notes).size, awarded.notes.length, `no notification written twice (${awarded.notes.length})`)

    const rebuilt = await open(null)
    await rebuilt.idle()
    const reference = stateDigest(rebuilt.projection)
    await rebuilt.close()
    t.equal(liveDigest, reference, 'the restored state after the outage equals the full rebuild')
    t.same((await awardIds(log)).notes.length, awarded.notes.length, 'the rebuild writes nothing')

    for (const [c, cut] of cuts.entries()) {
      const restored = await open({ snapshots: kept[c]!, everyMs: 0 })
      t.equal(restored.checkpoints?.restored.restored, true, `cut ${cut}: the snapshot is used`)
      await restored.idle()
      t.equal(stateDigest(restored.projection), reference, `cut ${cut}: snapshot + tail + replay == full rebuild`)
      await restored.close()
    }
    const after = await awardIds(log)
    t.same([after.xp.length, after.notes.length], [awarded.xp.length, awarded.notes.length], 'no restart from a cut wrote an award')

    const good = await readSnapshot(live, STORE)
    for (const bad of ['corrupt', 'old_schema', 'ahead_of_log'] as BadSnapshot[]) {
      await spoilSnapshot(live, STORE, good, bad)
      const cap = capturingLogger()
      const a = await open({ snapshots: live, everyMs: 0 }, cap.logger)
      t.equal(a.checkpoints?.restored.reason, bad, `${bad}: refused with its reason`)
      t.equal(cap.lines.length, 1, `${bad}: one log line`)
      t.match(cap.lines[0], { reason: bad, store: STORE })
      await a.idle()
      t.equal(stateDigest(a.projection), reference, `${bad}: the rebuild gives the same state`)
      await a.close()
    }
  }),
)
