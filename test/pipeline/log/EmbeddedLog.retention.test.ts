/**
 * Retention on the embedded log (issue 31 item 3, pipeline/log/EmbeddedLog.ts "Retention"): whole segments below an
 * offset go, the log start moves and survives a reopen, readers below it start at it, offsets keep their meaning, and
 * an atomic unit retention deleted part of is not mistaken for a torn one by recovery.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { consume, readAll } from '../../helpers/logs.ts'

function rec(i: number, key = 'k') {
  return { key, value: Buffer.from(`value-${i}-${'p'.repeat(40)}`), timestamp: 1_700_000_000_000 + i * 1000 }
}

async function segmentFiles(dir: string, topic: string, partition = 0): Promise<string[]> {
  return (await readdir(join(dir, 'topics', topic, String(partition)))).filter((f) => f.endsWith('.log')).sort()
}

/** 200 records on one partition in segments of about 10 records each. */
async function filled(dir: string): Promise<void> {
  const log = await EmbeddedLog.open(dir, { segmentBytes: 1024, recentBytes: 0 })
  await log.ensureTopics([{ name: 'ticks', partitions: 1 }])
  const producer = await log.createProducer()
  for (let i = 0; i < 200; i += 20) await producer.send('ticks', Array.from({ length: 20 }, (_, j) => rec(i + j)))
  await log.close()
}

t.test('deleting below an offset removes whole segments only, keeps everything from the log start, and survives a reopen', async (t) => {
  const dir = await makeTempDir(t, 'svc-log-ret-')
  await filled(dir)
  const before = await segmentFiles(dir, 'ticks')
  t.ok(before.length >= 10, `the records span ${before.length} segments`)

  const log = await EmbeddedLog.open(dir, { segmentBytes: 1024, recentBytes: 0 })
  const segments = await log.segments('ticks', 0)
  t.equal(segments[0]!.baseOffset, 0)
  t.equal(segments.at(-1)!.endOffset, 200)
  t.equal(segments[0]!.lastTimestamp, rec(segments[0]!.endOffset - 1).timestamp, 'a segment reports its last record time')
  const cut = 95
  // The segment holding the offset stays, so the start is its first offset.
  const expectedStart = segments.filter((s) => s.baseOffset <= cut).at(-1)!.baseOffset
  const result = await log.deleteSegmentsBelow('ticks', 0, cut)
  t.equal(result.logStart, expectedStart, 'the log start is the first remaining segment')
  t.ok(result.logStart <= cut, 'nothing at or above the offset went')
  t.ok(result.deletedSegments > 0 && result.deletedBytes > 0, `${result.deletedSegments} segments, ${result.deletedBytes} bytes deleted`)
  t.same(await log.logStartOffsets('ticks'), [result.logStart])
  t.same(await log.endOffsets('ticks'), [200], 'endOffsets unchanged')
  t.equal((await log.lastRecords('ticks'))[0]!.offset, 199, 'lastRecords still answers')

  const records = await readAll(log, 'ticks')
  t.equal(records[0]!.offset, result.logStart, 'a new reader starts at the log start')
  t.equal(records.length, 200 - result.logStart, 'every record from the log start is there')
  t.ok(records.every((r, i) => r.offset === result.logStart + i && r.value.equals(rec(r.offset).value)), 'offsets and contents intact')

  // A group committed below the log start resumes at it.
  await log.commitOffset('behind', 'ticks', 0, 3)
  const resumed = await consume(log, { groupId: 'behind', topics: ['ticks'], until: (rs) => rs.length >= 5 })
  t.equal(resumed[0]!.offset, result.logStart, 'a committed position below the start starts at the start')
  // Asking again deletes nothing more; the last segment is never deleted.
  t.equal((await log.deleteSegmentsBelow('ticks', 0, cut)).deletedSegments, 0, 'idempotent')
  const all = await log.deleteSegmentsBelow('ticks', 0, 10_000)
  t.ok(all.logStart <= 199, 'the segment holding the last record stays')
  t.equal((await log.lastRecords('ticks'))[0]!.offset, 199)
  await log.close()

  const reopened = await EmbeddedLog.open(dir, { segmentBytes: 1024 })
  t.same(await reopened.logStartOffsets('ticks'), [all.logStart], 'the log start is durable')
  t.same(await reopened.endOffsets('ticks'), [200])
  const after = await readAll(reopened, 'ticks')
  t.equal(after[0]!.offset, all.logStart)
  t.equal(after.length, 200 - all.logStart)
  // Writing continues at the same offsets.
  const producer = await reopened.createProducer()
  await producer.send('ticks', [rec(200)])
  t.same(await reopened.endOffsets('ticks'), [201])
  await reopened.close()
})

t.test('a crash between recording the log start and unlinking leaves segments recovery deletes', async (t) => {
  const dir = await makeTempDir(t, 'svc-log-ret-crash-')
  await filled(dir)
  const files = await segmentFiles(dir, 'ticks')
  // What deleteSegmentsBelow writes first; the files it would unlink next are still there.
  const start = Number(files[3]!.slice(0, 20))
  await writeFile(join(dir, 'topics', 'ticks', '0', 'start.json'), JSON.stringify({ logStart: start }))
  const log = await EmbeddedLog.open(dir, { segmentBytes: 1024 })
  t.same(await log.logStartOffsets('ticks'), [start])
  t.same(await segmentFiles(dir, 'ticks'), files.slice(3), 'segments wholly below the start were deleted')
  const records = await readAll(log, 'ticks')
  t.equal(records[0]!.offset, start)
  t.equal(records.length, 200 - start)
  await log.close()
})

t.test('an atomic unit whose tick frames retention deleted is not taken for a torn unit on reopen', async (t) => {
  const dir = await makeTempDir(t, 'svc-log-ret-tx-')
  const opts = { segmentBytes: 1024, recentBytes: 0 }
  let log = await EmbeddedLog.open(dir, opts)
  await log.ensureTopics([{ name: 'ticks', partitions: 1 }, { name: 'gaps', partitions: 1 }])
  const producer = await log.createProducer()
  // Each unit: ticks + one gap record, as the live venue sink writes them.
  for (let u = 0; u < 20; u++) {
    await producer.sendAtomic([
      { topic: 'ticks', records: Array.from({ length: 5 }, (_, j) => rec(u * 5 + j)) },
      { topic: 'gaps', records: [{ key: 'g', value: Buffer.from(`gap-${u}`), timestamp: rec(u * 5).timestamp }] },
    ])
  }
  const deleted = await log.deleteSegmentsBelow('ticks', 0, 60)
  t.ok(deleted.deletedSegments > 0, 'tick segments with unit frames deleted')
  await log.close()
  const retired = JSON.parse(await readFile(join(dir, 'retired-tx.json'), 'utf8')) as { ranges: number[][] }
  t.ok(retired.ranges.length > 0, 'the deleted units are recorded as whole')

  log = await EmbeddedLog.open(dir, opts)
  t.same(await log.endOffsets('gaps'), [20], 'no gap record was cut as part of a "torn" unit')
  t.same(await log.endOffsets('ticks'), [100])
  t.equal((await readAll(log, 'gaps')).length, 20)
  await log.close()
})

t.test('deleteSegmentsBelow refuses a bad offset', async (t) => {
  const dir = await makeTempDir(t, 'svc-log-ret-arg-')
  const log = await EmbeddedLog.open(dir)
  t.teardown(() => log.close())
  await log.ensureTopics([{ name: 'ticks', partitions: 1 }])
  t.throws(() => log.deleteSegmentsBelow('ticks', 0, -1), { code: 'LOG_INVALID_ARGUMENT' })
  t.throws(() => log.deleteSegmentsBelow('ticks', 3, 1), { code: 'LOG_INVALID_ARGUMENT' })
  t.same(await log.deleteSegmentsBelow('ticks', 0, 0), { topic: 'ticks', partition: 0, deletedSegments: 0, deletedBytes: 0, logStart: 0 })
})
