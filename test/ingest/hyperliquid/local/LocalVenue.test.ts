/**
 * The local Hyperliquid stand-in over real HTTP and websockets on 127.0.0.1, with the project's own clients as peers
 * (HyperliquidInfoClient and its parsers, HyperliquidStream, the `ws` package): shapes, pagination and retention,
 * a moving market on a compressed clock, every fault kind, the venue's limits, a script, and `svc venue serve`.
 */
import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { WebSocket } from 'ws'
import { ScaledClock } from '../../../../common/ScaledClock.ts'
import { HyperliquidInfoClient } from '../../../../ingest/hyperliquid/HyperliquidInfoClient.ts'
import { HyperliquidStream, type HlStreamMessage } from '../../../../ingest/hyperliquid/HyperliquidStream.ts'
import { LocalVenue, type LocalVenueOptions } from '../../../../ingest/hyperliquid/local/LocalVenue.ts'
import { parseActiveAssetCtx, parseBook, parseCandles, parseTrades, type HlCandle, type HlTrade } from '../../../../ingest/hyperliquid/parseInfo.ts'
import { SyntheticMarket } from '../../../../ingest/SyntheticMarket.ts'
import { isoMs, tickTime } from '../../../../ingest/Tick.ts'
import { makeTempDir } from '../../../helpers/tmp.ts'

const MINUTE = 60_000
const HOUR = 3_600_000
const DAY = 86_400_000
const SVC = fileURLToPath(new URL('../../../../bin/svc.js', import.meta.url))

async function startVenue(t: Test, options: LocalVenueOptions): Promise<LocalVenue> {
  const venue = await LocalVenue.start(options)
  t.teardown(() => venue.close())
  return venue
}

async function until(what: string, cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

interface Frame {
  text: string
  /** Parsed, or undefined when the frame is not JSON. */
  json: { channel?: string; data?: unknown } | undefined
  /** Venue time at receipt. */
  at: number
}

interface Peer {
  ws: WebSocket
  frames: Frame[]
  closed: Promise<number>
  send(v: unknown): void
  channel(name: string): Frame[]
}

/** A raw `ws` client that keeps every frame with the venue time it arrived at. */
async function peer(t: Test, venue: LocalVenue): Promise<Peer> {
  const ws = new WebSocket(venue.wsUrl)
  const frames: Frame[] = []
  ws.on('message', (raw) => {
    const text = raw.toString()
    let json: Frame['json']
    try {
      json = JSON.parse(text) as Frame['json']
    } catch {
      json = undefined
    }
    frames.push({ text, json, at: venue.now() })
  })
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)))
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve())
    ws.once('error', reject)
  })
  t.teardown(() => ws.terminate())
  return {
    ws,
    frames,
    closed,
    send: (v) => ws.send(JSON.stringify(v)),
    channel: (name) => frames.filter((f) => f.json?.channel === name),
  }
}

/** Resolves with the HTTP status that refused an upgrade, or 0 when the socket was simply dropped. */
function refusedUpgrade(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url)
    ws.once('open', () => {
      ws.terminate()
      reject(new Error('the upgrade was accepted'))
    })
    ws.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? -1)
      ws.terminate()
    })
    ws.once('error', () => resolve(0))
  })
}

async function post(venue: LocalVenue, body: unknown): Promise<{ status: number; type: string; text: string }> {
  const res = await fetch(`${venue.baseUrl}/info`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) })
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() }
}

// ---------------------------------------------------------------------------------------------------------------

t.test('REST answers parse with the project client and follow the reference rules', async (t) => {
  // Held at one speed-1 instant in March 2026 so the answers are the same on every run.
  const clock = new ScaledClock({ anchorMs: Date.parse('2026-03-01T00:30:00Z'), speed: 1 })
  const venue = await startVenue(t, { clock, historyDays: 25 })
  const client = new HyperliquidInfoClient({ baseUrl: venue.baseUrl })
  t.equal(venue.originMs, Date.parse('2026-02-04T00:00:00Z'), 'origin = floor_hour(now − 25 days)')

  const { data: mc } = await client.metaAndAssetCtxs()
  t.same(mc.markets.map((m) => [m.meta.name, m.meta.szDecimals, m.meta.maxLeverage]), [['BTC', 5, 40], ['ETH', 4, 25], ['SOL', 2, 20]])
  for (const m of mc.markets) {
    const c = m.ctx!
    for (const k of ['funding', 'openInterest', 'oraclePx', 'markPx', 'midPx', 'premium', 'prevDayPx', 'dayNtlVlm', 'dayBaseVlm'] as const) t.type(c[k], 'number', `${m.meta.name} ${k}`)
    t.ok(Math.abs(c.premium! - (c.midPx! / c.oraclePx! - 1)) < 1e-9, 'premium = mid / oracle − 1')
    t.ok(c.impactPxs![0] < c.impactPxs![1])
  }
  const raw = JSON.parse((await post(venue, { type: 'metaAndAssetCtxs' })).text) as [Record<string, unknown>, Array<Record<string, unknown>>]
  t.same(raw[0].marginTables, [])
  t.equal(raw[0].collateralToken, 0)
  t.ok(raw[1].every((ctx) => Object.values(ctx).flat().every((v) => typeof v === 'string' && /^-?\d+\.\d+$/.test(v))), 'decimal strings, no exponents')

  const { data: pf } = await client.predictedFundings()
  t.same(pf.map((p) => p.coin), ['BTC', 'ETH', 'SOL'])
  const hl = pf[0]!.venues.find((v) => v.venue === 'HlPerp')!
  t.equal(hl.nextFundingTime, Date.parse('2026-03-01T01:00:00Z'))
  t.equal(hl.fundingIntervalHours, 1)
  t.equal(hl.fundingRate, mc.markets[0]!.ctx!.funding, 'HlPerp is the rate accruing now')
  t.same(pf[0]!.venues.map((v) => v.venue), ['BinPerp', 'HlPerp', 'BybitPerp'])

  const { data: book } = await client.l2Book('ETH')
  t.equal(book.bids.length, 20)
  t.equal(book.asks.length, 20)
  t.ok(book.bids[0]!.px < book.asks[0]!.px)
  t.ok(Math.abs(book.time - clock.now()) < 5000, 'book time is venue now')
  const { data: mids } = await client.allMids()
  t.same(Object.keys(mids), ['BTC', 'ETH', 'SOL'])

  // candleSnapshot 1h over 10 days: contiguous, inclusive T, the forming hour last.
  const now = venue.now()
  const { data: hours } = await client.candleSnapshot('BTC', '1h', { startTime: now - 10 * DAY, endTime: now })
  t.equal(hours.length, 241, '240 closed hours and the forming one')
  t.equal(hours[0]!.openTime, Math.floor((now - 10 * DAY) / HOUR) * HOUR, 'the candle containing startTime is included')
  t.ok(hours.every((c, i) => c.closeTime === c.openTime + HOUR - 1 && (i === 0 || c.openTime === hours[i - 1]!.openTime + HOUR)), 'contiguous, T = t + 1h − 1')
  t.ok(hours.every((c) => c.low <= Math.min(c.open, c.close) && c.high >= Math.max(c.open, c.close) && c.volume > 0 && (c.trades ?? 0) > 0))
  // Retention: only the newest 5000 one-minute candles exist.
  const { data: minutes } = await client.candleSnapshot('SOL', '1m', { startTime: now - 4 * DAY, endTime: now })
  t.equal(minutes.length, 5000)
  // The newest is the forming minute once it has traded, else the one before.
  t.ok(minutes.at(-1)!.openTime >= Math.floor(now / MINUTE) * MINUTE - MINUTE, 'the newest minute is served')
  t.equal(minutes[0]!.openTime, minutes.at(-1)!.openTime - 4999 * MINUTE, 'older minutes are no longer served')
  const closedHours = venue.bars('BTC', '1h')
  const last = closedHours.at(-1)!
  const rest = hours.find((c) => c.openTime === last.openTime)!
  t.same([rest.open, rest.high, rest.low, rest.close, rest.volume, rest.trades], [last.open, last.high, last.low, last.close, last.volume, last.trades], 'REST = the venue list')
  t.equal(last.closeTime, last.openTime + HOUR)

  // fundingHistory: 500 a page, the client paginates and drops the repeated boundary row.
  const before = venue.stats.restRequests.fundingHistory ?? 0
  const { data: funding } = await client.fundingHistory('BTC', { startTime: venue.originMs })
  t.equal(venue.stats.restRequests.fundingHistory! - before, 2, 'two pages')
  const published = venue.fundingRows('BTC')
  t.equal(funding.length, published.length)
  t.ok(funding.length > 500)
  t.equal(new Set(funding.map((r) => r.time)).size, funding.length, 'no duplicate row')
  const page1 = JSON.parse((await post(venue, { type: 'fundingHistory', coin: 'BTC', startTime: venue.originMs })).text) as Array<{ time: number }>
  const page2 = JSON.parse((await post(venue, { type: 'fundingHistory', coin: 'BTC', startTime: page1.at(-1)!.time })).text) as Array<{ time: number }>
  t.equal(page1.length, 500)
  t.same(page2[0], page1.at(-1), 'the boundary row repeats on the wire')
  const ticks = new Map<number, { rate: number; premium: number | null }>()
  for (const tick of new SyntheticMarket({ seed: 1, hours: 25 * 24 + 1, assets: ['BTC', 'ETH', 'SOL'], start: isoMs(venue.originMs) })) {
    if (tick.kind === 'funding' && tick.asset === 'BTC') ticks.set(tickTime(tick), { rate: tick.rate, premium: tick.premium })
  }
  t.ok(funding.every((r) => {
    const hour = Math.floor(r.time / HOUR) * HOUR
    return r.time - hour >= 1 && r.time - hour <= 250 && ticks.get(hour)?.rate === r.fundingRate && ticks.get(hour)?.premium === r.premium
  }), 'every rate is SyntheticMarket’s funding tick of that hour; time = hour + 1..250 ms')
  t.ok(funding.at(-1)!.time <= now && funding.at(-1)!.time > now - HOUR - 250, 'up to the latest published settlement')

  // What the real API answers to what it cannot read.
  const unknown = await post(venue, { type: 'userRole', user: '0x0' })
  t.same([unknown.status, unknown.type], [422, 'text/plain'])
  t.match(unknown.text, /^Failed to deserialize the JSON body into the target type/)
  t.equal((await post(venue, '{"type":')).status, 422, 'malformed JSON')
  t.equal((await post(venue, { type: 'l2Book', coin: 'DOGE' })).text, 'null')
  t.equal((await post(venue, { type: 'candleSnapshot', req: { coin: 'DOGE', interval: '1h', startTime: 0, endTime: now } })).text, '[]')
  t.equal((await post(venue, { type: 'fundingHistory', coin: 'DOGE', startTime: 0 })).text, '[]')
  t.equal((await post(venue, { type: 'candleSnapshot', req: { coin: 'BTC', interval: '1w', startTime: 0, endTime: now } })).status, 422, 'unsimulated interval')
  t.ok(venue.stats.restRequests.userRole === 1 && venue.stats.restRequests['(unparseable)'] === 1, 'requests counted by type')
})

t.test('a moving market on a compressed clock: frames move forward and agree with REST and the generator', async (t) => {
  const clock = new ScaledClock({ anchorMs: Date.parse('2026-03-02T00:58:30Z'), speed: 600 })
  const venue = await startVenue(t, { clock, historyDays: 0.5, coins: ['BTC', 'ETH'], frameMs: 50 })
  const p = await peer(t, venue)
  for (const s of [
    { type: 'trades', coin: 'BTC' },
    { type: 'candle', coin: 'BTC', interval: '1m' },
    { type: 'candle', coin: 'BTC', interval: '1h' },
    { type: 'l2Book', coin: 'BTC' },
    { type: 'activeAssetCtx', coin: 'BTC' },
  ]) p.send({ method: 'subscribe', subscription: s })
  const messages: HlStreamMessage[] = []
  const stream = await HyperliquidStream.open({ url: venue.wsUrl, coins: ['ETH'], clock, onMessage: (m) => messages.push(m) })
  t.teardown(() => stream.stop())

  // The hour checked is the first one that opens after all five subscriptions are acknowledged: a trade before the
  // ack is never sent to this peer, and on a loaded machine the acks can land after 01:00 venue time (speed 600).
  await until('five acks', () => p.channel('subscriptionResponse').length === 5)
  const subscribedAt = Math.max(...p.channel('subscriptionResponse').map((f) => f.at))
  const hourStart = Math.ceil(subscribedAt / HOUR) * HOUR
  const hourEnd = hourStart + HOUR
  await until('the hour to close', () => p.channel('candle').some((f) => (f.json!.data as { t: number }).t >= hourEnd && (f.json!.data as { i: string }).i === '1h'), 30_000)

  t.equal(p.channel('subscriptionResponse').length, 5, 'five acks')
  const tradeFrames = p.channel('trades').map((f) => ({ at: f.at, trades: parseTrades(f.json!.data, '/data') }))
  const trades: HlTrade[] = tradeFrames.flatMap((f) => f.trades)
  t.ok(tradeFrames.every((f) => f.trades.every((x) => x.time <= f.at)), 'no trade arrives before its time')
  t.ok(trades.every((x, i) => i === 0 || x.time > trades[i - 1]!.time), 'trade times move forward')
  const books = p.channel('l2Book').map((f) => parseBook(f.json!.data, '/data'))
  t.ok(books.length > 20 && books.every((b, i) => i === 0 || b.time - books[i - 1]!.time >= 500), 'books move forward, ≥ 500 ms of venue time apart')
  const ctxs = p.channel('activeAssetCtx').map((f) => parseActiveAssetCtx(f.json!.data, '/data'))
  // One per venue minute; a push that spans two minutes (a busy machine at speed 600) sends the newest only.
  t.ok(ctxs.length >= 45, `${ctxs.length} contexts over ~62 venue minutes`)

  // The hour [01:00, 02:00) rebuilt from its trades = the REST candle = the last websocket update of that candle.
  const inHour = trades.filter((x) => x.time >= hourStart && x.time < hourEnd)
  t.ok(inHour.length > 300, `${inHour.length} trades in the hour`)
  const fromTrades = {
    open: inHour[0]!.px,
    high: Math.max(...inHour.map((x) => x.px)),
    low: Math.min(...inHour.map((x) => x.px)),
    close: inHour.at(-1)!.px,
    volume: Number(inHour.reduce((s, x) => s + x.sz, 0).toFixed(5)),
    trades: inHour.length,
  }
  const client = new HyperliquidInfoClient({ baseUrl: venue.baseUrl })
  const { data: rest } = await client.candleSnapshot('BTC', '1h', { startTime: hourStart, endTime: hourStart })
  const pick = (c: HlCandle) => ({ open: c.open, high: c.high, low: c.low, close: c.close, volume: c.volume, trades: c.trades })
  t.same(pick(rest[0]!), fromTrades, '1h REST candle = the aggregate of the streamed trades')
  const wsHours = parseCandles(p.channel('candle').map((f) => f.json!.data)).filter((c) => c.interval === '1h' && c.openTime === hourStart)
  t.same(pick(wsHours.at(-1)!), fromTrades, 'the last websocket update of the hour is the candle')

  // Each 1m candle's last update, once its minute is over, is the generated bar.
  const gen = new Map<number, { open: number; high: number; low: number; close: number; volume: number }>()
  for (const tick of new SyntheticMarket({ seed: 1, hours: (hourEnd - venue.originMs) / HOUR, assets: ['BTC', 'ETH'], start: isoMs(venue.originMs) })) {
    if (tick.kind === 'bar' && tick.asset === 'BTC') gen.set(tickTime(tick) - MINUTE, tick)
  }
  const lastUpdate = new Map<number, HlCandle>()
  for (const c of parseCandles(p.channel('candle').map((f) => f.json!.data))) if (c.interval === '1m') lastUpdate.set(c.openTime, c)
  let compared = 0
  for (let m = hourStart; m < hourEnd; m += MINUTE) {
    const c = lastUpdate.get(m)!
    const bar = gen.get(m)!
    t.same([c.open, c.high, c.low, c.close, c.volume], [bar.open, bar.high, bar.low, bar.close, bar.volume], `1m ${isoMs(m)}`)
    t.equal(c.trades, inHour.filter((x) => x.time >= m && x.time < m + MINUTE).length)
    compared++
  }
  t.equal(compared, 60)
  const firstUpdates = new Map<number, HlCandle>()
  for (const c of parseCandles(p.channel('candle').map((f) => f.json!.data))) if (c.interval === '1m' && !firstUpdates.has(c.openTime)) firstUpdates.set(c.openTime, c)
  t.ok([...firstUpdates.values()].every((c) => (c.trades ?? 0) >= 1), 'a candle first appears with a trade in it')

  // The project's stream client reads the same feed, every frame accepted.
  await until('every stream channel', () => ['trades', 'l2Book', 'activeAssetCtx', 'candle'].every((c) => messages.some((m) => m.channel === c)))
  t.equal(stream.stats.rejected, 0)
  t.ok(messages.every((m) => m.channel !== 'trades' || m.data.every((x) => x.coin === 'ETH' && x.time <= m.receivedAt)))
  // Mute the venue before stopping the client: a frame arriving during its close handshake re-arms its 30 s ping
  // timer after stop() cleared it (HyperliquidStream), which would hold the test process open.
  venue.fault({ kind: 'silence', forMs: DAY })
  await stream.stop()
})

t.test('every fault kind has its observable effect', async (t) => {
  const clock = new ScaledClock({ anchorMs: Date.parse('2026-03-03T10:00:00Z'), speed: 60 })
  const venue = await startVenue(t, { clock, historyDays: 0.5, frameMs: 50 })
  const client = new HyperliquidInfoClient({ baseUrl: venue.baseUrl, timeoutMs: 3000 })

  t.test('malformed: each variant arrives as described', async (t) => {
    const p = await peer(t, venue)
    const seen = () => p.frames.length
    const next = async (variant: string) => {
      const n = seen()
      venue.fault({ kind: 'malformed', variant, coin: 'ETH' })
      await until(variant, () => seen() > n)
      return p.frames[n]!
    }
    const invalid = await next('invalid_json')
    t.equal(invalid.json, undefined, 'not JSON')
    t.throws(() => JSON.parse(invalid.text))
    const unknown = await next('unknown_channel')
    t.same(unknown.json, { channel: 'someNewChannel', data: {} })
    const nan = await next('nan_price')
    t.equal((nan.json!.data as Array<{ px: string }>)[0]!.px, 'NaN')
    t.throws(() => parseTrades(nan.json!.data, '/data'), { code: 'HL_BAD_RESPONSE' }, 'the project parser refuses it')
    const negative = await next('negative_size')
    t.ok(Number((negative.json!.data as Array<{ sz: string }>)[0]!.sz) < 0)
    t.equal((negative.json!.data as Array<{ coin: string }>)[0]!.coin, 'ETH')
    const future = await next('future_candle')
    t.equal(future.json!.channel, 'candle')
    t.ok((future.json!.data as { t: number }).t > venue.now() + 23 * HOUR, 'open time a day ahead')
  })

  t.test('duplicate: the last data frame again', async (t) => {
    const p = await peer(t, venue)
    p.send({ method: 'subscribe', subscription: { type: 'l2Book', coin: 'BTC' } })
    await until('a book', () => p.channel('l2Book').length > 0)
    const entry = venue.fault({ kind: 'duplicate', count: 2 })
    t.ok((entry.effect!.framesSent as number) >= 2)
    await until('the copies', () => {
      const texts = p.channel('l2Book').map((f) => f.text)
      return texts.some((x) => texts.filter((y) => y === x).length === 3)
    })
    t.pass('one book frame arrived three times')
  })

  t.test('out_of_order_trades: an already sent trade arrives late', async (t) => {
    const p = await peer(t, venue)
    p.send({ method: 'subscribe', subscription: { type: 'trades', coin: 'BTC' } })
    const sent = () => p.channel('trades').flatMap((f) => parseTrades(f.json!.data))
    await until('two venue minutes of trades', () => {
      const s = sent()
      return s.length > 0 && s.at(-1)!.time - s[0]!.time > 100_000
    })
    const n = p.channel('trades').length
    const before = sent()
    const newest = before.at(-1)!.time
    venue.fault({ kind: 'out_of_order_trades', coin: 'BTC', lagMs: 30_000 })
    await until('a late trade', () => p.channel('trades').slice(n).some((f) => parseTrades(f.json!.data).some((x) => x.time < newest)))
    const late = p.channel('trades').slice(n).flatMap((f) => parseTrades(f.json!.data)).find((x) => x.time < newest)!
    t.ok(late.time <= newest - 30_000, 'at least lagMs older than the newest sent')
    t.ok(before.some((x) => x.tid === late.tid && x.time === late.time && x.px === late.px), 'a real trade sent before')
  })

  t.test('silence: open but mute, no pongs; then pongs again', async (t) => {
    const p = await peer(t, venue)
    p.send({ method: 'subscribe', subscription: { type: 'l2Book', coin: 'SOL' } })
    p.send({ method: 'ping' })
    await until('a pong', () => p.channel('pong').length === 1)
    const entry = venue.fault({ kind: 'silence', forMs: 90_000 })
    await sleep(60)
    const n = p.frames.length
    p.send({ method: 'ping' })
    await sleep(700)
    t.equal(p.frames.length, n, 'nothing at all during the silence')
    t.equal(p.ws.readyState, WebSocket.OPEN, 'the connection stays open')
    await until('the silence to end', () => venue.now() > entry.until!, 3000)
    p.send({ method: 'ping' })
    await until('a pong again', () => p.channel('pong').length >= 2)
    await until('data again', () => p.frames.slice(n).some((f) => f.json?.channel === 'l2Book'))
    t.pass('pongs and data resume')
  })

  t.test('disconnect: every connection dropped without a close frame', async (t) => {
    const a = await peer(t, venue)
    const b = await peer(t, venue)
    const entry = venue.fault({ kind: 'disconnect' })
    t.ok((entry.effect!.connectionsDropped as number) >= 2)
    t.equal(await a.closed, 1006, 'abnormal closure')
    t.equal(await b.closed, 1006)
  })

  t.test('rest_status: by count and for a while', async (t) => {
    venue.fault({ kind: 'rest_status', status: 502, count: 2 })
    await t.rejects(client.allMids(), { code: 'HL_HTTP_STATUS', status: 502 })
    await t.rejects(client.allMids(), { code: 'HL_HTTP_STATUS', status: 502 })
    t.ok((await client.allMids()).data.BTC! > 0, 'the third answers')
    const entry = venue.fault({ kind: 'rest_status', status: 429, forMs: 60_000 })
    const r = await post(venue, { type: 'meta' })
    t.same([r.status, r.type], [429, 'text/plain'])
    await t.rejects(client.l2Book('BTC'), { code: 'HL_HTTP_STATUS', status: 429 })
    await until('the window to pass', () => venue.now() > entry.until!, 3000)
    t.equal((await client.l2Book('BTC')).data.coin, 'BTC')
    t.ok(venue.stats.restFaulted['502'] === 2 && venue.stats.restFaulted['429']! >= 2)
    t.throws(() => venue.fault({ kind: 'rest_status', status: 500 }), { message: /LocalVenue fault\/count: give count or forMs/ })
  })

  t.test('outage: sockets dropped, upgrades and REST refused; then back', async (t) => {
    const p = await peer(t, venue)
    const entry = venue.fault({ kind: 'outage', forMs: 120_000 })
    t.equal(await p.closed, 1006, 'connection dropped')
    t.equal(await refusedUpgrade(venue.wsUrl), 0, 'the upgrade is reset')
    t.equal((await post(venue, { type: 'meta' })).status, 503)
    await t.rejects(client.metaAndAssetCtxs(), { code: 'HL_HTTP_STATUS', status: 503 })
    t.ok(venue.stats.refusedBy.outage >= 1)
    await until('the outage to end', () => venue.now() > entry.until!, 3000)
    const back = await peer(t, venue)
    t.equal(back.ws.readyState, WebSocket.OPEN)
    t.equal((await post(venue, { type: 'meta' })).status, 200)
  })

  t.test('candle_correction: the newest closed candle changes in REST and in the list', async (t) => {
    const now = venue.now()
    const range = { startTime: now - 4 * HOUR, endTime: now }
    const before = (await client.candleSnapshot('BTC', '1h', range)).data
    const entry = venue.fault({ kind: 'candle_correction', coin: 'BTC', interval: '1h' })
    const openTime = entry.effect!.openTime as number
    t.equal(openTime, Math.floor(entry.venueTime / HOUR) * HOUR - HOUR, 'the newest closed hour')
    const after = (await client.candleSnapshot('BTC', '1h', range)).data
    const was = before.find((c) => c.openTime === openTime)!
    const is = after.find((c) => c.openTime === openTime)!
    t.ok(is.high > was.high, 'high raised')
    t.not(is.volume, was.volume, 'volume changed')
    // The forming hour keeps trading between the two reads (the venue's clock runs): only closed hours must stay.
    const closedElse = (cs: typeof before) => cs.filter((c) => c.openTime !== openTime && c.closeTime < now)
    t.same(closedElse(after), closedElse(before), 'nothing else changed')
    const bar = venue.bars('BTC', '1h').find((b) => b.openTime === openTime)!
    t.same([bar.corrected, bar.high, bar.volume], [true, is.high, is.volume])
    t.same([bar.original!.high, bar.original!.volume], [was.high, was.volume], 'the original is remembered')
  })

  t.test('purge_candles: gone from REST, marked in the list', async (t) => {
    const now = venue.now()
    const range = { startTime: now - 6 * HOUR, endTime: now }
    const before = (await client.candleSnapshot('ETH', '1h', range)).data
    const from = before[1]!.closeTime + 1
    const to = before[2]!.closeTime + 1
    const res = await fetch(`${venue.baseUrl}/_venue/fault`, { method: 'POST', body: JSON.stringify({ kind: 'purge_candles', coin: 'ETH', interval: '1h', from, to }) })
    t.equal(res.status, 200)
    const after = (await client.candleSnapshot('ETH', '1h', range)).data
    t.same(after.map((c) => c.openTime), before.filter((_, i) => i !== 1 && i !== 2).map((c) => c.openTime))
    const list = (await (await fetch(`${venue.baseUrl}/_venue/bars?coin=ETH&interval=1h`)).json()) as { bars: Array<{ openTime: number; purged: boolean; served: boolean }> }
    t.same(list.bars.filter((b) => b.purged).map((b) => b.openTime), [before[1]!.openTime, before[2]!.openTime])
    t.ok(list.bars.filter((b) => b.purged).every((b) => !b.served))
    t.equal((await client.candleSnapshot('BTC', '1h', range)).data.length, (await client.candleSnapshot('BTC', '1h', range)).data.length, 'other coins untouched')
  })

  t.test('the control route validates, the state route reports', async (t) => {
    const bad = await fetch(`${venue.baseUrl}/_venue/fault`, { method: 'POST', body: JSON.stringify({ kind: 'silence' }) })
    t.equal(bad.status, 400)
    t.match(await bad.json(), { error: 'LocalVenue fault/forMs: is required', path: '/forMs' })
    const unknown = await fetch(`${venue.baseUrl}/_venue/fault`, { method: 'POST', body: JSON.stringify({ kind: 'meteor' }) })
    t.match(await unknown.json(), { error: /LocalVenue fault\/kind: must be equal to one of the allowed values/ })
    t.throws(() => venue.fault({ kind: 'malformed', variant: 'nan_price', coin: 'DOGE' }), { message: /LocalVenue fault\/coin/ })
    const state = (await (await fetch(`${venue.baseUrl}/_venue/state`)).json()) as Record<string, unknown>
    t.equal(state.speed, 60)
    t.same(state.coins, ['BTC', 'ETH', 'SOL'])
    const log = state.faultLog as Array<{ fault: { kind: string }; source: string; venueTime: number; wallTime: number }>
    t.same([...new Set(log.map((e) => e.fault.kind))].sort(), ['candle_correction', 'disconnect', 'duplicate', 'malformed', 'out_of_order_trades', 'outage', 'purge_candles', 'rest_status', 'silence'])
    t.ok(log.every((e) => e.venueTime > 0 && e.wallTime > 0))
    t.equal(log.find((e) => e.fault.kind === 'purge_candles')!.source, 'control')
    t.equal(log.length, venue.faultLog.length)
    t.ok((state.stats as { framesSent: Record<string, number> }).framesSent.l2Book! > 0)
    const funding = (await (await fetch(`${venue.baseUrl}/_venue/funding?coin=SOL`)).json()) as { rows: unknown[] }
    t.equal(funding.rows.length, venue.fundingRows('SOL').length)
  })
})

t.test('the venue limits: REST weight, connections, subscriptions, idle close', async (t) => {
  t.test('1200 weight per minute, then 429', async (t) => {
    const venue = await startVenue(t, { historyDays: 0.2, coins: ['BTC'] })
    for (let i = 0; i < 60; i++) t.equal((await post(venue, { type: 'meta' })).status, 200)
    const over = await post(venue, { type: 'meta' })
    t.same([over.status, over.type], [429, 'text/plain'], 'the 61st meta (weight 20) is over budget')
    t.equal((await post(venue, { type: 'l2Book', coin: 'BTC' })).status, 429)
    t.equal(venue.stats.rest429, 2)
    t.equal(venue.stats.restRequests.meta, 61)
    const free = await startVenue(t, { historyDays: 0.2, coins: ['BTC'], enforceWeightLimit: false })
    for (let i = 0; i < 61; i++) await post(free, { type: 'meta' })
    t.equal(free.stats.rest429, 0, 'not enforced when disabled')
  })

  t.test('10 concurrent and 30 new connections a minute', async (t) => {
    const venue = await startVenue(t, { historyDays: 0.2, coins: ['BTC'] })
    const first = await Promise.all(Array.from({ length: 10 }, () => peer(t, venue)))
    t.equal(await refusedUpgrade(venue.wsUrl), 429, 'the 11th concurrent connection is refused')
    for (const p of first) p.ws.close()
    await until('the closes', () => venue.openConnections === 0)
    for (let batch = 0; batch < 2; batch++) {
      const ps = await Promise.all(Array.from({ length: 10 }, () => peer(t, venue)))
      for (const p of ps) p.ws.close()
      await until('the closes', () => venue.openConnections === 0)
    }
    t.equal(await refusedUpgrade(venue.wsUrl), 429, 'the 31st new connection in a minute is refused')
    t.same([venue.stats.connectionsAccepted, venue.stats.refusedBy.concurrent, venue.stats.refusedBy.rate], [30, 1, 1])
  })

  t.test('subscriptions: acks, errors, the cap', async (t) => {
    const venue = await startVenue(t, { historyDays: 0.2, maxSubscriptions: 3 })
    const p = await peer(t, venue)
    const sub = { type: 'candle', coin: 'SOL', interval: '5m' }
    p.send({ method: 'subscribe', subscription: sub })
    await until('ack', () => p.channel('subscriptionResponse').length === 1)
    t.same(p.channel('subscriptionResponse')[0]!.json, { channel: 'subscriptionResponse', data: { method: 'subscribe', subscription: sub } })
    p.send({ method: 'subscribe', subscription: { type: 'allMids' } })
    p.send({ method: 'subscribe', subscription: { type: 'trades', coin: 'ETH' } })
    p.send({ method: 'subscribe', subscription: { type: 'trades', coin: 'BTC' } })
    p.send({ method: 'hello' })
    p.send({ method: 'subscribe', subscription: { type: 'orderFlowToxicity', coin: 'BTC' } })
    await until('three acks and three errors', () => p.channel('subscriptionResponse').length === 3 && p.channel('error').length === 3)
    const errors = p.channel('error').map((f) => String(f.json!.data))
    t.match(errors[0], /more than 3 total subscriptions/)
    t.match(errors[1], /Unknown method/)
    t.match(errors[2], /Invalid subscription/)
    t.equal(venue.stats.subscriptionsRefused, 1)
    await until('mids', () => p.channel('allMids').length > 0)
    t.same(Object.keys((p.channel('allMids')[0]!.json!.data as { mids: object }).mids), ['BTC', 'ETH', 'SOL'])
    p.send({ method: 'unsubscribe', subscription: sub })
    await until('unsubscribe ack', () => p.channel('subscriptionResponse').some((f) => (f.json!.data as { method: string }).method === 'unsubscribe'))
    p.send({ method: 'ping' })
    await until('pong', () => p.channel('pong').length === 1)
    t.same(p.channel('pong')[0]!.json, { channel: 'pong' })
  })

  t.test('a connection sent nothing for the idle timeout is closed', async (t) => {
    const venue = await startVenue(t, { historyDays: 0.2, coins: ['BTC'], idleTimeoutMs: 300 })
    const p = await peer(t, venue)
    t.equal(await p.closed, 1000)
    t.equal(venue.stats.idleClosed, 1)
  })
})

t.test('a script fires at its venue instant', async (t) => {
  const clock = new ScaledClock({ anchorMs: Date.parse('2026-03-04T00:00:00Z'), speed: 600 })
  const venue = await startVenue(t, { clock, historyDays: 0.2, coins: ['BTC'], script: [{ afterMs: 120_000, fault: { kind: 'rest_status', status: 500, count: 1 } }] })
  t.equal(venue.faultLog.length, 0)
  await until('the scripted fault', () => venue.faultLog.length === 1)
  const entry = venue.faultLog[0]!
  t.equal(entry.source, 'script')
  t.ok(entry.venueTime >= venue.startedAt + 120_000 && entry.venueTime < venue.startedAt + 120_000 + 600_000, 'at its instant (within a second of wall time)')
  t.equal((await post(venue, { type: 'meta' })).status, 500)
  t.equal((await post(venue, { type: 'meta' })).status, 200)
  await t.rejects(LocalVenue.start({ script: [{ afterMs: 1, fault: { kind: 'outage' } }] as never }), { message: /LocalVenue options\/script\/0\/fault\/forMs: is required/ })
})

t.test('svc venue serve prints its URLs, serves, and exits 0 on SIGTERM', async (t) => {
  const dir = await makeTempDir(t)
  const script = join(dir, 'faults.json')
  await writeFile(script, JSON.stringify([{ afterMs: 3_600_000, fault: { kind: 'disconnect' } }]))
  const child = spawn(process.execPath, [SVC, 'venue', 'serve', '--port', '0', '--speed', '60', '--history-days', '0.5', '--script', script], {
    env: { ...process.env, LOG_FORMAT: 'json' },
  })
  t.teardown(() => child.kill('SIGKILL'))
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  await until('the service line', () => /npm start\n/.test(stdout), 20_000)
  const line = stdout.split('\n').find((l) => l.startsWith('SVC_VENUE='))!
  const m = /^SVC_VENUE=hyperliquid SVC_HL_BASE_URL=(http:\/\/127\.0\.0\.1:(\d+)) SVC_HL_WS_URL=ws:\/\/127\.0\.0\.1:(\d+)\/ws npm start$/.exec(line)
  t.ok(m, line)
  t.equal(m![2], m![3], 'one port for REST and websocket')
  t.match(stdout, /REST {7}http:\/\/127\.0\.0\.1:\d+\/info/)
  t.match(stdout, /websocket {2}ws:\/\/127\.0\.0\.1:\d+\/ws/)
  const res = await fetch(`${m![1]}/info`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"type":"meta"}' })
  t.equal(res.status, 200)
  t.same(((await res.json()) as { universe: Array<{ name: string }> }).universe.map((u) => u.name), ['BTC', 'ETH', 'SOL'])
  const state = (await (await fetch(`${m![1]}/_venue/state`)).json()) as { speed: number; pendingScript: unknown[] }
  t.equal(state.speed, 60)
  t.equal(state.pendingScript.length, 1, 'the script is loaded')
  child.kill('SIGTERM')
  t.equal(await exited, 0, stderr)
})
