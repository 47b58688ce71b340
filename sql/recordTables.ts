/**
 * The tables the measured record's batch jobs write (record/RecordJob.ts), defined here, below record/, because the
 * catalog (sql/020_record.sql) binds views over them: the catalog writes their zero-row schema anchors on open, the
 * job writes their rows, quants and notebooks read the views.
 *
 * Layout: $DATA/parquet/record/<dir>/<prefix>-<seq 12 digits>.parquet, one sealed file per job run that had something
 * new (a rerun over the same data writes nothing), plus the anchor _schema.parquet. Files are append-only: a run never
 * rewrites an earlier run's file, so every figure the service published can be recomputed from the files it had then.
 *
 * Why increments and not one table per published figure: calibration, the Brier decomposition, ECE, log loss and the
 * priors are all sums over resolved pairs, so each run appends the sums of the pairs it had not seen (per question,
 * subject and decile band), and every figure is a SUM over the increments: a new snapshot reads the new outcome files
 * and a few thousand increment rows, never the whole ledger again.
 */
import { join } from 'node:path'
import type { ColumnSpec } from '../pipeline/sinks/TopicTable.ts'
import { PARQUET_ROOT } from '../pipeline/sinks/parquetLayout.ts'

export interface RecordTable {
  /** View name over the table's files. */
  readonly name: string
  /** Directory under $DATA/parquet/record/. */
  readonly dir: string
  /** File name prefix before the sequence number (tables whose files are named otherwise, e.g. by release, have none). */
  readonly prefix?: string
  readonly columns: readonly ColumnSpec[]
}

export const RECORD_ROOT = 'record'
export const RECORD_ANCHOR = '_schema.parquet'
const SEQ_DIGITS = 12
const SEQ_FILE = /^([a-z]+)-(\d{12})\.parquet$/

/** One row per job run that found new data: what it read (file manifests) and what it counted. */
export const RECORD_RUNS: RecordTable = {
  name: 'record_runs',
  dir: 'runs',
  prefix: 'run',
  columns: [
    { name: 'run_id', type: 'BIGINT' },
    { name: 'taken_at', type: 'TIMESTAMPTZ' },
    /** Outcome pairs newly counted (realized and unresolvable claims) and decisions newly counted. */
    { name: 'n_outcomes', type: 'BIGINT' },
    { name: 'n_decisions', type: 'BIGINT' },
    { name: 'n_refused', type: 'BIGINT' },
  ],
}

/** Sealed ledger files a run consumed: the next run skips them (files are immutable once sealed). */
export const RECORD_FILES: RecordTable = {
  name: 'record_files',
  dir: 'files',
  prefix: 'run',
  columns: [
    { name: 'run_id', type: 'BIGINT' },
    /** 'decisions' (counted) or 'outcomes' (paired and counted). */
    { name: 'source', type: 'VARCHAR' },
    /** Path relative to $DATA/parquet/<source>/. */
    { name: 'file', type: 'VARCHAR' },
  ],
}

/** A decile band's sufficient statistics: the pairs' Σp, Σy, Σp², Σpy, Σ(p − y)² and Σ log loss. */
const BAND_SUMS: RecordTable['columns'] = [
  { name: 'sum_p', type: 'DOUBLE' },
  { name: 'sum_y', type: 'DOUBLE' },
  { name: 'sum_p2', type: 'DOUBLE' },
  { name: 'sum_py', type: 'DOUBLE' },
  /** Σ (p − y)²: the Brier numerator, summed directly rather than derived, so it matches a direct recomputation. */
  { name: 'sum_sq', type: 'DOUBLE' },
  /** Σ log loss with p clipped to [1e-15, 1 − 1e-15]. */
  { name: 'sum_ll', type: 'DOUBLE' },
]

/**
 * Sufficient statistics of resolved claims per question, subject and decile band (bucket 0..9, the '(a,b]' bands of
 * the calibration report; NULL for unresolvable outcomes, which have no pair). y is 1 when the event obtained (for a
 * choice question: when the realized class is the one the decision chose), p the probability the decision stated.
 */
export const CALIBRATION_INCREMENTS: RecordTable = {
  name: 'calibration_increments',
  dir: 'calibration_increments',
  prefix: 'run',
  columns: [
    { name: 'run_id', type: 'BIGINT' },
    { name: 'question_id', type: 'VARCHAR' },
    { name: 'asset', type: 'VARCHAR' },
    { name: 'subject', type: 'VARCHAR' },
    { name: 'bucket', type: 'INTEGER' },
    { name: 'n', type: 'BIGINT' },
    { name: 'n_unresolvable', type: 'BIGINT' },
    ...BAND_SUMS,
    { name: 'first_resolved', type: 'TIMESTAMPTZ' },
    { name: 'last_resolved', type: 'TIMESTAMPTZ' },
  ],
}

/**
 * One-vs-rest sums of distribution questions (a decision with a choice distribution: S01) per question, subject, class
 * and decile band of the class's probability: each realized decision adds one row per class of its distribution, p =
 * that class's probability, y = 1 for the realized class (models/verification/bucketSums.ts, ClassBandSums). The
 * record scores these questions from here (multi-class Brier, log loss of the realized class, classwise reliability);
 * calibration_increments keeps their modal-class pairs, the secondary view.
 */
export const CLASS_INCREMENTS: RecordTable = {
  name: 'class_increments',
  dir: 'class_increments',
  prefix: 'run',
  columns: [
    { name: 'run_id', type: 'BIGINT' },
    { name: 'question_id', type: 'VARCHAR' },
    { name: 'asset', type: 'VARCHAR' },
    { name: 'subject', type: 'VARCHAR' },
    { name: 'class', type: 'VARCHAR' },
    { name: 'bucket', type: 'INTEGER' },
    { name: 'n', type: 'BIGINT' },
    // sum_sq summed over classes is the multi-class Brier numerator; sum_ll (−o_k·ln p_k) over classes is −ln p(realized).
    ...BAND_SUMS,
  ],
}

/** Realized labels of resolved claims per question: 'obtains'/'not' for binary questions, the realized class for S01. */
export const LABEL_INCREMENTS: RecordTable = {
  name: 'label_increments',
  dir: 'label_increments',
  prefix: 'run',
  columns: [
    { name: 'run_id', type: 'BIGINT' },
    { name: 'question_id', type: 'VARCHAR' },
    { name: 'label', type: 'VARCHAR' },
    { name: 'n', type: 'BIGINT' },
  ],
}

/**
 * The intelligence snapshots, one row per snapshot, every field of the spec's snapshot as its own column (so the hash
 * chain covers exactly what the API serves: row_hash = SHA-256 of the JCS of the snapshot without row_hash).
 */
export const INTELLIGENCE_SNAPSHOTS: RecordTable = {
  name: 'intelligence_snapshots',
  dir: 'intelligence_snapshots',
  prefix: 'snap',
  columns: [
    { name: 'seq', type: 'BIGINT' },
    { name: 'index_version', type: 'VARCHAR' },
    { name: 'composite', type: 'DOUBLE' },
    { name: 'insufficient_note', type: 'VARCHAR' },
    { name: 'brier', type: 'DOUBLE' },
    { name: 'logloss', type: 'DOUBLE' },
    { name: 'skill_vs_reference', type: 'DOUBLE' },
    { name: 'reliability', type: 'DOUBLE' },
    { name: 'resolution', type: 'DOUBLE' },
    { name: 'uncertainty', type: 'DOUBLE' },
    { name: 'ece', type: 'DOUBLE' },
    { name: 'resolution_rate', type: 'DOUBLE' },
    { name: 'n_decisions', type: 'BIGINT' },
    { name: 'n_realized', type: 'BIGINT' },
    { name: 'n_unresolvable', type: 'BIGINT' },
    { name: 'n_refused', type: 'BIGINT' },
    { name: 'window_start', type: 'VARCHAR' },
    { name: 'window_end', type: 'VARCHAR' },
    { name: 'reference_brier', type: 'DOUBLE' },
    /** benchmarks.crowd, NULL when the line is absent (below its floor, or no duel wired). */
    { name: 'crowd_brier', type: 'DOUBLE' },
    { name: 'crowd_n', type: 'BIGINT' },
    { name: 'crowd_house_brier', type: 'DOUBLE' },
    { name: 'active_release', type: 'JSON' },
    { name: 'release_delta', type: 'DOUBLE' },
    /** modal_class (secondary; NULL on index 1.0.0 snapshots, which have none): every claim graded as one binary event. */
    { name: 'modal_n', type: 'BIGINT' },
    { name: 'modal_brier', type: 'DOUBLE' },
    { name: 'modal_logloss', type: 'DOUBLE' },
    { name: 'modal_skill_vs_reference', type: 'DOUBLE' },
    { name: 'modal_ece', type: 'DOUBLE' },
    { name: 'published_bands', type: 'BIGINT' },
    { name: 'rung', type: 'BIGINT' },
    { name: 'taken_at', type: 'VARCHAR' },
    { name: 'prev_hash', type: 'VARCHAR' },
    { name: 'row_hash', type: 'VARCHAR' },
  ],
}

/** Ladder crossings, latched: a row is written once when a rung's gates are all met; it never reverts. */
export const LADDER_CROSSINGS: RecordTable = {
  name: 'ladder_crossings',
  dir: 'ladder_crossings',
  prefix: 'rung',
  columns: [
    { name: 'rung', type: 'BIGINT' },
    { name: 'crossed_at', type: 'VARCHAR' },
    { name: 'effective_at', type: 'VARCHAR' },
    /** The measured gate values at the crossing, as canonical JSON. */
    { name: 'measured', type: 'JSON' },
  ],
}

export const RECORD_TABLES: readonly RecordTable[] = [RECORD_RUNS, RECORD_FILES, CALIBRATION_INCREMENTS, CLASS_INCREMENTS, LABEL_INCREMENTS, INTELLIGENCE_SNAPSHOTS, LADDER_CROSSINGS]

export function recordTableRoot(dataDir: string, table: RecordTable): string {
  return join(dataDir, PARQUET_ROOT, RECORD_ROOT, table.dir)
}

export function recordAnchorPath(dataDir: string, table: RecordTable): string {
  return join(recordTableRoot(dataDir, table), RECORD_ANCHOR)
}

export function recordFileName(table: RecordTable, seq: number): string {
  if (!table.prefix) throw new Error(`${table.name} files are not named by sequence`)
  return `${table.prefix}-${String(seq).padStart(SEQ_DIGITS, '0')}.parquet`
}

/** The sequence number of a sealed record file, or null for anything else (the anchor, temp files). */
export function recordFileSeq(name: string): number | null {
  const m = SEQ_FILE.exec(name)
  return m ? Number(m[2]) : null
}
