/** Temp dirs and free ports for tests, so suites (and helpers) can run side by side. */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export async function makeTempDir(t: { teardown(fn: () => unknown): void }, prefix = 'svc-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

export { freePort } from '../../bench/freePort.ts'

/** Path of ../shared beside the repository (tapes and references; read-only). */
export const SHARED_DIR = new URL('../../../shared/', import.meta.url).pathname
