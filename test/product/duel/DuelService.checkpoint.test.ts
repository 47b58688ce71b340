/**
 * The duel's checkpointed call book (issue 31) on both logs: snapshot at random cuts + tail == full rebuild (locked
 * calls and opt-in changes, written by the duel itself in paid calls' units and by another process), bad snapshots
 * fall back to the rebuild; grades after a restore come from the outcome bus's replay, as after a rebuild.
 */
import t from 'tap'
import { Channel, type ResolutionEvent } from '../../../engine/LedgerBus.ts'
import { UnitOfWork } from '../../../pipeline/journal/UnitOfWork.ts'
import type { EventLog } from '../../../pipeline/log/EventLog.ts'
import type { LedgerDecision } from '../../../pipeline/records/decisionRecord.ts'
import { stateDigest, type CheckpointSettings } from '../../../pipeline/state/StateStore.ts'
import { DuelService } from '../../../product/duel/DuelService.ts'
import { checkCheckpointEquivalence, seeded } from '../../helpers/checkpoint.ts'
import { testDecision, testOutcome } from '../../helpers/ledgerRecords.ts'
import { forEachLog } from '../../helpers/logs.ts'

const T0 = Date.UTC(2026, 6, 1)
const PAYERS = Array.from({ length: 6 }, (_, i) => `0x${String(i + 1).repeat(40)}`)

const decision = (n: number): LedgerDecision =>
  testDecision(n, { probability: 0.3, horizon_end: new Date(T0 + (n + 240) * 60_000).toISOString(), created_at: new Date(T0 + n * 60_000).toISOString() })

type Item = { lock: { payer: string; decision_id: string; call: 'obtains' | 'not' } } | { optIn: { payer: string; opt_in: boolean } }

/** Calls by random payers on random clocks (each pair once) and opt-in changes. */
function history(n: number, seed: number, decisions: LedgerDecision[]): Item[] {
  const rnd = seeded(seed)
  const items: Item[] = []
  const locked = new Set<string>()
  while (items.length < n) {
    const payer = PAYERS[Math.floor(rnd() * PAYERS.length)]!
    if (rnd() < 0.2) {
      items.push({ optIn: { payer, opt_in: rnd() < 0.7 } })
      continue
    }
    const d = decisions[Math.floor(rnd() * decisions.length)]!
    if (locked.has(payer + d.decision_id)) continue
    locked.add(payer + d.decision_id)
    items.push({ lock: { payer, decision_id: d.decision_id, call: rnd() < 0.5 ? 'obtains' : 'not' } })
  }
  return items
}

/** The duel's ledger port over generated decisions and a real outcome channel (resolutions replayed on subscribe). */
function ledgerPort(decisions: LedgerDecision[], resolutions: ResolutionEvent[]) {
  const byId = new Map(decisions.map((d) => [d.decision_id, d]))
  return {
    decision: (id: string) => byId.get(id) ?? null,
    clockNow: () => T0,
    resolutions: new Channel<ResolutionEvent>('resolution', () => resolutions, (e) => e.outcome.decision_id),
  }
}

/** Writes items through the duel's own paths; a lock on a clock it knows resolved is refused (CLOCK_CLOSED) and skipped. */
async function write(duel: DuelService, items: Item[]): Promise<void> {
  for (const x of items) {
    if ('optIn' in x) {
      await duel.optIn(x.optIn.payer, x.optIn.opt_in)
      continue
    }
    const unit = new UnitOfWork()
    try {
      await duel.lockCall({ ...x.lock, call_probability: 0.6 }, { kind: 'paid', payment_id: `pay_${x.lock.payer}_${x.lock.decision_id}`, rail: 'credits', payer: x.lock.payer }, unit)
    } catch (err) {
      if ((err as { code?: string }).code !== 'CLOCK_CLOSED') throw err
      unit.abort()
      continue
    }
    await unit.commit()
  }
}

t.test('call book: snapshot at random cuts + tail == full rebuild; bad snapshots fall back', (t) =>
  forEachLog(t, async (t, makeLog: () => Promise<EventLog>, kind) => {
    const log = await makeLog()
    const decisions = Array.from({ length: 30 }, (_, i) => decision(i))
    // A third of the clocks resolved: the grades after a restore come from the replay, as after a rebuild.
    const resolutions: ResolutionEvent[] = decisions.slice(0, 10).map((d, i) => ({ decision: d, outcome: testOutcome(d, { outcome: i % 2 ? 'obtains' : 'not' }) }))
    const items = history(kind === 'kafka' ? 60 : 200, 11, decisions)
    const open = (checkpoints: CheckpointSettings | null, groupId?: string) =>
      DuelService.open({ log, ledger: ledgerPort(decisions, groupId ? [] : resolutions), now: () => T0, wallNow: () => T0, checkpoints, ...(groupId ? { groupId } : {}) })
    await checkCheckpointEquivalence(t, {
      store: 'svc.duel',
      total: items.length,
      open: async (checkpoints) => {
        const duel = await open(checkpoints)
        return {
          duel,
          // The journals' part (the snapshot) and the grades the bus replay derived from it.
          digest: () => `${stateDigest(duel.book)} ${JSON.stringify(duel.book.size)}`,
          restored: duel.restored,
          close: () => duel.close(),
        }
      },
      write: async (from, to, through) => {
        if (through) return write(through.duel, items.slice(from, to))
        // Another process (its own group, not told of the resolutions: it locks calls on resolved clocks too).
        const other = await open(null, 'svc.duel-other')
        await write(other, items.slice(from, to))
        await other.close()
      },
    })
  }),
)

/**
 * With a hot window (issue 31, Bounded memory): clocks resolve through the history an hour apart, so graded calls
 * leave memory between the cuts; a restore (snapshot with the hot calls, their outcomes and the totals) + the tail + the
 * bus's replay of every resolution equals the full rebuild, and an old resolution replayed grades nothing twice.
 */
const HOUR = 3_600_000
type BoundedItem = Item | { resolve: number }

function boundedHistory(n: number, seed: number, decisions: LedgerDecision[]): BoundedItem[] {
  const rnd = seeded(seed)
  const items: BoundedItem[] = []
  const locked = new Set<string>()
  let next = 0
  while (items.length < n && next < decisions.length) {
    const r = rnd()
    if (r < 0.15) {
      items.push({ resolve: next++ })
      continue
    }
    const payer = PAYERS[Math.floor(rnd() * PAYERS.length)]!
    if (r < 0.25) {
      items.push({ optIn: { payer, opt_in: rnd() < 0.7 } })
      continue
    }
    // Calls on the next few open clocks.
    const d = decisions[Math.min(decisions.length - 1, next + Math.floor(rnd() * 4))]!
    if (locked.has(payer + d.decision_id)) continue
    locked.add(payer + d.decision_id)
    items.push({ lock: { payer, decision_id: d.decision_id, call: rnd() < 0.5 ? 'obtains' : 'not' } })
  }
  return items
}

t.test('bounded call book: graded calls leave memory by event time; snapshot + tail == full rebuild', (t) =>
  forEachLog(t, async (t, makeLog: () => Promise<EventLog>, kind) => {
    const log = await makeLog()
    const decisions = Array.from({ length: 80 }, (_, i) =>
      testDecision(i, { probability: 0.3, created_at: new Date(T0).toISOString(), horizon_end: new Date(T0 + (i + 1) * HOUR).toISOString() }))
    const items = boundedHistory(kind === 'kafka' ? 120 : 400, 23, decisions)
    // The ledger as it stands: resolutions so far (replayed on subscribe); the clocks' time is the newest resolution's.
    const resolutions: ResolutionEvent[] = []
    let live: Channel<ResolutionEvent> | null = null
    const open = (checkpoints: CheckpointSettings | null, other = false) => {
      const byId = new Map(decisions.map((d) => [d.decision_id, d]))
      const channel = new Channel<ResolutionEvent>('resolution', () => (other ? [] : resolutions), (e) => e.outcome.decision_id)
      const clockNow = () => (other ? T0 : T0 + resolutions.length * HOUR + 1)
      return DuelService.open({
        log,
        ledger: { decision: (id) => byId.get(id) ?? null, clockNow, resolutions: channel },
        now: clockNow,
        wallNow: () => T0,
        checkpoints,
        hotWindowMs: 6 * HOUR,
        ...(other ? { groupId: 'svc.duel-other' } : {}),
      }).then((duel) => {
        if (!other) live = channel
        return duel
      })
    }
    const resolve = (i: number) => {
      const d = decisions[i]!
      const e = { decision: d, outcome: testOutcome(d, { outcome: i % 5 === 4 ? 'unresolvable' : i % 2 ? 'obtains' : 'not' }) }
      resolutions.push(e)
      return e
    }
    let evicted = 0
    await checkCheckpointEquivalence(t, {
      store: 'svc.duel',
      total: items.length,
      open: async (checkpoints) => {
        const duel = await open(checkpoints)
        return {
          duel,
          digest: () => {
            duel.book.sweep()
            evicted = Math.max(evicted, duel.book.size.calls - duel.book.size.hot)
            return `${stateDigest(duel.book)} ${JSON.stringify(duel.book.size)}`
          },
          restored: duel.restored,
          close: () => duel.close(),
        }
      },
      write: async (from, to, through) => {
        const slice = items.slice(from, to)
        if (through) {
          for (const x of slice) {
            if ('resolve' in x) live!.publish(resolve(x.resolve))
            else await write(through.duel, [x])
          }
          return
        }
        // Another process (its own group, not told of the resolutions); resolutions land in the ledger meanwhile.
        const other = await open(null, true)
        for (const x of slice) {
          if ('resolve' in x) resolve(x.resolve)
          else await write(other, [x])
        }
        await other.close()
      },
    })
    t.ok(evicted > 0, `${evicted} graded calls had left memory in the compared states`)
  }),
)
