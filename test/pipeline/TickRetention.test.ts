/**
 * The tick retention job's floor rules (pipeline/TickRetention.ts): it never deletes a tick the Parquet sink has not
 * sealed (committed), one within the kept window of the newest tick, or one at or above any group's committed position.
 */
import t from 'tap'
import { EmbeddedLog } from '../../pipeline/log/EmbeddedLog.ts'
import { TickRetention } from '../../pipeline/TickRetention.ts'
import { makeTempDir } from '../helpers/tmp.ts'
import { readAll, type TapTest } from '../helpers/logs.ts'

const HOUR = 3_600_000
const T0 = Date.UTC(2026, 0, 1)
const TOTAL = 200
const KEEP_MS = 50 * HOUR


/** 200 ticks of one asset, one an hour, on one partition in segments of about 14 records. */
async function openFilled(t: TapTest): Promise<EmbeddedLog> {
  const dir = await makeTempDir(t, 'svc-tick-ret-')
  const log = await EmbeddedLog.open(dir, { segmentBytes: 1024, recentBytes: 0 })
  t.teardown(() => log.close())
  await log.ensureTopics([{ name: 'venue.ticks', partitions: 1 }])
  const producer = await log.createProducer()
  for (let i = 0; i < TOTAL; i += 25) {
    await producer.send('venue.ticks', Array.from({ length: 25 }, (_, j) => ({ key: 'BTC', value: Buffer.from(`tick-${i + j}-${'x'.repeat(30)}`), timestamp: T0 + (i + j) * HOUR })))
  }
  return log
}

/** The offset of the first tick within the kept window (newest is at TOTAL - 1 hours). */
const FIRST_IN_WINDOW = TOTAL - 1 - KEEP_MS / HOUR

async function check(t: TapTest, log: EmbeddedLog, floor: number): Promise<number> {
  const [start] = await log.logStartOffsets('venue.ticks')
  const records = await readAll(log, 'venue.ticks')
  t.ok(start! <= floor, `log start ${start} is at or below the floor ${floor}`)
  t.equal(records.length, TOTAL - start!, 'every record from the log start is readable')
  t.ok(records.every((r, i) => r.offset === start! + i), 'dense from the log start')
  return start!
}

t.test('no sealed ticks: nothing is deleted, however old', async (t) => {
  const log = await openFilled(t)
  const job = new TickRetention({ log, ticksTopic: 'venue.ticks', sinkGroup: 'svc.parquet-sink', keepMs: KEEP_MS })
  const report = await job.run()
  t.equal(report.partitions[0]!.boundBy, 'sealed')
  t.equal(report.deletedSegments, 0)
  t.same(await log.logStartOffsets('venue.ticks'), [0])
})

t.test('sealed below the window: deletes only below the sealed offset', async (t) => {
  const log = await openFilled(t)
  await log.commitOffset('svc.parquet-sink', 'venue.ticks', 0, 60)
  const report = await new TickRetention({ log, ticksTopic: 'venue.ticks', sinkGroup: 'svc.parquet-sink', keepMs: KEEP_MS }).run()
  const p = report.partitions[0]!
  t.equal(p.sealed, 60)
  t.equal(p.boundBy, 'sealed')
  t.ok(report.deletedSegments > 0, `${report.deletedSegments} segments deleted`)
  const start = await check(t, log, 60)
  t.ok(start > 0, 'something went')
})

t.test('all sealed: the window of the newest tick stays', async (t) => {
  const log = await openFilled(t)
  await log.commitOffset('svc.parquet-sink', 'venue.ticks', 0, TOTAL)
  const report = await new TickRetention({ log, ticksTopic: 'venue.ticks', sinkGroup: 'svc.parquet-sink', keepMs: KEEP_MS }).run()
  const p = report.partitions[0]!
  t.equal(report.newestMs, T0 + (TOTAL - 1) * HOUR)
  t.equal(p.boundBy, 'window')
  t.ok(p.window <= FIRST_IN_WINDOW, `window floor ${p.window} is at or below the first tick within the window (${FIRST_IN_WINDOW})`)
  const start = await check(t, log, p.window)
  t.ok(start > 0 && start <= FIRST_IN_WINDOW, `log start ${start}: older ticks went, the window's stayed`)
  const records = await readAll(log, 'venue.ticks')
  t.ok(records.some((r) => r.timestamp < report.cutoffMs!) || start === FIRST_IN_WINDOW, 'deletion is by whole segments (a few older ticks may stay)')
  t.ok(records.filter((r) => r.timestamp >= report.cutoffMs!).length === TOTAL - FIRST_IN_WINDOW, 'every tick within the window is there')
})

t.test('a committed consumer position below the others is the floor', async (t) => {
  const log = await openFilled(t)
  await log.commitOffset('svc.parquet-sink', 'venue.ticks', 0, TOTAL)
  await log.commitOffset('svc.engine', 'venue.ticks', 0, 40)
  const report = await new TickRetention({ log, ticksTopic: 'venue.ticks', sinkGroup: 'svc.parquet-sink', keepMs: KEEP_MS }).run()
  const p = report.partitions[0]!
  t.equal(p.boundBy, 'committed')
  t.same(p.committed, { offset: 40, groupId: 'svc.engine' })
  t.equal(p.floor, 40)
  const start = await check(t, log, 40)
  t.ok(start > 0, 'below the committed position went')
  // The lagging group resumes from its own position, which is still in the log.
  t.ok(start <= 40)
  // Once it moves on, the next run goes further.
  await log.commitOffset('svc.engine', 'venue.ticks', 0, TOTAL)
  const again = await new TickRetention({ log, ticksTopic: 'venue.ticks', sinkGroup: 'svc.parquet-sink', keepMs: KEEP_MS }).run()
  t.equal(again.partitions[0]!.boundBy, 'window')
  t.ok(again.partitions[0]!.deletion.logStart > start, 'the floor moved up with the committed position')
})

t.test('keepMs must be positive', async (t) => {
  const log = await openFilled(t)
  t.throws(() => new TickRetention({ log, ticksTopic: 'venue.ticks', sinkGroup: 's', keepMs: 0 }), RangeError)
})
