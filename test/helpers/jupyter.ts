/**
 * Executes a notebook with Jupyter (nbconvert + ipykernel) and reads back the executed copy. Over TCP the kernel binds
 * ports its manager picked a moment earlier, and another process of a parallel suite can take one in between (zmq
 * "Address already in use": seen in CI twice, once on the retry too), so the kernel talks over IPC sockets: files
 * named by an absolute prefix in this run's output folder (the kernel's working folder differs from ours, so a relative
 * prefix would not meet), no port to race for. The retry stays for a failure to bind those; any other failure is the
 * notebook's.
 */
import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)
const BIND_RACE = /Address already in use/

export async function executeNotebook<N>(o: { python: string; notebook: string; cwd: string; outDir: string; env: NodeJS.ProcessEnv; allowErrors?: boolean }): Promise<N> {
  const args = [
    '-m', 'jupyter', 'nbconvert', '--to', 'notebook', '--execute', '--ExecutePreprocessor.timeout=120',
    '--KernelManager.transport=ipc', `--KernelManager.ip=${join(o.outDir, 'kernel')}`,
    ...(o.allowErrors ? ['--allow-errors'] : []), '--output-dir', o.outDir, '--output', 'out', o.notebook,
  ]
  for (let attempt = 1; ; attempt++) {
    try {
      await run(o.python, args, { cwd: o.cwd, env: o.env })
      break
    } catch (err) {
      const stderr = (err as { stderr?: string }).stderr ?? ''
      if (attempt >= 2 || !BIND_RACE.test(stderr)) throw err
    }
  }
  return JSON.parse(await readFile(join(o.outDir, 'out.ipynb'), 'utf8')) as N
}
