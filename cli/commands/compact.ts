/**
 * `svc compact`: the Parquet compaction pass on demand. `svc start` runs the same pass on its schedule
 * (SVC_COMPACT_INTERVAL_S) and holds the compaction lock meanwhile, so this command is then refused with SINK_LOCKED.
 */
import { parseArgs } from 'node:util'
import { resolve } from 'node:path'
import type { Command } from '../Command.ts'
import { environment } from '../environment.ts'
import { ParquetCompactor } from '../../pipeline/sinks/ParquetCompactor.ts'
import { sinkTables } from '../../pipeline/sinks/sinkTables.ts'
import { RecordDb } from '../../record/RecordDb.ts'
import { RecordJob } from '../../record/RecordJob.ts'

const usage = `Usage: svc compact [--data-dir DIR] [--json]

Merges the small Parquet files the sink sealed for every closed day (before today, UTC, and before the newest day of
each table) into one file per date/asset directory and log partition, named by the offsets it holds. Decision and
outcome files are merged only once the measured record's job has counted them (svc record build). Safe to interrupt:
readers count every row once whether a pass finished or not, and the next pass completes it.

Options:
  --data-dir DIR   data folder (default $SVC_DATA_DIR or ./data)
  --json           print the pass summary as JSON
`

export const command: Command = {
  name: 'compact',
  summary: "Merge closed days' small Parquet files into one per directory and partition (exactly once; resumable)",
  usage,
  async run(argv) {
    const { values } = parseArgs({ args: argv, options: { 'data-dir': { type: 'string' }, json: { type: 'boolean', default: false } }, strict: true })
    const config = environment({ SVC_DATA_DIR: values['data-dir'] })
    const dataDir = resolve(config.SVC_DATA_DIR)
    const db = await RecordDb.open(dataDir) // the record's manifest: which ledger files its job has counted
    try {
      const compactor = await ParquetCompactor.open({ dataDir, dirs: sinkTables().map((t) => t.dir), consumed: () => RecordJob.consumedFiles(db) })
      try {
        const s = await compactor.compact()
        if (values.json) process.stdout.write(JSON.stringify(s, null, 2) + '\n')
        else {
          process.stdout.write(
            `compact: ${s.replaced} small files merged into ${s.merged} (${s.rows} rows) in ${s.groups} directories; ` +
              `${s.recovered} covered files of an interrupted pass removed; ${s.held} files wait for the record job\n`,
          )
        }
        return 0
      } finally {
        await compactor.close()
      }
    } finally {
      db.close()
    }
  },
}
