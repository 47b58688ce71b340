/**
 * An atomic unit in a broker outage (pipeline/log/KafkaUnitWriter.ts, issue 31): kafkajs waits an outage out without
 * end, which held a paid call 37 s. A unit the broker has not taken within UNIT_DEADLINE_MS is refused with the typed,
 * retryable LOG_UNAVAILABLE, and it must never become visible, not even once the broker is back (the paid call it
 * carried was answered "nothing charged"). The writer goes on with new units after the return.
 *
 * Runs its own broker (test/helpers/broker.ts): stopping the shared one would fail the other test files.
 */
import t from 'tap'
import { KafkaLog } from '../../../pipeline/log/KafkaLog.ts'
import { LogError } from '../../../pipeline/log/LogError.ts'
import { UNIT_DEADLINE_MS } from '../../../pipeline/log/KafkaUnitWriter.ts'
import { ownBroker, ownBrokerSkip } from '../../helpers/broker.ts'
import { readAll } from '../../helpers/logs.ts'

const skip = ownBrokerSkip(t)

t.test('a unit the broker does not take in time is refused typed and never written', { skip, timeout: 300_000 }, async (t) => {
  const broker = await ownBroker(t)
  const log = await KafkaLog.connect({ brokers: broker.brokers.split(','), clientId: 'svc-test', topicPrefix: 'deadline.', sessionTimeoutMs: 6_000 })
  t.teardown(() => log.close())
  await log.ensureTopics([{ name: 'decisions', partitions: 1 }, { name: 'draws', partitions: 1 }])
  const producer = await log.createProducer()
  t.teardown(() => producer.close())
  const unit = (id: string) => [
    { topic: 'decisions', records: [{ key: id, value: Buffer.from(JSON.stringify({ id })), timestamp: 1_700_000_000_000 }] },
    { topic: 'draws', records: [{ key: id, value: Buffer.from(JSON.stringify({ id, debit: 1 })), timestamp: 1_700_000_000_000 }] },
  ]
  await producer.sendAtomic(unit('before'))

  await broker.stop()
  const t0 = performance.now()
  const refused = await producer.sendAtomic(unit('in-the-outage')).then(
    () => null,
    (err: unknown) => err,
  )
  const ms = performance.now() - t0
  t.ok(refused instanceof LogError, 'refused with a LogError')
  t.match(refused, { code: 'LOG_UNAVAILABLE', retryable: true })
  t.ok(ms >= UNIT_DEADLINE_MS - 100 && ms < UNIT_DEADLINE_MS + 2_000, `at its deadline (${Math.round(ms)} ms, deadline ${UNIT_DEADLINE_MS} ms)`)

  await broker.start()
  await producer.sendAtomic(unit('after'))
  for (const topic of ['decisions', 'draws']) {
    // A commit returns once the coordinator logged it; the markers reach the partitions a moment later (longer right
    // after a broker restart: CI once read 'before' alone), and only then may a read_committed reader see 'after'.
    // So read until 'after' is there (bounded), then check nothing else is.
    let keys: Array<string | null> = []
    const deadline = Date.now() + 60_000
    do keys = (await readAll(log, topic)).map((r) => r.key)
    while (!keys.includes('after') && Date.now() < deadline)
    t.same(keys, ['before', 'after'], `${topic}: the refused unit never became visible, the next one did`)
  }
})
