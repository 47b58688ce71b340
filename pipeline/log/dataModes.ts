/**
 * The permissions of everything in the data folder: files 0600, folders 0700 (issue 29: the journals hold payers'
 * registrations, credits and, when no key is set, hook URLs and contacts; no other local user reads them).
 *
 * Our own writers pass these modes explicitly (the log's segments and metadata, group offsets, atomic small files,
 * sealed Parquet files, the catalog's and releases' folders). DuckDB creates its database, WAL and COPY temp files
 * itself with 0666 under the process umask, so the service also narrows its umask once at start (restrictUmask) and
 * the data folder itself is 0700: a file created by any library is then private too.
 */
import { chmod, mkdir } from 'node:fs/promises'
import { isMainThread } from 'node:worker_threads'

export const DATA_FILE_MODE = 0o600
export const DATA_DIR_MODE = 0o700
/** The umask that turns a library's 0666/0777 into DATA_FILE_MODE/DATA_DIR_MODE. */
export const DATA_UMASK = 0o077

/** mkdir -p with DATA_DIR_MODE on every folder it creates (folders that exist keep theirs). */
export async function mkdirData(path: string): Promise<void> {
  await mkdir(path, { recursive: true, mode: DATA_DIR_MODE })
}

/** The data folder itself: created 0700, or narrowed to 0700 when it exists (so older, wider files inside are unreachable). */
export async function openDataFolder(path: string): Promise<void> {
  await mkdirData(path)
  await chmod(path, DATA_DIR_MODE)
}

/** Narrows the process umask (worker threads cannot; they inherit the process's). Returns the previous one. */
export function restrictUmask(): number | null {
  return isMainThread ? process.umask(DATA_UMASK) : null
}
