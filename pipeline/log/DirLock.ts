/**
 * Exclusive ownership of an embedded log directory: a LOCK file holding the owner's pid.
 * The embedded log is single-process; a second process (or a second open in this process) gets LOG_LOCKED.
 * A lock left by a dead pid (crash, SIGKILL) is taken over with a warning. Known limits: a recycled pid that
 * now belongs to an unrelated live process keeps the lock (remove LOCK by hand), and two processes taking over
 * the same stale lock at the same instant can both succeed.
 * `svc start` also holds its whole data folder with one (cli/commands/start.ts) and frees it with releaseSync() in the
 * same tick as its exit, so no code of the stopping process can run once another instance may own the folder.
 */
import { readFileSync, unlinkSync } from 'node:fs'
import { open, readFile, realpath, rename, unlink, writeFile } from 'node:fs/promises'
import { DATA_FILE_MODE } from './dataModes.ts'
import { hostname } from 'node:os'
import { join } from 'node:path'
import type { Logger } from 'pino'
import { LogError } from './LogError.ts'

const heldInThisProcess = new Set<string>()

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

export class DirLock {
  private released = false

  private constructor(
    readonly path: string,
    private readonly realDir: string,
  ) {}

  /**
   * `refusal`: what the LOG_LOCKED message tells the second process, i.e. what would help; each owner says its own (the
   * default is the embedded log's rule: Kafka shares an event log, but nothing else a folder holds).
   */
  static async acquire(dir: string, log: Logger, refusal = 'the embedded log is single-process: stop that process, or run both on SVC_LOG=kafka to share the event log'): Promise<DirLock> {
    const realDir = await realpath(dir)
    if (heldInThisProcess.has(realDir)) {
      throw new LogError('LOG_LOCKED', `${dir} is already open in this process (${refusal})`)
    }
    const path = join(dir, 'LOCK')
    const content = JSON.stringify({ pid: process.pid, hostname: hostname(), since: new Date().toISOString() }) + '\n'
    heldInThisProcess.add(realDir)
    try {
      try {
        const fh = await open(path, 'wx', DATA_FILE_MODE)
        try {
          await fh.writeFile(content)
          await fh.sync()
        } finally {
          await fh.close()
        }
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
        const holder = await readFile(path, 'utf8').catch(() => '')
        let pid = NaN
        let since = ''
        try {
          const held = JSON.parse(holder) as { pid?: unknown; since?: unknown }
          pid = Number(held.pid)
          if (typeof held.since === 'string') since = ` since ${held.since}`
        } catch {
          // torn lock file from a crash while writing it: stale
        }
        // Our own pid here can only be a previous life of this process id (e.g. pid 1 in a restarted container),
        // because an open in this process is caught by heldInThisProcess above.
        if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) {
          // Which process holds it, and since when, is what the operator acts on (ps -p <pid>).
          throw new LogError('LOG_LOCKED', `${dir} is locked by live process ${pid}${since} (${refusal})`)
        }
        log.warn({ lock: path, stalePid: Number.isNaN(pid) ? null : pid }, 'taking over stale embedded log lock')
        const tmp = `${path}.tmp-${process.pid}`
        await writeFile(tmp, content, { mode: DATA_FILE_MODE })
        await rename(tmp, path)
      }
    } catch (err) {
      heldInThisProcess.delete(realDir)
      throw err
    }
    return new DirLock(path, realDir)
  }

  async release(): Promise<void> {
    if (this.released) return
    this.released = true
    heldInThisProcess.delete(this.realDir)
    const holder = await readFile(this.path, 'utf8').catch(() => '')
    if (holder.includes(`"pid":${process.pid},`)) await unlink(this.path).catch(() => {})
  }

  /**
   * The same, without yielding: called right before process.exit, nothing of this process runs between the lock going
   * and the process ending (an async release would let stray work of a stopping process run beside the next owner).
   */
  releaseSync(): void {
    if (this.released) return
    this.released = true
    heldInThisProcess.delete(this.realDir)
    try {
      if (readFileSync(this.path, 'utf8').includes(`"pid":${process.pid},`)) unlinkSync(this.path)
    } catch {
      // gone already: nothing to free
    }
  }
}
