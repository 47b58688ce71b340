/**
 * Durable state snapshots of stream processors (issue 31; the Kafka Streams state-store model): a processor's state
 * written with the log positions it reflects, so a start loads it and reads only the tail after those positions.
 *
 * One file per store, <dir>/<store>.snapshot, NDJSON:
 *   line 1   header { format, store, schema, positions, written_at }
 *   lines    one JSON value per state row (the processor's own encoding; streamed, so a large state never becomes one
 *            string)
 *   last     { rows, sha256 }: the row count and the hash of every byte before it (a torn or edited file is refused)
 * Written to a temp file, fsynced, renamed over the previous one and the folder fsynced (atomicFile.ts's discipline):
 * a crash (SIGKILL) mid-write leaves the previous snapshot whole. Reading checks the format, the store name, the
 * schema version and the hash, and says why it refuses (the caller then rebuilds from the log, restore.ts).
 */
import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { AtomicFileWriter } from '../log/atomicFile.ts'
import { mkdirData } from '../log/dataModes.ts'
import type { ConsumerPosition } from '../log/EventLog.ts'

/** The file layout's version (not a store's schema): bumped only if the NDJSON framing itself changes. */
export const SNAPSHOT_FORMAT = 1

export interface SnapshotHeader {
  format: number
  /** The processor's store name (one file per store). */
  store: string
  /** The store's state schema version: a snapshot of another version is not loaded (the state is rebuilt). */
  schema: number
  /** Per topic and partition, the offset of the next record the state does not reflect yet. */
  positions: ConsumerPosition[]
  written_at: string
}

export type SnapshotRefusal = 'missing' | 'corrupt' | 'old_schema' | 'ahead_of_log'

export type SnapshotRead =
  | { ok: true; header: SnapshotHeader; rows: unknown[] }
  | { ok: false; reason: SnapshotRefusal; detail: string }

export interface SnapshotWritten {
  path: string
  rows: number
  bytes: number
}

/** Bytes per write() while streaming rows out. */
const WRITE_CHUNK = 1 << 20
/** Bytes per read while loading a snapshot: large enough that hashing and parsing run in few big calls. */
const READ_CHUNK = 4 << 20

export class StateSnapshots {
  private constructor(readonly dir: string) {}

  static async open(dir: string): Promise<StateSnapshots> {
    await mkdirData(dir)
    return new StateSnapshots(dir)
  }

  pathOf(store: string): string {
    if (!/^[A-Za-z0-9._-]+$/.test(store)) throw new Error(`state store name ${JSON.stringify(store)}: letters, digits, . _ - only`)
    return join(this.dir, `${store}.snapshot`)
  }

  /**
   * Writes the store's state atomically; resolves once it is durable. `rows` is read to the end synchronously, before
   * the first await: the processor keeps applying records while the file is written, and the snapshot must be the
   * state at `positions`, not a mix. Each chunk goes to the temp file as it is cut (AtomicFileWriter), so the
   * snapshot is never held in memory whole: at a million calls the Arena's and the duel's were ~300 MB of buffers at
   * once, every minute, most of a restarted process's peak resident set (README, issue 31).
   */
  async write(store: string, schema: number, positions: ReadonlyArray<ConsumerPosition>, rows: Iterable<unknown>): Promise<SnapshotWritten> {
    const path = this.pathOf(store)
    const header: SnapshotHeader = { format: SNAPSHOT_FORMAT, store, schema, positions: positions.map((p) => ({ topic: p.topic, partition: p.partition, next: p.next })), written_at: new Date().toISOString() }
    const hash = createHash('sha256')
    const file = AtomicFileWriter.openSync(path)
    let bytes = 0
    let count = 0
    try {
      let pending: string[] = [JSON.stringify(header) + '\n']
      let pendingLength = 0
      const cut = () => {
        const buf = Buffer.from(pending.join(''), 'utf8')
        hash.update(buf)
        file.writeSync(buf)
        bytes += buf.length
        pending = []
        pendingLength = 0
      }
      for (const row of rows) {
        const line = JSON.stringify(row) + '\n'
        count++
        pending.push(line)
        pendingLength += line.length
        if (pendingLength >= WRITE_CHUNK) cut()
      }
      cut()
      const trailer = Buffer.from(JSON.stringify({ rows: count, sha256: hash.digest('hex') }) + '\n', 'utf8')
      file.writeSync(trailer)
      bytes += trailer.length
    } catch (err) {
      file.abort()
      throw err
    }
    await file.commit()
    return { path, rows: count, bytes }
  }

  /**
   * The store's snapshot, or why it cannot be used. Never throws for a bad file (only for an unreadable folder).
   *
   * Read as raw chunks, not lines: each chunk's complete lines are hashed in one update and parsed in one JSON.parse
   * (the rows joined as one array: JSON.stringify never writes a raw newline inside a row), which at 35 days cost a
   * third of a line-by-line read (readline's splitting and a hash update per line were most of a restore). The last
   * complete line is held back until the file ends, since it may be the trailer, which the hash does not cover. Every
   * row is still parsed and the hash checked over every byte before the trailer; a bad row or hash refuses the whole file.
   */
  async read(store: string, schema: number): Promise<SnapshotRead> {
    const path = this.pathOf(store)
    const hash = createHash('sha256')
    const rows: unknown[] = []
    let header: SnapshotHeader | null = null
    let headerSeen = false
    let carry: Buffer = Buffer.alloc(0)
    let badRow = false
    // Complete lines of the file (each ending in \n), the header first when it has not been seen yet.
    const take = (lines: Buffer) => {
      hash.update(lines)
      if (badRow) return
      let from = 0
      if (!headerSeen) {
        headerSeen = true
        const nl = lines.indexOf(10)
        try {
          header = JSON.parse(lines.toString('utf8', 0, nl)) as SnapshotHeader
        } catch {
          header = null
          badRow = true
          return
        }
        from = nl + 1
      }
      if (from >= lines.length) return
      try {
        const batch = JSON.parse('[' + lines.toString('utf8', from, lines.length - 1).replaceAll('\n', ',') + ']') as unknown[]
        for (const row of batch) rows.push(row)
      } catch {
        badRow = true
      }
    }
    try {
      for await (const chunk of createReadStream(path, { highWaterMark: READ_CHUNK })) {
        const data: Buffer = carry.length === 0 ? (chunk as Buffer) : Buffer.concat([carry, chunk as Buffer])
        // Cut after the second-to-last newline: the last complete line may be the trailer.
        const last = data.lastIndexOf(10)
        const cut = last <= 0 ? -1 : data.lastIndexOf(10, last - 1)
        if (cut < 0) {
          carry = data
          continue
        }
        take(data.subarray(0, cut + 1))
        carry = Buffer.from(data.subarray(cut + 1))
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { ok: false, reason: 'missing', detail: `no snapshot at ${path}` }
      throw err
    }
    // carry now holds the trailer line (and, for a torn file, whatever follows the last newline).
    if (carry.length === 0 && !headerSeen) return { ok: false, reason: 'corrupt', detail: `${path} is empty` }
    const text = carry.toString('utf8')
    const trailerLine = text.endsWith('\n') ? text.slice(0, -1) : text
    let trailer: { rows?: unknown; sha256?: unknown }
    try {
      if (trailerLine.includes('\n')) throw new Error('more than one line')
      trailer = JSON.parse(trailerLine) as { rows?: unknown; sha256?: unknown }
    } catch {
      return { ok: false, reason: 'corrupt', detail: `${path}: the last line is not the content hash (a torn write?)` }
    }
    const actual = hash.digest('hex')
    if (trailer?.sha256 !== actual) return { ok: false, reason: 'corrupt', detail: `${path}: content hash ${actual} does not match the recorded ${String(trailer?.sha256)}` }
    const h = header as SnapshotHeader | null
    if (h === null || typeof h !== 'object') return { ok: false, reason: 'corrupt', detail: `${path}: the header does not parse` }
    if (h.format !== SNAPSHOT_FORMAT || h.store !== store) return { ok: false, reason: 'corrupt', detail: `${path}: format ${h.format} store ${h.store}, expected format ${SNAPSHOT_FORMAT} store ${store}` }
    if (h.schema !== schema) return { ok: false, reason: 'old_schema', detail: `${path}: state schema ${h.schema}, this version reads ${schema}` }
    if (badRow) return { ok: false, reason: 'corrupt', detail: `${path}: a row does not parse` }
    if (rows.length !== trailer.rows) return { ok: false, reason: 'corrupt', detail: `${path}: ${rows.length} rows, the trailer says ${String(trailer.rows)}` }
    return { ok: true, header: h, rows }
  }

  /** Removes the store's snapshot (a test, or an operator forcing a rebuild). */
  async remove(store: string): Promise<void> {
    await unlink(this.pathOf(store)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err
    })
  }
}
