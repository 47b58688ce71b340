/**
 * End-to-end backbone throughput: tape → event log → Parquet sink (sealed and committed), ticks per second, on
 * each log. Printed beside each log's raw produce+consume speed (bench/logs.ts) measured in the same run, so the
 * ratio says what the pipeline costs on top of the log itself.
 */
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SyntheticMarket } from '../ingest/SyntheticMarket.ts'
import { TapeWriter } from '../ingest/TapeWriter.ts'
import { EmbeddedLog } from '../pipeline/log/EmbeddedLog.ts'
import type { EventLog } from '../pipeline/log/EventLog.ts'
import { KafkaLog } from '../pipeline/log/KafkaLog.ts'
import { Pipeline } from '../pipeline/Pipeline.ts'
import { CANONICAL_ASSETS } from '../common/schema.ts'

export interface PipelineBenchResult {
  log: 'embedded' | 'kafka'
  records: number
  seconds: number
  ticksPerSec: number
}

export async function benchPipeline(options: { hours?: number; kafkaBrokers?: string[] | null; print?: (line: string) => void }): Promise<PipelineBenchResult[]> {
  const print = options.print ?? ((line: string) => process.stdout.write(line + '\n'))
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-pipeline-'))
  try {
    const tape = join(dir, 'bench.ndjson')
    const writer = TapeWriter.open(tape)
    const records = await new SyntheticMarket({ seed: 3, hours: options.hours ?? 72, assets: [...CANONICAL_ASSETS] }).writeTo(writer)
    await writer.close()
    const results: PipelineBenchResult[] = []
    const logs: Array<['embedded' | 'kafka', (dataDir: string) => Promise<EventLog>]> = [['embedded', (d) => EmbeddedLog.open(join(d, 'log'))]]
    if (options.kafkaBrokers) {
      const brokers = options.kafkaBrokers
      logs.push(['kafka', () => KafkaLog.connect({ brokers, clientId: 'svc-bench', topicPrefix: `b${randomBytes(4).toString('hex')}.` })])
    }
    for (const [kind, open] of logs) {
      const dataDir = join(dir, kind)
      const eventLog = await open(dataDir)
      const pipeline = await Pipeline.start({ dataDir, log: eventLog })
      const started = process.hrtime.bigint()
      const result = await pipeline.replay({ tape, speed: 0 })
      await pipeline.drain()
      const seconds = Number(process.hrtime.bigint() - started) / 1e9
      await pipeline.close()
      await eventLog.close()
      if (result.produced !== records) throw new Error(`bench: produced ${result.produced} of ${records}`)
      const r = { log: kind, records, seconds, ticksPerSec: records / seconds }
      results.push(r)
      print(`pipeline ${kind.padEnd(8)} tape→log→parquet: ${Math.round(r.ticksPerSec).toLocaleString('en-US')} ticks/s (${records} ticks in ${seconds.toFixed(2)} s)`)
    }
    return results
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}
