/**
 * The funnel's trend checkpointed (issue 31): for random cuts of a history of funnel snapshots (more than the kept
 * window on the embedded log), the trend from (the state snapshot at the cut, taken with a funnel snapshot in flight +
 * the tail) equals the full rebuild; a corrupt, older-schema or ahead-of-log state snapshot falls back to the rebuild
 * with one log line and the same trend. Both logs.
 */
import t from 'tap'
import type { Clock } from '../../../common/Clock.ts'
import type { EventLog } from '../../../pipeline/log/EventLog.ts'
import { StateSnapshots } from '../../../pipeline/state/StateSnapshots.ts'
import { stateDigest, type CheckpointSettings } from '../../../pipeline/state/StateStore.ts'
import { FUNNEL_LIMIT_MAX, FunnelService } from '../../../product/funnel/FunnelService.ts'
import { forEachLog } from '../../helpers/logs.ts'
import { capturingLogger, cutPoints, keepSnapshot, readSnapshot, seeded, spoilSnapshot, type BadSnapshot } from '../../helpers/stateSnapshots.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { DECISIONS, GRADES, LOCKS, RESOLVED, callSource, drawRows, ledgerSource } from './fixtures.ts'

const T0 = Date.parse('2026-03-02T00:00:00.000Z')
class StepClock implements Clock {
  t = T0
  now(): number {
    return (this.t += 60_000)
  }
}

function open(log: EventLog, o: { checkpoints?: CheckpointSettings; logger: ReturnType<typeof capturingLogger>['logger'] }) {
  return FunnelService.open({
    log, clock: new StepClock(), adminKey: 'k', intervalMs: 60_000, topic: 'ops.funnel.ckpt', partitions: 2,
    sources: { ledger: ledgerSource(DECISIONS, RESOLVED).source, draws: { allRows: drawRows }, calls: callSource(LOCKS, GRADES) },
    ...(o.checkpoints ? { checkpoints: o.checkpoints } : {}), logger: o.logger,
  })
}

t.test('trend from snapshot at random cuts + tail == full rebuild; bad snapshots rebuild', (t) =>
  forEachLog(t, async (t, makeLog, kind) => {
    const log = await makeLog()
    const rnd = seeded(kind === 'kafka' ? 3 : 11)
    const total = kind === 'kafka' ? 40 : FUNNEL_LIMIT_MAX + 80
    const cuts = cutPoints(rnd, total, kind === 'kafka' ? 2 : 4)
    const { logger } = capturingLogger()
    const live = await StateSnapshots.open(await makeTempDir(t))
    const kept = await Promise.all(cuts.map(async () => StateSnapshots.open(await makeTempDir(t))))

    const writer = await open(log, { checkpoints: { snapshots: live, everyMs: 0 }, logger })
    let done = 0
    for (const [c, cut] of cuts.entries()) {
      for (; done < cut - 1; done++) await writer.snapshot()
      const inFlight = writer.snapshot()
      done++
      const snap = writer.checkpoints!.checkpoint()
      await inFlight
      t.ok(await snap, `cut ${cut}: a state snapshot is written`)
      await keepSnapshot(live, kept[c]!, 'ops.funnel')
    }
    for (; done < total; done++) await writer.snapshot()
    await writer.close()

    const rebuilt = await open(log, { logger })
    const reference = stateDigest(rebuilt)
    t.equal([...rebuilt.rows()].length, Math.min(total, FUNNEL_LIMIT_MAX), 'the rebuild keeps the window')
    await rebuilt.close()
    for (const [c, cut] of cuts.entries()) {
      const f = await open(log, { checkpoints: { snapshots: kept[c]!, everyMs: 0 }, logger })
      t.equal(f.checkpoints?.restored.restored, true, `cut ${cut}: the state snapshot is used`)
      t.equal(stateDigest(f), reference, `cut ${cut}: snapshot + tail == full rebuild`)
      await f.close()
    }
    // (The closes above wrote final state snapshots into the kept folders; `live` still holds the writer's final.)
    const good = await readSnapshot(live, 'ops.funnel')
    for (const bad of ['corrupt', 'old_schema', 'ahead_of_log'] as BadSnapshot[]) {
      await spoilSnapshot(live, 'ops.funnel', good, bad)
      const cap = capturingLogger()
      const f = await open(log, { checkpoints: { snapshots: live, everyMs: 0 }, logger: cap.logger })
      t.equal(f.checkpoints?.restored.reason, bad, `${bad}: refused with its reason`)
      t.equal(cap.lines.length, 1, `${bad}: one log line`)
      t.match(cap.lines[0], { reason: bad, store: 'ops.funnel' })
      t.equal(stateDigest(f), reference, `${bad}: the rebuild gives the same trend`)
      await f.close()
    }
  }),
)
