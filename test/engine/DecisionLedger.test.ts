/**
 * The decision ledger's checkpointed index (issue 31) on both logs: snapshot at random cuts + tail == full rebuild
 * (decisions, outcomes, a conflicting and a duplicate record, own writes and another writer's); bad snapshots fall
 * back to the rebuild; no snapshot is taken while an own write is unsettled; the bus replays restored open clocks.
 */
import t from 'tap'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { DecisionLedger } from '../../engine/DecisionLedger.ts'
import { EngineError } from '../../engine/EngineError.ts'
import { Journal } from '../../pipeline/journal/Journal.ts'
import { UnitOfWork } from '../../pipeline/journal/UnitOfWork.ts'
import { EmbeddedLog } from '../../pipeline/log/EmbeddedLog.ts'
import type { EventLog } from '../../pipeline/log/EventLog.ts'
import { DECISIONS, type LedgerDecision } from '../../pipeline/records/decisionRecord.ts'
import { OUTCOMES_JOURNAL, type LedgerOutcome } from '../../pipeline/records/outcomeRecord.ts'
import { StateSnapshots } from '../../pipeline/state/StateSnapshots.ts'
import { stateDigest, type CheckpointSettings } from '../../pipeline/state/StateStore.ts'
import { topicNames } from '../../pipeline/topics.ts'
import { checkCheckpointEquivalence, seeded } from '../helpers/checkpoint.ts'
import { testDecision, testOutcome } from '../helpers/ledgerRecords.ts'
import { forEachLog, kafkaBrokers, kafkaSkip, type TapTest as Test } from '../helpers/logs.ts'
import { KafkaLog } from '../../pipeline/log/KafkaLog.ts'
import { randomBytes } from 'node:crypto'
import { makeTempDir } from '../helpers/tmp.ts'

const QUESTIONS = ['S05_volatility_expansion', 'S01_funding_flip', 'S03_liquidation_cascade']
const ASSETS = ['BTC', 'ETH', 'SOL']

/** A claim (a tenth refusals) on a random question, asset, subject and minute. */
function decision(n: number, rnd: () => number): LedgerDecision {
  const minute = Math.floor(rnd() * 10_000)
  return testDecision(n, {
    question_id: QUESTIONS[n % 3]!,
    asset: ASSETS[Math.floor(rnd() * 3)]!,
    subject: rnd() < 0.2 ? `0x${n.toString(16).padStart(40, '0')}` : null,
    horizon_end: new Date(Date.UTC(2026, 6, 1, 4) + minute * 60_000).toISOString(),
    created_at: new Date(Date.UTC(2026, 6, 1) + minute * 60_000).toISOString(),
    probability: Math.round(rnd() * 1000) / 1000,
    action: rnd() < 0.1 ? 'refuse' : 'monitor',
  })
}

const outcome = (d: LedgerDecision, rnd: () => number): LedgerOutcome => testOutcome(d, { outcome: rnd() < 0.5 ? 'not' : 'obtains' })

type Item = { d: LedgerDecision } | { o: LedgerOutcome }

/** Decisions, outcomes of about half of them (after their decision), a duplicate and a conflicting decision. */
function history(n: number, seed: number): Item[] {
  const rnd = seeded(seed)
  const items: Item[] = []
  const open: LedgerDecision[] = []
  for (let i = 0; items.length < n; i++) {
    const d = decision(i, rnd)
    items.push({ d })
    if (d.action !== 'refuse') open.push(d)
    if (open.length > 3 && rnd() < 0.5) items.push({ o: outcome(open.splice(Math.floor(rnd() * open.length), 1)[0]!, rnd) })
    if (i === 7) items.push({ d: { ...d } }, { d: { ...d, probability: 0.999 } })
  }
  return items.slice(0, n)
}

/** Another writer of the ledger's journals (a second process). */
async function otherWriter(log: EventLog) {
  const names = topicNames()
  const decisions = await Journal.open({ log, def: DECISIONS, topic: names.decisions })
  const outcomes = await Journal.open({ log, def: OUTCOMES_JOURNAL, topic: names.outcomes })
  return {
    async write(items: Item[]) {
      await decisions.append(items.flatMap((x) => ('d' in x ? [x.d] : [])))
      await outcomes.append(items.flatMap((x) => ('o' in x ? [x.o] : [])))
    },
    async close() {
      await decisions.close()
      await outcomes.close()
    },
  }
}

function opened(ledger: DecisionLedger) {
  return {
    ledger,
    digest: () => stateDigest(ledger.index),
    get restored() {
      return ledger.restored
    },
    close: () => ledger.close(),
  }
}

t.test('ledger index: snapshot at random cuts + tail == full rebuild; bad snapshots fall back', (t) =>
  forEachLog(t, async (t, makeLog, kind) => {
    const log = await makeLog()
    const items = history(kind === 'kafka' ? 120 : 600, 7)
    const other = await otherWriter(log)
    t.teardown(() => other.close())
    await checkCheckpointEquivalence(t, {
      store: 'svc.ledger-index',
      total: items.length,
      open: async (checkpoints) => opened(await DecisionLedger.open({ log, checkpoints })),
      write: async (from, to, through) => {
        const slice = items.slice(from, to)
        if (!through) return other.write(slice)
        // Own writes (entering the index at acknowledgement); what the ledger refuses to stage is another writer's.
        const refused: Item[] = []
        for (const x of slice) {
          try {
            if ('d' in x) through.ledger.stageDecision(x.d)
            else through.ledger.stageOutcome(x.o)
          } catch (err) {
            if (!(err instanceof EngineError)) throw err
            refused.push(x)
          }
          if (Math.random() < 0.05) await through.ledger.flush()
        }
        await through.ledger.flush()
        await other.write(refused)
      },
    })
  }),
)

t.test('no snapshot while an own write is unsettled; restored open clocks replay on the bus', async (t) => {
  const dir = await makeTempDir(t)
  const log = await EmbeddedLog.open(join(dir, 'log'))
  t.teardown(() => log.close())
  const checkpoints: CheckpointSettings = { snapshots: await StateSnapshots.open(join(dir, 'state')), everyMs: 0 }
  const rnd = seeded(3)
  const ds = Array.from({ length: 30 }, (_, i) => decision(i, rnd)).filter((d) => d.action !== 'refuse')
  let ledger = await DecisionLedger.open({ log, checkpoints })
  for (const d of ds.slice(1)) ledger.stageDecision(d)
  await ledger.flush()
  // A paid call's unit: sent synchronously by commit(), applied to the index at acknowledgement.
  const unit = new UnitOfWork()
  await ledger.appendIn(unit, ds[0]!)
  const committing = unit.commit()
  t.equal(ledger.capturePositions(), null, 'a write in flight: the index matches no log position')
  await committing
  let at = ledger.capturePositions()
  for (let i = 0; at === null && i < 2000; i++) {
    await sleep(5)
    at = ledger.capturePositions()
  }
  const names = topicNames()
  t.equal(at?.filter((p) => p.topic === names.decisions).reduce((n, p) => n + p.next, 0), ds.length, 'once read back, the positions cover every own write')
  ledger.stageOutcome(outcome(ds[0]!, rnd))
  await ledger.flush()
  await ledger.close()

  ledger = await DecisionLedger.open({ log, checkpoints })
  t.equal(ledger.restored?.restored, true, 'restored from the snapshot written at close')
  const seen: string[] = []
  const clocks = ledger.bus.decisions.subscribe('clocks', (d) => void seen.push(d.decision_id))
  t.same(seen.sort(), ds.map((d) => d.decision_id).sort(), 'every restored decision is replayed to a new subscriber (its clock registered)')
  t.equal(ledger.index.unresolvedClaims().length, ds.length - 1, 'the open clocks are the restored claims without an outcome')
  const resolved: string[] = []
  ledger.bus.resolutions.subscribe('grades', (e) => void resolved.push(e.outcome.decision_id))
  t.same(resolved, [ds[0]!.decision_id], 'and every restored resolution')
  clocks.unsubscribe()
  await ledger.close()
})

t.test('a paid ask of identical inputs asked at once by two payers: the later one re-serves the first, uncharged', async (t) => {
  const dir = await makeTempDir(t, 'svc-ledger-twins-')
  const log = await EmbeddedLog.open(join(dir, 'log'))
  t.teardown(() => log.close())
  const ledger = await DecisionLedger.open({ log })
  t.teardown(() => ledger.close())
  const rnd = seeded(5)
  const base = decision(1, rnd)
  const paidBy = (payment_id: string): LedgerDecision => ({ ...base, payment_id, payment_rail: 'credits' })

  // Two units in flight on this instance: the second waits for the first, then re-serves its record.
  const first = new UnitOfWork()
  const second = new UnitOfWork()
  const a = await ledger.appendIn(first, paidBy('pay-a'))
  const b = ledger.appendIn(second, paidBy('pay-b'))
  await first.commit()
  const got = await b
  t.same([a.isNew, got.isNew], [true, false], 'the first writes, the second is a re-serve (nothing to charge as a new row)')
  t.equal(got.record.payment_id, 'pay-a', 'and it is served the recorded decision')
  const written = async () => (await log.endOffsets(topicNames().decisions)).reduce((n, x) => n + x, 0)
  await second.commit()
  t.equal(await written(), 1, 'the second unit wrote no decision row: the record is on the log once')

  // Another instance's twin read back first (its record, another payment): the same, a re-serve.
  const other = decision(2, rnd)
  const writer = await otherWriter(log)
  t.teardown(() => writer.close())
  await writer.write([{ d: { ...other, payment_id: 'pay-c', payment_rail: 'x402' } }])
  for (let i = 0; i < 400 && ledger.findDecision(other.decision_id) === null; i++) await sleep(5)
  const mine = await ledger.appendIn(new UnitOfWork(), { ...other, payment_id: 'pay-d', payment_rail: 'credits' })
  t.same([mine.isNew, mine.record.payment_id], [false, 'pay-c'], 'an ask meeting the other instance\'s record re-serves it')

  // Other content under the same id (not only another payment) is still refused: a recorded row is never replaced.
  await t.rejects(ledger.appendIn(new UnitOfWork(), { ...other, probability: other.probability === 0.5 ? 0.25 : 0.5 }), { code: 'LEDGER_CONFLICT' })
})

/**
 * Three ledgers on one log as three instances would be: two writers (each its own journals, so each skips only its own
 * writes) and a reader that writes nothing.
 */
async function repeatsAcrossInstances(t: Test, logs: readonly EventLog[]) {
  const ledgers = await Promise.all(logs.map((log, i) => DecisionLedger.open({ log, groupId: `i${i + 1}` })))
  t.teardown(() => Promise.all(ledgers.map((l) => l.close())))
  const [one, two] = ledgers as [DecisionLedger, DecisionLedger, DecisionLedger]
  const repeats = ledgers.map(() => [] as string[])
  ledgers.forEach((l, i) => l.bus.repeats.subscribe('test', (d) => void repeats[i]!.push(`${d.decision_id} ${d.payment_id}`)))
  const rnd = seeded(11)
  const ROUNDS = 24
  const asked: LedgerDecision[] = []
  for (let n = 0; n < ROUNDS; n++) {
    const base = decision(100 + n, rnd)
    asked.push(base)
    // Both asks pass their ledger's check before either is written (as two instances at the same instant); the
    // commits then race, in either order.
    const u1 = new UnitOfWork()
    const u2 = new UnitOfWork()
    const [a, b] = await Promise.all([one.appendIn(u1, { ...base, payment_id: `p1-${n}`, payment_rail: 'credits' }), two.appendIn(u2, { ...base, payment_id: `p2-${n}`, payment_rail: 'credits' })])
    t.ok(a.isNew && b.isNew, `round ${n}: both instances write their own record`)
    await Promise.all(n % 2 === 0 ? [u1.commit(), u2.commit()] : [u2.commit(), u1.commit()])
  }
  const journal = (await readDecisions(logs[2]!)).filter((d) => asked.some((x) => x.decision_id === d.decision_id))
  t.equal(journal.length, ROUNDS * 2, 'the journal holds both records of every id (the writers did not see each other in time)')
  const firstOf = new Map<string, LedgerDecision>()
  for (const d of journal) if (!firstOf.has(d.decision_id)) firstOf.set(d.decision_id, d)
  const laterOf = asked.map((x) => journal.filter((d) => d.decision_id === x.decision_id)[1]!)
  const settled = () => ledgers.every((l, i) => asked.every((x) => l.findDecision(x.decision_id)?.payment_id === firstOf.get(x.decision_id)!.payment_id) && repeats[i]!.length === ROUNDS)
  for (let i = 0; i < 1000 && !settled(); i++) await sleep(10)
  for (const [i, l] of ledgers.entries()) {
    const wrong = asked.filter((x) => l.findDecision(x.decision_id)?.payment_id !== firstOf.get(x.decision_id)!.payment_id)
    t.equal(wrong.length, 0, `instance ${i + 1} serves the journal's first record of each of the ${ROUNDS} ids (${wrong.length} differ)`)
    t.same([...repeats[i]!].sort(), laterOf.map((d) => `${d.decision_id} ${d.payment_id}`).sort(), `instance ${i + 1}'s bus names exactly the later record of each id as the repeat`)
  }
  for (let i = 0; i < 500 && ledgers.some((l) => l.unreadOwn > 0); i++) await sleep(10)
  t.same(ledgers.map((l) => l.unreadOwn), [0, 0, 0], 'every own record was read back: nothing kept waiting for it')
  const firstByOne = asked.filter((x) => firstOf.get(x.decision_id)!.payment_id!.startsWith('p1-')).length
  t.ok(firstByOne > 0 && firstByOne < ROUNDS, `either writer was first in some rounds (${firstByOne} of ${ROUNDS} by the first)`)
}

t.test('identical inputs written at once by two instances: every index keeps the journal\'s first, and the later payment is a repeat on every bus', async (t) => {
  await t.test('embedded (one log, three ledgers: their followers may read another\'s record before an acknowledgement)', async (t) => {
    const log = await EmbeddedLog.open(join(await makeTempDir(t, 'svc-ledger-repeats-'), 'log'))
    t.teardown(() => log.close())
    await repeatsAcrossInstances(t, [log, log, log])
  })
  // On Kafka an instance's own record is indexed at acknowledgement, usually before its follower fetches the other's
  // record that precedes it: the index then puts the first in place of its own.
  await t.test('kafka (three clients with their own transactional ids, as three instances)', { skip: kafkaSkip(t) }, async (t) => {
    const prefix = `t${randomBytes(5).toString('hex')}.`
    const logs = await Promise.all([1, 2, 3].map((i) => KafkaLog.connect({ brokers: kafkaBrokers()!, clientId: `svc-test-repeats-${i}`, instanceId: `repeats-${i}`, topicPrefix: prefix })))
    t.teardown(() => Promise.all(logs.map((l) => l.close())))
    await repeatsAcrossInstances(t, logs)
  })
})

async function readDecisions(log: EventLog): Promise<LedgerDecision[]> {
  const journal = await Journal.open({ log, def: DECISIONS, topic: topicNames().decisions })
  try {
    return (await journal.readAll()) as LedgerDecision[]
  } finally {
    await journal.close()
  }
}
