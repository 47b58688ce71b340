/**
 * Exclusive ownership of an embedded log directory: a LOCK file holding the owner's pid.
 * The embedded log is single-process; a second process (or a second open in this process) gets LOG_LOCKED.
 * A lock left by a dead pid (crash, SIGKILL) is taken over with a warning. Known limits: without /proc, a recycled
 * pid that now belongs to an unrelated live process keeps the lock (remove LOCK by hand), and two processes taking
 * over the same stale lock at the same instant can both succeed.
 * `svc start` also holds its whole data folder with one (cli/commands/start.ts) and marks it released with releaseSync()
 * in its exit handler. A released lock still names its pid, and the next owner takes it only once that process is gone
 * (waiting up to RELEASE_WAIT_MS for it): after the exit handler the process still tears down natively (worker threads,
 * DuckDB's destructors), so unlinking the file there let a second instance in while the first was still ending.
 * A pid is matched with its process start time where /proc has it, so a pid recycled by an unrelated process does not
 * hold a lock its previous owner released or left.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs'
import { open, readFile, realpath, rename, unlink, writeFile } from 'node:fs/promises'
import { DATA_FILE_MODE } from './dataModes.ts'
import { hostname } from 'node:os'
import { join } from 'node:path'
import type { Logger } from 'pino'
import { setTimeout as sleep } from 'node:timers/promises'
import { LogError } from './LogError.ts'

const heldInThisProcess = new Set<string>()

/** How long an acquire waits for the process that released a lock to end before refusing. */
export const RELEASE_WAIT_MS = 10_000
const RELEASE_POLL_MS = 20

/**
 * The kernel's start time of a process (clock ticks since boot, /proc/<pid>/stat field 22), or null where /proc does
 * not say. With the pid it names one process for good: a recycled pid has another start time.
 */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name (field 2) is in parentheses and may hold spaces: the fields that count follow its last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null
  } catch {
    return null
  }
}

interface Holder {
  pid: number
  /** processStartTime of the holder when it wrote the lock (absent in locks written before it was recorded). */
  started?: string | null
  since?: string
  /** Set by releaseSync: the holder is ending and wants no more of the folder. */
  released?: string
}

/** Whether the process that wrote `holder` still exists (a zombie counts: it is not reaped yet). */
function isAlive(holder: Holder): boolean {
  try {
    process.kill(holder.pid, 0)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false
  }
  if (!holder.started) return true
  const now = processStartTime(holder.pid)
  return now === null || now === holder.started
}

function parseHolder(text: string): Holder | null {
  try {
    const held = JSON.parse(text) as Partial<Holder>
    const pid = Number(held.pid)
    if (!Number.isInteger(pid) || pid <= 0) return null
    return { pid, started: typeof held.started === 'string' ? held.started : null, since: typeof held.since === 'string' ? held.since : undefined, released: typeof held.released === 'string' ? held.released : undefined }
  } catch {
    return null // torn lock file from a crash while writing it: stale
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
  static async acquire(dir: string, log: Logger, refusal = 'the embedded log is single-process: stop that process, or run both on SVC_LOG=kafka to share the event log', releaseWaitMs = RELEASE_WAIT_MS): Promise<DirLock> {
    const realDir = await realpath(dir)
    if (heldInThisProcess.has(realDir)) {
      throw new LogError('LOG_LOCKED', `${dir} is already open in this process (${refusal})`)
    }
    const path = join(dir, 'LOCK')
    const content = JSON.stringify({ pid: process.pid, hostname: hostname(), since: new Date().toISOString(), started: processStartTime(process.pid) }) + '\n'
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
        let holder = parseHolder(await readFile(path, 'utf8').catch(() => ''))
        // A holder that released the lock is ending: wait for it to be gone rather than refuse a restart.
        for (const until = Date.now() + releaseWaitMs; holder?.released && holder.pid !== process.pid && isAlive(holder) && Date.now() < until; ) {
          await sleep(RELEASE_POLL_MS)
          holder = parseHolder(await readFile(path, 'utf8').catch(() => ''))
        }
        // Our own pid here can only be a previous life of this process id (e.g. pid 1 in a restarted container),
        // because an open in this process is caught by heldInThisProcess above.
        if (holder && holder.pid !== process.pid && isAlive(holder)) {
          // Which process holds it, and since when, is what the operator acts on (ps -p <pid>).
          const state = holder.released ? ` (released at ${holder.released}, still exiting after ${releaseWaitMs} ms)` : holder.since ? ` since ${holder.since}` : ''
          throw new LogError('LOG_LOCKED', `${dir} is locked by live process ${holder.pid}${state} (${refusal})`)
        }
        if (holder?.released) log.debug({ lock: path, releasedBy: holder.pid }, 'taking over a lock its exited owner released')
        else log.warn({ lock: path, stalePid: holder?.pid ?? null }, 'taking over stale embedded log lock')
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
   * Marks the lock released without yielding, from the exit handler: the pid stays in it, so the next owner takes the
   * folder only once this process is gone (acquire waits for it), not while its native teardown still runs.
   */
  releaseSync(): void {
    if (this.released) return
    this.released = true
    heldInThisProcess.delete(this.realDir)
    try {
      const holder = parseHolder(readFileSync(this.path, 'utf8'))
      if (holder?.pid !== process.pid) return
      // Whole or not at all (a torn file would read as a stale lock to an instance starting now).
      const tmp = `${this.path}.tmp-${process.pid}`
      writeFileSync(tmp, JSON.stringify({ ...holder, hostname: hostname(), released: new Date().toISOString() }) + '\n', { mode: DATA_FILE_MODE })
      renameSync(tmp, this.path)
    } catch {
      // gone already: nothing to free
    }
  }
}
