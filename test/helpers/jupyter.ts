/**
 * Executes a notebook with Jupyter (nbconvert + ipykernel) and reads back the executed copy. The kernel binds the ports
 * its manager picked a moment earlier; another process of a parallel suite can take one in between (zmq "Address
 * already in use", seen in CI), so that one failure is retried once; any other failure is the notebook's.
 */
import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)
const PORT_RACE = /Address already in use/

export async function executeNotebook<N>(o: { python: string; notebook: string; cwd: string; outDir: string; env: NodeJS.ProcessEnv; allowErrors?: boolean }): Promise<N> {
  const args = [
    '-m', 'jupyter', 'nbconvert', '--to', 'notebook', '--execute', '--ExecutePreprocessor.timeout=120',
    ...(o.allowErrors ? ['--allow-errors'] : []), '--output-dir', o.outDir, '--output', 'out', o.notebook,
  ]
  for (let attempt = 1; ; attempt++) {
    try {
      await run(o.python, args, { cwd: o.cwd, env: o.env })
      break
    } catch (err) {
      const stderr = (err as { stderr?: string }).stderr ?? ''
      if (attempt >= 2 || !PORT_RACE.test(stderr)) throw err
    }
  }
  return JSON.parse(await readFile(join(o.outDir, 'out.ipynb'), 'utf8')) as N
}
