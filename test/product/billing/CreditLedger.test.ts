/**
 * The credit ledger checkpointed (issue 31): for random cuts of a generated history of grants, scout allowances, paid
 * calls (debit + answer in one unit, some dropped, some refusals) and reversals, the state from (the snapshot taken at
 * the cut + the tail) equals the full rebuild, also when the snapshot is taken while writes are in flight; a corrupt,
 * older-schema or ahead-of-log snapshot falls back to the rebuild with one log line and the same state. Both logs.
 */
import t from 'tap'
import { until } from '../../helpers/until.ts'
import type { Clock } from '../../../common/Clock.ts'
import { Journal } from '../../../pipeline/journal/Journal.ts'
import { UnitOfWork } from '../../../pipeline/journal/UnitOfWork.ts'
import type { EventLog } from '../../../pipeline/log/EventLog.ts'
import { DRAWS } from '../../../pipeline/records/drawRecord.ts'
import { StateSnapshots } from '../../../pipeline/state/StateSnapshots.ts'
import { stateDigest } from '../../../pipeline/state/StateStore.ts'
import { CreditLedger, type DrawsJournal } from '../../../product/billing/CreditLedger.ts'
import { forEachLog } from '../../helpers/logs.ts'
import { capturingLogger, cutPoints, keepSnapshot, readSnapshot, seeded, spoilSnapshot, type BadSnapshot } from '../../helpers/stateSnapshots.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const T0 = Date.parse('2026-03-01T00:00:00.000Z')
class StepClock implements Clock {
  t = T0
  now(): number {
    return (this.t += 1000)
  }
}

const PAYERS = Array.from({ length: 6 }, (_, i) => `0x${String(i + 1).repeat(40)}`)

/** One step of a generated history, run against a ledger through its public API. */
type Step = (ledger: CreditLedger) => Promise<void>

function history(rnd: () => number, n: number): Array<{ payer: string; step: Step }> {
  const refs = new Map<string, string[]>()
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!
  return Array.from({ length: n }, (_, i) => {
    const payer = pick(PAYERS)
    const r = rnd()
    if (r < 0.12) return { payer, step: async (l) => void (await l.grantScout(payer)) }
    if (r < 0.3) {
      const credits = 1000 * (1 + Math.floor(rnd() * 20))
      const lifetimeDays = rnd() < 0.5 ? null : 60
      return { payer, step: async (l) => void (await l.credit(payer, credits, { reason: 'grant', ref: `g${i}`, lifetimeDays })) }
    }
    if (r < 0.9) {
      const credits = 100 * (1 + Math.floor(rnd() * 15))
      const entryTier = rnd() < 0.3
      const refusal = rnd() < 0.1
      const dropped = rnd() < 0.1
      return {
        payer,
        step: async (l) => {
          const hold = l.hold(payer, credits, { key: 'decision.deep', entryTier })
          if (hold.kind !== 'hold') return
          const unit = new UnitOfWork()
          l.settleHoldIn(hold, { refusal }, unit)
          l.answeredIn(hold, unit)
          if (dropped) return unit.abort()
          await unit.commit()
          if (hold.state === 'committed') (refs.get(payer) ?? refs.set(payer, []).get(payer)!).push(hold.payment_id)
        },
      }
    }
    return {
      payer,
      step: async (l) => {
        const mine = refs.get(payer)
        if (!mine?.length) return
        await l.reverse(payer, mine.shift()!, 'test')
      },
    }
  })
}

async function drawsOn(log: EventLog, topic: string): Promise<DrawsJournal> {
  return Journal.open({ log, def: DRAWS, topic, partitions: 3 })
}

t.test('snapshot at random cuts + tail == full rebuild (also taken with writes in flight); bad snapshots rebuild', (t) =>
  forEachLog(t, async (t, makeLog, kind) => {
    const log = await makeLog()
    const rnd = seeded(kind === 'kafka' ? 7 : 31)
    const steps = history(rnd, kind === 'kafka' ? 90 : 300)
    const cuts = cutPoints(rnd, steps.length, kind === 'kafka' ? 2 : 4)
    const { logger } = capturingLogger()
    const live = await StateSnapshots.open(await makeTempDir(t))
    const kept = await Promise.all(cuts.map(async () => StateSnapshots.open(await makeTempDir(t))))

    const journal = await drawsOn(log, 'billing.draws.ckpt')
    const writer = await CreditLedger.open(journal, new StepClock(), { checkpoints: { snapshots: live, everyMs: 0 }, logger })
    t.equal(writer.checkpoints?.restored.reason, 'missing', 'the first start has no snapshot')
    let done = 0
    for (const [c, cut] of cuts.entries()) {
      for (; done < cut - 4; done++) await steps[done]!.step(writer)
      // The last steps before the cut run concurrently (distinct payers keep each payer's rows in log order) while
      // the snapshot is taken: its positions must not run ahead of the state, nor double what it already holds.
      const batch: Step[] = []
      const seen = new Set<string>()
      for (; done < cut && !seen.has(steps[done]!.payer); done++) {
        seen.add(steps[done]!.payer)
        batch.push(steps[done]!.step)
      }
      const writes = batch.map((step) => step(writer))
      // Taken with writes in flight it is skipped (the follower has not read them back: no log position matches the
      // state), and taken again once they settled.
      const during = writer.checkpoints!.checkpoint()
      await Promise.all(writes)
      const first = await during
      if (first === null) await until('the writes read back', () => !journal.writesUnsettled, 30_000)
      t.ok(first ?? (await writer.checkpoints!.checkpoint()), `cut ${cut}: a snapshot is written`)
      await keepSnapshot(live, kept[c]!, 'billing.credits')
    }
    for (; done < steps.length; done++) await steps[done]!.step(writer)
    await writer.close()
    const writerDigest = stateDigest(writer)

    const rebuilt = await CreditLedger.open(journal, new StepClock(), { recover: false, logger })
    const reference = stateDigest(rebuilt)
    await rebuilt.close() // one own-writes follower per journal at a time
    t.equal(writerDigest, reference, 'the live state equals the rebuild from the log')
    t.ok(rebuilt.allRows()[Symbol.iterator]().next().done === false, 'the history wrote rows')

    for (const [c, cut] of cuts.entries()) {
      const restored = await CreditLedger.open(journal, new StepClock(), { recover: false, checkpoints: { snapshots: kept[c]!, everyMs: 0 }, logger })
      t.equal(restored.checkpoints?.restored.restored, true, `cut ${cut}: the snapshot is used`)
      t.equal(stateDigest(restored), reference, `cut ${cut}: snapshot + tail == full rebuild`)
      await restored.close()
    }
    const final = await CreditLedger.open(journal, new StepClock(), { recover: false, checkpoints: { snapshots: live, everyMs: 0 }, logger })
    t.equal(final.checkpoints?.restored.restored, true, 'the final snapshot at close is used')
    t.equal(stateDigest(final), reference, 'final snapshot (+ an empty or re-read tail) == full rebuild')
    await final.close()

    const good = await readSnapshot(live, 'billing.credits')
    for (const bad of ['corrupt', 'old_schema', 'ahead_of_log'] as BadSnapshot[]) {
      await spoilSnapshot(live, 'billing.credits', good, bad)
      const cap = capturingLogger()
      const l = await CreditLedger.open(journal, new StepClock(), { recover: false, checkpoints: { snapshots: live, everyMs: 0 }, logger: cap.logger })
      t.equal(l.checkpoints?.restored.reason, bad, `${bad}: refused with its reason`)
      t.equal(cap.lines.length, 1, `${bad}: one log line`)
      t.match(cap.lines[0], { reason: bad, store: 'billing.credits' })
      t.equal(stateDigest(l), reference, `${bad}: the rebuild gives the same state`)
      await l.close()
    }
  }),
)
