/**
 * `svc disk`: what a data folder holds, by part, and per 30 days of history (app/DiskUse.ts). Read-only: it only lists
 * files, so it runs beside `svc start`.
 */
import { parseArgs } from 'node:util'
import { resolve } from 'node:path'
import type { Command } from '../Command.ts'
import { environment } from '../environment.ts'
import { MONTH_DAYS, measureDiskUse } from '../../app/DiskUse.ts'
import { tickRetentionMsOf, topicNamesOf } from '../../app/config.ts'

const usage = `Usage: svc disk [--data-dir DIR] [--json]

Sizes the data folder by part (log ticks, log journals, Parquet ticks, Parquet journals, DuckDB files, state
snapshots, the record's release datasets, other) and scales each to ${MONTH_DAYS} days of history, counted as the days of ticks sealed in Parquet. The ticks
in the embedded log stay bounded by retention (the kept window), so their steady size is printed for that window.

Options:
  --data-dir DIR   data folder (default $SVC_DATA_DIR or ./data)
  --json           print the report as JSON
`

const MB = 1024 * 1024
const mb = (bytes: number | null) => (bytes === null ? '-' : (bytes / MB).toFixed(1))

export const command: Command = {
  name: 'disk',
  summary: 'Disk use of the data folder by part, per 30 days of history',
  usage,
  async run(argv) {
    const { values } = parseArgs({ args: argv, options: { 'data-dir': { type: 'string' }, json: { type: 'boolean', default: false } }, strict: true })
    const config = environment({ SVC_DATA_DIR: values['data-dir'] })
    const report = await measureDiskUse(resolve(config.SVC_DATA_DIR), topicNamesOf(config).ticks)
    const keptDays = tickRetentionMsOf(config) / 86_400_000
    const ticksLog = report.parts.find((p) => p.part === 'log.ticks')!.bytes
    const steadyTicksLog = report.historyDays > 0 ? Math.round((ticksLog / report.historyDays) * keptDays) : null
    if (values.json) {
      process.stdout.write(JSON.stringify({ ...report, keptDays, steadyTicksLogBytes: steadyTicksLog }, null, 2) + '\n')
      return 0
    }
    const lines = [
      `disk: ${report.dataDir}: ${report.historyDays} days of history (ticks sealed in Parquet), ${mb(report.totalBytes)} MB`,
      `${'part'.padEnd(18)}${'MB'.padStart(10)}${'files'.padStart(8)}${`MB / ${MONTH_DAYS} days`.padStart(16)}`,
      ...report.parts.map((p) => `${p.part.padEnd(18)}${mb(p.bytes).padStart(10)}${String(p.files).padStart(8)}${mb(report.perMonth[p.part] ?? null).padStart(16)}`),
      `log.ticks is bounded by retention: about ${mb(steadyTicksLog)} MB for the kept ${keptDays} days (embedded log; Kafka: the ticks topic's retention.ms)`,
    ]
    process.stdout.write(lines.join('\n') + '\n')
    return 0
  },
}
