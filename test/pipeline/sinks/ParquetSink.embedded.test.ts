/** The sink end to end on the real embedded log: produce ticks, consume them into Parquet, commit, replay. */
import t from 'tap'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { ParquetSink } from '../../../pipeline/sinks/ParquetSink.ts'
import { ticksTable } from '../../../pipeline/sinks/ticksTable.ts'
import { encodeTickEnvelope } from '../../../pipeline/TickEnvelope.ts'
import { tickKey, tickTime, type Tick } from '../../../ingest/Tick.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { PARTITIONS, TOPIC, makeTicks } from './fixtures.ts'
import { queryParquet, ticksGlob } from './readParquet.ts'

async function until(what: string, ok: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

function toLogRecords(ticks: Tick[], firstSeq: number) {
  return ticks.map((tick, i) => ({ key: tickKey(tick), value: encodeTickEnvelope({ seq: firstSeq + i, tape: 'fixture', tick }), timestamp: tickTime(tick) }))
}

t.test('embedded log → sink → Parquet: every record once, offsets committed after sealing, replay adds no duplicates', async (t) => {
  const logDir = await makeTempDir(t)
  const dataDir = await makeTempDir(t)
  const log = await EmbeddedLog.open(logDir, { maxBatchRecords: 40 })
  t.teardown(() => log.close())
  await log.ensureTopics([{ name: TOPIC, partitions: PARTITIONS }])
  const all = makeTicks(130)
  const first = all.slice(0, 310)
  const producer = await log.createProducer()
  await producer.send(TOPIC, toLogRecords(first, 1))

  const sink = await ParquetSink.open({ dataDir, tables: [ticksTable(TOPIC)], maxRows: 25 })
  await sink.run(await log.createConsumer({ groupId: 'parquet-sink', topics: [TOPIC] }))
  await until('the first ticks', () => sink.stats().received === first.length)
  await sink.close()

  const rows = async () => (await queryParquet(`SELECT count(*) AS n, count(DISTINCT (log_partition, log_offset)) AS d FROM ${ticksGlob(dataDir)}`))[0]
  t.same(await rows(), { n: String(first.length), d: String(first.length) })
  const ends = await log.endOffsets(TOPIC)
  for (let p = 0; p < PARTITIONS; p++) {
    t.equal(await log.committedOffset('parquet-sink', TOPIC, p), ends[p], `partition ${p} committed to its end`)
  }

  // More ticks arrive; a new consumer group replays the whole log from the beginning into the same data dir.
  await producer.send(TOPIC, toLogRecords(all.slice(310), 311))
  await producer.close()
  const replay = await ParquetSink.open({ dataDir, tables: [ticksTable(TOPIC)], maxRows: 25 })
  await replay.run(await log.createConsumer({ groupId: 'replay', topics: [TOPIC], fromBeginning: true }))
  await until('the replay', () => replay.stats().received === all.length)
  await replay.close()
  t.match(replay.stats(), { skipped: first.length, rowsWritten: all.length - first.length })
  t.same(await rows(), { n: String(all.length), d: String(all.length) }, 'old records skipped, new ones written once')
  const seq = await queryParquet(`SELECT min(tape_seq) AS lo, max(tape_seq) AS hi, count(DISTINCT tape_seq) AS n FROM ${ticksGlob(dataDir)}`)
  t.same(seq, [{ lo: '1', hi: String(all.length), n: String(all.length) }], 'every tape line exactly once')
})
