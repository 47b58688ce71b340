/**
 * Read marks folded in either order against the notifications they name (issue 32: a replica reads the
 * arena.settings and arena.notifications journals apart, so it may read a payer's mark before the rows it covers).
 * The mark is written by the payer's owner over the ids it held (Arena.markRead); folded before those rows, it used to
 * be clamped to the newest id the replica had applied and lost, so the replica's unread count and read_at differed
 * from the owner's until it restarted. What it proves: a projection that reads every mark first ends in the same
 * state (snapshot rows, unread counts, read_at of every row, what a new mark would change) as one that reads them in
 * journal order, and a mark naming rows not read yet never makes the unread count negative.
 */
import t from 'tap'
import { ArenaProjection } from '../../../product/arena/ArenaProjection.ts'
import type { NotificationRow } from '../../../pipeline/records/notificationRecord.ts'
import type { ArenaSettingRow } from '../../../pipeline/records/arenaSettingRecord.ts'

const A = '0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'
const T0 = Date.UTC(2026, 6, 1)
const iso = (ms: number) => new Date(ms).toISOString()

const note = (id: number): NotificationRow => ({ key: `call_resolved|call_${id}|${A}`, payer: A, id, kind: 'call_resolved', ref: `call_${id}`, payload: { call_id: `call_${id}` }, created_at: iso(T0 + id * 60_000) })
const mark = (n: number, m: { ids?: number[]; through?: number }): ArenaSettingRow => ({
  id: `as_${n}`, payer: A, kind: 'read', value: null, preferences: null, ids: m.ids ?? null, through: m.through ?? null, created_at: iso(T0 + 3600_000 + n * 1000),
})

// The journals as the owner wrote them: rows 1-6, a mark of row 5 by id, all read through 4, rows 7-8, row 8 by id.
const notes = [1, 2, 3, 4, 5, 6, 7, 8].map(note)
const marks = [mark(1, { ids: [5] }), mark(2, { through: 4 }), mark(3, { ids: [8] })]
const inJournalOrder: Array<NotificationRow | ArenaSettingRow> = [...notes.slice(0, 6), marks[0]!, marks[1]!, ...notes.slice(6), marks[2]!]

function fold(records: ReadonlyArray<NotificationRow | ArenaSettingRow>): ArenaProjection {
  const p = new ArenaProjection()
  for (const r of records) {
    if ('kind' in r && 'through' in r) p.applySetting(structuredClone(r))
    else p.applyNotification(structuredClone(r as NotificationRow))
  }
  return p
}

async function view(p: ArenaProjection) {
  const page = await p.notifications(A, { limit: 50 })
  return {
    rows: JSON.parse(JSON.stringify([...p.rows()])),
    unread: p.markable(A, null).count,
    readAt: Object.fromEntries(page.notifications.map((n) => [n.id, n.read_at])),
    markable: p.markable(A, [1, 2, 3, 4, 5, 6, 7, 8]).ids,
  }
}

t.test('marks read before their notifications end in the state of the journal order', async (t) => {
  const owner = await view(fold(inJournalOrder))
  t.equal(owner.unread, 2, 'rows 6 and 7 unread on the owner')
  t.same(owner.markable, [6, 7])
  t.same(owner.readAt, { 1: marks[1]!.created_at, 2: marks[1]!.created_at, 3: marks[1]!.created_at, 4: marks[1]!.created_at, 5: marks[0]!.created_at, 6: null, 7: null, 8: marks[2]!.created_at })

  const marksFirst = await view(fold([...marks, ...notes]))
  t.same(marksFirst, owner, 'every mark read first: the same state, counts and read_at')
  // One payer's marks sit on one partition, so they keep their own order; only the two journals interleave.
  const interleaved = await view(fold([notes[0]!, marks[0]!, notes[1]!, marks[1]!, marks[2]!, ...notes.slice(2)]))
  t.same(interleaved, owner, 'marks read between the rows: the same')
})

t.test('a mark naming rows not applied yet never counts them', async (t) => {
  const p = fold([mark(1, { through: 4 }), mark(2, { ids: [6] }), note(1), note(2)])
  t.equal(p.markable(A, null).count, 0, 'both applied rows are read, the rest not counted (not negative)')
  p.applyNotification(note(3))
  p.applyNotification(note(4))
  p.applyNotification(note(5))
  t.equal(p.markable(A, null).count, 1, 'row 5 alone is unread')
  p.applyNotification(note(6))
  t.equal(p.markable(A, null).count, 1, 'row 6 arrives read')
  const page = await p.notifications(A, { limit: 50 })
  t.same(page.notifications.filter((n) => n.read_at === null).map((n) => n.id), [5])
})
