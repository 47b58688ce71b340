import t from 'tap'
import { Type } from '../../../common/schema.ts'
import { Journal } from '../../../pipeline/journal/Journal.ts'
import { JournalDef } from '../../../pipeline/journal/JournalDef.ts'
import { forEachLog, makeEmbeddedFactory } from '../../helpers/logs.ts'

const NOTES = new JournalDef({
  name: 'test.notes',
  schema: Type.Object({ id: Type.String(), seq: Type.Integer(), body: Type.String() }, { additionalProperties: false }),
  key: () => 'one-stream',
  id: (r) => r.id,
  time: (r) => r.seq,
  table: { rows: 'test_note_rows', dir: 'test.notes' },
})

// A catch-up writes a thousand decisions in one append; Kafka refuses a request over message.max.bytes (1 MiB by
// default), so the journal cuts it into sends of at most 256 KiB and reports each durable prefix as it lands.
t.test('an append larger than a broker request goes out in order, in several sends, reporting what is durable', (t) =>
  forEachLog(t, async (t, makeLog) => {
    const log = await makeLog()
    const journal = await Journal.open({ log, def: NOTES, partitions: 1 })
    const total = 1500
    const notes = Array.from({ length: total }, (_, seq) => ({ id: `n${seq}`, seq, body: 'x'.repeat(1000) }))
    const reported: number[] = []
    await journal.append(notes, (durable) => reported.push(durable))
    t.ok(reported.length >= 6, `1.5 MB went out in ${reported.length} sends`)
    t.same(reported, [...reported].sort((a, b) => a - b), 'durable prefixes only grow')
    t.equal(reported.at(-1), total, 'the last report covers every record')

    const read: number[] = []
    const follower = await journal.follow('notes-reader', (r) => read.push(r.seq))
    await follower.stop()
    t.same(read, notes.map((n) => n.seq), 'every record once, in append order')

    const bad = [{ id: 'ok', seq: 0, body: '' }, { id: 'bad', seq: -1.5, body: '' }]
    await t.rejects(journal.append(bad), /seq/, 'a bad record names its field')
    const after: number[] = []
    const again = await journal.follow('notes-reader-2', (r) => after.push(r.seq))
    await again.stop()
    t.equal(after.length, total, 'and nothing of that append was sent')
    await journal.close()
  }),
)

// The catch-up deadline is a stall, not a total: a follower reading a long journal steadily is not cut off (the
// Arena's notifications at 365 days and a million calls took longer than the 120 s total it used to be).
t.test('a follower that keeps reading is not cut off by its catch-up deadline, however long the whole read takes', async (t) => {
  const { makeLog } = await makeEmbeddedFactory(t, { maxBatchRecords: 10 })
  const writer = await makeLog()
  const notes = Array.from({ length: 40 }, (_, seq) => ({ id: `n${seq}`, seq, body: '' }))
  await (await Journal.open({ log: writer, def: NOTES, partitions: 1 })).append(notes)
  await writer.close()
  // Reopened, so the follower reads its batches from disk, one I/O turn apart, as a restart does.
  const log = await makeLog()
  const journal = await Journal.open({ log, def: NOTES, partitions: 1 })
  const read: number[] = []
  const started = Date.now()
  const follower = await journal.follow(
    'slow-reader',
    (r) => {
      read.push(r.seq)
      const until = Date.now() + 20
      while (Date.now() < until); // a slow fold: 20 ms a record, 200 ms a batch of 10
    },
    { catchUpTimeoutMs: 300 },
  )
  const took = Date.now() - started
  await follower.stop()
  t.ok(took > 600, `the whole read took ${took} ms, more than twice the 300 ms deadline`)
  t.same(read, notes.map((n) => n.seq), 'and the follower read every record, in order')
  await journal.close()
})
