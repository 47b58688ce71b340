/**
 * A restart whose Parquet sink is far behind becomes ready without waiting for it (issue 31, a year of history): after
 * a first start the sink has sealed little of the generated history (it starts once the service is ready), so a
 * restart finds a backlog of unsealed ticks as long as the history. Readiness means the market state and the engine
 * hold the present; the sink seals its backlog in the background after ready (its lag on /metrics), and nothing is lost.
 *
 * The backlog here is made by hand: the sink's sealed tick files and committed offsets are removed between the runs,
 * so the restart's sink must seal the whole history again. The present is a controlled clock, as in
 * ServiceApp.simulatedResume.test.ts.
 */
import t from 'tap'
import { readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { EmbeddedLog } from '../../pipeline/log/EmbeddedLog.ts'
import { topicNames } from '../../pipeline/topics.ts'
import { makeTempDir } from '../helpers/tmp.ts'
import { controlledClock, startReadyApp } from '../helpers/runningApp.ts'

const MINUTE = 60_000
const SINK_GROUP_FILE = 'svc%2Eparquet-sink.json'
/** /metrics answers the operator only. */
const OPS = 'ops-token-for-the-sink-backlog-test'

/** The sink's committed tick offsets, summed over partitions (0 when it has committed none). */
async function sinkCommittedTicks(dataDir: string): Promise<number> {
  const text = await readFile(join(dataDir, 'log', 'groups', SINK_GROUP_FILE), 'utf8').catch(() => null)
  if (text === null) return 0
  const offsets = (JSON.parse(text) as { offsets: Record<string, Record<string, number>> }).offsets[topicNames().ticks] ?? {}
  return Object.values(offsets).reduce((a, b) => a + b, 0)
}

/** svc_consumer_lag of the sink on the ticks topic, or null while its consumer is not running yet. */
async function sinkLag(url: string): Promise<number | null> {
  const text = await (await fetch(url + '/metrics', { headers: { 'x-svc-ops': OPS } })).text()
  const m = new RegExp(`^svc_consumer_lag\\{group="svc.parquet-sink",topic="${topicNames().ticks}"\\} (\\d+)`, 'm').exec(text)
  return m ? Number(m[1]) : null
}

t.test('a restart with a large Parquet sink backlog is ready before the sink catches up, which it then does in the background', async (t) => {
  const dataDir = await makeTempDir(t, 'svc-sink-backlog-')
  const clock = controlledClock('2026-05-06T07:08:30Z')
  const env = { SVC_DATA_DIR: dataDir, SVC_SIM_HISTORY_DAYS: '2', SVC_TRAIN_DAYS: '1', SVC_OPS_TOKEN: OPS }
  const first = await startReadyApp(env, clock)
  await first.stop()

  // The backlog: every tick of the history unsealed, as after a first start of a long history.
  await rm(join(dataDir, 'parquet', 'venue.ticks'), { recursive: true, force: true })
  await rm(join(dataDir, 'log', 'groups', SINK_GROUP_FILE), { force: true })
  const log = await EmbeddedLog.open(join(dataDir, 'log'))
  const ticks = (await log.endOffsets(topicNames().ticks)).reduce((a, b) => a + b, 0)
  await log.close()
  t.ok(ticks > 20_000, `the history holds ${ticks} ticks, none sealed`)

  clock.jump(10 * MINUTE)
  const second = await startReadyApp(env, clock)
  const sealedAtReady = await sinkCommittedTicks(dataDir)
  t.ok(sealedAtReady < ticks / 2, `ready with most of the backlog unsealed (${sealedAtReady} of ${ticks} ticks sealed): readiness does not wait for the sink`)
  let lag: number | null = null
  for (const deadline = Date.now() + 10_000; lag === null && Date.now() < deadline; ) {
    lag = await sinkLag(second.url)
    if (lag === null) await sleep(50)
  }
  t.ok(lag !== null, `the sink runs after ready, its lag on /metrics (${lag})`)
  // Nothing lost: the sink seals the whole backlog in the background.
  const deadline = Date.now() + 240_000
  while ((lag = await sinkLag(second.url)) !== 0) {
    if (Date.now() > deadline) throw new Error(`the sink did not catch up (lag ${lag})`)
    await sleep(500)
  }
  t.equal(lag, 0, 'the sink caught up with the log')
  await second.stop()
  t.ok((await sinkCommittedTicks(dataDir)) >= ticks, 'every tick of the history is sealed and committed')
})
