/**
 * A consumer whose group membership lapses mid-batch (pipeline/log/KafkaConsumer.ts): on a busy machine a batch can
 * outlast the session (6 s here, the broker's group.min.session.timeout.ms), the coordinator expels the member, and
 * its offset commit is refused with UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION. The commit must fail as the typed,
 * retryable LOG_REBALANCED, and the consumer must re-join and deliver the uncommitted records again, not crash: a CI
 * run once lost the Parquet sink of test/engine/regression.test.ts this way ("The coordinator is not aware of this
 * member"), and the ParquetSink test covers the sink's side (a refused commit is not a failed write).
 */
import t from 'tap'
import type { ConsumedRecord } from '../../../pipeline/log/EventLog.ts'
import { KafkaLog } from '../../../pipeline/log/KafkaLog.ts'
import { LogError } from '../../../pipeline/log/LogError.ts'
import { kafkaBrokers, kafkaSkip } from '../../helpers/logs.ts'

const skip = kafkaSkip(t)

const SESSION_MS = 6_000

t.test('a commit after the session lapsed is LOG_REBALANCED; the consumer re-joins and re-reads from its last commit', { skip }, async (t) => {
  const prefix = `t${Math.random().toString(16).slice(2, 12)}.`
  const log = await KafkaLog.connect({ brokers: kafkaBrokers()!, clientId: 'svc-test', topicPrefix: prefix, sessionTimeoutMs: SESSION_MS })
  t.teardown(() => log.close())
  await log.ensureTopics([{ name: 'ticks', partitions: 1 }])
  const value = (i: number) => Buffer.from(JSON.stringify({ i }))
  const producer = await log.createProducer()
  await producer.send('ticks', [0, 1, 2].map((i) => ({ key: 'BTC', value: value(i), timestamp: 1_700_000_000_000 + i })))

  const consumer = await log.createConsumer({ groupId: 'lapse', topics: ['ticks'] })
  t.teardown(() => consumer.stop())
  const seen: number[][] = []
  const commitErrors: unknown[] = []
  let first = true
  let done: () => void = () => {}
  const finished = new Promise<void>((resolve) => (done = resolve))
  await consumer.run(async (batch) => {
    seen.push(batch.records.map((r: ConsumedRecord) => (JSON.parse(r.value.toString('utf8')) as { i: number }).i))
    if (first) {
      first = false
      // No heartbeat for longer than the session: the coordinator expels this member meanwhile.
      await new Promise((resolve) => setTimeout(resolve, SESSION_MS + 4_000))
    }
    try {
      await consumer.commit(batch.topic, batch.partition, batch.records.at(-1)!.offset + 1)
    } catch (err) {
      commitErrors.push(err)
      throw err
    }
    if (seen.flat().includes(3)) done()
  })
  const timer = setTimeout(() => done(), 60_000)
  // Once the re-joined member has re-read 0..2, a new record must arrive as well: the consumer is alive.
  while (seen.length < 2 && commitErrors.length < 2) await new Promise((resolve) => setTimeout(resolve, 200))
  await producer.send('ticks', [{ key: 'BTC', value: value(3), timestamp: 1_700_000_000_003 }])
  await finished
  clearTimeout(timer)

  t.equal(commitErrors.length, 1, 'exactly one commit was refused')
  const err = commitErrors[0]
  t.ok(err instanceof LogError, 'a LogError')
  t.match(err, { code: 'LOG_REBALANCED', retryable: true })
  t.match((err as Error).message, /UNKNOWN_MEMBER_ID|ILLEGAL_GENERATION|REBALANCE_IN_PROGRESS/)
  t.same(seen[0], [0, 1, 2], 'first delivery')
  t.same(seen.flat().filter((i) => i < 3).sort(), [0, 0, 1, 1, 2, 2], 'the uncommitted records came again after the re-join, once more')
  t.ok(seen.flat().includes(3), 'and the consumer goes on with new records')
  const committed = await log.admin.fetchOffsets({ groupId: log.physicalGroup('lapse'), topics: [log.physicalTopic('ticks')] })
  t.equal(committed[0]!.partitions[0]!.offset, '4', 'everything committed in the end')
})
