/**
 * A 32-byte deployment secret kept in a file of the data folder (mode 0600 in a 0700 folder): made once, read at every
 * start, so what it authenticates (sign-in nonces) outlives a restart.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, readFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { writeFileAtomic } from '../pipeline/log/atomicFile.ts'

export async function secretKeyFile(path: string): Promise<Buffer> {
  try {
    const key = Buffer.from((await readFile(path, 'utf8')).trim(), 'base64')
    if (key.length !== 32) throw new Error(`${path} does not hold a 32-byte key (base64)`)
    return key
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    const key = randomBytes(32)
    await mkdir(dirname(path), { recursive: true, mode: 0o700 })
    await writeFileAtomic(path, key.toString('base64'), { mode: 0o600 })
    return key
  }
}
