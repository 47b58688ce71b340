/**
 * The tables of sealed releases (record/releases/ReleaseStore.ts), defined here, below record/, because the catalog
 * (sql/030_releases.sql) binds views over them and writes their zero-row schema anchors on open.
 *
 * Layout: $DATA/parquet/record/<dir>/<file>.parquet plus the anchor _schema.parquet (sql/recordTables.ts's layout).
 * Every file is written once and never replaced: a release row is `release-<version>.parquet`, an evaluation (its gate
 * rows together, one file, so a reader never sees half of a verdict) is `gates-<version>.parquet`, an activation is
 * `act-<seq>.parquet`. A second write of the same name refuses (no-clobber link), so the tables are append-only and
 * every status is derived from the rows at read time (the `releases` view).
 */
import { recordAnchorPath, recordTableRoot, type RecordTable } from './recordTables.ts'

/** A release table is a record table (same layout and anchor) whose files are named by release, not by run. */
export type ReleaseTable = RecordTable

/** One row per release: the sealed body verbatim (canonical JSON) and its JCS SHA-256 checksum. */
export const RELEASE_ROWS: ReleaseTable = {
  name: 'release_rows',
  dir: 'releases',
  columns: [
    { name: 'version', type: 'VARCHAR' },
    { name: 'parent', type: 'VARCHAR' },
    { name: 'checksum', type: 'VARCHAR' },
    { name: 'created_at', type: 'VARCHAR' },
    { name: 'jev_version', type: 'VARCHAR' },
    { name: 'dataset_hash', type: 'VARCHAR' },
    { name: 'window_start', type: 'VARCHAR' },
    { name: 'window_end', type: 'VARCHAR' },
    { name: 'n_realized', type: 'BIGINT' },
    { name: 'body', type: 'JSON' },
  ],
}

/**
 * The sealed gate rows of a release's evaluation: one row per promotion gate, each carrying the evaluation it was
 * measured on (canonical JSON, the same on the four rows) and its id (SHA-256 of that JSON).
 */
export const RELEASE_GATE_ROWS: ReleaseTable = {
  name: 'release_gate_rows',
  dir: 'release_gates',
  columns: [
    { name: 'version', type: 'VARCHAR' },
    { name: 'gate', type: 'VARCHAR' },
    { name: 'met', type: 'BOOLEAN' },
    /** The gate's measured figures, canonical JSON. */
    { name: 'measured', type: 'JSON' },
    { name: 'reason', type: 'VARCHAR' },
    { name: 'measured_at', type: 'VARCHAR' },
    { name: 'evaluation_id', type: 'VARCHAR' },
    { name: 'evaluation', type: 'JSON' },
  ],
}

/** Activations: `activate` of a release that passed all four gates, or `rollback` (a new activation of the parent). */
export const RELEASE_ACTIVATION_ROWS: ReleaseTable = {
  name: 'release_activation_rows',
  dir: 'release_activations',
  columns: [
    { name: 'seq', type: 'BIGINT' },
    { name: 'version', type: 'VARCHAR' },
    { name: 'kind', type: 'VARCHAR' },
    /** The release active before this activation (null for the first). */
    { name: 'previous', type: 'VARCHAR' },
    { name: 'activated_at', type: 'VARCHAR' },
  ],
}

export const RELEASE_TABLES: readonly ReleaseTable[] = [RELEASE_ROWS, RELEASE_GATE_ROWS, RELEASE_ACTIVATION_ROWS]

export const releaseTableRoot = recordTableRoot
export const releaseAnchorPath = recordAnchorPath
