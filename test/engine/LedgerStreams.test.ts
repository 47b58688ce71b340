/**
 * The ledger streams' bounded memory (issue 31, item 2), on both logs, over a real ledger, server and WebSockets:
 * - the window holds at most its bound of records however long the history grows;
 * - a resume from a cursor older than the window (the first event's, and the very beginning) reads the journals from
 *   the cursor's positions and yields every event after it once, in each partition's log order, then goes live;
 * - a duplicate append is skipped by the live stream and by a resume that reads it from the log;
 * - a restart reads only the journals' last records (counted), not the history, and an old cursor still resumes;
 * - half the outcomes are written as atomic units (on Kafka the offsets then have holes: transaction markers).
 * - a reader paused while the window moves past it reads the log again; cold reads run a bounded number at once;
 * - a resume whose log read fails ends the stream with close 1013 PROVIDER_DOWN (SSE: a final close event).
 */
import t from 'tap'
import WebSocket from 'ws'
import { setTimeout as sleep } from 'node:timers/promises'
import { decodeCursor, encodeCursor } from '../../common/Cursor.ts'
import { partitionForKey } from '../../common/murmur2.ts'
import { DecisionLedger } from '../../engine/DecisionLedger.ts'
import { LedgerStreams, type LedgerStreamWindow } from '../../engine/LedgerStreams.ts'
import { openClockOf } from '../../engine/LedgerView.ts'
import { QuestionCatalog } from '../../engine/QuestionCatalog.ts'
import type { LedgerDecision } from '../../pipeline/records/decisionRecord.ts'
import { Server } from '../../serving/Server.ts'
import { testDecision, testOutcome } from '../helpers/ledgerRecords.ts'
import { forEachLog, makeEmbeddedFactory, type TapTest } from '../helpers/logs.ts'
import { PAY_TO } from '../helpers/serving/server.ts'
import { until } from '../helpers/until.ts'

const WINDOW: LedgerStreamWindow = { entries: 40, restartRecords: 10 }
const ASSETS = ['BTC', 'ETH', 'SOL']

interface Message {
  id: string
  event: string
  data: { decision_id: string; asset: string }
}

function wsClient(url: string) {
  const got: Message[] = []
  const closes: Array<{ code: number; reason: string }> = []
  const ws = new WebSocket(url)
  ws.on('message', (m) => got.push(JSON.parse(String(m)) as Message))
  ws.on('close', (code, reason) => closes.push({ code, reason: String(reason) }))
  const opened = new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve())
    ws.once('error', reject)
  })
  return { ws, got, closes, opened }
}

/** Decision n on asset n mod 3 (so on more than one partition), a minute after n − 1. */
function decision(n: number): LedgerDecision {
  return testDecision(n, { asset: ASSETS[n % ASSETS.length]! })
}

/**
 * Where each event sat on the log, from the cursor it came with: an outcome's partition is its key's (the decision
 * id, common/murmur2.ts), and the cursor after it names the offset after it on that partition.
 */
function positions(list: Message[]): Array<{ id: string; slot: number; offset: number }> {
  return list.map((m) => {
    const slot = 3 + partitionForKey(m.data.decision_id, 3)
    return { id: m.data.decision_id, slot, offset: (decodeCursor('feed', m.id, 'cursor') as number[])[slot]! - 1 }
  })
}

/** Each partition's events in offset order, and each event at the position the live client saw it at. */
function inLogOrder(t: TapTest, name: string, got: ReturnType<typeof positions>, live: Map<string, string>): void {
  const last = new Map<number, number>()
  const misordered = got.filter((p) => {
    const before = last.get(p.slot) ?? -1
    last.set(p.slot, p.offset)
    return p.offset <= before
  })
  t.same(misordered, [], `${name}: each partition in offset order`)
  t.same(got.filter((p) => live.has(p.id) && live.get(p.id) !== `${p.slot}/${p.offset}`), [], `${name}: each event at its log position`)
}

t.test('a bounded window; old cursors resume from the log, once and in order; a restart reads only the tail', (t) =>
  forEachLog(t, async (t, makeLog) => {
    const log = await makeLog()
    const ledger = await DecisionLedger.open({ log })
    t.teardown(() => ledger.close())
    const catalog = new QuestionCatalog()
    const clockOf = (d: LedgerDecision) => openClockOf(catalog, d)
    let streams = await LedgerStreams.open({ ledger, clockOf, window: WINDOW })
    t.teardown(() => streams.close())
    let server = await Server.start({ port: 0, config: { payTo: PAY_TO }, services: { streams } })
    t.teardown(() => server.close())
    const live = wsClient(`ws://127.0.0.1:${server.port}/v1/streams/feed`)
    await live.opened

    // A history many times the window: decisions and their resolutions, in flushes as an engine writes them.
    let n = 0
    const resolved: string[] = []
    let largest = 0
    const write = async (count: number, client = live, before = 0) => {
      for (let i = 0; i < count; i += 25) {
        const batch = Array.from({ length: 25 }, () => decision(++n))
        for (const d of batch) ledger.stageDecision(d)
        await ledger.flush()
        if ((i / 25) % 2 === 0) {
          for (const d of batch) resolved.push(ledger.stageOutcome(testOutcome(d)).record.decision_id)
          await ledger.flush()
        } else {
          // As another writer's paid units: one atomic unit per outcome (on Kafka each leaves a transaction marker, so
          // the offsets have holes a resume must pass); the ledger learns them from its follower.
          for (const d of batch) {
            const o = testOutcome(d)
            await ledger.outcomes.sendAtomic([{ topic: ledger.outcomes.topic, records: [ledger.outcomes.toLogRecord(o)] }])
            resolved.push(o.decision_id)
          }
        }
        await until('the streams read the flush', () => streams.size.held === 0 && client.got.length + before === resolved.length)
        largest = Math.max(largest, streams.size.entries)
      }
    }
    await write(300)
    t.equal(live.got.length, 300, 'the live client got every resolution')
    t.ok(largest <= WINDOW.entries!, `the window never held more than ${WINDOW.entries} records (at most ${largest}) over ${2 * n} records`)

    // From the first event's cursor (long out of the window) and from the very beginning: every later event, once.
    const fromFirst = wsClient(`ws://127.0.0.1:${server.port}/v1/streams/feed?cursor=${encodeURIComponent(live.got[0]!.id)}`)
    const zero = encodeCursor('feed', new Array<number>(6).fill(0))
    const fromStart = wsClient(`ws://127.0.0.1:${server.port}/v1/streams/feed?cursor=${encodeURIComponent(zero)}`)
    await Promise.all([fromFirst.opened, fromStart.opened])
    await until('the resumes caught up', () => fromFirst.got.length >= 299 && fromStart.got.length >= 300)
    t.ok(streams.size.coldReads >= 2, `the resumes read the log (${streams.size.coldReads} cold reads)`)
    await write(50) // live after the catch-up
    await sleep(200)
    const livePositions = () => new Map(positions(live.got).map((p) => [p.id, `${p.slot}/${p.offset}`]))
    const ids = (list: Message[]) => list.map((m) => m.data.decision_id)
    for (const [name, client, expected] of [['first', fromFirst, live.got.slice(1)], ['start', fromStart, live.got]] as const) {
      t.equal(new Set(ids(client.got)).size, client.got.length, `from ${name}: no event twice`)
      t.same([...ids(client.got)].sort(), [...ids(expected)].sort(), `from ${name}: every one of the ${expected.length} events after the cursor`)
      inLogOrder(t, `from ${name}`, positions(client.got), livePositions())
    }
    t.ok(streams.size.entries <= WINDOW.entries!, 'the window is still bounded after the resumes')

    // A duplicate append (a writer's retry) is skipped live and by a resume reading it from the log.
    const dup = decision(++n)
    ledger.stageDecision(dup)
    await ledger.flush()
    await ledger.decisions.append([dup])
    const o = ledger.stageOutcome(testOutcome(dup)).record
    await ledger.flush()
    await ledger.outcomes.append([o])
    resolved.push(o.decision_id)
    await until('the live client has the resolution', () => live.got.length === resolved.length)
    await sleep(200)
    t.equal(live.got.filter((m) => m.data.decision_id === dup.decision_id).length, 1, 'live: the duplicate outcome is not sent')
    const again = wsClient(`ws://127.0.0.1:${server.port}/v1/streams/feed?cursor=${encodeURIComponent(zero)}`)
    await again.opened
    await until('the resume from the start caught up', () => again.got.length >= resolved.length)
    await sleep(200)
    t.same(ids(again.got).sort(), [...resolved].sort(), 'from the start: every resolution once, the duplicate too')
    inLogOrder(t, 'from the start again', positions(again.got), livePositions())

    // A restart: the new streams read at most restartRecords per partition, not the history; the old cursor resumes.
    const cursor = live.got[99]!.id
    const seenLive = livePositions()
    for (const c of [live, fromFirst, fromStart, again]) c.ws.close()
    await server.close()
    await streams.close()
    const started = performance.now()
    streams = await LedgerStreams.open({ ledger, clockOf, window: WINDOW })
    const startMs = performance.now() - started
    t.ok(streams.size.read <= 6 * WINDOW.restartRecords!, `the restart read ${streams.size.read} records of ${2 * n + 2} (${startMs.toFixed(0)} ms)`)
    server = await Server.start({ port: 0, config: { payTo: PAY_TO }, services: { streams } })
    const resumed = wsClient(`ws://127.0.0.1:${server.port}/v1/streams/feed?cursor=${encodeURIComponent(cursor)}`)
    await resumed.opened
    await until('the resume after the restart caught up', () => resumed.got.length >= resolved.length - 100)
    await write(25, resumed, 100)
    await sleep(200)
    t.equal(new Set(ids(resumed.got)).size, resumed.got.length, 'after the restart: no event twice')
    t.same([...ids(resumed.got)].sort(), [...resolved.slice(100)].sort(), `after the restart: the ${resolved.length - 100} resolutions after the cursor, then live`)
    inLogOrder(t, 'after the restart', positions(resumed.got), seenLive)
    resumed.ws.close()
  }),
)

t.test('a reader paused while the window moves past it reads the log again, then joins the window', (t) =>
  forEachLog(t, async (t, makeLog) => {
    const log = await makeLog()
    const ledger = await DecisionLedger.open({ log })
    t.teardown(() => ledger.close())
    const catalog = new QuestionCatalog()
    const streams = await LedgerStreams.open({ ledger, clockOf: (d) => openClockOf(catalog, d), window: WINDOW })
    t.teardown(() => streams.close())
    const all: string[] = []
    const write = async (from: number, count: number) => {
      const batch = Array.from({ length: count }, (_, i) => decision(from + i))
      for (const d of batch) all.push(ledger.stageDecision(d).record.decision_id)
      await ledger.flush()
      await until('the streams read the flush', () => streams.size.held === 0 && streams.size.read >= all.length)
    }
    await write(1, 30)
    // A reader from the beginning of the stream takes 10 events, then pauses (a socket that stopped draining).
    const reader = streams.decisions.reader(encodeCursor('decisions', new Array<number>(6).fill(0)), 'cursor')
    const got: string[] = []
    const drain = async (max: number) => {
      for (;;) {
        const { events, done, wait } = reader.next(max)
        for (const e of events) got.push((e.data as { decision_id: string }).decision_id)
        if (done || (max < 100 && got.length >= max)) return done
        if (wait) await wait
      }
    }
    t.equal(await drain(10), false, 'paused after 10 of 30')
    t.equal(new Set(got).size, 10, '10 different decisions')
    await write(31, 200) // the window (40) moves far past the paused reader
    t.ok(streams.size.entries <= WINDOW.entries!, `the window stayed bounded (${streams.size.entries})`)
    const coldBefore = streams.size.coldReads
    t.equal(await drain(256), true, 'the reader reached the newest event')
    t.ok(streams.size.coldReads > coldBefore, 'by reading the log again')
    reader.close?.()
    t.equal(got.length, all.length, 'no event twice')
    t.same([...got].sort(), [...all].sort(), `all ${all.length} decisions`)
    const key = (id: string) => all.indexOf(id) % ASSETS.length
    for (let k = 0; k < ASSETS.length; k++) t.same(got.filter((id) => key(id) === k), all.filter((id) => key(id) === k), `${ASSETS[(k + 1) % 3]}'s partition in log order`)
  }),
)

t.test('cold reads run at most `coldReads` at once; the others wait their turn and lose nothing', (t) =>
  forEachLog(t, async (t, makeLog) => {
    const log = await makeLog()
    const ledger = await DecisionLedger.open({ log })
    t.teardown(() => ledger.close())
    const catalog = new QuestionCatalog()
    const streams = await LedgerStreams.open({ ledger, clockOf: (d) => openClockOf(catalog, d), window: { ...WINDOW, coldReads: 1 } })
    t.teardown(() => streams.close())
    const all = Array.from({ length: 120 }, (_, i) => ledger.stageDecision(decision(i + 1)).record.decision_id)
    await ledger.flush()
    await until('the streams read the flush', () => streams.size.held === 0 && streams.size.read >= all.length)
    let most = 0
    const drain = async () => {
      const reader = streams.decisions.reader(encodeCursor('decisions', new Array<number>(6).fill(0)), 'cursor')
      const got: string[] = []
      for (;;) {
        const { events, done, wait } = reader.next(16)
        most = Math.max(most, streams.size.coldActive)
        for (const e of events) got.push((e.data as { decision_id: string }).decision_id)
        if (done) break
        if (wait) await wait
      }
      reader.close?.()
      return got
    }
    const [a, b, c] = await Promise.all([drain(), drain(), drain()])
    t.equal(most, 1, 'one cold read at a time')
    t.equal(streams.size.coldReads, 3, 'each reader had its turn')
    for (const got of [a!, b!, c!]) t.same([...got].sort(), [...all].sort(), `every one of the ${all.length} decisions once`)
    t.equal(streams.size.coldActive, 0, 'none left running')
  }),
)

t.test('a resume whose log read fails ends the stream naming PROVIDER_DOWN (reconnect later with the cursor)', async (t) => {
  const { makeLog } = await makeEmbeddedFactory(t)
  const log = await makeLog()
  const ledger = await DecisionLedger.open({ log })
  const catalog = new QuestionCatalog()
  const streams = await LedgerStreams.open({ ledger, clockOf: (d) => openClockOf(catalog, d), window: WINDOW })
  t.teardown(() => streams.close())
  const server = await Server.start({ port: 0, config: { payTo: PAY_TO }, services: { streams } })
  t.teardown(() => server.close())
  for (let i = 1; i <= 60; i++) ledger.stageDecision(decision(i))
  await ledger.flush()
  await until('the streams read the flush', () => streams.size.held === 0 && streams.size.read >= 60)
  // The log goes away (an outage): the window still serves the recent events, an older cursor cannot be read.
  await ledger.close()
  await log.close()
  const zero = encodeURIComponent(encodeCursor('decisions', new Array<number>(6).fill(0)))
  const ws = wsClient(`ws://127.0.0.1:${server.port}/v1/streams/decisions?cursor=${zero}`)
  await ws.opened
  await until('the WebSocket is closed', () => ws.closes.length === 1)
  t.equal(ws.closes[0]!.code, 1013, 'WebSocket close 1013 (try again later)')
  t.match(ws.closes[0]!.reason, /^PROVIDER_DOWN: /, 'naming the reason')
  t.same(ws.got, [], 'nothing sent out of order before it')
  const sse = await fetch(`${server.url}/v1/streams/decisions?cursor=${zero}`)
  const text = await sse.text()
  t.match(text, /event: close\ndata: \{"reason":"PROVIDER_DOWN"/, 'SSE: a final close event naming it, then the end')
})
