/**
 * Raw speed of each event log alone: produce N records of ~300 bytes in sends of 500 (each send awaited, i.e.
 * durable: embedded fsynced, Kafka acks=-1), then consume them all with a fresh group (no processing).
 * Baseline in the same run: plain append + fdatasync of the same bytes per 500-record batch on the same disk.
 *
 *   npx tsx bench/logs.ts [--records N]      (starts a throwaway broker unless KAFKA_BROKERS is set;
 *                                             SVC_SKIP_KAFKA=1 benches the embedded log only)
 * bench/index.ts calls benchLogs().
 */
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtemp, open, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { EmbeddedLog } from '../pipeline/log/EmbeddedLog.ts'
import type { EventLog, LogRecord } from '../pipeline/log/EventLog.ts'
import { KafkaLog } from '../pipeline/log/KafkaLog.ts'

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('../', import.meta.url))
const BATCH = 500
const PARTITIONS = 3

export interface LogBenchResult {
  name: string
  records: number
  produceRecordsPerSec: number
  consumeRecordsPerSec: number | null
}

export interface LogBenchOptions {
  records?: number
  /** Broker list; when absent a broker is started for the run (unless skipKafka). */
  kafkaBrokers?: string[]
  skipKafka?: boolean
  print?: (line: string) => void
}

function makeRecords(n: number): LogRecord[] {
  const filler = randomBytes(200).toString('base64').slice(0, 240)
  return Array.from({ length: n }, (_, i) => ({
    key: `asset-${i % 16}`,
    value: Buffer.from(JSON.stringify({ seq: i, ts: 1_700_000_000_000 + i, payload: filler })),
    timestamp: 1_700_000_000_000 + i,
  }))
}

async function benchOne(name: string, log: EventLog, records: LogRecord[]): Promise<LogBenchResult> {
  const topic = `bench-${randomBytes(4).toString('hex')}`
  await log.ensureTopics([{ name: topic, partitions: PARTITIONS }])
  const producer = await log.createProducer()
  await producer.send(topic, records.slice(0, 1)) // warm-up (connections, first segment)
  const t0 = performance.now()
  for (let i = 1; i < records.length; i += BATCH) await producer.send(topic, records.slice(i, i + BATCH))
  const produceMs = performance.now() - t0
  await producer.close()

  const consumer = await log.createConsumer({ groupId: `bench-${randomBytes(4).toString('hex')}`, topics: [topic] })
  let seen = 0
  let done: () => void = () => {}
  const finished = new Promise<void>((r) => (done = r))
  const t1 = performance.now()
  await consumer.run(async (batch) => {
    seen += batch.records.length
    if (seen >= records.length) done()
  })
  await finished
  const consumeMs = performance.now() - t1
  await consumer.stop()
  return {
    name,
    records: records.length,
    produceRecordsPerSec: Math.round(((records.length - 1) / produceMs) * 1000),
    consumeRecordsPerSec: Math.round((records.length / consumeMs) * 1000),
  }
}

async function benchBaseline(dir: string, records: LogRecord[]): Promise<LogBenchResult> {
  const fh = await open(join(dir, 'baseline.bin'), 'w')
  const t0 = performance.now()
  for (let i = 0; i < records.length; i += BATCH) {
    await fh.write(Buffer.concat(records.slice(i, i + BATCH).map((r) => r.value)))
    await fh.datasync()
  }
  const ms = performance.now() - t0
  await fh.close()
  return { name: 'baseline: append+fdatasync per 500', records: records.length, produceRecordsPerSec: Math.round((records.length / ms) * 1000), consumeRecordsPerSec: null }
}

async function startBroker(stateDir: string): Promise<string[]> {
  await run('bash', [join(ROOT, 'scripts/kafka-broker.sh'), 'fetch'], { cwd: ROOT })
  const { stdout } = await run('bash', [join(ROOT, 'scripts/kafka-broker.sh'), 'start', stateDir], { cwd: ROOT, timeout: 180_000 })
  const line = /^KAFKA_BROKERS=(.+)$/m.exec(stdout)
  if (!line) throw new Error(`kafka-broker.sh start printed no KAFKA_BROKERS: ${stdout}`)
  return line[1]!.split(',')
}

export async function benchLogs(options: LogBenchOptions = {}): Promise<LogBenchResult[]> {
  const n = options.records ?? 100_000
  const print = options.print ?? ((line: string) => process.stdout.write(line + '\n'))
  const records = makeRecords(n)
  const results: LogBenchResult[] = []
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-logs-'))
  const report = (r: LogBenchResult): void => {
    results.push(r)
    const consume = r.consumeRecordsPerSec === null ? '' : `, consume ${r.consumeRecordsPerSec.toLocaleString('en-US')} records/s`
    print(`logs  ${r.name.padEnd(36)} produce ${r.produceRecordsPerSec.toLocaleString('en-US')} records/s${consume}  (${r.records.toLocaleString('en-US')} × ~${records[0]!.value.length} B, sends of ${BATCH})`)
  }
  let stateDir: string | null = null
  try {
    report(await benchBaseline(dir, records))
    const embedded = await EmbeddedLog.open(join(dir, 'log'))
    try {
      report(await benchOne('embedded', embedded, records))
    } finally {
      await embedded.close()
    }
    if (!options.skipKafka) {
      let brokers = options.kafkaBrokers
      if (!brokers) {
        stateDir = await mkdtemp(join(tmpdir(), 'svc-bench-kafka-'))
        brokers = await startBroker(stateDir)
      }
      const kafka = await KafkaLog.connect({ brokers, clientId: 'svc-bench', topicPrefix: `bench${randomBytes(3).toString('hex')}.` })
      try {
        report(await benchOne('kafka (1 broker, acks=-1, idempotent)', kafka, records))
      } finally {
        await kafka.close()
      }
    }
  } finally {
    if (stateDir) {
      await run('bash', [join(ROOT, 'scripts/kafka-broker.sh'), 'purge', stateDir], { cwd: ROOT }).catch(() => {})
      await rm(stateDir, { recursive: true, force: true })
    }
    await rm(dir, { recursive: true, force: true })
  }
  return results
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const i = process.argv.indexOf('--records')
  const records = i > 0 ? Number(process.argv[i + 1]) : undefined
  const brokers = process.env.KAFKA_BROKERS?.trim()
  await benchLogs({
    ...(records ? { records } : {}),
    ...(brokers ? { kafkaBrokers: brokers.split(',').map((b) => b.trim()) } : {}),
    skipKafka: process.env.SVC_SKIP_KAFKA === '1',
  })
}
