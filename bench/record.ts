/**
 * The measured record's build over a large ledger (issue 13): the full batch job (calibration, the decomposition, the
 * index, priors and a curve point, from decision and outcome Parquet) over N synthetic resolved decisions, beside one
 * DuckDB aggregate pass (the mean squared error of the same pairs, the same join) over the same files, in the same run.
 * Goal: build ≤ 4× that pass. And the server's memory stays flat as the ledger grows: the reads (GET /v1/intelligence,
 * /v1/calibration, /v1/priors, the curve) come from the record's tables, so the heap after reading is measured at two
 * ledger sizes.
 *
 * `node --import tsx bench/record.ts [decisions=10000000] [perFile=200000]`
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { sqlString } from '../pipeline/sinks/parquetFile.ts'
import { tableRoot } from '../pipeline/sinks/parquetLayout.ts'
import { INDEX_VERSION } from '../models/verification/dii.ts'
import { MeasuredRecord } from '../record/MeasuredRecord.ts'
import { RecordDb } from '../record/RecordDb.ts'
import { RecordJob } from '../record/RecordJob.ts'
import { writeSyntheticLedger } from './syntheticLedger.ts'

export interface RecordBenchResult {
  decisions: number
  buildMs: number
  msePassMs: number
  ratio: number
  heapAfterReadsMb: number
}

async function msePass(dataDir: string): Promise<number> {
  const instance = await DuckDBInstance.create(':memory:')
  const conn = await instance.connect()
  try {
    const glob = (dir: string) => sqlString(join(tableRoot(dataDir, dir), 'date=2*', '*', '*.parquet'))
    const t0 = performance.now()
    await conn.runAndReadAll(`
      SELECT avg((d.probability - (o.outcome = 'obtains')::INTEGER) ^ 2) AS mse, count(*) AS n
      FROM read_parquet(${glob('outcomes')}) o JOIN read_parquet(${glob('decisions')}) d USING (decision_id)
      WHERE d.action <> 'refuse' AND o.outcome <> 'unresolvable'`)
    return performance.now() - t0
  } finally {
    conn.closeSync()
    instance.closeSync()
  }
}

async function buildAndRead(dataDir: string): Promise<{ buildMs: number; heapAfterReadsMb: number }> {
  const db = await RecordDb.open(dataDir)
  try {
    const job = await RecordJob.open(db)
    const t0 = performance.now()
    const summary = await job.run()
    if (process.env.RECORD_BENCH_STEPS) process.stdout.write(`record: steps ${JSON.stringify(summary.timings_ms)}\n`)
    const buildMs = performance.now() - t0
    await job.close()
    const record = new MeasuredRecord(db)
    global.gc?.()
    await record.intelligence()
    await record.priors()
    await record.calibration({ question_id: null, subject: null })
    await record.curve({ window: 'all', from: null, index_version: INDEX_VERSION })
    global.gc?.()
    return { buildMs, heapAfterReadsMb: process.memoryUsage().heapUsed / 2 ** 20 }
  } finally {
    db.close()
  }
}

export async function benchRecord(o: { decisions: number; perFile: number; print: (line: string) => void }): Promise<RecordBenchResult[]> {
  const out: RecordBenchResult[] = []
  for (const decisions of [Math.max(o.perFile, Math.round(o.decisions / 10)), o.decisions]) {
    const dataDir = await mkdtemp(join(tmpdir(), 'svc-record-bench-'))
    try {
      const g0 = performance.now()
      await writeSyntheticLedger(dataDir, { decisions, perFile: o.perFile })
      o.print(`record: wrote ${decisions.toLocaleString('en-US')} synthetic resolved decisions in ${((performance.now() - g0) / 1000).toFixed(1)} s`)
      // The pass first, then the build: each reads the files once (the OS cache is warm for both after the write).
      const mse = await msePass(dataDir)
      const { buildMs, heapAfterReadsMb } = await buildAndRead(dataDir)
      const r = { decisions, buildMs, msePassMs: mse, ratio: buildMs / mse, heapAfterReadsMb }
      out.push(r)
      o.print(
        `record: ${decisions.toLocaleString('en-US').padStart(10)} decisions: build ${(buildMs / 1000).toFixed(2)} s vs one MSE pass ${(mse / 1000).toFixed(2)} s → ratio ${r.ratio.toFixed(2)} (goal ≤ 4); heap after the reads ${heapAfterReadsMb.toFixed(1)} MB`,
      )
    } finally {
      await rm(dataDir, { recursive: true, force: true })
    }
  }
  return out
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const decisions = Number(process.argv[2] ?? 10_000_000)
  const perFile = Number(process.argv[3] ?? 200_000)
  await benchRecord({ decisions, perFile, print: (l) => process.stdout.write(l + '\n') })
}
