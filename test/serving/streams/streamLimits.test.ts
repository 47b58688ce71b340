/**
 * Live streams' limits and the payer-scoped stream (issue 33), over real ledger and Arena journals on an embedded log
 * and real sockets:
 * - a stalled reader (a WebSocket and an SSE client that stop reading) is dropped with its reason (close 4008
 *   SLOW_CONSUMER; a final `event: close`) while a reading WebSocket and SSE client get every event, in order, once;
 *   the dropped WebSocket client reconnects with its last cursor and gets exactly the rest;
 * - one address holds at most SVC_STREAM_MAX_PER_IP streams: one more is the contract's 429 envelope;
 * - the payer's notifications stream proves the payer exactly as GET /v1/arena/notifications does (401 PAYER_UNPROVEN
 *   with the sign-in challenge; a sign-in session opens it) and resumes by cursor; another payer's cursor is a 400.
 */
import t from 'tap'
import { request, type IncomingMessage } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { privateKeyToAccount } from 'viem/accounts'
import WebSocket from 'ws'
import { DecisionLedger } from '../../../engine/DecisionLedger.ts'
import { LedgerStreams } from '../../../engine/LedgerStreams.ts'
import { openClockOf } from '../../../engine/LedgerView.ts'
import { QuestionCatalog } from '../../../engine/QuestionCatalog.ts'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { Arena } from '../../../product/arena/Arena.ts'
import { Server } from '../../../serving/Server.ts'
import { TestCallEvents, TestClock } from '../../helpers/callEvents.ts'
import { testDecision } from '../../helpers/ledgerRecords.ts'
import { PAY_TO } from '../../helpers/serving/server.ts'
import { signIn } from '../../helpers/serving/signIn.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { until } from '../../helpers/until.ts'

/** Enough event bytes to fill the loopback socket buffers of a reader that stopped (several MB) many times over. */
const DECISIONS = 12_000
const BOUND = 64 * 1024

interface Message {
  id: string
  event: string
  data: { decision_id?: string; id?: number; kind?: string }
}

function wsClient(url: string, headers: Record<string, string> = {}) {
  const got: Message[] = []
  const closes: Array<{ code: number; reason: string }> = []
  const ws = new WebSocket(url, { headers })
  ws.on('message', (m) => got.push(JSON.parse(String(m)) as Message))
  ws.on('close', (code, reason) => closes.push({ code, reason: String(reason) }))
  const refused = new Promise<{ status: number; body: string }>((resolve) =>
    ws.on('unexpected-response', (_req, res) => {
      let body = ''
      res.on('data', (c: Buffer) => (body += String(c)))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    }),
  )
  const opened = new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve())
    ws.once('error', reject)
  })
  opened.catch(() => undefined)
  return { ws, got, closes, opened, refused }
}

/** An SSE client over node:http that parses events as they arrive; pause() stops reading from the socket. */
function sseClient(url: string) {
  const events: Array<{ id: string | null; event: string; data: string }> = []
  let text = ''
  let res: IncomingMessage | null = null
  let ended = false
  const opened = new Promise<number>((resolve, reject) => {
    const req = request(url, { headers: { accept: 'text/event-stream' } }, (r) => {
      res = r
      r.setEncoding('utf8')
      r.on('data', (chunk: string) => {
        text += chunk
        let cut: number
        while ((cut = text.indexOf('\n\n')) >= 0) {
          const block = text.slice(0, cut)
          text = text.slice(cut + 2)
          let id: string | null = null
          let event = 'message'
          const data: string[] = []
          for (const line of block.split('\n')) {
            if (line.startsWith('id: ')) id = line.slice(4)
            else if (line.startsWith('event: ')) event = line.slice(7)
            else if (line.startsWith('data: ')) data.push(line.slice(6))
          }
          if (data.length > 0) events.push({ id, event, data: data.join('\n') })
        }
      })
      r.on('end', () => void (ended = true))
      r.on('error', () => void (ended = true))
      resolve(r.statusCode ?? 0)
    })
    req.on('error', reject)
    req.end()
  })
  return {
    events,
    opened,
    get ended() {
      return ended
    },
    pause: () => res?.socket.pause(),
    resume: () => res?.socket.resume(),
    destroy: () => res?.destroy(),
  }
}

t.test('a stalled reader is dropped with its reason and the others get every event; one address holds a bounded number of streams', async (t) => {
  const log = await EmbeddedLog.open(await makeTempDir(t, 'svc-stream-limits-'))
  t.teardown(() => log.close())
  const ledger = await DecisionLedger.open({ log })
  t.teardown(() => ledger.close())
  const catalog = new QuestionCatalog()
  const streams = await LedgerStreams.open({ ledger, clockOf: (d) => openClockOf(catalog, d) })
  t.teardown(() => streams.close())
  const server = await Server.start({ port: 0, config: { payTo: PAY_TO, streamMaxBufferedBytes: BOUND, streamMaxPerIp: 6 }, services: { streams } })
  t.teardown(() => server.close())
  const ws = `ws://127.0.0.1:${server.port}/v1/streams/decisions`
  const http = `${server.url}/v1/streams/decisions`

  const head = await fetch(http, { method: 'HEAD' })
  t.equal(head.status, 200, 'HEAD: the head of the stream')
  t.equal(head.headers.get('content-type'), 'text/event-stream; charset=utf-8')
  t.equal(server.streams.connections, 0, 'HEAD opens no stream')

  const reading = wsClient(ws)
  const stalled = wsClient(ws)
  const sseReading = sseClient(http)
  const sseStalled = sseClient(http)
  await Promise.all([reading.opened, stalled.opened])
  t.equal(await sseReading.opened, 200)
  t.equal(await sseStalled.opened, 200)
  await until('both SSE streams are registered', () => server.streams.connections === 4)
  ;(stalled.ws as unknown as { _socket: { pause(): void } })._socket.pause()
  sseStalled.pause()

  // Real ledger appends, in batches as a busy engine's flushes would be.
  const ids: string[] = []
  for (let i = 0; i < DECISIONS; i += 500) {
    for (let n = i; n < i + 500; n++) ids.push(ledger.stageDecision(testDecision(n + 1)).record.decision_id)
    await ledger.flush()
  }
  await until('the reading clients have every decision', () => reading.got.length === DECISIONS && sseReading.events.length === DECISIONS, 120_000).catch((err) => { throw new Error(`${err.message}: ws ${reading.got.length}, sse ${sseReading.events.length}, stalled ${stalled.got.length}/${sseStalled.events.length}, dropped ${JSON.stringify(server.streams.dropped)}, entries ${JSON.stringify(streams.size)}`) })
  t.same(reading.got.map((m) => m.data.decision_id), ids, `WebSocket: all ${DECISIONS} decisions, in order, once`)
  t.same(sseReading.events.map((e) => JSON.parse(e.data).decision_id), ids, `SSE: all ${DECISIONS} decisions, in order, once`)
  t.same(server.streams.dropped, { ws: 1, sse: 1 }, 'one stalled reader of each transport was dropped')
  t.equal(server.streams.connections, 2, 'the two reading clients are still connected')

  // The stalled WebSocket reads again: what was sent before the drop, then close 4008 naming the reason.
  ;(stalled.ws as unknown as { _socket: { resume(): void } })._socket.resume()
  await until('the stalled WebSocket sees its close', () => stalled.closes.length === 1)
  t.equal(stalled.closes[0]!.code, 4008)
  t.match(stalled.closes[0]!.reason, /^SLOW_CONSUMER: /)
  const partial = stalled.got.map((m) => m.data.decision_id)
  t.ok(partial.length > 0 && partial.length < DECISIONS, `it had ${partial.length} of ${DECISIONS} when dropped`)
  t.same(partial, ids.slice(0, partial.length), 'a prefix: nothing skipped before the drop')
  const rest = wsClient(`${ws}?cursor=${encodeURIComponent(stalled.got[stalled.got.length - 1]!.id)}`)
  await until('the reconnected client catches up', () => rest.got.length === DECISIONS - partial.length)
  await sleep(200)
  t.same([...partial, ...rest.got.map((m) => m.data.decision_id)], ids, 'resumed with its cursor: exactly the rest')

  // The stalled SSE client reads again: the events before the drop, then a final close event, then the end.
  sseStalled.resume()
  await until('the stalled SSE stream ends', () => sseStalled.ended)
  const last = sseStalled.events[sseStalled.events.length - 1]!
  t.equal(last.event, 'close')
  t.match(JSON.parse(last.data), { reason: 'SLOW_CONSUMER' })
  const ssePartial = sseStalled.events.slice(0, -1).map((e) => JSON.parse(e.data).decision_id)
  t.same(ssePartial, ids.slice(0, ssePartial.length), 'SSE: a prefix before the close event')

  // The cap per address: 3 open now (2 reading + the resumed one); 3 more fit, the next is refused with the envelope.
  const more = [wsClient(ws), wsClient(ws), wsClient(ws)]
  await Promise.all(more.map((c) => c.opened))
  const capped = await fetch(http)
  t.equal(capped.status, 429)
  t.match(((await capped.json()) as { error: unknown }).error, { code: 'RATE_LIMITED', retryable: true, detail: { reason: 'STREAM_CONNECTIONS_CAPPED', limit: 6 } })
  t.ok(capped.headers.get('retry-after'), 'with Retry-After')
  const cappedWs = wsClient(ws)
  const refused = await cappedWs.refused
  t.equal(refused.status, 429, 'a WebSocket upgrade over the cap: the same 429')
  t.match(JSON.parse(refused.body), { error: { detail: { reason: 'STREAM_CONNECTIONS_CAPPED' } } })
  more[0]!.ws.close()
  await until('a closed stream frees its place', () => server.streams.connections === 5)
  const again = wsClient(ws)
  await again.opened
  t.pass('a place freed by a close is taken again')
  for (const c of [reading, rest, again, ...more]) c.ws.close()
  sseReading.destroy()
})

t.test('the payer notifications stream: proven as the REST route, live, resumable by cursor', async (t) => {
  const account = privateKeyToAccount(`0x${'42'.repeat(32)}`)
  const payer = account.address.toLowerCase()
  const other = '0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'
  const log = await EmbeddedLog.open(await makeTempDir(t, 'svc-stream-notes-'))
  t.teardown(() => log.close())
  const clock = new TestClock(Date.parse('2026-03-02T09:00:00.000Z'))
  const events = new TestCallEvents()
  const arena = await Arena.open({ log, clock, events })
  t.teardown(() => arena.close())
  const server = await Server.start({ port: 0, config: { payTo: PAY_TO }, services: { clock, arena } })
  t.teardown(() => server.close())
  const path = `/v1/streams/notifications?payer=${payer}`

  // No proof: the same 401 the REST route answers, with the sign-in challenge; over SSE and over an upgrade.
  const unproven = await fetch(`${server.url}${path}`)
  t.equal(unproven.status, 401)
  const restUnproven = await fetch(`${server.url}/v1/arena/notifications?payer=${payer}`)
  const [a, b] = [(await unproven.json()) as { error: { code: string; detail: Record<string, unknown> } }, (await restUnproven.json()) as { error: { code: string; detail: Record<string, unknown> } }]
  t.equal(a.error.code, 'PAYER_UNPROVEN')
  t.equal(a.error.detail.reason, b.error.detail.reason, 'the same reason as GET /v1/arena/notifications')
  t.ok(a.error.detail['sign-in-with-x'], 'with the sign-in challenge')
  const wsUnproven = wsClient(`ws://127.0.0.1:${server.port}${path}`)
  t.equal((await wsUnproven.refused).status, 401, 'a WebSocket upgrade without proof: 401')

  // Signed in (sign-in-with-x → bearer session), the stream opens and carries the payer's notifications live.
  const session = await signIn(server.url, account)
  const proof = { authorization: session.headers.authorization! }
  const live = wsClient(`ws://127.0.0.1:${server.port}${path}`, proof)
  await live.opened
  const h = 3_600_000
  events.grade(events.lock(payer, clock.now()), clock.now() + h, 'correct')
  await arena.idle()
  const rest = (await (await fetch(`${server.url}/v1/arena/notifications?payer=${payer}`, { headers: proof })).json()) as { data: { notifications: Array<{ id: number }> } }
  const expected = rest.data.notifications.map((n) => n.id).sort((x, y) => x - y)
  t.ok(expected.length > 0, `${expected.length} notifications from a graded call`)
  await until('the stream has them', () => live.got.length === expected.length)
  t.same(live.got.map((m) => m.data.id), expected, 'each notification once, in id order')
  t.ok(live.got.every((m) => m.event === 'notification'))

  // Resumed after the first: exactly the others; a cursor of another payer is refused.
  const first = live.got[0]!.id
  const resumed = wsClient(`ws://127.0.0.1:${server.port}${path}&cursor=${encodeURIComponent(first)}`, proof)
  await resumed.opened
  await until('the resumed stream caught up', () => resumed.got.length === expected.length - 1)
  t.same(resumed.got.map((m) => m.data.id), expected.slice(1))
  const otherSession = await server.services.payerProof.sessions.open(other, 86_400_000, clock.now())
  const foreign = await fetch(`${server.url}/v1/streams/notifications?payer=${other}&cursor=${encodeURIComponent(first)}`, { headers: { authorization: `Bearer ${otherSession.token}` } })
  t.equal(foreign.status, 400)
  t.match(((await foreign.json()) as { error: unknown }).error, { code: 'VALIDATION', detail: { reason: 'INVALID_CURSOR' } })
  live.ws.close()
  resumed.ws.close()
})
