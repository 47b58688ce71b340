/**
 * KafkaLog's atomic units on a real broker (pipeline/log/KafkaLog.ts, KafkaUnitWriter.ts, KafkaTail.ts): records of
 * a transaction that never committed are never read; a restart with the same instanceId aborts a dead instance's open
 * transaction at once and fences a live one; markers do not move endOffsets past the last readable record.
 */
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { Kafka, logLevel } from 'kafkajs'
import { partitionForKey } from '../../../common/murmur2.ts'
import type { ConsumedRecord, EventLog, TopicRecords } from '../../../pipeline/log/EventLog.ts'
import { KafkaLog } from '../../../pipeline/log/KafkaLog.ts'
import { consume, kafkaBrokers, kafkaSkip, makeKafkaFactory } from '../../helpers/logs.ts'

const FIXTURES = fileURLToPath(new URL('../../fixtures/', import.meta.url))
const REPO = fileURLToPath(new URL('../../../', import.meta.url))
const DRAWS = 'billing.draws'
const DECISIONS = 'decisions'

const skip = kafkaSkip(t)

function unitOf(r: { value: Buffer | null }): string {
  return (JSON.parse(r.value!.toString('utf8')) as { unit: string }).unit
}

function paidUnit(unit: string, account: string, asset: string, decisionBytes = 0): TopicRecords[] {
  const rec = (key: string, part: string, pad = 0) => ({ key, value: Buffer.from(JSON.stringify({ unit, part, pad: 'x'.repeat(pad) })), timestamp: 1_700_000_000_000 })
  return [
    { topic: DRAWS, records: [rec(account, 'debit'), rec(account, 'receipt')] },
    { topic: DECISIONS, records: [rec(asset, 'decision', decisionBytes)] },
  ]
}

async function ensurePaidTopics(log: EventLog): Promise<void> {
  await log.ensureTopics([
    { name: DRAWS, partitions: 3 },
    { name: DECISIONS, partitions: 3 },
  ])
}

/** Everything physically in the topics, aborted and open transactions included (a read_uncommitted kafkajs consumer). */
async function readUncommitted(physicalTopics: string[], until: (units: string[]) => boolean, timeoutMs = 30_000): Promise<string[]> {
  const kafka = new Kafka({ brokers: kafkaBrokers()!, logLevel: logLevel.NOTHING })
  const consumer = kafka.consumer({ groupId: `uncommitted-${Math.random().toString(36).slice(2)}`, readUncommitted: true, maxWaitTimeInMs: 200 })
  const units: string[] = []
  let done: () => void = () => {}
  const finished = new Promise<void>((resolve) => (done = resolve))
  try {
    await consumer.connect()
    await consumer.subscribe({ topics: physicalTopics, fromBeginning: true })
    await consumer.run({
      eachMessage: async ({ message }) => {
        units.push(unitOf(message))
        if (until(units)) done()
      },
    })
    let timer: NodeJS.Timeout | undefined
    await Promise.race([finished, new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))])
    clearTimeout(timer)
  } finally {
    await consumer.disconnect()
  }
  return units
}

const count = (units: string[], unit: string) => units.filter((u) => u === unit).length

t.test('an instance killed mid-transaction: its records are never read, and its restart aborts the transaction at once', { skip }, async (t) => {
  const { makeLog, prefix } = makeKafkaFactory(t)
  const log = await makeLog()
  await ensurePaidTopics(log)
  const producer = await log.createProducer()
  await producer.send(DRAWS, [{ key: 'acct-1', value: Buffer.from(JSON.stringify({ unit: 'before', part: 'plain' })), timestamp: 1 }])

  const child = spawn(process.execPath, ['--import', 'tsx', join(FIXTURES, 'kafka-open-transaction.ts'), kafkaBrokers()!.join(','), 'svc-test', prefix, 'acct-1'], {
    cwd: REPO,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  await new Promise<void>((resolve, reject) => {
    child.on('exit', (code, signal) => reject(new Error(`fixture exited early (${code ?? signal}): ${stderr}`)))
    createInterface({ input: child.stdout }).on('line', (line) => line === 'sent' && resolve())
  })
  child.kill('SIGKILL')
  await exited

  const physical = [`${prefix}${DRAWS}`, `${prefix}${DECISIONS}`]
  const onDisk = await readUncommitted(physical, (units) => count(units, 'doomed') >= 2)
  t.equal(count(onDisk, 'doomed'), 2, "the dead instance's records are in the partition, in a transaction left open")
  t.same(await log.endOffsets(DRAWS), [0, 0, 0].map((_, p) => (p === partitionForKey('acct-1', 3) ? 1 : 0)), 'endOffsets stop at the last readable record, before the open transaction')

  // The same instance restarted: its first unit initialises the same transactional id, which aborts the open
  // transaction, so the unit (on the same key, behind the open one) becomes readable at once rather than after the
  // broker's 60 s transaction timeout.
  await producer.sendAtomic(paidUnit('after', 'acct-1', 'BTC'))
  const read = await consume(log, { groupId: 'after-restart', topics: [DRAWS, DECISIONS], until: (rs) => rs.filter((r) => unitOf(r) === 'after').length === 3, timeoutMs: 30_000 })
  t.same(read.map(unitOf).sort(), ['after', 'after', 'after', 'before'], 'a read_committed consumer reads the plain record and the new unit, never the dead transaction')
  const again = await readUncommitted(physical, (units) => count(units, 'after') >= 3)
  t.equal(count(again, 'doomed'), 2, 'the aborted records are still in the log (aborted, not deleted)')
  await producer.close()
})

t.test('a restarted instance fences the old one: its atomic appends fail with LOG_FENCED, other instances are unaffected', { skip }, async (t) => {
  const { makeLog, prefix } = makeKafkaFactory(t)
  const old = await makeLog()
  await ensurePaidTopics(old)
  const oldProducer = await old.createProducer()
  await oldProducer.sendAtomic(paidUnit('old-1', 'acct-1', 'BTC'))

  const restarted = await makeLog() // same clientId and prefix: same instanceId, same transactional id
  t.equal((restarted as KafkaLog).transactionalId, (old as KafkaLog).transactionalId)
  const producer = await restarted.createProducer()
  await producer.sendAtomic(paidUnit('new-1', 'acct-1', 'BTC'))
  await t.rejects(oldProducer.sendAtomic(paidUnit('old-2', 'acct-1', 'BTC')), { code: 'LOG_FENCED' }, 'the old instance is fenced')
  await t.rejects(oldProducer.sendAtomic(paidUnit('old-3', 'acct-1', 'BTC')), { code: 'LOG_FENCED' }, 'and stays fenced')
  await oldProducer.send(DRAWS, [{ key: 'acct-1', value: Buffer.from(JSON.stringify({ unit: 'old-plain' })), timestamp: 1 }])
  t.pass('plain sends of the fenced instance still work (they are not transactional)')

  const other = await KafkaLog.connect({ brokers: kafkaBrokers()!, clientId: 'svc-test', topicPrefix: prefix, instanceId: 'svc-test-2' })
  t.teardown(() => other.close())
  t.equal(other.transactionalId, `${prefix}svc-test-2.atomic`)
  const otherProducer = await other.createProducer()
  await otherProducer.sendAtomic(paidUnit('other-1', 'acct-2', 'ETH'))
  await producer.sendAtomic(paidUnit('new-2', 'acct-1', 'BTC'))
  await otherProducer.sendAtomic(paidUnit('other-2', 'acct-2', 'ETH'))
  t.pass('two instances with different instanceIds commit side by side')

  const expected = ['old-1', 'new-1', 'other-1', 'new-2', 'other-2']
  const read = await consume(restarted, { groupId: 'fenced', topics: [DRAWS, DECISIONS], until: (rs) => expected.every((u) => rs.filter((r) => unitOf(r) === u).length === 3) && rs.some((r) => unitOf(r) === 'old-plain') })
  t.same([...new Set(read.map(unitOf))].sort(), [...expected, 'old-plain'].sort(), 'the fenced units were never committed')
  t.ok(expected.every((u) => read.filter((r) => unitOf(r) === u).length === 3), 'every committed unit whole')
  await Promise.all([oldProducer.close(), producer.close(), otherProducer.close()])
})

t.test('a unit the broker refuses is aborted: nothing of it is read, its neighbours commit', { skip }, async (t) => {
  const { makeLog, prefix } = makeKafkaFactory(t)
  const log = await makeLog()
  await ensurePaidTopics(log)
  const producer = await log.createProducer()
  // 1.5 MiB in one partition: over the broker's message.max.bytes (1 MiB), under the log's own 16 MiB limit.
  const results = await Promise.allSettled([
    producer.sendAtomic(paidUnit('n1', 'acct-1', 'BTC')),
    producer.sendAtomic(paidUnit('huge', 'acct-2', 'ETH', 1536 * 1024)),
    producer.sendAtomic(paidUnit('n2', 'acct-3', 'SOL')),
  ])
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled'])
  t.match((results[1] as PromiseRejectedResult).reason, { code: 'LOG_INVALID_ARGUMENT', message: /MESSAGE_TOO_LARGE|RECORD_LIST_TOO_LARGE/ }, 'refused as a bad argument, naming the broker error')
  await producer.sendAtomic(paidUnit('n3', 'acct-2', 'ETH'))

  const onDisk = await readUncommitted([`${prefix}${DRAWS}`, `${prefix}${DECISIONS}`], (units) => count(units, 'n3') >= 3)
  t.equal(count(onDisk, 'huge'), 2, "the refused unit's debit and receipt reached the log before the abort")
  const read = await consume(log, { groupId: 'refused', topics: [DRAWS, DECISIONS], until: (rs) => ['n1', 'n2', 'n3'].every((u) => rs.filter((r) => unitOf(r) === u).length === 3) })
  t.same([...new Set(read.map(unitOf))].sort(), ['n1', 'n2', 'n3'], 'a read_committed consumer never reads the aborted records')
  t.equal(read.length, 9, 'the three committed units, whole')
})

t.test('a send the broker refuses in part does not make later sends vanish (idempotence sequences start over)', { skip }, async (t) => {
  const { makeLog } = makeKafkaFactory(t)
  const log = await makeLog()
  await log.ensureTopics([{ name: 'plain', partitions: 3 }])
  const producer = await log.createProducer()
  const small = ['acct-1', 'acct-2', 'acct-3', 'acct-4', 'acct-5']
  const other = small.find((k) => partitionForKey(k, 3) !== partitionForKey('acct-1', 3))!
  const rec = (key: string, unit: string, pad = 0) => ({ key, value: Buffer.from(JSON.stringify({ unit, pad: 'x'.repeat(pad) })), timestamp: 1 })
  await producer.send('plain', [rec('acct-1', 'first')])
  await t.rejects(producer.send('plain', [rec('acct-1', 'second'), rec(other, 'huge', 1536 * 1024)]), 'a 1.5 MiB record is refused by the broker')
  await producer.send('plain', [rec('acct-1', 'third')])
  await producer.send('plain', [rec('acct-1', 'fourth')])
  await producer.sendAtomic([{ topic: 'plain', records: [rec('acct-1', 'fifth')] }])
  const read = await consume(log, { groupId: 'after-refusal', topics: ['plain'], until: (rs) => rs.some((r) => unitOf(r) === 'fifth') })
  // 'second' shares the refused send: a plain send is not atomic, and it reached its partition.
  t.same(read.filter((r) => r.key === 'acct-1').map(unitOf), ['first', 'second', 'third', 'fourth', 'fifth'], 'every later send is in the log, in order')
  await producer.close()
})

t.test('transaction markers take offsets, yet endOffsets and lastRecords end at the last record', { skip }, async (t) => {
  const { makeLog, prefix } = makeKafkaFactory(t)
  const log = (await makeLog()) as KafkaLog
  await ensurePaidTopics(log)
  const producer = await log.createProducer()
  for (let i = 0; i < 5; i++) await producer.sendAtomic(paidUnit(`m${i}`, 'acct-1', 'BTC'))
  const p = partitionForKey('acct-1', 3)
  const read: ConsumedRecord[] = await consume(log, { groupId: 'markers', topics: [DRAWS], until: (rs) => rs.length === 10 })
  const offsets = read.filter((r) => r.partition === p).map((r) => r.offset)
  const [high] = (await log.admin.fetchTopicOffsets(`${prefix}${DRAWS}`)).filter((o) => o.partition === p).map((o) => Number(o.high))
  t.ok(offsets.some((o, i) => i > 0 && o !== offsets[i - 1]! + 1), `offsets skip the markers: ${offsets.join(',')}`)
  t.ok(high! > offsets.at(-1)! + 1, `the high watermark (${high}) is past the last record (${offsets.at(-1)}): the last entry is a marker`)
  t.equal((await log.endOffsets(DRAWS))[p], offsets.at(-1)! + 1, 'endOffsets: right after the last record')
  const last = (await log.lastRecords(DRAWS))[p]!
  t.match(last, { topic: DRAWS, partition: p, offset: offsets.at(-1), key: 'acct-1' })
  t.equal(unitOf(last), 'm4', 'lastRecords: the last record, not the marker after it')
  await producer.close()
})

t.test('instanceId is validated like the other options and names the transactional id', { skip }, async (t) => {
  await t.rejects(KafkaLog.connect({ brokers: kafkaBrokers()!, instanceId: 'not ok!' }), { code: 'LOG_CONFIG', message: /instanceId/ })
  const log = await KafkaLog.connect({ brokers: kafkaBrokers()!, clientId: 'svc-a', topicPrefix: 'tenant.' })
  t.teardown(() => log.close())
  t.equal(log.transactionalId, 'tenant.svc-a.atomic', 'default: <topicPrefix><clientId>.atomic')
})
