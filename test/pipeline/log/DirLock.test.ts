/**
 * DirLock's release: a lock its owner released in its exit handler still names that pid, and the next owner takes the
 * folder only once that process is gone (issue 31: "only then does another instance get the data folder"); a pid
 * recycled by another process (another start time in /proc) does not hold the lock.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import pino from 'pino'
import { DirLock, processStartTime } from '../../../pipeline/log/DirLock.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const log = pino({ level: 'silent' })
const holderOf = async (dir: string) => JSON.parse(await readFile(join(dir, 'LOCK'), 'utf8')) as { pid: number; released?: string; started?: string | null }

/** A process that runs until it is killed; resolves its exit time once it has exited. */
function sleeper() {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' })
  const exited = new Promise<number>((resolve) => child.on('exit', () => resolve(Date.now())))
  return { child, pid: child.pid!, exited }
}

t.test('the lock names this process with its start time, and releaseSync marks it released without freeing the pid', async (t) => {
  const dir = await makeTempDir(t, 'svc-dirlock-')
  const lock = await DirLock.acquire(dir, log)
  const held = await holderOf(dir)
  t.equal(held.pid, process.pid, 'the owner pid')
  t.equal(held.started, processStartTime(process.pid), 'its start time, from /proc')
  t.match(processStartTime(process.pid), /^\d+$/, 'which this machine has')
  lock.releaseSync()
  const released = await holderOf(dir)
  t.equal(released.pid, process.pid, 'still names the pid after release')
  t.ok(released.released, 'and says when it was released')
  // This process is alive and released the lock: another acquire here (a previous life of this pid) takes it.
  const again = await DirLock.acquire(dir, log)
  t.equal((await holderOf(dir)).released, undefined, 'retaken by the next owner, no longer released')
  await again.release()
})

t.test('a released lock of a process still exiting: the next acquire waits for the exit, then owns the folder', async (t) => {
  const dir = await makeTempDir(t, 'svc-dirlock-wait-')
  const ending = sleeper()
  t.teardown(() => void ending.child.kill('SIGKILL'))
  await writeFile(join(dir, 'LOCK'), JSON.stringify({ pid: ending.pid, hostname: 'h', since: 'then', started: processStartTime(ending.pid), released: new Date().toISOString() }))
  setTimeout(() => ending.child.kill('SIGTERM'), 400)
  const acquiring = DirLock.acquire(dir, log, 'test', 5_000)
  const lock = await acquiring
  const ownedAt = Date.now()
  const exitedAt = await ending.exited
  t.ok(ownedAt >= exitedAt, `owned ${ownedAt - exitedAt} ms after the releasing process exited, not before`)
  t.equal((await holderOf(dir)).pid, process.pid, 'then it is ours')
  await lock.release()
})

t.test('a released lock of a process that does not end within the wait is refused, naming it', async (t) => {
  const dir = await makeTempDir(t, 'svc-dirlock-stuck-')
  const stuck = sleeper()
  t.teardown(() => void stuck.child.kill('SIGKILL'))
  await writeFile(join(dir, 'LOCK'), JSON.stringify({ pid: stuck.pid, hostname: 'h', since: 'then', started: processStartTime(stuck.pid), released: 'now' }))
  await t.rejects(DirLock.acquire(dir, log, 'test', 300), { code: 'LOG_LOCKED', message: new RegExp(`live process ${stuck.pid} \\(released at now, still exiting after 300 ms\\)`) })
})

t.test('a live lock is refused; the same pid with another start time (recycled) is stale and taken over', async (t) => {
  const dir = await makeTempDir(t, 'svc-dirlock-recycled-')
  const other = sleeper()
  t.teardown(() => void other.child.kill('SIGKILL'))
  await writeFile(join(dir, 'LOCK'), JSON.stringify({ pid: other.pid, hostname: 'h', since: 'then', started: processStartTime(other.pid) }))
  await t.rejects(DirLock.acquire(dir, log, 'test', 300), { code: 'LOG_LOCKED', message: new RegExp(`live process ${other.pid} since then`) })
  await writeFile(join(dir, 'LOCK'), JSON.stringify({ pid: other.pid, hostname: 'h', since: 'then', started: '1' }))
  const lock = await DirLock.acquire(dir, log, 'test', 300)
  t.equal((await holderOf(dir)).pid, process.pid, 'a pid now running another process does not hold the lock')
  await lock.release()
})
