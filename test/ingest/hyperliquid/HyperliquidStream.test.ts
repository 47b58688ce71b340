/**
 * HyperliquidStream against a real websocket server on 127.0.0.1 (test/helpers/HyperliquidReplayServer.ts; its
 * messages are built in the documented shapes from recorded REST data, since no websocket recordings exist).
 */
import t, { type Test } from 'tap'
import { once } from 'node:events'
import { WebSocketServer } from 'ws'
import { HyperliquidStream, type HlStreamMessage, type HyperliquidStreamOptions } from '../../../ingest/hyperliquid/HyperliquidStream.ts'
import { activeAssetCtxToTicks, bookTopToTick, tradesToTicks } from '../../../ingest/hyperliquid/toTicks.ts'
import { validateTick, type Tick } from '../../../ingest/Tick.ts'
import { withReplayServer } from '../../helpers/HyperliquidReplayServer.ts'
import { freePort } from '../../helpers/tmp.ts'

/** The ticks a message maps to (the connector's mapping), for assertions on content. */
function ticksOf(m: HlStreamMessage): Tick[] {
  const ctx = { receivedAt: m.receivedAt, provider: 'hyperliquid-ws' as const }
  if (m.channel === 'trades') return tradesToTicks(m.data, ctx)
  if (m.channel === 'l2Book') return [m.data && bookTopToTick(m.data, ctx)].filter((x): x is NonNullable<typeof x> => x !== null)
  if (m.channel === 'activeAssetCtx') return activeAssetCtxToTicks(m.data, ctx)
  return []
}

async function withStream(
  t: Test,
  options: Omit<HyperliquidStreamOptions, 'onMessage'>,
): Promise<{ stream: HyperliquidStream; ticks: Tick[]; messages: HlStreamMessage[] }> {
  const ticks: Tick[] = []
  const messages: HlStreamMessage[] = []
  const stream = await HyperliquidStream.open({
    ...options,
    onMessage: (m) => {
      messages.push(m)
      ticks.push(...ticksOf(m))
    },
  })
  t.teardown(() => stream.stop())
  return { stream, ticks, messages }
}

async function until(what: string, cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

t.test('subscribes and turns trades, l2Book and activeAssetCtx into ticks', async (t) => {
  const server = await withReplayServer(t, { wsIntervalMs: 50 })
  const { stream, ticks, messages } = await withStream(t, { url: server.wsUrl, coins: ['BTC', 'ETH'], channels: ['trades', 'l2Book', 'activeAssetCtx'] })
  t.ok(stream.connected)
  const kinds = ['trade', 'book_top', 'mark', 'index', 'mid', 'open_interest', 'predicted_funding']
  await until('every kind for both coins', () =>
    ['BTC', 'ETH'].every((asset) => kinds.every((k) => ticks.some((x) => x.asset === asset && x.kind === k))),
  )
  t.same(
    server.wsSubscriptions.map((s) => s.subscription),
    ['BTC', 'ETH'].flatMap((coin) => ['trades', 'l2Book', 'activeAssetCtx'].map((type) => ({ type, coin }))),
    'one subscription per coin and channel',
  )
  t.equal(stream.stats.subscriptionAcks, 6)
  for (const tick of ticks) validateTick(tick)
  t.ok(ticks.every((x) => x.provenance.provider === 'hyperliquid-ws' && x.provenance.source === 'hyperliquid:perp'))
  const mark = ticks.find((x) => x.asset === 'BTC' && x.kind === 'mark')
  t.match(mark, { price: 77562.0 }, 'activeAssetCtx markPx (real BTC ctx)')
  const oi = ticks.find((x) => x.asset === 'BTC' && x.kind === 'open_interest')
  t.match(oi, { value: 27353.17682, unit: 'base' })
  const trade = ticks.find((x) => x.asset === 'BTC' && x.kind === 'trade')
  t.match(trade, { side: /^(buy|sell)$/, trade_id: /^\d+$/ })
  t.equal(stream.stats.rejected, 0)
  t.ok(messages.every((m) => m.connection === 1), 'every message names its connection')
})

t.test('pings after quiet and keeps the connection on pong', async (t) => {
  const server = await withReplayServer(t)
  server.wsStreaming = false
  const { stream } = await withStream(t, { url: server.wsUrl, coins: ['BTC'], pingAfterMs: 150, pongTimeoutMs: 500 })
  await once(stream, 'pong')
  await once(stream, 'pong')
  t.ok(stream.stats.pingsSent >= 2)
  t.ok(stream.stats.pongs >= 2)
  t.ok(server.wsPings >= 2, 'the server saw {"method":"ping"}')
  t.equal(stream.stats.connects, 1, 'no reconnect while pongs arrive')
  t.equal(server.wsConnections, 1)
})

t.test('a silent server (no pong) is dropped and reconnected', async (t) => {
  const server = await withReplayServer(t)
  server.wsStreaming = false
  server.wsAnswerPings = false
  const { stream } = await withStream(t, {
    url: server.wsUrl,
    coins: ['BTC'],
    pingAfterMs: 100,
    pongTimeoutMs: 150,
    backoffBaseMs: 20,
    backoffCapMs: 40,
  })
  await until('a second connection', () => stream.stats.connects >= 2)
  t.equal(server.wsConnections >= 2, true)
  t.ok(stream.stats.pongs === 0 && stream.stats.pingsSent >= 1)
})

t.test('server drop → reconnect with backoff and re-subscribe', async (t) => {
  const server = await withReplayServer(t, { wsIntervalMs: 30 })
  const { stream, ticks, messages } = await withStream(t, {
    url: server.wsUrl,
    coins: ['SOL'],
    channels: ['trades', 'l2Book', 'activeAssetCtx'],
    backoffBaseMs: 100,
    backoffCapMs: 1000,
  })
  await until('first ticks', () => ticks.length > 0)
  const reconnecting = once(stream, 'reconnecting')
  t.equal(server.dropWsConnections(), 1)
  const [{ attempt, delayMs }] = (await reconnecting) as [{ attempt: number; delayMs: number }]
  t.equal(attempt, 1)
  t.ok(delayMs >= 50 && delayMs <= 100, `first delay within [base/2, base]: ${delayMs}`)
  await until('reconnected', () => stream.stats.connects === 2)
  // The client counts the connection on open and then sends its subscribe messages: wait for the server to read them.
  const onSecond = () => server.wsSubscriptions.filter((s) => s.connection === 2)
  await until('the re-subscriptions on the second connection', () => onSecond().length >= 3)
  const second = onSecond().map((s) => s.subscription)
  t.same(second, [
    { type: 'trades', coin: 'SOL' },
    { type: 'l2Book', coin: 'SOL' },
    { type: 'activeAssetCtx', coin: 'SOL' },
  ])
  const before = ticks.length
  await until('ticks after the reconnect', () => ticks.length > before + 3)
  t.ok(messages.slice(-1)[0]!.connection === 2, 'messages after the reconnect name the second connection')
})

t.test('backoff grows exponentially to the cap while the venue is down', async (t) => {
  const server = await withReplayServer(t)
  const { stream } = await withStream(t, { url: server.wsUrl, coins: ['BTC'], backoffBaseMs: 20, backoffCapMs: 80 })
  const delays: number[] = []
  stream.on('reconnecting', ({ delayMs }: { delayMs: number }) => delays.push(delayMs))
  await server.close()
  await until('five reconnect attempts', () => delays.length >= 5)
  const ceilings = [20, 40, 80, 80, 80]
  ceilings.forEach((c, i) => t.ok(delays[i]! >= c / 2 && delays[i]! <= c, `attempt ${i + 1}: ${delays[i]} in [${c / 2}, ${c}]`))
})

t.test('an unreachable URL at start-up is retried, not thrown; stop() ends it', async (t) => {
  const port = await freePort()
  const stream = await HyperliquidStream.open({ url: `ws://127.0.0.1:${port}/ws`, coins: ['BTC'], backoffBaseMs: 20, onMessage: () => {} })
  t.equal(stream.connected, false)
  await until('a reconnect scheduled', () => stream.stats.reconnectsScheduled >= 1)
  await stream.stop()
  const scheduled = stream.stats.reconnectsScheduled
  await new Promise((r) => setTimeout(r, 100))
  t.equal(stream.stats.reconnectsScheduled, scheduled, 'nothing scheduled after stop')
})

t.test('stop() closes cleanly and does not reconnect', async (t) => {
  const server = await withReplayServer(t, { wsIntervalMs: 30 })
  const ticks: HlStreamMessage[] = []
  const stream = await HyperliquidStream.open({ url: server.wsUrl, coins: ['BTC'], backoffBaseMs: 10, onMessage: (x) => ticks.push(x) })
  await until('ticks', () => ticks.length > 0)
  await stream.stop()
  await until('server sees the close', () => server.openWsConnections === 0)
  const count = ticks.length
  await new Promise((r) => setTimeout(r, 150))
  t.equal(ticks.length, count, 'no ticks after stop')
  t.equal(server.wsConnections, 1, 'no reconnect')
  t.equal(stream.stats.reconnectsScheduled, 0)
})

t.test('options are validated, naming the field', async (t) => {
  await t.rejects(HyperliquidStream.open({ coins: [], onMessage: () => {} }), /HyperliquidStream options\/coins/)
  await t.rejects(HyperliquidStream.open({ coins: ['BTC'], url: 'http://x', onMessage: () => {} }), /options\/url/)
  await t.rejects(HyperliquidStream.open({ coins: ['BTC'], channels: ['bbo' as never], onMessage: () => {} }), /options\/channels/)
  await t.rejects(HyperliquidStream.open({ coins: ['BTC'], candleInterval: '1M', onMessage: () => {} }), /options\/candleInterval/)
})

t.test('the candle subscription names its interval; bad frames are refused with a reason and the stream goes on', async (t) => {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' })
  await once(wss, 'listening')
  t.teardown(() => new Promise<void>((resolve) => wss.close(() => resolve())))
  const subscriptions: unknown[] = []
  const candle = { t: 1_700_000_000_000, T: 1_700_003_599_999, s: 'BTC', i: '1h', o: '100.5', c: '101', h: '102', l: '99.5', v: '12.5', n: 7 }
  wss.on('connection', (ws) => {
    ws.on('message', (raw) => {
      const msg = JSON.parse(raw.toString()) as { method: string; subscription: unknown }
      subscriptions.push(msg.subscription)
      if (subscriptions.length < 2) return
      ws.send('{not json')
      ws.send(JSON.stringify({ channel: 'someNewChannel', data: {} }))
      ws.send(JSON.stringify({ channel: 'trades', data: [{ coin: 'BTC', side: 'B', px: 'NaN', sz: '1', time: 1, hash: '0x1', tid: 1 }] }))
      ws.send(JSON.stringify({ channel: 'candle', data: candle }))
    })
  })
  const port = (wss.address() as { port: number }).port
  const rejects: Array<[string, string]> = []
  const messages: HlStreamMessage[] = []
  const stream = await HyperliquidStream.open({
    url: `ws://127.0.0.1:${port}/ws`,
    coins: ['BTC'],
    channels: ['trades', 'candle'],
    onMessage: (m) => messages.push(m),
    onReject: (reason, detail) => rejects.push([reason, detail]),
  })
  t.teardown(() => stream.stop())
  await until('the good candle after the bad frames', () => messages.length === 1)
  t.same(subscriptions, [{ type: 'trades', coin: 'BTC' }, { type: 'candle', coin: 'BTC', interval: '1h' }])
  t.same(rejects.map((r) => r[0]), ['not_json', 'unknown_channel', 'bad_field'], 'each bad frame refused with its reason')
  t.match(rejects[2]![1], /trades: .*\/data\/0\/px.*NaN/, 'the bad field is named')
  t.match(messages[0], { channel: 'candle', connection: 1, data: { coin: 'BTC', interval: '1h', openTime: candle.t, closeTime: candle.T, high: 102, trades: 7 } })
  t.equal(stream.stats.rejected, 3)
})
