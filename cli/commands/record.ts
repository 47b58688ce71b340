/**
 * `svc record build` and `svc record show`: the measured record's batch job on demand, for operators and quants.
 * `svc start` runs the same job on its schedule (SVC_RECORD_INTERVAL_S); while it runs, this command is refused with
 * RECORD_LOCKED (one writer per data dir's record tables), and reading (`show`) is always allowed.
 */
import { parseArgs } from 'node:util'
import { resolve } from 'node:path'
import type { Command } from '../Command.ts'
import { environment } from '../environment.ts'
import { MeasuredRecord } from '../../record/MeasuredRecord.ts'
import { RecordDb } from '../../record/RecordDb.ts'
import { RecordJob } from '../../record/RecordJob.ts'
import { ReleaseStore } from '../../record/releases/ReleaseStore.ts'
import { Catalog } from '../../sql/Catalog.ts'

const buildUsage = `Usage: svc record build [--data-dir DIR] [--json]

Runs the measured record's batch job once over DIR/parquet: reads the sealed decision and outcome files no earlier run
consumed, appends their band sums (calibration_increments, label_increments), takes an intelligence snapshot (hash
chained) and latches a ladder rung when its gates are met. A run with nothing new writes nothing.

Options:
  --data-dir DIR   data folder (default $SVC_DATA_DIR or ./data)
  --json           print the run summary as JSON
`

const showUsage = `Usage: svc record show [--data-dir DIR]

Prints the latest intelligence snapshot, whether the snapshot chain verifies, and the ladder measures, as JSON.
`

function fmt(x: number | null, digits = 4): string {
  return x === null ? 'null' : x.toFixed(digits)
}

export const commands: Command[] = [
  {
    name: 'record build',
    summary: 'Run the measured record batch job once (calibration, priors, snapshot, ladder); incremental',
    usage: buildUsage,
    async run(argv) {
      const { values } = parseArgs({ args: argv, options: { 'data-dir': { type: 'string' }, json: { type: 'boolean', default: false } }, strict: true })
      const config = environment({ SVC_DATA_DIR: values['data-dir'] })
      const dataDir = resolve(config.SVC_DATA_DIR)
      const db = await RecordDb.open(dataDir)
      const releases = await ReleaseStore.open(dataDir, db) // the active release goes into the snapshot and the ladder
      try {
        const job = await RecordJob.open(db, { releases }) // RECORD_LOCKED first: a running service owns the folder
        try {
          // The views quants read include the record's (sql/020_record.sql). A reader holding catalog.duckdb blocks
          // the DDL, not the build: the tables are Parquet, and the views are applied again at the next start.
          await Catalog.apply(dataDir).catch((err: unknown) => {
            if ((err as { code?: string }).code !== 'CATALOG_LOCKED') throw err
            process.stderr.write(`record: ${Catalog.path(dataDir)} is open elsewhere; the views were not reapplied (the build goes on)\n`)
          })
          const s = await job.run()
          if (values.json) {
            process.stdout.write(JSON.stringify(s, null, 2) + '\n')
          } else if (s.idle) {
            process.stdout.write(`record: nothing new (${s.held_files} outcome file${s.held_files === 1 ? '' : 's'} waiting for their decisions)\n`)
          } else {
            const snap = s.snapshot!
            process.stdout.write(
              `record: run ${s.run_id}: ${s.outcome_files} outcome and ${s.decision_files} decision files, +${s.new_pairs} realized, +${s.new_unresolvable} unresolvable, +${s.new_decisions} decisions\n` +
                `record: snapshot ${snap.seq}: n_realized ${snap.evidence.n_realized}, Brier ${fmt(snap.components.brier)}, BSS ${fmt(snap.components.skill_vs_reference)}, ECE ${fmt(snap.components.ece)}, DII ${snap.composite === null ? 'null (' + snap.insufficient_note + ')' : fmt(snap.composite, 1)}, rung ${snap.rung}\n` +
                (s.crossing ? `record: ladder rung ${s.crossing.rung} crossed; effective ${s.crossing.effective_at}\n` : ''),
            )
          }
          return 0
        } finally {
          await job.close()
        }
      } finally {
        releases.close()
        db.close()
      }
    },
  },
  {
    name: 'record show',
    summary: 'Print the latest intelligence snapshot, chain verification and ladder measures (JSON)',
    usage: showUsage,
    async run(argv) {
      const { values } = parseArgs({ args: argv, options: { 'data-dir': { type: 'string' } }, strict: true })
      const config = environment({ SVC_DATA_DIR: values['data-dir'] })
      const db = await RecordDb.open(resolve(config.SVC_DATA_DIR))
      const releases = await ReleaseStore.open(resolve(config.SVC_DATA_DIR), db)
      try {
        process.stdout.write(JSON.stringify(await new MeasuredRecord(db, { releases }).intelligence(), null, 2) + '\n')
        return 0
      } finally {
        releases.close()
        db.close()
      }
    },
  },
]
