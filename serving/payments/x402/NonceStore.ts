/**
 * The durable set of used EIP-3009 authorizations, keyed by (lowercase from, lowercase nonce).
 *
 * x402-v2.md §8.8: "keep a durable set keyed by (lowercase(from), lowercase(nonce)); reject repeats. Insert
 * atomically before doing paid work. Entries may be dropped once validBefore + skew has passed (the token rejects
 * expired authorizations)." Spec (Authentication 2.4): "A replayed one-time nonce gives 402 PAYMENT_REPLAYED".
 *
 * Layout: one append-only file `x402-nonces.log`, one line per use: `<from> <nonce> <validBefore>\n`. An insert
 * claims the key in memory synchronously (so of two concurrent requests with one nonce exactly one wins), then
 * resolves only after its line is on disk (write + fdatasync, group-committed across concurrent inserts). A crash
 * after the claim and before settlement therefore leaves the nonce used: it is never reusable, and never charged.
 * open() rewrites the file without expired entries and without a torn last line (write temp, fsync, rename, fsync dir).
 * One process owns a data dir.
 */
import { mkdir, open, rename, readFile, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { GroupCommitQueue } from '../../../pipeline/work/GroupCommitQueue.ts'

export const NONCE_FILE = 'x402-nonces.log'
/** Entries outlive validBefore by this much (clock skew between us, the facilitator and the chain). */
export const DEFAULT_SKEW_S = 300

export interface NonceStoreOptions {
  dir: string
  /** Epoch milliseconds. */
  now: () => number
  skewSeconds?: number
  /** Prune expired entries from memory once this many are held (the file is compacted on the next open). */
  pruneAt?: number
}

export class NonceStore {
  /** Group commit: every line queued while a sync runs goes out in the next single write + fdatasync. */
  private readonly lines = new GroupCommitQueue<string>({ maxBytes: Number.POSITIVE_INFINITY, flush: (lines) => this.flush(lines) })
  private closed = false

  private constructor(
    private readonly fh: FileHandle,
    private readonly entries: Map<string, bigint>,
    private readonly now: () => number,
    private readonly skew: bigint,
    private readonly pruneAt: number,
  ) {}

  static async open(opts: NonceStoreOptions): Promise<NonceStore> {
    await mkdir(opts.dir, { recursive: true })
    const path = join(opts.dir, NONCE_FILE)
    const skew = BigInt(opts.skewSeconds ?? DEFAULT_SKEW_S)
    const entries = await load(path)
    const nowS = BigInt(Math.floor(opts.now() / 1000))
    for (const [k, vb] of entries) if (vb + skew < nowS) entries.delete(k)
    await compact(opts.dir, path, entries)
    const fh = await open(path, 'a')
    return new NonceStore(fh, entries, opts.now, skew, opts.pruneAt ?? 100_000)
  }

  get size(): number {
    return this.entries.size
  }

  has(from: string, nonce: string): boolean {
    return this.entries.has(key(from, nonce))
  }

  /**
   * Claims (from, nonce). true: first use, durable on disk when the promise resolves. false: already used.
   * A failed write rejects and leaves the key claimed in this process (it is never handed out twice).
   */
  async insert(from: string, nonce: string, validBefore: bigint): Promise<boolean> {
    if (this.closed) throw new Error('NonceStore is closed')
    const k = key(from, nonce)
    if (this.entries.has(k)) return false
    this.entries.set(k, validBefore)
    if (this.entries.size >= this.pruneAt) this.prune()
    const line = `${k.replace(':', ' ')} ${validBefore}\n`
    await this.lines.enqueue(line, line.length)
    return true
  }

  /** Drops entries whose validBefore + skew has passed from memory. */
  prune(): number {
    const nowS = BigInt(Math.floor(this.now() / 1000))
    let n = 0
    for (const [k, vb] of this.entries) {
      if (vb + this.skew < nowS) {
        this.entries.delete(k)
        n++
      }
    }
    return n
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.lines.drained()
    await this.fh.close()
  }

  private async flush(lines: string[]): Promise<void> {
    await this.fh.write(lines.join(''))
    await this.fh.datasync()
  }
}

function key(from: string, nonce: string): string {
  return `${from.toLowerCase()}:${nonce.toLowerCase()}`
}

const LINE = /^(0x[0-9a-f]{40}) (0x[0-9a-f]{64}) ([0-9]+)$/

async function load(path: string): Promise<Map<string, bigint>> {
  const entries = new Map<string, bigint>()
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return entries
    throw err
  }
  const lines = text.split('\n')
  // The last element is '' after a complete file, or a torn line after a crash mid-write: either way not an entry.
  lines.pop()
  lines.forEach((line, i) => {
    const m = LINE.exec(line)
    if (!m) throw new Error(`${path}:${i + 1}: corrupt nonce entry`)
    entries.set(`${m[1]}:${m[2]}`, BigInt(m[3]!))
  })
  return entries
}

async function compact(dir: string, path: string, entries: Map<string, bigint>): Promise<void> {
  const tmp = `${path}.tmp`
  const fh = await open(tmp, 'w')
  try {
    let body = ''
    for (const [k, vb] of entries) body += `${k.replace(':', ' ')} ${vb}\n`
    await fh.write(body)
    await fh.sync()
  } finally {
    await fh.close()
  }
  await rename(tmp, path)
  const d = await open(dir, 'r')
  try {
    await d.sync()
  } finally {
    await d.close()
  }
}
