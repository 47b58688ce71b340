/** Crash-safe small-file replacement: write a temp file, fsync it, rename over the target, fsync the directory. */
import { open, rename, unlink } from 'node:fs/promises'
import { dirname } from 'node:path'
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
