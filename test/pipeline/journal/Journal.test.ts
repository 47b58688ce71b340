import t from 'tap'
import { Type } from '../../../common/schema.ts'
import { Journal } from '../../../pipeline/journal/Journal.ts'
import { JournalDef } from '../../../pipeline/journal/JournalDef.ts'
import { forEachLog } from '../../helpers/logs.ts'

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
