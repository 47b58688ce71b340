/**
 * A synthetic resolved ledger written straight into the sink's Parquet layout (parquet/decisions and
 * parquet/outcomes, date=/asset= directories, sealed file names p<partition>-<first>-<last>.parquet, every column the
 * sink writes), so the record's batch job reads it exactly as it reads what the service sealed. Used by the record
 * bench (10 million decisions) and by test/record/RecordJob.test.ts.
 *
 * Row i: question S03..S07 by i mod 5, asset BTC/ETH/SOL by group, p from a hash of i in [0.001, 0.999]; the event
 * obtains with probability p (another hash of i), so the forecasts are calibrated by construction; every 20th
 * decision is a refusal (probability 0, action refuse) and every 50th outcome is unresolvable. Files are grouped by
 * day and asset; offsets on partition 0 are the row numbers. With `distribution`, every 7th row (i mod 7 = 6) is a
 * distribution question's instead (S01's shape): a four-class distribution from hashes of i, the modal class as
 * choice_id and probability, the realized class drawn from the distribution (calibrated by construction), obtains when
 * it is the chosen class.
 */
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { copyToSealedParquet, sqlString } from '../pipeline/sinks/parquetFile.ts'
import { groupDir, sealedFileName, tableRoot } from '../pipeline/sinks/parquetLayout.ts'
import { sinkTables } from '../pipeline/sinks/sinkTables.ts'
import { fileColumns, type ColumnSpec } from '../pipeline/sinks/TopicTable.ts'
import { DAY_MS } from '../common/time.ts'
import { CANONICAL_ASSETS } from '../common/schema.ts'

export const SYNTHETIC_ASSETS = CANONICAL_ASSETS

export interface SyntheticLedgerOptions {
  /** Decisions in all (each with an outcome). */
  decisions: number
  /** Rows per sealed file (one day × asset group). */
  perFile: number
  /** First row number (offsets continue from here, so a second call appends new files). */
  firstRow?: number
  /** Day of row 0 (epoch ms, midnight UTC). */
  startMs?: number
  /** Write only decisions or only outcomes of these rows (default both). */
  only?: 'decisions' | 'outcomes'
  /** Every 7th row a distribution question's decision (S01's shape) over these four classes. */
  distribution?: { question_id: string; classes: readonly [string, string, string, string] }
}

function columnsOf(dir: string) {
  const table = sinkTables().find((t) => t.dir === dir)
  if (!table) throw new Error(`no sink table ${dir}`)
  return fileColumns(table)
}

/**
 * A SELECT listing every column of the sink table in order: the given expressions, NULL for the rest. Instant
 * expressions are naive UTC (TIMESTAMP '…' + …), made TIMESTAMPTZ as UTC whatever the session's TimeZone.
 */
export function selectAll(dir: string, exprs: Record<string, string>, from: string): string {
  const cast = (c: ColumnSpec, e: string) => (c.type === 'TIMESTAMPTZ' ? `timezone('UTC', (${e})::TIMESTAMP)` : `(${e})::${c.type}`)
  const cols = columnsOf(dir).map((c) => `${cast(c, exprs[c.name] ?? 'NULL')} AS "${c.name}"`)
  return `SELECT ${cols.join(', ')} FROM ${from}`
}

/** Writes the files; returns how many of each it wrote. */
export async function writeSyntheticLedger(dataDir: string, o: SyntheticLedgerOptions): Promise<{ files: number; rows: number }> {
  const first = o.firstRow ?? 0
  const start = o.startMs ?? Date.parse('2026-01-01T00:00:00Z')
  const instance = await DuckDBInstance.create(':memory:')
  const conn = await instance.connect()
  let files = 0
  try {
    for (let lo = first; lo < first + o.decisions; lo += o.perFile) {
      const hi = Math.min(first + o.decisions, lo + o.perFile) - 1
      const group = Math.floor(lo / o.perFile)
      const asset = SYNTHETIC_ASSETS[group % SYNTHETIC_ASSETS.length]!
      const dayMs = start + Math.floor(group / SYNTHETIC_ASSETS.length) * DAY_MS
      const date = new Date(dayMs).toISOString().slice(0, 10)
      // Row-wise values from i; created_at spreads the file's rows over its day.
      const dist = o.distribution
      const weights = dist ? `, ${[0, 1, 2, 3].map((k) => `(1 + hash(i * 31 + ${k}) % 97)::DOUBLE AS w${k}`).join(', ')}` : ''
      const rows = `(SELECT i, hash(i) AS h1, hash(i * 7 + 3) AS h2${weights},
          TIMESTAMP '${date} 00:00:00' + to_milliseconds(((i - ${lo}) * 86000000 // ${Math.max(1, hi - lo + 1)})) AS created
        FROM range(${lo}, ${hi + 1}) AS t(i))`
      const idExpr = `substr(md5(i::VARCHAR), 1, 8) || '-' || substr(md5(i::VARCHAR), 9, 4) || '-8' || substr(md5(i::VARCHAR), 14, 3) || '-a' || substr(md5(i::VARCHAR), 18, 3) || '-' || substr(md5(i::VARCHAR), 21, 12)`
      const refused = `(i % 20 = 0)`
      const p = `(0.001 + (h1 % 999) / 1000.0)`
      const name = sealedFileName({ partition: 0, firstOffset: lo, lastOffset: hi })
      // The distribution question's rows: p_k = w_k / Σw, the modal class chosen, the realized class drawn by h2.
      const isDist = dist ? `(i % 7 = 6)` : 'false'
      const pk = (k: number) => `(w${k} / (w0 + w1 + w2 + w3))`
      const lit = (k: number) => sqlString(dist?.classes[k] ?? '')
      const modal = `CASE WHEN ${pk(0)} >= greatest(${pk(1)}, ${pk(2)}, ${pk(3)}) THEN ${lit(0)} WHEN ${pk(1)} >= greatest(${pk(2)}, ${pk(3)}) THEN ${lit(1)} WHEN ${pk(2)} >= ${pk(3)} THEN ${lit(2)} ELSE ${lit(3)} END`
      const u = `((h2 % 1000) / 1000.0)`
      const realized = `CASE WHEN ${u} < ${pk(0)} THEN ${lit(0)} WHEN ${u} < ${pk(0)} + ${pk(1)} THEN ${lit(1)} WHEN ${u} < ${pk(0)} + ${pk(1)} + ${pk(2)} THEN ${lit(2)} ELSE ${lit(3)} END`
      const questionId = dist ? `CASE WHEN ${isDist} THEN ${sqlString(dist.question_id)} ELSE 'S0' || (3 + i % 5)::VARCHAR || '_synthetic' END` : `'S0' || (3 + i % 5)::VARCHAR || '_synthetic'`
      const probability = dist ? `CASE WHEN ${refused} THEN 0 WHEN ${isDist} THEN greatest(${[0, 1, 2, 3].map(pk).join(', ')}) ELSE ${p} END` : `CASE WHEN ${refused} THEN 0 ELSE ${p} END`
      const distExprs: Record<string, string> = dist
        ? {
            choice_id: `CASE WHEN ${isDist} AND NOT ${refused} THEN ${modal} END`,
            choice_distribution: `CASE WHEN ${isDist} AND NOT ${refused} THEN json_object(${[0, 1, 2, 3].map((k) => `${lit(k)}, ${pk(k)}`).join(', ')})::VARCHAR END`,
          }
        : {}
      const outcome = dist
        ? `CASE WHEN i % 50 = 7 THEN 'unresolvable' WHEN ${isDist} THEN (CASE WHEN ${realized} = ${modal} THEN 'obtains' ELSE 'not' END) WHEN (h2 % 1000) / 1000.0 < ${p} THEN 'obtains' ELSE 'not' END`
        : `CASE WHEN i % 50 = 7 THEN 'unresolvable' WHEN (h2 % 1000) / 1000.0 < ${p} THEN 'obtains' ELSE 'not' END`
      if (o.only !== 'outcomes') {
        const select = selectAll('decisions', {
          log_partition: '0', log_offset: 'i', decision_id: idExpr, question_id: questionId,
          subject: 'NULL', ...distExprs, event: `'synthetic'`, horizon: `'4h'`, horizon_end: `created + INTERVAL 4 HOUR`, created_at: 'created',
          probability, confidence: `CASE WHEN ${refused} THEN 0 ELSE 0.5 END`,
          decision: `CASE WHEN ${refused} THEN 'insufficient_confidence' ELSE 'claim' END`, action: `CASE WHEN ${refused} THEN 'refuse' ELSE 'ask' END`,
          input_hash: `sha256(i::VARCHAR)`, policy_version: `'policy-synthetic'`, jev_version: `'jev-synthetic'`, record_version: '1',
        }, rows)
        await copyToSealedParquet(conn, select, join(groupDir(tableRoot(dataDir, 'decisions'), date, asset), name), columnsOf('decisions'))
        files++
      }
      if (o.only !== 'decisions') {
        const select = selectAll('outcomes', {
          log_partition: '0', log_offset: 'i', decision_id: idExpr, question_id: questionId, subject: 'NULL', outcome,
          realized_choice: dist ? `CASE WHEN ${isDist} AND i % 50 <> 7 THEN ${realized} END` : 'NULL',
          resolved_at: `created + INTERVAL 4 HOUR`, horizon_end: `created + INTERVAL 4 HOUR`, record_version: '1',
        }, rows)
        await copyToSealedParquet(conn, select, join(groupDir(tableRoot(dataDir, 'outcomes'), date, asset), name), columnsOf('outcomes'))
        files++
      }
    }
  } finally {
    conn.closeSync()
    instance.closeSync()
  }
  return { files, rows: o.decisions }
}
