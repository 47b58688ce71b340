/**
 * The decision ledger on several instances (issue 32; DecisionLedger appendsDerived): two ledgers on one broker, each
 * on its own KafkaLog with replica groups, both staging the same derived decisions and outcomes, as two engines do
 * from the same ticks. Only the one that appends (the venue feed's holder) writes them; the other reads each by id
 * from its stage until the holder's record is read back, then from its index, and never writes it. When the appends
 * move to the replica, it first reads back all its predecessor appended, so nothing is in the log twice; an account
 * outcome each stamped differently is the holder's alone.
 */
import t from 'tap'
import { DecisionLedger } from '../../engine/DecisionLedger.ts'
import { KafkaLog } from '../../pipeline/log/KafkaLog.ts'
import { topicNames } from '../../pipeline/topics.ts'
import { testDecision, testOutcome } from '../helpers/ledgerRecords.ts'
import { kafkaBrokers, kafkaSkip, readAll, type TapTest } from '../helpers/logs.ts'
import { until } from '../helpers/until.ts'

const skip = kafkaSkip(t)

async function ledgerOn(t: TapTest, prefix: string, instance: string, appends: { now: boolean }): Promise<{ log: KafkaLog; ledger: DecisionLedger }> {
  const log = await KafkaLog.connect({ brokers: kafkaBrokers()!, clientId: `svc-test-${instance}`, topicPrefix: prefix, instanceId: instance, sessionTimeoutMs: 6_000, replicaGroups: true })
  const ledger = await DecisionLedger.open({ log, appendsDerived: () => appends.now })
  t.teardown(async () => {
    await ledger.close()
    await log.close()
  })
  return { log, ledger }
}

const idsIn = async (log: KafkaLog, topic: string) => (await readAll(log, topic)).map((r) => (JSON.parse(r.value.toString('utf8')) as { decision_id: string }).decision_id)

t.test('only the appending instance writes what both derive; the replica serves it from its stage, then from the log', { skip }, async (t) => {
  const prefix = `rl${Math.random().toString(16).slice(2, 10)}.`
  const role = { a: { now: true }, b: { now: false } }
  const a = await ledgerOn(t, prefix, 'a', role.a)
  const b = await ledgerOn(t, prefix, 'b', role.b)
  const names = topicNames()

  const first = [1, 2, 3].map((n) => testDecision(n))
  for (const d of first) {
    a.ledger.stageDecision(d)
    b.ledger.stageDecision(d)
  }
  await b.ledger.flush()
  t.same(first.map((d) => b.ledger.findDecision(d.decision_id)?.decision_id), first.map((d) => d.decision_id), 'the replica serves its staged decisions before the holder wrote them')
  t.same(await idsIn(a.log, names.decisions), [], 'the replica wrote nothing')
  await a.ledger.flush()
  await until('the replica read the holder\'s decisions back', () => first.every((d) => b.ledger.index.decision(d.decision_id) !== null), 30_000)
  await b.ledger.flush()
  t.same((await idsIn(a.log, names.decisions)).sort(), first.map((d) => d.decision_id).sort(), 'each decision is in the log once')

  // An account outcome carries the resolver pass's time: each instance's differs; the log keeps the holder's.
  const heldOutcome = testOutcome(first[0]!, { resolved_at: '2026-03-02T11:00:00.000Z' })
  a.ledger.stageOutcome(heldOutcome)
  b.ledger.stageOutcome(testOutcome(first[0]!, { resolved_at: '2026-03-02T11:00:01.000Z' }))
  await b.ledger.flush()
  await a.ledger.flush()
  await until('the replica read the holder\'s outcome back', () => b.ledger.index.outcome(first[0]!.decision_id) !== null, 30_000)
  await b.ledger.flush()
  t.same(b.ledger.index.outcome(first[0]!.decision_id), heldOutcome, 'the replica holds the holder\'s outcome, not its own')
  t.same(await idsIn(a.log, names.outcomes), [first[0]!.decision_id], 'one outcome row')

  // ---- the appends move: a stops appending (it lost the lease), b takes over ----
  const later = [4, 5].map((n) => testDecision(n))
  for (const d of later) a.ledger.stageDecision(d)
  await a.ledger.flush() // still the holder: written
  for (const d of later) b.ledger.stageDecision(d) // b derived them too, and has not read a's records back yet
  const both = testDecision(6)
  role.a.now = false
  role.b.now = true
  b.ledger.stageDecision(both)
  a.ledger.stageDecision(both)
  await b.ledger.flush()
  await a.ledger.flush()
  await until('the old holder read the new holder\'s decision back', () => a.ledger.index.decision(both.decision_id) !== null, 30_000)
  const ids = await idsIn(a.log, names.decisions)
  t.equal(new Set(ids).size, ids.length, `nothing appended twice across the handover (${ids.length} decisions)`)
  t.same([...ids].sort(), [...first, ...later, both].map((d) => d.decision_id).sort(), 'and nothing lost')
})
