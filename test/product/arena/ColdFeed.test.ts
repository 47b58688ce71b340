/**
 * The Arena's notification feed bounded (issue 31, Bounded memory) over real parts on one EmbeddedLog: the real Parquet
 * sink sealing the Arena's journals, the record's DuckDB over the catalog's views, and an Arena whose hot window is
 * two days of event time, served over real HTTP on 127.0.0.1.
 *
 * What it proves: once newer grades push a payer's notifications out of the window they leave memory (only while the
 * sink is sealing), and walking the feed page by page (the inbox, then every history page) answers the same items, in
 * the same order with the same read_at and unread_count, read back from Parquet; a mark by id on a notification that
 * left memory and a mark of every one give the state an Arena holding the whole feed gives; the live stream catches up
 * from an old cursor through the cold rows; a restart from the snapshot answers the same; the feed's part of the
 * snapshot stays flat as notifications grow.
 */
import t from 'tap'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { Pipeline } from '../../../pipeline/Pipeline.ts'
import { StateSnapshots } from '../../../pipeline/state/StateSnapshots.ts'
import { topicNames, topicSpecs } from '../../../pipeline/topics.ts'
import { Arena } from '../../../product/arena/Arena.ts'
import { ArenaProjection } from '../../../product/arena/ArenaProjection.ts'
import { encodeCursor } from '../../../common/Cursor.ts'
import type { StreamEvent } from '../../../common/EventStream.ts'
import { RecordDb } from '../../../record/RecordDb.ts'
import { Catalog } from '../../../sql/Catalog.ts'
import { TestCallEvents, TestClock } from '../../helpers/callEvents.ts'
import { jsonCaller, withServer } from '../../helpers/serving/server.ts'
import { readSnapshot } from '../../helpers/stateSnapshots.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const A = '0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'
const B = '0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'
const H = 3_600_000
const DAY = 24 * H
const WINDOW = 2 * DAY
const T0 = Date.UTC(2026, 6, 1)

const dataDir = await makeTempDir(t, 'svc-cold-feed-')
await Catalog.apply(dataDir)
const names = topicNames()
const log = await EmbeddedLog.open(join(dataDir, 'log'))
await log.ensureTopics(topicSpecs(names, 3))
const pipeline = await Pipeline.start({ dataDir, log, names, partitions: 3, startSink: false, sink: { maxAgeMs: 0, checkIntervalMs: 0 } })
const db = await RecordDb.open(dataDir)
const snapshots = await StateSnapshots.open(await makeTempDir(t, 'svc-cold-feed-state-'))
const clock = new TestClock(T0)
const events = new TestCallEvents(WINDOW)
const open = () => Arena.open({ log, clock, events, partitions: 3, hotWindowMs: WINDOW, cold: db, evictable: () => pipeline.sealing, checkpoints: { snapshots, everyMs: 0 } })
let arena = await open()
let server = await withServer(t, { services: { clock, arena } })
let call = jsonCaller(server)
t.teardown(async () => {
  await arena.close()
  await pipeline.close()
  db.close()
  await log.close()
})

/** Ten days of A's calls, four a day (a wrong one every third: streaks extend and end), each graded two hours later. */
let at = T0
let n = 0
async function days(count: number, payer = A) {
  for (let d = 0; d < count; d++) {
    for (let i = 0; i < 4; i++) {
      n++
      clock.t = at
      events.grade(events.lock(payer, at, { asset: (['BTC', 'ETH', 'SOL'] as const)[n % 3] }), at + 2 * H, n % 3 === 0 ? 'wrong' : n % 7 === 0 ? 'void' : 'correct')
      at += 6 * H
    }
  }
  clock.t = at
  await arena.idle()
}

async function post(path: string, body: unknown) {
  const r = await call('POST', path, body)
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body.data
}

/** The inbox (limit 7) and every history page after it, as served. */
async function walk(payer = A) {
  const pages: unknown[] = []
  let cursor: string | null = null
  do {
    const r = await call('GET', `/v1/arena/notifications?payer=${payer}&limit=7${cursor ? `&cursor=${cursor}` : ''}`)
    if (r.status !== 200) throw new Error(JSON.stringify(r.body))
    pages.push(r.body.data)
    cursor = r.body.data.next_cursor
  } while (cursor !== null)
  return pages as Array<{ unread_count: number; notifications: Array<{ id: number; kind: string; read_at: string | null }>; next_cursor: string | null }>
}

/** Every event the payer's stream sends from a cursor (catching up through storage when it says wait). */
async function streamFrom(a: Arena, payer: string, after: number): Promise<StreamEvent[]> {
  const reader = a.notificationStreams.stream(payer).reader(encodeCursor('notifications', [payer, after]), 'cursor')
  const out: StreamEvent[] = []
  for (;;) {
    const r = reader.next(3)
    out.push(...r.events)
    if (r.wait) await r.wait
    else if (r.done) return out
  }
}

const hot = () => arena.projection.peek(A)!.notifications.length

t.test('notifications past the window leave memory; every page, read_at and unread_count are the same from Parquet', async (t) => {
  await days(3)
  await post('/v1/arena/notifications/read', { payer: A })
  await days(2)
  const some = arena.projection.peek(A)!.notifications.filter((x) => !arena.projection.peek(A)!.isRead(x.id)).slice(0, 3).map((x) => x.id)
  clock.t += 1000
  await post('/v1/arena/notifications/read', { payer: A, ids: some })
  // One kind switched off: left out of every page and of the count, hot or cold.
  const pref = await call('PUT', '/v1/arena/notifications/preferences', { payer: A, preferences: { streak_extended: false } })
  t.equal(pref.status, 200)
  await days(5)
  // Three days later a day of B's calls and one of A's push A's older notifications past the window; the sink has
  // not started: nothing leaves.
  at += 3 * DAY
  await days(1, B)
  await days(1)
  arena.projection.trim()
  const total = arena.projection.peek(A)!.lastId
  t.equal(hot(), total, 'nothing leaves memory while the sink is not sealing')
  const before = await walk()
  t.ok(total > 60, `${total} notifications for A`)
  t.ok(before.length > 5, `${before.length} pages of 7`)
  t.ok(before[0]!.unread_count > 7 && before[0]!.unread_count < total, `unread ${before[0]!.unread_count}: some read, some not`)
  const streamBefore = await streamFrom(arena, A, 0)
  pipeline.startSink()
  for (const topic of ['arena.notifications', 'arena.settings']) await pipeline.drain(topic)
  arena.projection.trim()
  t.ok(hot() < total / 2 && hot() > 7, `${total - hot()} of ${total} notifications left memory, ${hot()} stay (pages mix both)`)

  const reads = arena.cold!.reads
  const after = await walk()
  t.ok(arena.cold!.reads > reads, 'the pages were read from Parquet')
  t.same(after, before, 'the same pages: items, order, read_at, unread_count and cursors')
  t.same(await streamFrom(arena, A, 0), streamBefore, 'the stream from the first cursor sends the same events through the cold rows')
  t.ok(streamBefore.length > 40, `${streamBefore.length} events streamed`)

  // A rebuild from nothing (no snapshot) knows the window before it reads the journals (the events' newest grade), so
  // it never holds what it would drop once the grades are folded: rows past the window are cold as they are read.
  const rebuilt = await Arena.open({ log, clock, events, partitions: 3, hotWindowMs: WINDOW, cold: db, evictable: () => pipeline.sealing, groupId: 'arena.rebuilt' })
  await rebuilt.idle()
  t.equal(rebuilt.projection.peek(A)!.notifications.length, hot(), `the rebuilt Arena holds the window's ${hot()} notifications of A, as the live one`)
  t.equal(rebuilt.projection.peek(A)!.lastId, total, 'and counts every one')
  const rebuiltWalk: unknown[] = []
  for (let cursor: string | null = null, first = true; first || cursor !== null; first = false) {
    const page: Awaited<ReturnType<Arena['notifications']>> = await rebuilt.notifications(A, { limit: 7, cursor })
    rebuiltWalk.push(JSON.parse(JSON.stringify(page)))
    cursor = page.next_cursor
  }
  t.same(rebuiltWalk, before, 'the same pages from the rebuilt Arena, its old rows read back from Parquet')
  await rebuilt.close()
  // A page of A's read from Parquet beside a page held in memory (B's inbox), the same route: figures for README.
  const lastPage = `/v1/arena/notifications?payer=${A}&limit=7&cursor=${before[before.length - 2]!.next_cursor}`
  const time = async (path: string, n: number) => {
    const first = JSON.stringify((await call('GET', path)).body.data)
    const start = performance.now()
    let same = true
    for (let i = 0; i < n; i++) if (JSON.stringify((await call('GET', path)).body.data) !== first) same = false
    return { ms: (performance.now() - start) / n, same }
  }
  const hotRead = await time(`/v1/arena/notifications?payer=${B}&limit=7`, 50)
  const coldRead = await time(lastPage, 50)
  t.ok(hotRead.same && coldRead.same, 'repeated reads answer the same body')
  t.comment(`feed page read: hot ${hotRead.ms.toFixed(2)} ms, cold (Parquet through DuckDB) ${coldRead.ms.toFixed(2)} ms`)
  for (const id of [1e300, -1, 1.5]) {
    const r = await call('GET', `/v1/arena/notifications?payer=${A}&cursor=${encodeCursor('notifications', [A, id])}`)
    t.match([r.status, r.body.error?.code, r.body.error?.detail?.reason], [400, 'VALIDATION', 'INVALID_CURSOR'], `an edited cursor with id ${id}: 400 INVALID_CURSOR, never a 500`)
  }
})

t.test('a mark by id on a cold notification and a mark of every one: the state a whole feed gives, hot or cold', async (t) => {
  const s = arena.projection.peek(A)!
  const hotIds = new Set(s.notifications.map((x) => x.id))
  const coldUnread = Array.from({ length: s.lastId }, (_, i) => i + 1).filter((id) => !hotIds.has(id) && !s.isRead(id))
  t.ok(coldUnread.length >= 2, `${coldUnread.length} unread notifications left memory`)
  clock.t += 1000
  const r = await post('/v1/arena/notifications/read', { payer: A, ids: [coldUnread[0], coldUnread[1], coldUnread[1], s.lastId + 5] })
  t.equal(r.marked, 2, 'two cold ids marked; a repeated one and an id that does not exist change nothing')
  const again = await post('/v1/arena/notifications/read', { payer: A, ids: [coldUnread[0]] })
  t.equal(again.marked, 0, 'a cold id already read changes nothing')
  t.equal(again.unread_count, r.unread_count)
  const marked = await walk()
  // A copy of a row that left memory (a retried append read again) is not taken for a new notification.
  const copy = marked.flatMap((p) => p.notifications).find((x) => x.id === coldUnread[0])! as unknown as { id: number; kind: string; ref: string; payload: Record<string, unknown>; created_at: string }
  const held = hot()
  arena.projection.applyNotification({ key: `${copy.kind}|${copy.ref}|${A}`, payer: A, id: copy.id, kind: copy.kind, ref: copy.ref, payload: copy.payload, created_at: copy.created_at })
  t.equal(hot(), held, 'a copy of a cold notification is skipped')
  t.notOk(arena.projection.hasNotification(`${copy.kind}|${copy.ref}|${A}`), 'its key is not held again')
  const at0 = marked.flatMap((p) => p.notifications).find((x) => x.id === coldUnread[0])!
  t.equal(at0.read_at, new Date(clock.t).toISOString(), "the cold row's read_at is its mark's instant")

  // An Arena rebuilt from the log holding the whole feed (no window, no Parquet) answers the same pages.
  const whole = await Arena.open({ log, clock, events, partitions: 3, groupId: 'arena.whole' })
  await whole.idle()
  const wholeWalk = async () => {
    const pages: unknown[] = []
    let cursor: string | null = null
    do {
      const page: Awaited<ReturnType<Arena['notifications']>> = await whole.notifications(A, { limit: 7, cursor })
      pages.push(JSON.parse(JSON.stringify(page)))
      cursor = page.next_cursor
    } while (cursor !== null)
    return pages
  }
  t.same(marked, await wholeWalk(), 'after a mark by id: the same pages as the whole feed')
  t.ok(whole.projection.peek(A)!.notifications.length > hot(), 'that Arena holds every notification')
  await whole.close()

  clock.t += 1000
  const all = await post('/v1/arena/notifications/read', { payer: A })
  t.ok(all.marked > 0, `${all.marked} marked by a mark of every one`)
  t.equal(all.unread_count, 0)
  // The sink seals the marks: the cold rows' read_at now come from Parquet as well.
  await pipeline.drain('arena.settings')
  arena.projection.trim()
  const allMarked = await walk()
  t.ok(allMarked.flatMap((p) => p.notifications).every((x) => x.read_at !== null), 'every row read')
  const whole2 = await Arena.open({ log, clock, events, partitions: 3, groupId: 'arena.whole' })
  await whole2.idle()
  const pages: unknown[] = []
  let cursor: string | null = null
  do {
    const page: Awaited<ReturnType<Arena['notifications']>> = await whole2.notifications(A, { limit: 7, cursor })
    pages.push(JSON.parse(JSON.stringify(page)))
    cursor = page.next_cursor
  } while (cursor !== null)
  await whole2.close()
  t.same(allMarked, pages, 'after a mark of every one: the same pages as the whole feed')

  // A restart from the snapshot (the feed of the window only) answers the same pages.
  await arena.close()
  arena = await open()
  t.equal(arena.checkpoints?.restored.restored, true, 'restored from its snapshot')
  await arena.idle()
  server = await withServer(t, { services: { clock, arena } })
  call = jsonCaller(server)
  t.same(await walk(), allMarked, 'the same pages after a restart')
})

t.test("the feed's part of the snapshot stays flat as notifications grow", async (t) => {
  const feedBytes = async () => {
    await arena.idle()
    t.ok(await arena.checkpoints!.checkpoint(), 'a snapshot is written')
    const body = await readSnapshot(snapshots, 'arena.projection')
    let bytes = 0
    for (const line of body.trimEnd().split('\n').slice(1, -1)) {
      const r = JSON.parse(line) as Record<string, unknown>
      if (r.t === 'payer' && r.payer === A) for (const f of ['notifications', 'read_at', 'read_ids', 'marks']) bytes += JSON.stringify(r[f]).length
    }
    return bytes
  }
  await days(4)
  const first = { bytes: await feedBytes(), total: arena.projection.peek(A)!.lastId }
  await days(12)
  const second = { bytes: await feedBytes(), total: arena.projection.peek(A)!.lastId }
  t.ok(second.total > first.total * 1.5, `notifications ${first.total} → ${second.total}`)
  t.ok(second.bytes < first.bytes * 1.25, `the feed's snapshot bytes stay flat: ${first.bytes} → ${second.bytes}`)
})

t.test('coldFrom: rows created before it are counted and left cold as they are read, while rows may leave memory', (t) => {
  const p = new ArenaProjection({ hotWindowMs: DAY, evictable: () => sealing })
  let sealing = false
  const row = (id: number, at: string) => ({ key: `streak_extended|r${id}|${A}`, payer: A, id, kind: 'streak_extended', ref: `r${id}`, payload: {}, created_at: at })
  p.coldFrom(Date.parse('2026-07-10T00:00:00.000Z'))
  p.applyNotification(row(1, '2026-07-09T00:00:00.000Z'))
  t.equal(p.peek(A)!.notifications.length, 1, 'held while rows may not leave memory (the sink not sealing, no open folding)')
  sealing = true
  p.applyNotification(row(2, '2026-07-09T12:00:00.000Z'))
  p.applyNotification(row(3, '2026-07-10T06:00:00.000Z'))
  const s = p.peek(A)!
  t.same(s.notifications.map((n) => n.id), [1, 3], 'a row before it is not held; one after it is')
  t.equal(s.lastId, 3, 'every row counted')
  t.equal(s.coldMax, 2, 'the row left cold is read back from the cold feed')
  t.ok(p.coldScope(s), 'the payer has a cold scope')
  p.applyNotification(row(2, '2026-07-09T12:00:00.000Z'))
  t.same(p.peek(A)!.notifications.map((n) => n.id), [1, 3], 'a copy of the cold row read again is skipped')
  p.coldFrom(null)
  p.applyNotification(row(4, '2026-07-09T18:00:00.000Z'))
  t.same(p.peek(A)!.notifications.map((n) => n.id), [1, 3, 4], 'ended: rows are held as read again')
  t.end()
})
