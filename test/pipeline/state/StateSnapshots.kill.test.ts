/**
 * SIGKILL during a snapshot write leaves the previous snapshot whole and used (issue 31): a child process writes a
 * ~35 MB snapshot over and over; it is killed while a temp file is being written; the snapshot read afterwards is the
 * last one the child reported durable (or the one whose rename had just landed), with every row, and a start would
 * restore from it.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'
import { StateSnapshots } from '../../../pipeline/state/StateSnapshots.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const REPO = new URL('../../../', import.meta.url).pathname

t.test('SIGKILL mid-write: the previous snapshot stays whole and is the one read', async (t) => {
  const dir = await makeTempDir(t, 'svc-state-kill-')
  const child = spawn(process.execPath, ['--import', 'tsx', join(REPO, 'test/fixtures/state-snapshot-writer.ts'), dir], { cwd: REPO, stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(() => void child.kill('SIGKILL'))
  let durable = 0
  createInterface({ input: child.stdout! }).on('line', (line) => (durable = Number(line.split(' ')[1])))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  for (let i = 0; i < 6000 && durable < 2; i++) await sleep(5)
  t.ok(durable >= 2, 'the child wrote snapshots')
  // Kill while a temp file is partly written (not yet renamed).
  let killedMidWrite = false
  for (let i = 0; i < 20000 && !killedMidWrite; i++) {
    const tmp = (await readdir(dir)).find((f) => f.includes('.tmp-'))
    if (tmp) {
      const size = await stat(join(dir, tmp)).then((s) => s.size, () => 0)
      if (size > 1_000_000) {
        child.kill('SIGKILL')
        killedMidWrite = true
      }
    }
    if (!killedMidWrite) await sleep(1)
  }
  await exited
  t.ok(killedMidWrite, 'killed while a snapshot file was being written')
  const read = await (await StateSnapshots.open(dir)).read('big', 1)
  t.equal(read.ok, true, 'the snapshot in place reads whole (hash and row count check out)')
  if (!read.ok) return
  const next = read.header.positions[0]!.next
  t.ok(next === durable || next === durable + 1, `it is the previous snapshot (next ${next}; last reported durable ${durable})`)
  t.equal(read.rows.length, 150_000, 'with every row')
})
