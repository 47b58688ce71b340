/** Crash-safe small-file replacement: write a temp file, fsync it, rename over the target, fsync the directory. */
import { closeSync, fsync, openSync, unlinkSync, writeSync } from 'node:fs'
import { open, rename, unlink } from 'node:fs/promises'
import { dirname } from 'node:path'
import { promisify } from 'node:util'
import { DATA_FILE_MODE } from './dataModes.ts'

let counter = 0

export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}

/** `mode`: the file's permissions from its first byte (default DATA_FILE_MODE: never readable by others, not even briefly). */
export async function writeFileAtomic(path: string, data: string | Buffer | readonly Buffer[], options: { mode?: number } = {}): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}-${++counter}`
  const fh = await open(tmp, 'w', options.mode ?? DATA_FILE_MODE)
  try {
    // Chunks (a state snapshot) are written one by one: never joined into one buffer.
    if (Array.isArray(data)) for (const chunk of data) await fh.write(chunk)
    else await fh.writeFile(data as string | Buffer)
    await fh.sync()
  } catch (err) {
    await fh.close()
    await unlink(tmp).catch(() => {})
    throw err
  }
  await fh.close()
  await rename(tmp, path)
  await fsyncDir(dirname(path))
}

const fsyncFd = promisify(fsync)

/**
 * The same discipline for a large file produced synchronously (a state snapshot: its rows are serialized in one
 * synchronous pass, so the file is the state at one instant): each chunk is written to the temp file as it is made
 * instead of being held until the end, so the file never sits in memory whole beside the state it is a copy of (the
 * Arena's and the duel's snapshots were ~300 MB of buffers held at once every minute, issue 31). commit() makes it
 * durable and renames it over the target; abort() removes the temp file.
 */
export class AtomicFileWriter {
  private fd: number | null

  private constructor(
    readonly path: string,
    private readonly tmp: string,
    fd: number,
  ) {
    this.fd = fd
  }

  static openSync(path: string, options: { mode?: number } = {}): AtomicFileWriter {
    const tmp = `${path}.tmp-${process.pid}-${++counter}`
    return new AtomicFileWriter(path, tmp, openSync(tmp, 'w', options.mode ?? DATA_FILE_MODE))
  }

  writeSync(chunk: Buffer): void {
    if (this.fd === null) throw new Error(`${this.path}: the write is over`)
    for (let at = 0; at < chunk.length; ) at += writeSync(this.fd, chunk, at, chunk.length - at)
  }

  async commit(): Promise<void> {
    const fd = this.fd
    if (fd === null) throw new Error(`${this.path}: the write is over`)
    try {
      await fsyncFd(fd)
    } catch (err) {
      this.abort()
      throw err
    }
    this.fd = null
    closeSync(fd)
    await rename(this.tmp, this.path)
    await fsyncDir(dirname(this.path))
  }

  /** Closes and removes the temp file (the target is untouched). */
  abort(): void {
    if (this.fd === null) return
    closeSync(this.fd)
    this.fd = null
    try {
      unlinkSync(this.tmp)
    } catch {
      // already gone
    }
  }
}
