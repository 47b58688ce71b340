/**
 * A second broker added to a cluster (scripts/kafka-broker.sh add; README "Several instances": how to add a broker):
 * the cluster then has two brokers, a topic the service creates with KAFKA_REPLICATION_FACTOR=2 has a replica on each,
 * and records written through the two-broker list are read back.
 */
import t from 'tap'
import { KafkaLog } from '../../../pipeline/log/KafkaLog.ts'
import { ownBroker, ownBrokerSkip } from '../../helpers/broker.ts'
import { readAll } from '../../helpers/logs.ts'

const skip = ownBrokerSkip(t)

t.test('add a broker: two brokers, replicas on both, records read back through the list', { skip, timeout: 300_000 }, async (t) => {
  const first = await ownBroker(t)
  const brokers = await first.add(t)
  const list = brokers.split(',')
  t.equal(list.length, 2, `KAFKA_BROKERS names both (${brokers})`)
  t.equal(list[0], first.brokers, 'the first broker first')

  const log = await KafkaLog.connect({ brokers: list, clientId: 'svc-test-two', topicPrefix: 'two.', replicationFactor: 2 })
  t.teardown(() => log.close())
  const cluster = await log.admin.describeCluster()
  t.equal(cluster.brokers.length, 2, 'the cluster has two brokers')
  await log.ensureTopics([{ name: 'ticks', partitions: 3 }])
  const { topics } = await log.admin.fetchTopicMetadata({ topics: ['two.ticks'] })
  t.ok(topics[0]!.partitions.every((p) => p.replicas.length === 2), 'every partition has a replica on each broker')

  const producer = await log.createProducer()
  await producer.send('ticks', ['BTC', 'ETH', 'SOL'].map((key, i) => ({ key, value: Buffer.from(String(i)), timestamp: 1_700_000_000_000 + i })))
  await producer.close()
  t.same((await readAll(log, 'ticks')).map((r) => r.value.toString()).sort(), ['0', '1', '2'], 'records written through the list are read back')
})
