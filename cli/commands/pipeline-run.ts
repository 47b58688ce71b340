/**
 * `svc pipeline run`: replays a tape through the event log into Parquet and the DuckDB catalog, with the engine
 * (EngineRunner, the same processor `svc start` runs) deciding and resolving over it, then exits once the engine has
 * read every tick and the sink has sealed and committed the ticks, decisions and outcomes. Restarting after a crash
 * resumes without loss or duplicates (the engine re-derives the same decision ids and dedupes them).
 */
import { parseArgs } from 'node:util'
import { resolve } from 'node:path'
import { UsageError, type Command } from '../Command.ts'
import { startProgress } from '../../common/progress.ts'
import { openEventLog } from '../../pipeline/log/openEventLog.ts'
import { eventLogOf, progressOf, topicNamesOf, trainUntilOf } from '../../app/config.ts'
import { EngineRunner } from '../../engine/EngineRunner.ts'
import { ReleaseStore } from '../../record/releases/ReleaseStore.ts'
import { openReleaseWiring } from '../../app/releaseWiring.ts'
import { environment } from '../environment.ts'
import { Pipeline } from '../../pipeline/Pipeline.ts'
import { Catalog } from '../../sql/Catalog.ts'

const usage = `Usage: svc pipeline run --tape TAPE [--speed S] [--data-dir DIR] [--log embedded|kafka] [--partitions N]

Replays TAPE into the ticks topic while the engine decides and resolves over it with the data folder's active
release (as \`svc start\` does: with none, the bootstrap release is built at the SVC_TRAIN_DAYS / SVC_TRAIN_UNTIL cut), sinks every topic (ticks, decisions, outcomes) to Parquet under DIR/parquet,
applies the sql/ views to DIR/catalog.duckdb, and exits when the engine has read every tick and the sink has
committed the whole log. Safe to rerun after a crash.

Options:
  --tape TAPE        tape file (NDJSON, optionally gzip)
  --speed S          event time per wall time: 0 as fast as possible (default), 1 real time, 60 a minute per second
  --data-dir DIR     data folder (default $SVC_DATA_DIR or ./data)
  --log KIND         embedded (default, or $SVC_LOG) or kafka (needs KAFKA_BROKERS)
  --partitions N     partitions per topic when creating topics (default $SVC_PARTITIONS or 3)
`

/** The engine folds ticks slower than the log takes them; a long tape may need minutes after the replay ends. */
const ENGINE_CATCH_UP_MS = 60 * 60_000

export const command: Command = {
  name: 'pipeline run',
  summary: 'Replay a tape through the event log into Parquet + DuckDB, then exit',
  usage,
  async run(argv) {
    const { values } = parseArgs({
      args: argv,
      options: {
        tape: { type: 'string' },
        speed: { type: 'string', default: '0' },
        'data-dir': { type: 'string' },
        log: { type: 'string' },
        partitions: { type: 'string' },
      },
      strict: true,
    })
    if (!values.tape) throw new UsageError('--tape is required')
    const speed = Number(values.speed)
    if (!Number.isFinite(speed) || speed < 0) throw new UsageError(`--speed must be a number >= 0, got '${values.speed}'`)
    const partitions = values.partitions ? Number(values.partitions) : undefined
    if (partitions !== undefined && !(Number.isInteger(partitions) && partitions > 0)) throw new UsageError('--partitions must be a positive integer')
    const config = environment({ SVC_DATA_DIR: values['data-dir'], SVC_LOG: values.log, SVC_PARTITIONS: values.partitions })
    const dataDir = resolve(config.SVC_DATA_DIR)

    await Catalog.apply(dataDir)
    const eventLog = await openEventLog(eventLogOf(config))
    const names = topicNamesOf(config)
    const topicPartitions = partitions ?? config.SVC_PARTITIONS
    const pipeline = await Pipeline.start({ dataDir, log: eventLog, names, partitions: topicPartitions })
    // The engine answers with the data folder's active release (or builds the bootstrap release at the cut), as in svc start.
    const releases = await ReleaseStore.open(dataDir)
    const served = await openReleaseWiring({ releases, eventLog, ticksTopic: names.ticks, config, say: (line) => void process.stderr.write(line + '\n') })
    const runner = await EngineRunner.start({
      log: eventLog, dataDir, names, partitions: topicPartitions, trainDays: config.SVC_TRAIN_DAYS, trainUntil: trainUntilOf(config), ...served.engineOptions(),
    })
    await served.attach(runner)
    const abort = new AbortController()
    const onSignal = () => abort.abort()
    process.once('SIGINT', onSignal)
    process.once('SIGTERM', onSignal)
    const progress = startProgress('pipeline run', 0, 'records', progressOf(config))
    try {
      const result = await pipeline.replay({
        tape: resolve(values.tape),
        speed,
        signal: abort.signal,
        onProgress: (p) => progress.update(p.emitted),
      })
      progress.stop()
      if (!result.aborted) {
        // The engine reads the whole tape before the ledger topics are drained, so their sink sees every row.
        await runner.waitForTicks(ENGINE_CATCH_UP_MS, abort.signal)
        for (const topic of [names.ticks, names.decisions, names.outcomes]) await pipeline.drain(topic)
      }
      const stats = pipeline.sink.stats()
      const engine = runner.stats()
      process.stderr.write(
        `pipeline run: tape ${result.tapeId}: produced ${result.produced}, already in log ${result.skipped}; ` +
          `engine: ${engine.ledger.decisions} decisions, ${engine.ledger.outcomes} outcomes in the ledger; ` +
          `sink wrote ${stats.rowsWritten} rows in ${stats.filesSealed} files → ${dataDir}/parquet (catalog ${Catalog.path(dataDir)})\n`,
      )
      return result.aborted ? 130 : 0
    } finally {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
      await runner.close()
      await served.close()
      releases.close()
      await pipeline.close()
      await eventLog.close()
    }
  },
}
