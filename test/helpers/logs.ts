/**
 * Run one test body over both event logs:
 *
 *   forEachLog(t, async (t, makeLog) => { const log = await makeLog(); ... })
 *
 * makeLog() opens this subtest's log: an EmbeddedLog in a fresh temp dir, or a KafkaLog on $KAFKA_BROKERS whose
 * topics and groups carry a random prefix (so subtests never see each other). Every call in one subtest opens the
 * same store (same dir / same prefix), so a body can close and reopen; every log is closed on teardown.
 *
 * Kafka: KAFKA_BROKERS is set by test/run.sh (it starts a real broker). Without it the Kafka half is skipped with a
 * message — except under CI=true, where it fails: CI must never skip the Kafka tests.
 */
import { randomBytes } from 'node:crypto'
import { EmbeddedLog, type EmbeddedLogOptions } from '../../pipeline/log/EmbeddedLog.ts'
import type { ConsumedRecord, ConsumerOptions, EventLog } from '../../pipeline/log/EventLog.ts'
import { KafkaLog } from '../../pipeline/log/KafkaLog.ts'
import type { Test, TestOpts } from 'tap'
import type { BuiltPlugins } from '@tapjs/test'
import { makeTempDir } from './tmp.ts'

/** A tap test object (what `t.test` hands its callback). */
export type TapTest = Test<BuiltPlugins, TestOpts> & BuiltPlugins

export type MakeLog = () => Promise<EventLog>
export type LogKind = EventLog['kind']

export function kafkaBrokers(): string[] | null {
  const raw = process.env.KAFKA_BROKERS?.trim()
  return raw ? raw.split(',').map((b) => b.trim()) : null
}

/**
 * The tap `skip` option of a Kafka test file: false when it may run, else why not. Under CI=true without a broker the
 * file fails here (through `t`) instead of skipping.
 */
export function kafkaSkip(t: { fail(message: string): unknown }): string | false {
  try {
    return kafkaSkipReason() ?? false
  } catch (err) {
    t.fail((err as Error).message)
    return 'CI without a broker'
  }
}

/** Null when the Kafka tests may run; otherwise why they are skipped. Throws under CI=true without a broker. */
export function kafkaSkipReason(): string | null {
  if (kafkaBrokers()) return null
  if (process.env.CI === 'true') {
    throw new Error('CI=true but KAFKA_BROKERS is unset: the Kafka tests must run in CI (start a broker with test/run.sh)')
  }
  return process.env.SVC_SKIP_KAFKA === '1'
    ? 'Kafka tests skipped: SVC_SKIP_KAFKA=1'
    : 'Kafka tests skipped: KAFKA_BROKERS is unset (run through `npm test`, which starts a broker)'
}

export async function makeEmbeddedFactory(t: TapTest, options: EmbeddedLogOptions = {}): Promise<{ makeLog: MakeLog; dir: string }> {
  const dir = await makeTempDir(t, 'svc-log-')
  const opened: EventLog[] = []
  t.teardown(async () => {
    for (const log of opened) await log.close()
  })
  return {
    dir,
    makeLog: async () => {
      const log = await EmbeddedLog.open(dir, options)
      opened.push(log)
      return log
    },
  }
}

export function makeKafkaFactory(t: TapTest): { makeLog: MakeLog; prefix: string } {
  const brokers = kafkaBrokers()
  if (!brokers) throw new Error('KAFKA_BROKERS is unset')
  const prefix = `t${randomBytes(5).toString('hex')}.`
  const opened: EventLog[] = []
  t.teardown(async () => {
    for (const log of opened) await log.close()
  })
  return {
    prefix,
    makeLog: async () => {
      const log = await KafkaLog.connect({ brokers, clientId: 'svc-test', topicPrefix: prefix })
      opened.push(log)
      return log
    },
  }
}

/** Runs `body` as two subtests, "embedded" and "kafka". */
export async function forEachLog(
  t: TapTest,
  body: (t: TapTest, makeLog: MakeLog, kind: LogKind) => Promise<void>,
  options: { embedded?: EmbeddedLogOptions } = {},
): Promise<void> {
  await t.test('embedded', async (t) => {
    const { makeLog } = await makeEmbeddedFactory(t, options.embedded)
    await body(t, makeLog, 'embedded')
  })
  let reason: string | null
  try {
    reason = kafkaSkipReason()
  } catch (err) {
    t.fail((err as Error).message)
    return
  }
  await t.test('kafka', { skip: reason ?? false }, async (t) => {
    const { makeLog } = makeKafkaFactory(t)
    await body(t, makeLog, 'kafka')
  })
}

/**
 * Consumes with a fresh consumer until `until(records)` holds (default: `count` records), then stops it.
 * Commits after every batch when `commit` is set. Rejects after `timeoutMs`.
 */
export async function consume(
  log: EventLog,
  options: ConsumerOptions & { count?: number; until?: (records: ConsumedRecord[]) => boolean; commit?: boolean; timeoutMs?: number },
): Promise<ConsumedRecord[]> {
  const { count, until, commit, timeoutMs = 60_000, ...consumerOptions } = options
  const done = until ?? ((records: ConsumedRecord[]) => records.length >= (count ?? 0))
  const consumer = await log.createConsumer(consumerOptions)
  const records: ConsumedRecord[] = []
  let finish: () => void = () => {}
  const finished = new Promise<void>((resolve) => (finish = resolve))
  await consumer.run(async (batch) => {
    records.push(...batch.records)
    if (commit) await consumer.commit(batch.topic, batch.partition, batch.records[batch.records.length - 1]!.offset + 1)
    if (done(records)) finish()
  })
  let timer: NodeJS.Timeout | undefined
  try {
    if (!done(records)) {
      await Promise.race([
        finished,
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`consume: only ${records.length} records after ${timeoutMs} ms`)), timeoutMs)
        }),
      ])
    }
  } finally {
    clearTimeout(timer)
    await consumer.stop()
  }
  return records
}

/**
 * Every record of a topic (a fresh throwaway group reading from the beginning up to the current end offsets). Done
 * when each partition's record at end - 1 has arrived, not after sum(ends) records: on Kafka, transaction markers
 * take offsets that carry no record (LogProducer.sendAtomic).
 */
export async function readAll(log: EventLog, topic: string): Promise<ConsumedRecord[]> {
  const ends = await log.endOffsets(topic)
  if (ends.every((end) => end === 0)) return []
  const highest = ends.map(() => -1)
  let looked = 0
  const reached = (records: ConsumedRecord[]) => {
    for (; looked < records.length; looked++) highest[records[looked]!.partition] = Math.max(highest[records[looked]!.partition]!, records[looked]!.offset)
    return ends.every((end, p) => highest[p]! >= end - 1)
  }
  const records = await consume(log, { groupId: `read-all-${randomBytes(6).toString('hex')}`, topics: [topic], until: reached })
  return records.filter((r) => r.offset < ends[r.partition]!).sort((a, b) => a.partition - b.partition || a.offset - b.offset)
}
