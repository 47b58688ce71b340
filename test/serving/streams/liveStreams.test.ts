/**
 * Issue 33 acceptance, live streams: the engine `svc start` runs replays the recorded OKX SOL tape (../shared/tapes)
 * hour by hour, so its resolutions are real; a `ws` WebSocket client and Chromium's EventSource subscribe to
 * /v1/streams/feed and each receives every resolution of the replayed hours exactly once, as the feed chip /v1/feed
 * lists, in one order, across a forced reconnect: the network between clients and server is cut (a TCP proxy drops
 * every connection) while an hour resolves, then restored; the browser reconnects on its own with Last-Event-ID and
 * the WebSocket client with ?cursor=. The clocks and decisions streams are checked against the same hours, a cursor of
 * another stream is the contract's 400 INVALID_CURSOR, and a stop ends each stream naming SHUTDOWN.
 *
 * Needs chromium (CHROMIUM_PATH, default /usr/bin/chromium); without it the browser half skips locally (fails in CI).
 */
import t from 'tap'
import { join } from 'node:path'
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Browser, Page } from 'playwright-core'
import { chromiumMissing, launchChromium } from '../../helpers/chromium.ts'
import WebSocket from 'ws'
import { ENGINE_CUT, engineRelease, engineTicks } from '../../../bench/engineFixture.ts'
import { EngineRunner } from '../../../engine/EngineRunner.ts'
import { EngineServices } from '../../../engine/EngineServices.ts'
import { LedgerStreams } from '../../../engine/LedgerStreams.ts'
import { tickKey, tickTime, type Tick } from '../../../ingest/Tick.ts'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { encodeTickEnvelope } from '../../../pipeline/TickEnvelope.ts'
import { topicNames, topicSpecs } from '../../../pipeline/topics.ts'
import { Server } from '../../../serving/Server.ts'
import { PAY_TO } from '../../helpers/serving/server.ts'
import { skipUnlessTool } from '../../helpers/requiredTool.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const HOUR = 3_600_000
/** The replay up to here happens before anyone subscribes; the hours after it are streamed. */
const START = ENGINE_CUT + 2 * 24 * HOUR
const HOURS_BEFORE_CUT = 3
const HOURS_WHILE_CUT = 1
const HOURS_AFTER = 3

async function until(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await sleep(25)
  }
}

interface Received {
  id: string
  event: string
  data: { decision_id: string; [k: string]: unknown }
}

/** A `ws` client on a stream path that keeps every message and the close it got. */
function wsClient(url: string) {
  const got: Received[] = []
  const closes: Array<{ code: number; reason: string }> = []
  const ws = new WebSocket(url)
  ws.on('message', (m) => got.push(JSON.parse(String(m)) as Received))
  ws.on('close', (code, reason) => closes.push({ code, reason: String(reason) }))
  const opened = new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve())
    ws.once('error', reject)
  })
  return { ws, got, closes, opened }
}

const missing = await chromiumMissing()

t.test('the feed over WebSocket and EventSource: every resolution of the replayed hours once, across a forced reconnect', { skip: skipUnlessTool(t, missing, 'chromium') }, async (t) => {
  const ticks = await engineTicks()
  const dir = await makeTempDir(t, 'svc-streams-')
  const names = topicNames({})
  const log = await EmbeddedLog.open(join(dir, 'log'))
  t.teardown(() => log.close())
  await log.ensureTopics(topicSpecs(names, 3))
  const runner = await EngineRunner.start({ log, dataDir: join(dir, 'engine-data'), names, trainUntil: ENGINE_CUT, release: await engineRelease() })
  t.teardown(() => runner.close())

  let produced = 0
  const replayUntil = async (to: number): Promise<void> => {
    const batch: Tick[] = []
    while (produced < ticks.length && tickTime(ticks[produced]!) < to) batch.push(ticks[produced++]!)
    if (batch.length > 0) {
      const producer = await log.createProducer()
      const first = produced - batch.length
      await producer.send(names.ticks, batch.map((x, j) => ({ key: tickKey(x), value: encodeTickEnvelope({ seq: first + j + 1, tape: 'okx-sol', tick: x }), timestamp: tickTime(x) })))
      await producer.close()
    }
    await runner.waitForTicks()
  }
  await replayUntil(START)

  const streams = await LedgerStreams.open({ ledger: runner.ledger, clockOf: (d) => runner.reads.clockOf(d) })
  t.teardown(() => streams.close())
  const engine = new EngineServices(runner)
  const clock = { now: () => runner.live.now() ?? START }
  const server = await Server.start({ port: 0, config: { payTo: PAY_TO }, services: { clock, ledger: engine, streams } })
  t.teardown(() => server.close())
  // The clients reach the server through a TCP proxy that can cut the network: the forced reconnect.
  const proxy = await cuttableProxy(server.port)
  t.teardown(() => proxy.close())
  const base = `http://127.0.0.1:${proxy.port}`
  const wsBase = `ws://127.0.0.1:${proxy.port}`

  // What the ledger resolves from here on, in the order it learned it: the stream must carry exactly these.
  const resolved: string[] = []
  const opened: string[] = []
  runner.ledger.bus.resolutions.subscribe('streams-test', (e) => void resolved.push(e.outcome.decision_id), { replay: false })
  runner.ledger.bus.decisions.subscribe('streams-test', (d) => void opened.push(d.decision_id), { replay: false })

  const browser: Browser = await launchChromium()
  t.teardown(() => browser.close())
  const page: Page = await browser.newPage()
  t.equal((await page.goto(`${base}/healthz`))?.status(), 200)
  await page.evaluate(() => {
    const w = window as unknown as { got: unknown[]; closes: unknown[]; opens: number; es: EventSource }
    w.got = []
    w.closes = []
    w.opens = 0
    w.es = new EventSource('/v1/streams/feed')
    w.es.addEventListener('open', () => void w.opens++)
    w.es.addEventListener('chip', (e) => void w.got.push({ id: (e as MessageEvent).lastEventId, event: 'chip', data: JSON.parse((e as MessageEvent).data as string) }))
    w.es.addEventListener('close', (e) => void w.closes.push(JSON.parse((e as MessageEvent).data as string)))
  })
  const browserGot = async () => (await page.evaluate(() => (window as unknown as { got: Received[] }).got))
  const browserOpens = async () => (await page.evaluate(() => (window as unknown as { opens: number }).opens))
  await until('the EventSource opened', async () => (await browserOpens()) === 1)

  let feed = wsClient(`${wsBase}/v1/streams/feed`)
  const clocks = wsClient(`ws://127.0.0.1:${server.port}/v1/streams/clocks`)
  const decisions = wsClient(`ws://127.0.0.1:${server.port}/v1/streams/decisions`)
  await Promise.all([feed.opened, clocks.opened, decisions.opened])
  const wsGot: Received[] = []

  let to = START
  for (let h = 0; h < HOURS_BEFORE_CUT; h++) await replayUntil((to += HOUR))
  await until('both clients have the first hours', async () => feed.got.length === resolved.length && (await browserGot()).length === resolved.length)
  t.ok(resolved.length > 0, `${resolved.length} resolutions before the cut`)
  wsGot.push(...feed.got)

  // The forced reconnect: the network is cut, and an hour resolves while the clients cannot reach the server.
  proxy.cut(true)
  await until('the WebSocket saw the cut', () => feed.closes.length === 1)
  const before = resolved.length
  for (let h = 0; h < HOURS_WHILE_CUT; h++) await replayUntil((to += HOUR))
  t.ok(resolved.length > before, `${resolved.length - before} resolutions while the clients were cut off`)
  await sleep(1500) // the browser's own reconnects fail while the network is down
  proxy.cut(false)

  // The browser reconnects on its own (Last-Event-ID); the WebSocket client with the last cursor it got.
  const last = wsGot[wsGot.length - 1]!.id
  feed = wsClient(`${wsBase}/v1/streams/feed?cursor=${encodeURIComponent(last)}`)
  await feed.opened
  await until('the EventSource reconnected', async () => (await browserOpens()) === 2)
  for (let h = 0; h < HOURS_AFTER; h++) await replayUntil((to += HOUR))
  await until('both clients have every hour', async () => wsGot.length + feed.got.length === resolved.length && (await browserGot()).length === resolved.length)
  await sleep(300) // nothing more arrives: no duplicate trails the last one
  wsGot.push(...feed.got)
  const viaBrowser = await browserGot()

  const ids = (list: Received[]) => list.map((r) => r.data.decision_id)
  t.equal(new Set(ids(wsGot)).size, wsGot.length, 'WebSocket: no resolution twice')
  t.equal(new Set(ids(viaBrowser)).size, viaBrowser.length, 'EventSource: no resolution twice')
  t.same([...ids(wsGot)].sort(), [...resolved].sort(), `WebSocket: every one of the ${resolved.length} resolutions`)
  t.same(ids(viaBrowser), ids(wsGot), 'EventSource: the same resolutions in the same order')
  t.same(viaBrowser.map((r) => r.id), wsGot.map((r) => r.id), 'the same cursors')
  t.ok(wsGot.every((r) => r.event === 'chip'), 'every event is a chip')

  // Each event is the chip /v1/feed lists for that resolution.
  const rest = (await (await fetch(`${base}/v1/feed?limit=200`)).json()) as { data: { chips: Array<{ decision_id: string }> } }
  const byId = new Map(rest.data.chips.map((c) => [c.decision_id, c]))
  const checked = wsGot.filter((r) => byId.has(r.data.decision_id))
  t.ok(checked.length === wsGot.length, 'every streamed chip is on /v1/feed')
  for (const r of checked) t.same(r.data, byId.get(r.data.decision_id), `chip ${r.data.decision_id.slice(0, 8)} as /v1/feed lists it`)

  // The clocks stream saw every new claim open and (before the restart) closed; the decisions stream every decision.
  t.ok(clocks.got.some((e) => e.event === 'opened') && clocks.got.some((e) => e.event === 'closed'), 'clocks: opened and closed events')
  const closedIds = clocks.got.filter((e) => e.event === 'closed').map((e) => e.data.decision_id)
  const streamed = new Set(ids(wsGot))
  t.ok(closedIds.length > 0 && closedIds.every((id) => streamed.has(id)), 'clocks: each close is a resolution the feed carried')
  const openedIds = clocks.got.filter((e) => e.event === 'opened').map((e) => e.data.decision_id)
  t.ok(openedIds.every((id) => opened.includes(id)), 'clocks: each opened clock is a decision the ledger recorded')
  const decided = decisions.got.map((e) => e.data.decision_id)
  t.equal(new Set(decided).size, decided.length, 'decisions: none twice')
  t.ok(decided.length > 0 && decided.every((id) => opened.includes(id)), `decisions: ${decided.length} new decisions, each one the ledger recorded`)

  // A cursor of another stream, or none of ours, is the contract's 400, before anything streams.
  const wrong = await fetch(`${base}/v1/streams/clocks?cursor=${encodeURIComponent(last)}`)
  t.equal(wrong.status, 400)
  t.match(((await wrong.json()) as { error: unknown }).error, { code: 'VALIDATION', detail: { reason: 'INVALID_CURSOR', field: 'cursor' } })
  const garbage = await fetch(`${base}/v1/streams/feed`, { headers: { 'last-event-id': 'not-a-cursor' } })
  t.equal(garbage.status, 400)
  t.match(((await garbage.json()) as { error: unknown }).error, { code: 'VALIDATION', detail: { reason: 'INVALID_CURSOR', field: 'last-event-id' } })
  const refused = wsClient(`${wsBase}/v1/streams/feed?cursor=x`)
  refused.opened.catch(() => undefined)
  const status = await new Promise<number>((resolve) => refused.ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0)))
  t.equal(status, 400, 'a WebSocket upgrade with a bad cursor is refused with the same 400')

  // A stop ends every stream naming why: WebSocket close 1001 with the reason, SSE a final close event.
  await server.close()
  await until('the WebSocket saw the shutdown', () => clocks.closes.length === 1)
  t.equal(clocks.closes[0]!.code, 1001, 'WebSocket: close 1001 (going away)')
  t.match(clocks.closes[0]!.reason, /^SHUTDOWN: /, 'with the reason')
  await until('the EventSource saw the shutdown', async () => (await page.evaluate(() => (window as unknown as { closes: unknown[] }).closes.length)) === 1)
  t.same(await page.evaluate(() => (window as unknown as { closes: Array<{ reason: string }> }).closes.map((c) => c.reason)), ['SHUTDOWN'], 'SSE: a final close event named the reason')
  await page.evaluate(() => (window as unknown as { es: EventSource }).es.close())
})

/** A TCP proxy to 127.0.0.1:`target` whose cut(true) drops every connection and refuses new ones until cut(false). */
async function cuttableProxy(target: number): Promise<{ port: number; cut: (down: boolean) => void; close: () => Promise<void> }> {
  const sockets = new Set<Socket>()
  let down = false
  const server = createServer((client) => {
    if (down) return void client.destroy()
    const upstream = connect(target, '127.0.0.1')
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('close', () => sockets.delete(s))
      s.on('error', () => undefined)
    }
    client.pipe(upstream).pipe(client)
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as AddressInfo).port,
    cut: (d) => {
      down = d
      if (d) for (const s of sockets) s.destroy()
    },
    close: () => {
      for (const s of sockets) s.destroy()
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
}
