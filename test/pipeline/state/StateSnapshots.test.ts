import t from 'tap'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { StateSnapshots } from '../../../pipeline/state/StateSnapshots.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const POSITIONS = [{ topic: 'a', partition: 0, next: 7 }, { topic: 'a', partition: 1, next: 3 }]

t.test('a written snapshot reads back whole: header positions, schema, rows in order', async (t) => {
  const snapshots = await StateSnapshots.open(await makeTempDir(t))
  const rows = Array.from({ length: 5000 }, (_, i) => ({ id: `r${i}`, n: i, s: 'x'.repeat(i % 300) }))
  const written = await snapshots.write('credits', 3, POSITIONS, rows)
  t.equal(written.rows, 5000)
  const read = await snapshots.read('credits', 3)
  t.ok(read.ok)
  if (!read.ok) return
  t.same(read.header.positions, POSITIONS)
  t.equal(read.header.schema, 3)
  t.same(read.rows, rows)
})

t.test('each refusal says why: missing, old schema, torn, edited, a wrong store', async (t) => {
  const snapshots = await StateSnapshots.open(await makeTempDir(t))
  t.match(await snapshots.read('credits', 1), { ok: false, reason: 'missing' })
  await snapshots.write('credits', 1, POSITIONS, [{ a: 1 }, { a: 2 }])
  t.match(await snapshots.read('credits', 2), { ok: false, reason: 'old_schema' })
  const path = snapshots.pathOf('credits')
  const whole = await readFile(path, 'utf8')
  await writeFile(path, whole.slice(0, whole.length - 20))
  t.match(await snapshots.read('credits', 1), { ok: false, reason: 'corrupt' }, 'a torn write')
  await writeFile(path, whole.replace('{"a":2}', '{"a":3}'))
  t.match(await snapshots.read('credits', 1), { ok: false, reason: 'corrupt' }, 'an edited row fails the content hash')
  await writeFile(path, whole.split('\n').filter((_, i) => i !== 2).join('\n'))
  t.match(await snapshots.read('credits', 1), { ok: false, reason: 'corrupt' }, 'a dropped row')
  await writeFile(path, '')
  t.match(await snapshots.read('credits', 1), { ok: false, reason: 'corrupt' }, 'an empty file')
  await writeFile(path, whole)
  await writeFile(snapshots.pathOf('arena'), whole)
  t.match(await snapshots.read('arena', 1), { ok: false, reason: 'corrupt' }, 'another store’s file')
  t.match(await snapshots.read('credits', 1), { ok: true })
})

t.test('a snapshot larger than a read chunk: rows across chunk boundaries and one row bigger than a chunk read back whole; an edit anywhere is refused', async (t) => {
  const snapshots = await StateSnapshots.open(await makeTempDir(t))
  // About 12 MB: rows of varying length so chunk boundaries fall inside rows, and one 6 MB row (an engine series).
  const rows: unknown[] = Array.from({ length: 40_000 }, (_, i) => ({ id: `r${i}`, text: 'é\n"x'.repeat(i % 97), n: i / 7 }))
  rows.splice(20_000, 0, { big: 'y'.repeat(6 << 20) })
  await snapshots.write('big', 1, POSITIONS, rows)
  const read = await snapshots.read('big', 1)
  t.ok(read.ok, 'read back')
  if (!read.ok) return
  t.equal(read.rows.length, rows.length)
  t.same(read.rows, rows)
  const path = snapshots.pathOf('big')
  const whole = await readFile(path)
  for (const at of [whole.length >> 1, (4 << 20) + 3, whole.length - 200]) {
    const edited = Buffer.from(whole)
    edited[at] = edited[at] === 0x79 ? 0x7a : 0x79
    await writeFile(path, edited)
    t.match(await snapshots.read('big', 1), { ok: false, reason: 'corrupt' }, `a byte changed at ${at}`)
  }
  await writeFile(path, whole.subarray(0, (8 << 20) + 5))
  t.match(await snapshots.read('big', 1), { ok: false, reason: 'corrupt' }, 'torn inside the file')
  await writeFile(path, Buffer.concat([whole, Buffer.from('{"rows":1}\n')]))
  t.match(await snapshots.read('big', 1), { ok: false, reason: 'corrupt' }, 'a line appended after the trailer')
  const lines = whole.toString('utf8').split('\n')
  lines.splice(2, 0, '')
  await writeFile(path, lines.join('\n'))
  t.match(await snapshots.read('big', 1), { ok: false, reason: 'corrupt' }, 'a blank line inserted')
})

t.test('rows are captured before the first await: a state changed while the file is written does not leak in', async (t) => {
  const snapshots = await StateSnapshots.open(await makeTempDir(t))
  const state = [{ n: 1 }, { n: 2 }]
  const writing = snapshots.write('s', 1, POSITIONS, state)
  state.push({ n: 3 })
  await writing
  const read = await snapshots.read('s', 1)
  t.same(read.ok && read.rows, [{ n: 1 }, { n: 2 }])
})

t.test('the file is written while the rows are serialized, not held whole: the temp file grows during the pass, and a row that cannot be serialized leaves the previous snapshot and no temp file', async (t) => {
  const dir = await makeTempDir(t)
  const snapshots = await StateSnapshots.open(dir)
  await snapshots.write('s', 1, POSITIONS, [{ n: 1 }])
  const big = 'x'.repeat(100_000)
  const seen: number[] = []
  function* rows(): Generator<unknown> {
    for (let i = 0; i < 40; i++) yield { i, big }
    // 4 MB serialized by now (several write chunks): already in the temp file.
    seen.push(...readdirSync(dir).filter((f) => f.includes('.tmp-')).map((f) => statSync(join(dir, f)).size))
    yield { bad: 1n }
  }
  await t.rejects(snapshots.write('s', 1, POSITIONS, rows()), /BigInt/)
  t.equal(seen.length, 1, 'one temp file during the pass')
  t.ok(seen[0]! >= 2 * (1 << 20), `it held the chunks cut so far (${seen[0]} bytes)`)
  t.same((await readdir(dir)).filter((f) => f.includes('.tmp-')), [], 'the temp file is removed')
  const read = await snapshots.read('s', 1)
  t.same(read.ok && read.rows, [{ n: 1 }], 'the previous snapshot stays')
})
