/** openEventLog: SVC_LOG / SVC_DATA_DIR / KAFKA_BROKERS, validated by JSON Schema with the field named in errors. */
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { eventLogConfig, openEventLog } from '../../../pipeline/log/openEventLog.ts'
import { kafkaBrokers, kafkaSkipReason } from '../../helpers/logs.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

t.test('defaults to the embedded log under $SVC_DATA_DIR/log', async (t) => {
  const dir = await makeTempDir(t)
  t.same(eventLogConfig({}), {
    SVC_LOG: 'embedded',
    SVC_DATA_DIR: 'data',
    KAFKA_CLIENT_ID: 'decision-intelligence-service',
    KAFKA_TOPIC_PREFIX: '',
    KAFKA_REPLICATION_FACTOR: '1',
  })
  const log = await openEventLog({ SVC_DATA_DIR: dir })
  t.teardown(() => log.close())
  t.equal(log.kind, 'embedded')
  t.ok((await stat(join(dir, 'log', 'LOCK'))).isFile(), 'log directory is $SVC_DATA_DIR/log')
})

t.test('invalid configuration names the field', async (t) => {
  t.throws(() => eventLogConfig({ SVC_LOG: 'rabbit' }), { code: 'LOG_CONFIG', message: /SVC_LOG/ })
  t.throws(() => eventLogConfig({ SVC_LOG: 'kafka' }), { code: 'LOG_CONFIG', message: /KAFKA_BROKERS/ })
  t.throws(() => eventLogConfig({ SVC_LOG: 'kafka', KAFKA_BROKERS: 'localhost' }), { code: 'LOG_CONFIG', message: /KAFKA_BROKERS/ })
  t.throws(() => eventLogConfig({ KAFKA_REPLICATION_FACTOR: '0' }), { code: 'LOG_CONFIG', message: /KAFKA_REPLICATION_FACTOR/ })
  await t.rejects(openEventLog({ SVC_LOG: 'kafka', KAFKA_BROKERS: '127.0.0.1:9092,' }), { code: 'LOG_CONFIG', message: /KAFKA_BROKERS/ })
  t.same(eventLogConfig({ SVC_LOG: 'kafka', KAFKA_BROKERS: '127.0.0.1:9092, 10.0.0.2:9093' }).KAFKA_BROKERS, '127.0.0.1:9092, 10.0.0.2:9093')
})

t.test('SVC_LOG=kafka connects to KAFKA_BROKERS', { skip: kafkaSkipReason() ?? false }, async (t) => {
  const log = await openEventLog({ SVC_LOG: 'kafka', KAFKA_BROKERS: kafkaBrokers()!.join(','), KAFKA_TOPIC_PREFIX: 'open-event-log-test.' })
  t.teardown(() => log.close())
  t.equal(log.kind, 'kafka')
  await log.ensureTopics([{ name: 'probe', partitions: 1 }])
  t.equal(await log.partitionsOf('probe'), 1)
})
