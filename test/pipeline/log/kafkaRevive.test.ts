/**
 * A Kafka consumer that crashes is revived and goes on where it handed over (pipeline/log/KafkaConsumer.ts, issue 31):
 * kafkajs restarts a crashed consumer by itself only for its own retriable errors, and a restart positions a group
 * that never commits at the beginning. Here a handler fails with an error kafkajs does not restart from: the consumer
 * must come back by itself, re-deliver only the batch that failed (never the batches already handled, though the
 * group never committed), and fault() names the crash until the group is joined again.
 */
import t from 'tap'
import type { ConsumedRecord } from '../../../pipeline/log/EventLog.ts'
import { KafkaLog } from '../../../pipeline/log/KafkaLog.ts'
import { kafkaBrokers, kafkaSkip } from '../../helpers/logs.ts'

const skip = kafkaSkip(t)

async function until(what: string, withinMs: number, check: () => boolean): Promise<void> {
  const deadline = Date.now() + withinMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${withinMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

t.test('a crashed never-committing consumer is revived and resumes after the records it handled', { skip }, async (t) => {
  const prefix = `t${Math.random().toString(16).slice(2, 12)}.`
  const log = await KafkaLog.connect({ brokers: kafkaBrokers()!, clientId: 'svc-test', topicPrefix: prefix, sessionTimeoutMs: 6_000 })
  t.teardown(() => log.close())
  await log.ensureTopics([{ name: 'ticks', partitions: 1 }])
  const value = (i: number) => Buffer.from(JSON.stringify({ i }))
  const producer = await log.createProducer()
  t.teardown(() => producer.close())
  const send = (from: number, to: number) =>
    producer.send('ticks', Array.from({ length: to - from }, (_, k) => ({ key: 'BTC', value: value(from + k), timestamp: 1_700_000_000_000 + from + k })))

  const consumer = await log.createConsumer({ groupId: 'never-commits', topics: ['ticks'] })
  t.teardown(() => consumer.stop())
  const handled: number[] = []
  let failNext = false
  let failures = 0
  await consumer.run(async (batch) => {
    const values = batch.records.map((r: ConsumedRecord) => (JSON.parse(r.value.toString('utf8')) as { i: number }).i)
    if (failNext) {
      failNext = false
      failures++
      // Not a kafkajs error: kafkajs crashes the consumer for good on it (restart: false).
      throw new TypeError(`the handler failed on ${values.join(',')}`)
    }
    handled.push(...values)
  })

  await send(0, 5)
  await until('the first records handled', 30_000, () => handled.length >= 5)
  t.same(log.consumerFaults(), [], 'no fault while it consumes')

  failNext = true
  await send(5, 8)
  await until('the handler failed once', 30_000, () => failures === 1)
  await until('the crash is reported', 10_000, () => log.consumerFaults().length === 1)
  t.match(log.consumerFaults()[0], { groupId: 'never-commits', error: /the handler failed/ }, 'fault() names the crash')

  await until('the failed batch handled after the revive', 60_000, () => handled.includes(7))
  await send(8, 10)
  await until('new records after the revive', 30_000, () => handled.includes(9))
  t.same(handled, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 'every record handled exactly once: no re-read from the beginning, nothing skipped')
  t.same(log.consumerFaults(), [], 'the fault clears once the group is joined again')
  const committed = await log.admin.fetchOffsets({ groupId: log.physicalGroup('never-commits'), topics: [log.physicalTopic('ticks')] })
  t.equal(committed[0]!.partitions[0]!.offset, '-1', 'the group still has no committed offset')
})
