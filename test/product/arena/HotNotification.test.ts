/**
 * The Arena's hot feed held without per-row copies (issue 31, Bounded memory; product/arena/HotNotification.ts): a row's
 * key is derived unless it came with another one, the key set is a per-payer index of ref → kind bits (otherKeys for the
 * rest), and a payload is held as the shared parts around its quoted ref. What it proves: every key a row came with
 * is held and no other, whatever the row's payer, kind or ref hold ('|', quotes, case); the payload text read back is
 * the text given, byte for byte; a snapshot's rows load back to the same rows and keys; a row leaving the window
 * (eviction) leaves the key set.
 */
import t from 'tap'
import { ArenaProjection } from '../../../product/arena/ArenaProjection.ts'
import { HotNotification } from '../../../product/arena/HotNotification.ts'
import type { NotificationRow } from '../../../pipeline/records/notificationRecord.ts'

const A = '0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'
const B = '0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'
const T0 = Date.UTC(2026, 6, 1)
const iso = (ms: number) => new Date(ms).toISOString()

function row(payer: string, id: number, kind: string, ref: string, payload: Record<string, unknown>, at = T0, key = `${kind}|${ref}|${payer}`): NotificationRow {
  return { key, payer, id, kind, ref, payload, created_at: iso(at) }
}

const rows: NotificationRow[] = [
  row(A, 1, 'call_resolved', 'call_1', { asset: 'BTC', call: 'up', call_id: 'call_1', correct: true, xp: 10 }),
  row(A, 2, 'streak_extended', 'call_1', { streak: 2 }),
  // The ref twice in the payload, a ref needing escapes, an empty ref, a ref holding '|'.
  row(A, 3, 'call_resolved', 'call_2', { a: 'call_2', b: 'call_2' }),
  row(A, 4, 'badge_earned', 'say "hi"\\', { badge: 'say "hi"\\', title: 'x' }),
  row(A, 5, 'rank_up', '', { rank: '', xp: 1 }),
  row(A, 6, 'quest_complete', 'q|2026-07-01', { quest: 'q', period_key: '2026-07-01' }),
  // A kind the Arena does not write, and a key that is not kind|ref|payer: held as they came.
  row(A, 7, 'custom_kind', 'r1', { n: 1 }),
  row(A, 8, 'call_resolved', 'call_3', { call_id: 'call_3' }, T0, 'some-other-key'),
  // A payer given in upper case: the feed is the lower-cased payer's, the row keeps its own payer and key.
  row(B.toUpperCase().replace('0X', '0x'), 1, 'call_resolved', 'call_4', { call_id: 'call_4' }),
]

function loaded(): ArenaProjection {
  const p = new ArenaProjection()
  for (const r of rows) p.applyNotification(structuredClone(r))
  return p
}

t.test('every key a row came with is held, and no other', async (t) => {
  const p = loaded()
  for (const r of rows) t.ok(p.hasNotification(r.key), `held: ${r.key}`)
  const a = p.peek(A)!
  t.ok(p.holdsNotification(a, 'call_resolved', 'call_1'))
  t.ok(p.holdsNotification(a, 'streak_extended', 'call_1'))
  t.notOk(p.holdsNotification(a, 'streak_ended', 'call_1'), 'another kind of the same ref')
  t.ok(p.holdsNotification(a, 'quest_complete', 'q|2026-07-01'))
  t.ok(p.holdsNotification(a, 'custom_kind', 'r1'), 'a kind outside the closed set')
  t.notOk(p.holdsNotification(a, 'call_resolved', 'call_3'), 'a row held under another key is not held under the derived one')
  for (const k of [`call_resolved|call_3|${A}`, `call_resolved|call_1|${B}`, 'call_resolved|call_1', 'call_resolved', '', `x|call_1|${A}`, `quest_complete|q|${A}`, `call_resolved|call_4|${B}`]) {
    t.notOk(p.hasNotification(k), `not held: ${JSON.stringify(k)}`)
  }
  // A copy of a held row is skipped (the journal identity), under a derived key or another.
  const before = p.peek(A)!.notifications.length
  p.applyNotification(row(A, 9, 'call_resolved', 'call_1', { other: true }))
  p.applyNotification(row(A, 9, 'call_resolved', 'call_9', {}, T0, 'some-other-key'))
  t.equal(p.peek(A)!.notifications.length, before, 'copies skipped')
})

t.test('the payload text and the row read back are the ones given', async (t) => {
  const p = loaded()
  const held = [...p.peek(A)!.notifications, ...p.peek(B)!.notifications]
  t.equal(held.length, rows.length)
  for (const r of rows) {
    const n = held.find((x) => x.key === r.key)!
    t.equal(n.payloadText, JSON.stringify(r.payload), `payload text of ${r.key}`)
    t.same(n.payload, r.payload)
    t.same(JSON.parse(JSON.stringify(n)), r, `the row of ${r.key}`)
  }
  const direct = new HotNotification(A, 1, 'k', 'ab', '{"x":"ab","y":"ab"}', iso(T0))
  t.equal(direct.payloadText, '{"x":"ab","y":"ab"}')
})

t.test("a snapshot's rows load back to the same rows and keys", async (t) => {
  const p = loaded()
  const snap = JSON.parse(JSON.stringify([...p.rows()])) as unknown[]
  const q = new ArenaProjection()
  q.load(snap)
  t.same(JSON.parse(JSON.stringify([...q.rows()])), snap, 'the same rows written back')
  for (const r of rows) t.ok(q.hasNotification(r.key), `held after the load: ${r.key}`)
  t.notOk(q.hasNotification(`call_resolved|call_3|${A}`))
  for (const payer of [A, B]) t.same(JSON.parse(JSON.stringify(q.peek(payer)!.notifications)), JSON.parse(JSON.stringify(p.peek(payer)!.notifications)))
})

t.test('a row leaving the window leaves the key set', async (t) => {
  const DAY = 86_400_000
  const p = new ArenaProjection({ hotWindowMs: DAY })
  p.applyNotification(row(A, 1, 'call_resolved', 'call_old', { call_id: 'call_old' }, T0))
  p.applyNotification(row(A, 2, 'streak_extended', 'call_old', { streak: 2 }, T0 + 3 * DAY))
  p.applyNotification(row(A, 3, 'custom_kind', 'old', {}, T0))
  // A grade three days on moves the window past the first and third rows.
  p.applyGraded({ call_id: 'c', payer: A, graded_at: iso(T0 + 3 * DAY), status: 'graded', correct: false } as never)
  p.trim()
  t.same(p.peek(A)!.notifications.map((n) => n.id), [2], 'the old rows left memory')
  t.notOk(p.hasNotification(`call_resolved|call_old|${A}`), "the old row's key left")
  t.notOk(p.hasNotification(`custom_kind|old|${A}`), "the other key left")
  t.ok(p.hasNotification(`streak_extended|call_old|${A}`), 'the kept row of the same ref stays')
})
