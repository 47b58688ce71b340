/**
 * Kafka topics are the system of record and must never expire records. Record timestamps are event times, which
 * for a replayed tape can be months old; under the broker's default 7-day retention.ms such records were deleted at
 * the next retention check, dropping ranges below committed offsets (found by the SIGKILL pipeline test under a
 * long-lived broker). The test broker checks retention every second (scripts/kafka-broker.sh), but Kafka runs its
 * first check 30 s after start, so on a just-started broker the survival half can pass vacuously: the topic-config
 * assertions are the guard that always bites (verified both ways against a broker older than 30 s).
 */
import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { Kafka } from 'kafkajs'
import { kafkaBrokers, kafkaSkip, makeKafkaFactory } from '../../helpers/logs.ts'
import { topicNames, topicSpecs } from '../../../pipeline/topics.ts'

const skip = kafkaSkip(t)

t.test('records with year-old event timestamps survive retention checks', { skip }, async (t) => {
  const { makeLog, prefix } = makeKafkaFactory(t)
  const log = await makeLog()
  await log.ensureTopics([{ name: 'old.events', partitions: 1 }])
  const admin = new Kafka({ brokers: kafkaBrokers()!, logLevel: 0 }).admin()
  await admin.connect()
  t.teardown(() => admin.disconnect())

  const described = await admin.describeConfigs({ resources: [{ type: 2, name: `${prefix}old.events`, configNames: ['retention.ms', 'retention.bytes'] }], includeSynonyms: false })
  const entries = Object.fromEntries(described.resources[0]!.configEntries.map((e) => [e.configName, e.configValue]))
  t.equal(entries['retention.ms'], '-1', 'no time retention')
  t.equal(entries['retention.bytes'], '-1', 'no size retention')

  const producer = await log.createProducer()
  const yearAgo = Date.now() - 365 * 86_400_000
  for (let batch = 0; batch < 5; batch++) {
    await producer.send('old.events', Array.from({ length: 200 }, (_, i) => ({ key: 'k', value: Buffer.from(`r${batch}-${i}`), timestamp: yearAgo + batch * 1000 + i })))
  }
  await producer.close()
  await sleep(3_500) // several retention checks at the test broker's 1 s interval
  const [offsets] = await admin.fetchTopicOffsets(`${prefix}old.events`)
  t.equal(offsets!.low, '0', 'nothing was deleted from the start of the log')
  t.equal(offsets!.high, '1000', 'every record is still there')
})

/**
 * Issue 31 item 3: the ticks topic the service creates carries retention (the longest feature window + margin) judged
 * by append time, and every journal stays whole (docs/decisions.md: no journal is compacted).
 */
t.test('the service-created ticks topic has retention by append time; journals keep everything', { skip }, async (t) => {
  const { makeLog, prefix } = makeKafkaFactory(t)
  const log = await makeLog()
  const names = topicNames()
  const retentionMs = 37 * 86_400_000
  await log.ensureTopics(topicSpecs(names, 1, { ticksRetentionMs: retentionMs }))
  const admin = new Kafka({ brokers: kafkaBrokers()!, logLevel: 0 }).admin()
  await admin.connect()
  t.teardown(() => admin.disconnect())
  const configNames = ['retention.ms', 'retention.bytes', 'cleanup.policy', 'message.timestamp.type']
  const described = await admin.describeConfigs({
    resources: Object.values(names).map((name) => ({ type: 2, name: `${prefix}${name}`, configNames })),
    includeSynonyms: false,
  })
  const byTopic = new Map(described.resources.map((r) => [r.resourceName.slice(prefix.length), Object.fromEntries(r.configEntries.map((e) => [e.configName, e.configValue]))]))
  t.same(byTopic.get(names.ticks), { 'retention.ms': String(retentionMs), 'retention.bytes': '-1', 'cleanup.policy': 'delete', 'message.timestamp.type': 'LogAppendTime' }, 'ticks: retention by append time')
  for (const name of Object.values(names).filter((n) => n !== names.ticks)) {
    t.same(byTopic.get(name), { 'retention.ms': '-1', 'retention.bytes': '-1', 'cleanup.policy': 'delete', 'message.timestamp.type': 'CreateTime' }, `${name}: whole, never compacted`)
  }

  // Ticks of a year-old history appended now are kept: age is counted from the append.
  const producer = await log.createProducer()
  const yearAgo = Date.now() - 365 * 86_400_000
  await producer.send(names.ticks, Array.from({ length: 300 }, (_, i) => ({ key: 'BTC', value: Buffer.from(`t${i}`), timestamp: yearAgo + i })))
  await producer.close()
  await sleep(3_500)
  const [offsets] = await admin.fetchTopicOffsets(`${prefix}${names.ticks}`)
  t.equal(offsets!.low, '0', 'no old-event-time tick was deleted')
  t.equal(offsets!.high, '300')
})
