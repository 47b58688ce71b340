/**
 * EventLog conformance: the same bodies run over EmbeddedLog and KafkaLog (a real broker, see test/run.sh).
 * Rules under test are the EventLog seam's doc comments (pipeline/log/EventLog.ts).
 */
import t from 'tap'
import { partitionForKey } from '../../../common/murmur2.ts'
import type { ConsumedRecord, EventLog, LogRecord } from '../../../pipeline/log/EventLog.ts'
import { consume, forEachLog, readAll } from '../../helpers/logs.ts'

const PARTITIONS = 3

function record(key: string, seq: number, at = 1_700_000_000_000): LogRecord {
  return { key, value: Buffer.from(JSON.stringify({ key, seq })), timestamp: at + seq }
}

function seqOf(r: ConsumedRecord): number {
  return (JSON.parse(r.value.toString('utf8')) as { seq: number }).seq
}

/** Sends `count` records over `keys` keys (seq numbers continue per key from `from`), in sends of `batch`. */
async function produce(log: EventLog, topic: string, count: number, opts: { keys?: number; batch?: number; from?: number } = {}): Promise<LogRecord[]> {
  const { keys = 10, batch = 50, from = 0 } = opts
  const all = Array.from({ length: count }, (_, i) => record(`asset-${i % keys}`, from + i))
  const producer = await log.createProducer()
  for (let i = 0; i < all.length; i += batch) await producer.send(topic, all.slice(i, i + batch))
  await producer.close()
  return all
}

function countsPerPartition(records: LogRecord[]): number[] {
  const counts = new Array<number>(PARTITIONS).fill(0)
  for (const r of records) counts[partitionForKey(r.key, PARTITIONS)]!++
  return counts
}

t.test('keyed records are all consumed, in per-key order, on the partition partitionForKey picks', (t) =>
  forEachLog(t, async (t, makeLog) => {
    const log = await makeLog()
    await log.ensureTopics([{ name: 'ticks', partitions: PARTITIONS }])
    t.equal(await log.partitionsOf('ticks'), PARTITIONS)
    const sent = await produce(log, 'ticks', 300)
    const batches: { partition: number; offsets: number[] }[] = []
    const consumer = await log.createConsumer({ groupId: 'order', topics: ['ticks'] })
    const got: ConsumedRecord[] = []
    let finish = (): void => {}
    const finished = new Promise<void>((r) => (finish = r))
    await consumer.run(async (batch) => {
      batches.push({ partition: batch.partition, offsets: batch.records.map((r) => r.offset) })
      if (batch.records.some((r) => r.partition !== batch.partition || r.topic !== 'ticks')) t.fail('record outside its batch partition')
      got.push(...batch.records)
      if (got.length >= sent.length) finish()
    })
    await finished
    await consumer.stop()

    t.equal(got.length, sent.length, 'every record delivered exactly once')
    t.same(new Set(got.map((r) => `${r.key}/${seqOf(r)}`)).size, sent.length, 'no duplicates')
    t.ok(batches.every((b) => b.offsets.every((o, i) => i === 0 || o === b.offsets[i - 1]! + 1)), `all ${batches.length} batches in offset order`)
    t.equal(got.filter((r) => r.partition !== partitionForKey(r.key, PARTITIONS)).length, 0, "every key on partitionForKey's partition")
    const byKey = new Map<string, number[]>()
    for (const r of got) byKey.set(r.key, [...(byKey.get(r.key) ?? []), seqOf(r)])
    for (const [key, seqs] of byKey) {
      const expected = sent.filter((r) => r.key === key).map((r) => (JSON.parse(r.value.toString()) as { seq: number }).seq)
      t.same(seqs, expected, `${key} in send order`)
    }
    const first = got.find((r) => seqOf(r) === 0)!
    t.equal(first.timestamp, 1_700_000_000_000, 'timestamp preserved')
    t.equal(first.key, 'asset-0', 'key preserved')
  }),
)

t.test('a new consumer in the same group resumes after the committed offset; another group reads from the beginning', (t) =>
  forEachLog(t, async (t, makeLog) => {
    const log = await makeLog()
    await log.ensureTopics([{ name: 'decisions', partitions: PARTITIONS }])
    const first = await produce(log, 'decisions', 120)
    const ends = await log.endOffsets('decisions')
    t.same(ends, countsPerPartition(first))

    // Consume everything, but commit only half of each partition.
    const a = await log.createConsumer({ groupId: 'g', topics: ['decisions'] })
    const seenByA: ConsumedRecord[] = []
    let finish = (): void => {}
    const finished = new Promise<void>((r) => (finish = r))
    await a.run(async (batch) => {
      seenByA.push(...batch.records)
      if (seenByA.length >= first.length) finish()
    })
    await finished
    const committed = ends.map((end) => Math.floor(end / 2))
    for (let p = 0; p < PARTITIONS; p++) await a.commit('decisions', p, committed[p]!)
    await a.stop()

    const more = await produce(log, 'decisions', 60, { from: 1000 })
    const expectedForB = (first.length + more.length) - committed.reduce((x, y) => x + y, 0)
    const b = await consume(log, { groupId: 'g', topics: ['decisions'], count: expectedForB })
    t.equal(b.length, expectedForB, 'resumed consumer gets exactly the uncommitted records')
    for (let p = 0; p < PARTITIONS; p++) {
      const offsets = b.filter((r) => r.partition === p).map((r) => r.offset)
      const end = ends[p]! + countsPerPartition(more)[p]!
      t.same(offsets, Array.from({ length: end - committed[p]! }, (_, i) => committed[p]! + i), `partition ${p}: from ${committed[p]} to ${end}, nothing lost or repeated`)
    }

    const other = await consume(log, { groupId: 'h', topics: ['decisions'], count: first.length + more.length })
    t.equal(other.length, first.length + more.length, 'a second group reads everything from the beginning')
    t.same(
      other.map((r) => r.offset).sort((x, y) => x - y)[0],
      0,
      'second group starts at offset 0',
    )
  }),
)

t.test('commits persist across reopen', (t) =>
  forEachLog(t, async (t, makeLog) => {
    let log = await makeLog()
    await log.ensureTopics([{ name: 'outcomes', partitions: PARTITIONS }])
    await produce(log, 'outcomes', 30)
    await consume(log, { groupId: 'persist', topics: ['outcomes'], count: 30, commit: true })
    await log.close()
    log = await makeLog()
    await produce(log, 'outcomes', 9, { from: 100 })
    const resumed = await consume(log, { groupId: 'persist', topics: ['outcomes'], count: 9 })
    t.same(resumed.map(seqOf).sort((x, y) => x - y), Array.from({ length: 9 }, (_, i) => 100 + i), 'only records after the commit')
  }),
)

t.test('endOffsets and lastRecords', (t) =>
  forEachLog(t, async (t, makeLog) => {
    const log = await makeLog()
    await log.ensureTopics([{ name: 'draws', partitions: PARTITIONS }])
    t.same(await log.endOffsets('draws'), [0, 0, 0], 'empty topic')
    t.same(await log.lastRecords('draws'), [null, null, null], 'no last records in an empty topic')
    // Two keys only, so at least one partition stays empty.
    const sent = await produce(log, 'draws', 25, { keys: 2, batch: 7 })
    const counts = countsPerPartition(sent)
    t.same(await log.endOffsets('draws'), counts)
    const last = await log.lastRecords('draws')
    for (let p = 0; p < PARTITIONS; p++) {
      const expected = sent.filter((r) => partitionForKey(r.key, PARTITIONS) === p).at(-1)
      if (!expected) {
        t.equal(last[p], null, `partition ${p} empty`)
        continue
      }
      t.match(last[p], { topic: 'draws', partition: p, offset: counts[p]! - 1, key: expected.key, timestamp: expected.timestamp }, `partition ${p} last record`)
      t.ok(last[p]!.value.equals(expected.value), `partition ${p} last value`)
    }
  }),
)

t.test('fromBeginning false starts a new group at the end', (t) =>
  forEachLog(t, async (t, makeLog) => {
    const log = await makeLog()
    await log.ensureTopics([{ name: 'ticks', partitions: PARTITIONS }])
    await produce(log, 'ticks', 40)
    const consumer = await log.createConsumer({ groupId: 'latest', topics: ['ticks'], fromBeginning: false })
    const got: ConsumedRecord[] = []
    let finish = (): void => {}
    const finished = new Promise<void>((r) => (finish = r))
    await consumer.run(async (batch) => {
      got.push(...batch.records)
      if (got.length >= 15) finish()
    })
    await produce(log, 'ticks', 15, { from: 500 })
    await finished
    await consumer.stop()
    t.same(got.map(seqOf).sort((a, b) => a - b), Array.from({ length: 15 }, (_, i) => 500 + i), 'only records sent after run()')
  }),
)

t.test('a failing handler gets the same batch again; nothing is skipped', (t) =>
  forEachLog(t, async (t, makeLog) => {
    const log = await makeLog()
    await log.ensureTopics([{ name: 'retry', partitions: 1 }])
    await produce(log, 'retry', 20, { keys: 1 })
    const consumer = await log.createConsumer({ groupId: 'retry', topics: ['retry'] })
    const delivered: number[][] = []
    let failed = false
    const seen = new Set<number>()
    let finish = (): void => {}
    const finished = new Promise<void>((r) => (finish = r))
    await consumer.run(async (batch) => {
      delivered.push(batch.records.map((r) => r.offset))
      if (!failed) {
        failed = true
        throw new Error('handler failure injected by the test')
      }
      for (const r of batch.records) seen.add(r.offset)
      if (seen.size >= 20) finish()
    })
    await finished
    await consumer.stop()
    t.equal(delivered[1]![0], delivered[0]![0], 'redelivered from the failed batch start')
    t.equal(seen.size, 20, 'every record handled')
  }),
)

t.test('unknown topics and partition mismatches are refused', (t) =>
  forEachLog(t, async (t, makeLog) => {
    const log = await makeLog()
    await log.ensureTopics([{ name: 'known', partitions: 2 }])
    await log.ensureTopics([{ name: 'known', partitions: 2 }]) // idempotent
    await t.rejects(log.ensureTopics([{ name: 'known', partitions: 3 }]), { code: 'LOG_TOPIC_MISMATCH' })
    await t.rejects(log.endOffsets('missing'), { code: 'LOG_UNKNOWN_TOPIC' })
    await t.rejects(log.createConsumer({ groupId: 'x', topics: ['missing'] }), { code: 'LOG_UNKNOWN_TOPIC' })
    const producer = await log.createProducer()
    await t.rejects(producer.send('missing', [record('k', 1)]), { code: 'LOG_UNKNOWN_TOPIC' })
    await t.rejects(producer.send('known', [{ key: 'k', value: 'not a buffer' as unknown as Buffer, timestamp: 1 }]), { code: 'LOG_INVALID_ARGUMENT' })
    await t.rejects(log.ensureTopics([{ name: 'bad/name', partitions: 1 }]), { code: 'LOG_INVALID_ARGUMENT' })
    await producer.close()
    t.same(await readAll(log, 'known'), [], 'nothing was written')
  }),
)
