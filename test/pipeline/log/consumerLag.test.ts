/**
 * EventLog.consumerLag() on both logs: a running consumer's lag is end offset − position summed over partitions, a
 * batch in flight is not consumed yet, a committed group restarts at its commit (not at 0), and a stopped consumer
 * is no longer reported.
 */
import t from 'tap'
import type { ConsumedBatch, ConsumerLag, EventLog } from '../../../pipeline/log/EventLog.ts'
import { forEachLog } from '../../helpers/logs.ts'

const TOPIC = 'lag.test'

async function produce(log: EventLog, n: number, from = 0): Promise<void> {
  const producer = await log.createProducer()
  await producer.send(TOPIC, Array.from({ length: n }, (_, i) => ({ key: `k${from + i}`, value: Buffer.from(String(from + i)), timestamp: 1_000 + from + i })))
  await producer.close()
}

const lagOf = (rows: ConsumerLag[], groupId: string) => rows.filter((r) => r.groupId === groupId && r.topic === TOPIC).reduce((a, r) => a + r.lag, 0)
const rowsOf = (rows: ConsumerLag[], groupId: string) => rows.filter((r) => r.groupId === groupId)

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

t.test('consumer lag = end offset − position, per group and topic', async (t) => {
  await forEachLog(t, async (t, makeLog) => {
    const log = await makeLog()
    await log.ensureTopics([{ name: TOPIC, partitions: 2 }])
    await produce(log, 10)
    const ends = await log.endOffsets(TOPIC)
    const total = ends.reduce((a, e) => a + e, 0)
    t.ok(ends.every((e) => e > 0), 'both partitions hold records')

    // A consumer whose handler holds the first batch: nothing is consumed while it is in flight.
    const consumer = await log.createConsumer({ groupId: 'lag-a', topics: [TOPIC], fromBeginning: true })
    t.same(rowsOf(await log.consumerLag(), 'lag-a'), [], 'not positioned yet: not reported')
    let release: () => void = () => {}
    const held = new Promise<void>((r) => (release = r))
    let first = true
    const handled: ConsumedBatch[] = []
    await consumer.run(async (batch) => {
      if (first) {
        first = false
        await held
      }
      handled.push(batch)
      await consumer.commit(batch.topic, batch.partition, batch.records.at(-1)!.offset + 1)
    })
    await until(async () => rowsOf(await log.consumerLag(), 'lag-a').length > 0, 'the consumer to be positioned')
    t.equal(lagOf(await log.consumerLag(), 'lag-a'), total, 'positioned at the beginning, a batch in flight: the whole topic is lag')
    release()
    await until(async () => lagOf(await log.consumerLag(), 'lag-a') === 0, 'lag 0 after the batches are handled')
    t.equal(handled.reduce((a, b) => a + b.records.length, 0), 10)

    await produce(log, 5, 10)
    await until(async () => lagOf(await log.consumerLag(), 'lag-a') === 0, 'the new records consumed')
    await consumer.stop()
    t.same(rowsOf(await log.consumerLag(), 'lag-a'), [], 'a stopped consumer is not reported')

    // The group restarts at its commit: new records only are lag, not the whole topic.
    await produce(log, 3, 15)
    const again = await log.createConsumer({ groupId: 'lag-a', topics: [TOPIC], fromBeginning: true })
    let hold: () => void = () => {}
    const gate = new Promise<void>((r) => (hold = r))
    await again.run(async (batch) => {
      await gate
      await again.commit(batch.topic, batch.partition, batch.records.at(-1)!.offset + 1)
    })
    await until(async () => rowsOf(await log.consumerLag(), 'lag-a').length > 0, 'the restarted consumer to be positioned')
    t.equal(lagOf(await log.consumerLag(), 'lag-a'), 3, 'lag counts only what arrived after the commit')
    hold()
    await until(async () => lagOf(await log.consumerLag(), 'lag-a') === 0, 'caught up again')
    await again.stop()
  })
})
