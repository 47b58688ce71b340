/**
 * The outcome bus (engine/LedgerBus.ts) over a real ledger on the embedded log: a subscriber gets every resolution
 * already in the ledger and each new one once it is durable, once per decision_id; a restart delivers them all again
 * (at-least-once: subscribers are idempotent by decision_id); a failing handler is retried; decisions reach a
 * synchronous subscriber within the call that staged them (the engine's clocks depend on it).
 */
import t from 'tap'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { DecisionLedger } from '../../engine/DecisionLedger.ts'
import type { ResolutionEvent } from '../../engine/LedgerBus.ts'
import { EmbeddedLog } from '../../pipeline/log/EmbeddedLog.ts'
import type { LedgerDecision } from '../../pipeline/records/decisionRecord.ts'
import { testDecision, testOutcome } from '../helpers/ledgerRecords.ts'
import { makeTempDir } from '../helpers/tmp.ts'

const decision = (n: number) => testDecision(n)
const outcome = (d: LedgerDecision) => testOutcome(d)

t.test('resolutions: replayed on subscribe, live once durable, once per decision_id; again after a restart', async (t) => {
  const dir = await makeTempDir(t)
  let log = await EmbeddedLog.open(join(dir, 'log'))
  let ledger = await DecisionLedger.open({ log })
  const [a, b, c] = [decision(1), decision(2), decision(3)]
  for (const d of [a, b, c]) ledger.stageDecision(d)
  ledger.stageOutcome(outcome(a))
  await ledger.flush()

  const seen: ResolutionEvent[] = []
  const sub = ledger.bus.resolutions.subscribe('test', (e) => void seen.push(e))
  t.same(seen.map((e) => e.outcome.decision_id), [a.decision_id], 'the resolution already in the ledger is replayed on subscribe')
  t.same(seen[0]!.decision, a, 'with its decision')

  ledger.stageOutcome(outcome(b))
  t.equal(seen.length, 1, 'a staged outcome is not yet an event: it is not durable')
  await ledger.flush()
  t.same(seen.map((e) => e.outcome.decision_id), [a.decision_id, b.decision_id], 'published once durable')
  ledger.stageOutcome(outcome(b)) // identical: a re-serve, no new event
  await ledger.flush()
  t.equal(seen.length, 2, 'once per decision_id')
  sub.unsubscribe()
  ledger.stageOutcome(outcome(c))
  await ledger.flush()
  t.equal(seen.length, 2, 'an unsubscribed handler gets nothing')
  await ledger.close()
  await log.close()

  // A restart rebuilds the index from the log: a new subscriber sees every resolution again (at-least-once).
  log = await EmbeddedLog.open(join(dir, 'log'))
  ledger = await DecisionLedger.open({ log })
  const again: string[] = []
  ledger.bus.resolutions.subscribe('test', (e) => void again.push(e.outcome.decision_id))
  t.same(again.sort(), [a, b, c].map((d) => d.decision_id).sort(), 'every resolution, including those of the previous run')
  await ledger.close()
  await log.close()
})

t.test('decisions reach a synchronous subscriber within the call that staged them', async (t) => {
  const dir = await makeTempDir(t)
  const log = await EmbeddedLog.open(join(dir, 'log'))
  const ledger = await DecisionLedger.open({ log })
  t.teardown(async () => {
    await ledger.close()
    await log.close()
  })
  const seen: string[] = []
  ledger.bus.decisions.subscribe('clocks', (d) => void seen.push(d.decision_id))
  const d = decision(7)
  ledger.stageDecision(d)
  t.same(seen, [d.decision_id], 'delivered before stageDecision returned')
  ledger.stageDecision(d)
  t.equal(seen.length, 1, 'a re-served decision is not a new event')
})

t.test('a failing handler is retried, and the next event waits for it (one at a time)', async (t) => {
  const dir = await makeTempDir(t)
  const log = await EmbeddedLog.open(join(dir, 'log'))
  const ledger = await DecisionLedger.open({ log })
  t.teardown(async () => {
    await ledger.close()
    await log.close()
  })
  const [a, b] = [decision(11), decision(12)]
  ledger.stageDecision(a)
  ledger.stageDecision(b)
  await ledger.flush()
  let attempts = 0
  let running = 0
  let overlapped = false
  const handled: string[] = []
  const sub = ledger.bus.resolutions.subscribe('flaky', async (e) => {
    running++
    if (running > 1) overlapped = true
    try {
      await sleep(5)
      if (e.outcome.decision_id === a.decision_id && ++attempts < 3) throw new Error('receiver down')
      handled.push(e.outcome.decision_id)
    } finally {
      running--
    }
  })
  ledger.stageOutcome(outcome(a))
  ledger.stageOutcome(outcome(b))
  await ledger.flush()
  await sub.idle()
  t.equal(attempts, 3, 'two failures, then success')
  // The two outcomes sit on two partitions, so which one the ledger learns first is not fixed; either way one at a time.
  t.same([...handled].sort(), [a.decision_id, b.decision_id].sort(), 'both handled')
  t.notOk(overlapped, 'never two handlers at once: the other event waited for the retries')
  t.equal(sub.failures, 0)
})
