/**
 * Payer sessions checkpointed (issue 31): for random cuts of a generated history of nonce claims, session opens and
 * revocations (some expiring before the restart), the state from (the snapshot taken at the cut, with writes in
 * flight + the tail) equals the full rebuild at the same start instant; a corrupt, older-schema or ahead-of-log
 * snapshot falls back to the rebuild with one log line and the same state. Both logs.
 */
import t from 'tap'
import { Journal } from '../../../pipeline/journal/Journal.ts'
import { PAYER_PROOFS } from '../../../pipeline/records/payerProofRecord.ts'
import { StateSnapshots } from '../../../pipeline/state/StateSnapshots.ts'
import { stateDigest } from '../../../pipeline/state/StateStore.ts'
import { PayerSessions } from '../../../product/identity/PayerSessions.ts'
import { forEachLog } from '../../helpers/logs.ts'
import { capturingLogger, cutPoints, keepSnapshot, readSnapshot, seeded, spoilSnapshot, type BadSnapshot } from '../../helpers/stateSnapshots.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const T0 = Date.parse('2026-03-01T00:00:00.000Z')
const MINUTE = 60_000

type Step = (s: PayerSessions) => Promise<unknown>

/** Step i happens at T0 + i minutes; sessions live 5 to 120 minutes, nonces 10. */
function history(rnd: () => number, n: number): Step[] {
  const tokens: string[] = []
  return Array.from({ length: n }, (_, i): Step => {
    const now = T0 + i * MINUTE
    const address = `0x${String(Math.floor(rnd() * 9) + 1).repeat(40)}`
    const r = rnd()
    if (r < 0.35) return (s) => s.useNonce(`nonce-${i}-${Math.floor(rnd() * 1e9)}`, address, now + 10 * MINUTE, now)
    if (r < 0.8) {
      const ttl = (5 + Math.floor(rnd() * 115)) * MINUTE
      return async (s) => tokens.push((await s.open(address, ttl, now)).token)
    }
    const which = rnd()
    return async (s) => (tokens.length ? s.revoke(tokens.splice(Math.floor(which * tokens.length), 1)[0]!, now) : null)
  })
}

t.test('snapshot at random cuts + tail == full rebuild at the same instant; bad snapshots rebuild', (t) =>
  forEachLog(t, async (t, makeLog, kind) => {
    const log = await makeLog()
    const rnd = seeded(kind === 'kafka' ? 5 : 17)
    const steps = history(rnd, kind === 'kafka' ? 80 : 240)
    const cuts = cutPoints(rnd, steps.length, kind === 'kafka' ? 2 : 4)
    const restartAt = T0 + (steps.length - 30) * MINUTE // entries expired by then are dropped by every start
    const { logger } = capturingLogger()
    const live = await StateSnapshots.open(await makeTempDir(t))
    const kept = await Promise.all(cuts.map(async () => StateSnapshots.open(await makeTempDir(t))))
    const journal = await Journal.open({ log, def: PAYER_PROOFS, topic: 'auth.proofs.ckpt', partitions: 3 })

    const writer = await PayerSessions.restore(journal, T0, { checkpoints: { snapshots: live, everyMs: 0 }, logger })
    t.equal(writer.checkpoints?.restored.reason, 'missing')
    let done = 0
    for (const [c, cut] of cuts.entries()) {
      for (; done < cut - 3; done++) await steps[done]!(writer)
      const writes: Array<Promise<unknown>> = []
      for (; done < cut; done++) writes.push(steps[done]!(writer))
      const snap = writer.checkpoints!.checkpoint() // taken while the last writes before the cut are in flight
      await Promise.all(writes)
      t.ok(await snap, `cut ${cut}: a snapshot is written`)
      await keepSnapshot(live, kept[c]!, 'auth.sessions')
    }
    for (; done < steps.length; done++) await steps[done]!(writer)
    await writer.close()

    const reference = stateDigest(await PayerSessions.restore(journal, restartAt, { logger }))
    for (const [c, cut] of cuts.entries()) {
      const s = await PayerSessions.restore(journal, restartAt, { checkpoints: { snapshots: kept[c]!, everyMs: 0 }, logger })
      t.equal(s.checkpoints?.restored.restored, true, `cut ${cut}: the snapshot is used`)
      t.equal(stateDigest(s), reference, `cut ${cut}: snapshot + tail == full rebuild`)
    }
    const final = await PayerSessions.restore(journal, restartAt, { checkpoints: { snapshots: live, everyMs: 0 }, logger })
    t.equal(final.checkpoints?.restored.restored, true, 'the final snapshot at close is used')
    t.equal(stateDigest(final), reference, 'final snapshot == full rebuild')
    t.ok([...final.rows()].length > 0, 'live entries remain at the restart')

    const good = await readSnapshot(live, 'auth.sessions')
    for (const bad of ['corrupt', 'old_schema', 'ahead_of_log'] as BadSnapshot[]) {
      await spoilSnapshot(live, 'auth.sessions', good, bad)
      const cap = capturingLogger()
      const s = await PayerSessions.restore(journal, restartAt, { checkpoints: { snapshots: live, everyMs: 0 }, logger: cap.logger })
      t.equal(s.checkpoints?.restored.reason, bad, `${bad}: refused with its reason`)
      t.equal(cap.lines.length, 1, `${bad}: one log line`)
      t.match(cap.lines[0], { reason: bad, store: 'auth.sessions' })
      t.equal(stateDigest(s), reference, `${bad}: the rebuild gives the same state`)
    }
  }),
)
