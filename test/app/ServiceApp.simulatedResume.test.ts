/**
 * A restart of the service on the simulated venue resumes the generator from its checkpoint (issue 31: restart time
 * must not grow with history): the second start generates only the minutes after the checkpoint of the newest minute
 * the first run appended, not the history from the origin, and the log holds every tick once, none missing.
 *
 * The present is a controlled clock (as test/app/ServiceApp.test.ts): two days of history, fitted on the first; the
 * clock jumps ten minutes between the runs to stand for the stop.
 */
import t from 'tap'
import { join } from 'node:path'
import { EmbeddedLog } from '../../pipeline/log/EmbeddedLog.ts'
import { StateSnapshots } from '../../pipeline/state/StateSnapshots.ts'
import { decodeTickValue } from '../../pipeline/TickEnvelope.ts'
import { topicNames } from '../../pipeline/topics.ts'
import { SIMULATED_VENUE_STORE } from '../../pipeline/venue/SimulatedVenueResume.ts'
import { readAll } from '../helpers/logs.ts'
import { makeTempDir } from '../helpers/tmp.ts'
import { controlledClock, startReadyApp } from '../helpers/runningApp.ts'

const MINUTE = 60_000

async function ticksIn(dataDir: string): Promise<number[]> {
  const log = await EmbeddedLog.open(join(dataDir, 'log'))
  try {
    return (await readAll(log, topicNames().ticks)).map((r) => decodeTickValue(r.value).seq!)
  } finally {
    await log.close()
  }
}

t.test('a restart resumes the simulated venue from its checkpoint: only the gap generated, no tick twice or missing', async (t) => {
  const dataDir = await makeTempDir(t, 'svc-sim-resume-')
  const clock = controlledClock('2026-05-06T07:08:30Z')
  const env = { SVC_DATA_DIR: dataDir, SVC_SIM_HISTORY_DAYS: '2', SVC_TRAIN_DAYS: '1' }

  const first = await startReadyApp(env, clock)
  const firstWarm = first.said.find((l) => l.startsWith('svc: warming up'))!
  t.notMatch(firstWarm, /checkpoint/, 'a first start generates from the origin')
  await first.stop()
  const atStop = await ticksIn(dataDir)
  const newest = Math.max(...atStop)
  const kept = await (await StateSnapshots.open(join(dataDir, 'state'))).read(SIMULATED_VENUE_STORE, 1)
  t.ok(kept.ok, 'the stop kept the generator checkpoint in <data>/state')

  clock.jump(10 * MINUTE)
  const started = performance.now()
  const second = await startReadyApp(env, clock)
  const readyMs = performance.now() - started
  const warm = second.said.find((l) => l.startsWith('svc: warming up'))!
  const from = /from the generator's checkpoint at (\S+) \(line (\d+)\)/.exec(warm)
  t.ok(from, `the restart resumes from the checkpoint: ${warm}`)
  const line = Number(from?.[2])
  // The checkpoint is of the newest whole minute appended: at most a minute's records (3 assets) behind the log.
  t.ok(line <= newest && newest - line < 100, `the checkpoint (line ${line}) is at the log's end (line ${newest}): the ${newest.toLocaleString('en')} lines of history are not generated again`)
  const done = second.said.find((l) => l.startsWith('svc: warm-up done'))!
  const caughtUp = Number(/\((\d+) records\)/.exec(done)?.[1])
  t.ok(caughtUp > 0 && caughtUp < 20 * 30, `the restart produced the ten-minute gap (${caughtUp} records), ready in ${(readyMs / 1000).toFixed(1)} s`)
  await second.stop()

  const seqs = await ticksIn(dataDir)
  t.equal(new Set(seqs).size, seqs.length, `no tick twice across the restart (${seqs.length})`)
  t.equal(Math.max(...seqs), seqs.length, 'no tick missing: every line from 1 to the newest is in')
  t.ok(seqs.length > atStop.length, 'the gap was appended')
})
