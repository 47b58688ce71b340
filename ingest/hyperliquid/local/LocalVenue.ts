/**
 * A local Hyperliquid stand-in: the real protocol (`POST /info`, the websocket at `/ws`) over a moving, seeded
 * simulated market (LocalVenueMarket), with the venue's limits and scripted faults, so the live path can be run and
 * tested without the internet. Control and inspection routes live under `/_venue/`. docs/local-venue.md is the
 * user's page.
 *
 * Shapes follow the recorded reference (../shared/reference/hyperliquid-api.md and the GitBook copies beside it);
 * every payload parses with ingest/hyperliquid/parseInfo.ts. Limits (reference §1): REST 1200 weight per minute per
 * IP with the documented weights; websocket ≤ 10 connections, ≤ 30 new connections per minute, ≤ 1000
 * subscriptions; reference §3: "server closes a connection it has sent nothing to for 60 s".
 *
 * Two clocks on purpose: market data, funding and fault durations run on the venue clock (a ScaledClock compresses
 * a session), while the limits and the idle close are wall-time rules of the server, as on the real venue.
 */
import type { HlCandle } from '../parseInfo.ts'
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Socket } from 'node:net'
import { WebSocketServer, WebSocket, type RawData } from 'ws'
import { systemClock, type Clock } from '../../../common/Clock.ts'
import { ScaledClock } from '../../../common/ScaledClock.ts'
import { childLogger } from '../../../common/logger.ts'
import { OptionsError, validateOptions } from '../../../common/validation.ts'
import { CANONICAL_ASSETS } from '../../Tick.ts'
import { SYNTHETIC_MODEL } from '../../SyntheticMarket.ts'
import { LocalVenueMarket, MAX_LEVERAGE } from './LocalVenueMarket.ts'
import { LocalVenueFaults, type FaultLogEntry, type FaultSource, type ScriptedFault, type VenueFault } from './LocalVenueFaults.ts'
import {
  CANDLE_INTERVALS,
  isCandleInterval,
  roundTo,
  wireAssetCtx,
  wireBook,
  wireCandle,
  wireDecimal,
  wireFundingRow,
  wireTrade,
  type CandleInterval,
  type VenueCandle,
  type VenueFundingRow,
} from './wire.ts'
import { MINUTE_MS, HOUR_MS, DAY_MS } from '../../../common/time.ts'

const BOOK_PERIOD_MS = 500
/** Reference §1: "Time-range requests return at most 500 elements". */
const PAGE_LIMIT = 500
const BODY_LIMIT = 1 << 20
/** A consumer this far behind is dropped, as a venue drops a reader that does not keep up. */
const MAX_BUFFERED_BYTES = 16 << 20
/** Candles of one subscription caught up per push at most, so a long stall of the process does not flood clients. */
const MAX_CANDLES_PER_PUSH = 60
const DESERIALIZE_FAILED = 'Failed to deserialize the JSON body into the target type'

export interface LocalVenueOptions {
  /** Default 127.0.0.1. */
  host?: string
  /** Default 0 (a free port). */
  port?: number
  /** Venue time. Default the system clock; a compressed session passes a ScaledClock and gives it to the service too. */
  clock?: Clock
  /** Synthetic market seed. Default 1. */
  seed?: number
  /** Subset of BTC, ETH, SOL. Default all three. */
  coins?: string[]
  /** History before now: the origin is floor_hour(now − historyDays). Default 45 (more than the service's default 37-day backfill). */
  historyDays?: number
  /** candleSnapshot serves only the newest this many candles per coin and interval. Default 5000. */
  candleRetention?: number
  /** Websocket push period, wall ms. Default 100. */
  frameMs?: number
  /** Refuse /info past the weight budget with 429. Default true. */
  enforceWeightLimit?: boolean
  /** REST weight budget per IP per wall minute. Default 1200. */
  weightPerMinute?: number
  /** Concurrent websocket connections per IP. Default 10. */
  maxConnections?: number
  /** New websocket connections per IP per wall minute. Default 30. */
  maxNewConnectionsPerMinute?: number
  /** Websocket subscriptions per IP. Default 1000. */
  maxSubscriptions?: number
  /** A connection the venue has sent nothing to for this long (wall ms) is closed. Default 60 000. */
  idleTimeoutMs?: number
  /** Faults to apply at venue instants after the start. */
  script?: ScriptedFault[]
}

const OPTIONS_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    host: { type: 'string', minLength: 1 },
    port: { type: 'integer', minimum: 0, maximum: 65535 },
    clock: {},
    seed: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    coins: { type: 'array', minItems: 1, uniqueItems: true, items: { enum: [...CANONICAL_ASSETS] } },
    historyDays: { type: 'number', minimum: 0.1, maximum: 3650 },
    candleRetention: { type: 'integer', minimum: 1 },
    frameMs: { type: 'integer', minimum: 5, maximum: 60_000 },
    enforceWeightLimit: { type: 'boolean' },
    weightPerMinute: { type: 'integer', minimum: 1 },
    maxConnections: { type: 'integer', minimum: 1 },
    maxNewConnectionsPerMinute: { type: 'integer', minimum: 1 },
    maxSubscriptions: { type: 'integer', minimum: 1 },
    idleTimeoutMs: { type: 'integer', minimum: 1 },
    script: { type: 'array' },
  },
} as const
const ROOT = 'LocalVenue options'
const FAULT_ROOT = 'LocalVenue fault'

export interface LocalVenueStats {
  /** /info requests received, by `type` ('(unparseable)' for a body that is not JSON). */
  restRequests: Record<string, number>
  /** /info requests refused with 429 by the weight limit. */
  rest429: number
  /** /info answers replaced by a fault (rest_status, outage), by status. */
  restFaulted: Record<string, number>
  /** Websocket frames sent, by channel ('invalid_json' for the malformed frame that has none). */
  framesSent: Record<string, number>
  connectionsAccepted: number
  connectionsRefused: number
  refusedBy: { concurrent: number; rate: number; outage: number }
  subscriptionsRefused: number
  idleClosed: number
}

/** One closed candle of the venue's own list (`/_venue/bars`), numbers not strings. */
export interface VenueBar extends Pick<HlCandle, 'openTime' | 'open' | 'high' | 'low' | 'close' | 'volume'> {
  /** T + 1: the bar's close instant (exclusive end), unlike HlCandle's inclusive `T`. */
  closeTime: number
  trades: number
  /** Removed from candleSnapshot by a purge_candles fault. */
  purged: boolean
  /** Revised by a candle_correction fault; the values above are the revised ones. */
  corrected: boolean
  original?: Omit<VenueBar, 'purged' | 'corrected' | 'original' | 'served'>
  /** candleSnapshot would return it now (not purged, within the newest candleRetention). */
  served: boolean
}

type SubType = 'trades' | 'l2Book' | 'activeAssetCtx' | 'candle' | 'allMids'

interface Subscription {
  key: string
  type: SubType
  coin: string
  interval: CandleInterval | null
  /** As the client sent it (echoed in acks). */
  subscription: Record<string, unknown>
  /** Venue time covered so far: trades and candle changes up to here have been sent. */
  since: number
  bookAt: number | null
  minute: number | null
  candle: { openTime: number; trades: number } | null
  firstTrade: number | null
  newestTrade: number | null
  lastFrame: string | null
}

interface Connection {
  id: number
  ip: string
  ws: WebSocket
  subs: Map<string, Subscription>
  lastSentWall: number
  closing: boolean
}

export class LocalVenue {
  readonly port: number
  readonly host: string
  readonly baseUrl: string
  readonly wsUrl: string
  readonly market: LocalVenueMarket
  readonly clock: Clock
  /** Venue instant the venue started (the script's afterMs counts from here). */
  readonly startedAt: number
  readonly stats: LocalVenueStats = {
    restRequests: {},
    rest429: 0,
    restFaulted: {},
    framesSent: {},
    connectionsAccepted: 0,
    connectionsRefused: 0,
    refusedBy: { concurrent: 0, rate: 0, outage: 0 },
    subscriptionsRefused: 0,
    idleClosed: 0,
  }
  readonly #http: Server
  readonly #wss: WebSocketServer
  readonly #faults: LocalVenueFaults
  readonly #o: Required<Omit<LocalVenueOptions, 'host' | 'port' | 'clock' | 'seed' | 'coins' | 'historyDays' | 'candleRetention' | 'script'>>
  readonly #connections = new Set<Connection>()
  readonly #sockets = new Set<Socket>()
  readonly #weights = new Map<string, Array<{ wall: number; weight: number }>>()
  readonly #newConnections = new Map<string, number[]>()
  readonly #log = childLogger('local-venue')
  readonly #timer: NodeJS.Timeout
  #connectionIds = 0
  #lastNow = -Infinity
  #closing: Promise<void> | null = null

  private constructor(args: { http: Server; wss: WebSocketServer; host: string; port: number; market: LocalVenueMarket; o: LocalVenueOptions; script: ScriptedFault[] }) {
    const { http, wss, o } = args
    this.#http = http
    this.#wss = wss
    this.host = args.host
    this.port = args.port
    const urlHost = args.host === '0.0.0.0' || args.host === '::' ? '127.0.0.1' : args.host.includes(':') ? `[${args.host}]` : args.host
    this.baseUrl = `http://${urlHost}:${args.port}`
    this.wsUrl = `ws://${urlHost}:${args.port}/ws`
    this.market = args.market
    this.clock = args.market.clock
    this.#o = {
      frameMs: o.frameMs ?? 100,
      enforceWeightLimit: o.enforceWeightLimit ?? true,
      weightPerMinute: o.weightPerMinute ?? 1200,
      maxConnections: o.maxConnections ?? 10,
      maxNewConnectionsPerMinute: o.maxNewConnectionsPerMinute ?? 30,
      maxSubscriptions: o.maxSubscriptions ?? 1000,
      idleTimeoutMs: o.idleTimeoutMs ?? 60_000,
    }
    this.startedAt = this.now()
    this.#faults = new LocalVenueFaults({ startedAt: this.startedAt, script: args.script })
    http.on('connection', (s: Socket) => {
      this.#sockets.add(s)
      s.on('close', () => this.#sockets.delete(s))
    })
    http.on('request', (req, res) => this.#onRequest(req, res))
    http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.#onUpgrade(req, socket, head))
    this.#timer = setInterval(() => this.#push(), this.#o.frameMs)
    this.#timer.unref()
  }

  /** Validates the options, simulates the history up to now, listens, and starts the push loop and the script. */
  static async start(options: LocalVenueOptions = {}): Promise<LocalVenue> {
    const o = validateOptions<LocalVenueOptions>(ROOT, OPTIONS_SCHEMA, options)
    const clock = o.clock ?? systemClock
    if (typeof (clock as Partial<Clock>).now !== 'function') throw OptionsError.at(ROOT, '/clock', 'must have a now() method')
    const script = o.script === undefined ? [] : LocalVenueFaults.parseScript(o.script, `${ROOT}/script`)
    const coins = o.coins ?? [...CANONICAL_ASSETS]
    script.forEach((entry, i) => checkServedCoin(`${ROOT}/script`, `/${i}/fault/coin`, entry.fault, coins))
    const historyMs = Math.round((o.historyDays ?? 45) * DAY_MS)
    const originMs = Math.floor((clock.now() - historyMs) / HOUR_MS) * HOUR_MS
    const market = new LocalVenueMarket({
      seed: o.seed ?? 1,
      coins,
      originMs,
      clock,
      ...(o.candleRetention === undefined ? {} : { candleRetention: o.candleRetention }),
    })
    const host = o.host ?? '127.0.0.1'
    const http = createServer()
    // Node closes an idle keep-alive socket after 5 s; a client reusing it at that instant gets ECONNRESET (CI, on a
    // loaded machine: a test's next request after a pause). A load balancer in front of the real API keeps idle
    // connections about a minute, so the stand-in does too.
    http.keepAliveTimeout = 65_000
    const wss = new WebSocketServer({ noServer: true, maxPayload: BODY_LIMIT })
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject)
      http.listen(o.port ?? 0, host, () => {
        http.off('error', reject)
        resolve()
      })
    })
    const addr = http.address()
    if (!addr || typeof addr !== 'object') throw new RangeError('LocalVenue: the server has no port')
    const venue = new LocalVenue({ http, wss, host, port: addr.port, market, o, script })
    venue.#log.info({ url: venue.baseUrl, ws: venue.wsUrl, coins, origin: new Date(originMs).toISOString(), seed: market.seed }, 'local venue listening')
    return venue
  }

  /** Venue time (never runs backwards). */
  now(): number {
    this.#lastNow = Math.max(this.#lastNow, this.clock.now())
    return this.#lastNow
  }

  get originMs(): number {
    return this.market.originMs
  }

  get coins(): readonly string[] {
    return this.market.coins
  }

  /** Every fault applied so far, in order. */
  get faultLog(): readonly FaultLogEntry[] {
    return this.#faults.log
  }

  get openConnections(): number {
    return this.#connections.size
  }

  /**
   * Applies a fault now. Throws an OptionsError naming the field when the fault is invalid (or, for a correction,
   * when the coin has no closed candle of that interval yet).
   */
  fault(fault: VenueFault | Record<string, unknown>): FaultLogEntry {
    return this.#apply(LocalVenueFaults.parseFault(structuredClone(fault), FAULT_ROOT), 'call')
  }

  /** The venue's own list of closed candles of a coin and interval, from the origin up to now. */
  bars(coin: string, interval: CandleInterval): VenueBar[] {
    const now = this.now()
    const ivMs = CANDLE_INTERVALS[interval]
    let newest = Math.floor(now / ivMs) * ivMs
    if (!this.market.candle(coin, interval, newest, now)) newest -= ivMs
    const oldestServed = newest - (this.market.candleRetention - 1) * ivMs
    return this.market.closedCandles(coin, interval, now).map((c) => {
      const correction = this.#faults.correction(coin, interval, c.openTime)
      const purged = this.#faults.purged(coin, interval, c.closeTime + 1)
      return {
        ...numericBar(correction?.corrected ?? c),
        purged,
        corrected: correction !== undefined,
        ...(correction ? { original: numericBar(correction.original) } : {}),
        served: !purged && c.openTime >= oldestServed,
      }
    })
  }

  /** Every funding row published so far (time ≤ now). */
  fundingRows(coin: string): VenueFundingRow[] {
    return this.market.fundingRows(coin, this.now())
  }

  /** What `GET /_venue/state` answers. */
  state(): Record<string, unknown> {
    const now = this.now()
    const connections = [...this.#connections].map((c) => ({ id: c.id, ip: c.ip, subscriptions: [...c.subs.values()].map((s) => s.subscription) }))
    return {
      venue: 'hyperliquid (local stand-in)',
      now,
      nowIso: new Date(now).toISOString(),
      origin: this.originMs,
      originIso: new Date(this.originMs).toISOString(),
      startedAt: this.startedAt,
      startedIso: new Date(this.startedAt).toISOString(),
      speed: this.clock instanceof ScaledClock ? this.clock.speed : this.clock === systemClock ? 1 : null,
      seed: this.market.seed,
      coins: this.coins,
      baseUrl: this.baseUrl,
      wsUrl: this.wsUrl,
      openConnections: connections.length,
      connections,
      subscriptions: connections.reduce((n, c) => n + c.subscriptions.length, 0),
      stats: this.stats,
      activeFaults: this.#faults.active(now),
      pendingScript: this.#faults.pendingScript,
      faultLog: this.#faults.log,
    }
  }

  /** Terminates every socket, closes the servers and stops the timers. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      clearInterval(this.#timer)
      for (const c of this.#connections) c.ws.terminate()
      this.#connections.clear()
      await new Promise<void>((resolve) => this.#wss.close(() => resolve()))
      const closed = new Promise<void>((resolve) => this.#http.close(() => resolve()))
      for (const s of this.#sockets) s.destroy()
      this.#http.closeAllConnections()
      await closed
      this.#log.info({ url: this.baseUrl }, 'local venue closed')
    })()
    return this.#closing
  }

  // ---------- faults ----------

  #apply(fault: VenueFault, source: FaultSource, now = this.now()): FaultLogEntry {
    checkServedCoin(FAULT_ROOT, '/coin', fault, this.coins)
    let effect: Record<string, unknown> = {}
    if (fault.kind === 'candle_correction') effect = this.#correct(fault.coin, fault.interval, now)
    const entry = this.#faults.record(fault, source, now)
    switch (fault.kind) {
      case 'disconnect':
      case 'outage':
        effect = { connectionsDropped: this.#dropAll() }
        break
      case 'malformed':
        effect = { framesSent: this.#sendMalformed(fault.variant, fault.coin ?? this.coins[0]!, now) }
        break
      case 'duplicate':
        effect = { framesSent: this.#sendDuplicates(fault.count ?? 1) }
        break
      case 'out_of_order_trades':
        effect = this.#sendLateTrade(fault.coin, fault.lagMs)
        break
      default:
        break
    }
    entry.effect = effect
    this.#log.info({ fault, source, venueTime: entry.venueIso, effect }, 'fault applied')
    return entry
  }

  #dropAll(): number {
    const n = this.#connections.size
    for (const c of this.#connections) c.ws.terminate()
    return n
  }

  /** The newest closed candle of the coin and interval, revised: its high raised 0.1 %, its volume +10 %. */
  #correct(coin: string, interval: CandleInterval, now: number): Record<string, unknown> {
    const ivMs = CANDLE_INTERVALS[interval]
    const openTime = Math.floor(now / ivMs) * ivMs - ivMs
    const current = this.#faults.correction(coin, interval, openTime)
    const original = current?.original ?? this.market.candle(coin, interval, openTime, now)
    if (!original) throw OptionsError.at(FAULT_ROOT, '/interval', `${coin} has no closed ${interval} candle yet`)
    const base = current?.corrected ?? original
    const szDecimals = SYNTHETIC_MODEL.assets[coin as keyof typeof SYNTHETIC_MODEL.assets].szDecimals
    let high = Number((base.high * 1.001).toPrecision(6))
    if (!(high > base.high)) high = base.high * 1.001
    const corrected: VenueCandle = { ...base, high, volume: roundTo(base.volume * 1.1, szDecimals) }
    this.#faults.addCorrection(original, corrected)
    return { openTime, original: numericBar(original), corrected: numericBar(corrected) }
  }

  #sendMalformed(variant: string, coin: string, now: number): number {
    let channel: string
    let text: string
    const trade = this.market.tradeAtOrBefore(coin, now)
    switch (variant) {
      case 'invalid_json':
        channel = 'invalid_json'
        text = `{"channel":"trades","data":[{"coin":"${coin}","side":"B","px":`
        break
      case 'unknown_channel':
        channel = 'someNewChannel'
        text = JSON.stringify({ channel, data: {} })
        break
      case 'nan_price':
      case 'negative_size': {
        channel = 'trades'
        const wire = trade ? wireTrade(trade) : { coin, side: 'B', px: '1.0', sz: '1.0', hash: '0x0', time: now, tid: 1, users: ['0x0', '0x0'] }
        if (variant === 'nan_price') wire.px = 'NaN'
        else wire.sz = `-${String(wire.sz)}`
        text = JSON.stringify({ channel, data: [wire] })
        break
      }
      default: {
        channel = 'candle'
        const openTime = Math.floor(now / MINUTE_MS) * MINUTE_MS - MINUTE_MS
        const c = this.market.candle(coin, '1m', openTime, now)
        const future = c
          ? { ...c, openTime: c.openTime + DAY_MS, closeTime: c.closeTime + DAY_MS }
          : { coin, interval: '1m' as const, openTime: openTime + DAY_MS, closeTime: openTime + DAY_MS + MINUTE_MS - 1, open: 1, high: 1, low: 1, close: 1, volume: 1, trades: 1 }
        text = JSON.stringify({ channel, data: wireCandle(future) })
      }
    }
    let n = 0
    for (const c of this.#connections) if (this.#sendRaw(c, text, channel, true)) n++
    return n
  }

  #sendDuplicates(count: number): number {
    let n = 0
    for (const c of this.#connections) {
      for (const sub of c.subs.values()) {
        if (sub.lastFrame === null) continue
        for (let i = 0; i < count; i++) if (this.#sendRaw(c, sub.lastFrame, sub.type, true)) n++
      }
    }
    return n
  }

  #sendLateTrade(coin: string, lagMs: number): Record<string, unknown> {
    let framesSent = 0
    const trades: number[] = []
    for (const c of this.#connections) {
      const sub = c.subs.get(subscriptionKey('trades', coin, null))
      if (!sub || sub.newestTrade === null || sub.firstTrade === null) continue
      const trade = this.market.tradeAtOrBefore(coin, sub.newestTrade - lagMs)
      // Only a trade this connection was already sent: the late copy is a repeat, never news.
      if (!trade || trade.time < sub.firstTrade) continue
      if (this.#sendRaw(c, JSON.stringify({ channel: 'trades', data: [wireTrade(trade)] }), 'trades', true)) {
        framesSent++
        trades.push(trade.time)
      }
    }
    return { framesSent, tradeTimes: trades }
  }

  // ---------- REST ----------

  #onRequest(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (c: Buffer) => {
      size += c.length
      if (size <= BODY_LIMIT) chunks.push(c)
    })
    req.on('end', () => {
      try {
        if (size > BODY_LIMIT) return send(res, 413, 'text/plain', 'Payload Too Large')
        const url = new URL(req.url ?? '/', 'http://venue')
        const text = Buffer.concat(chunks).toString('utf8')
        if (url.pathname.startsWith('/_venue/')) return this.#control(req.method ?? 'GET', url, text, res)
        if (url.pathname === '/info' && req.method === 'POST') return this.#info(req.socket.remoteAddress ?? 'unknown', text, res)
        send(res, 404, 'text/plain', 'Not Found')
      } catch (err) {
        this.#log.error({ err }, 'request failed')
        if (!res.headersSent) send(res, 500, 'text/plain', 'Internal Server Error')
      }
    })
  }

  #info(ip: string, text: string, res: ServerResponse): void {
    let body: unknown
    let parsed = true
    try {
      body = JSON.parse(text)
    } catch {
      parsed = false
    }
    const type = parsed && isObject(body) && typeof body.type === 'string' ? body.type : parsed ? '(no type)' : '(unparseable)'
    this.stats.restRequests[type] = (this.stats.restRequests[type] ?? 0) + 1
    const now = this.now()
    this.market.advance(now)
    const faultStatus = this.#faults.outage(now) ? 503 : this.#faults.takeRestStatus(now)
    if (faultStatus !== null) {
      this.stats.restFaulted[faultStatus] = (this.stats.restFaulted[faultStatus] ?? 0) + 1
      return send(res, faultStatus, 'text/plain', STATUS_CODES[faultStatus] ?? 'Error')
    }
    if (!parsed || !isObject(body)) return send(res, 422, 'text/plain', DESERIALIZE_FAILED)
    const baseWeight = type === 'l2Book' || type === 'allMids' ? 2 : 20
    if (this.#o.enforceWeightLimit && this.#weightUsed(ip) + baseWeight > this.#o.weightPerMinute) {
      this.stats.rest429++
      return send(res, 429, 'text/plain', 'Too Many Requests')
    }
    const answer = this.#answer(body, now)
    const extra = type === 'fundingHistory' ? Math.floor(answer.items / 20) : type === 'candleSnapshot' ? Math.floor(answer.items / 60) : 0
    this.#spend(ip, baseWeight + extra)
    if (answer.status === 200) send(res, 200, 'application/json', JSON.stringify(answer.json))
    else send(res, answer.status, 'text/plain', answer.text ?? DESERIALIZE_FAILED)
  }

  #answer(body: Record<string, unknown>, now: number): { status: number; json?: unknown; text?: string; items: number } {
    const ok = (json: unknown, items = 0) => ({ status: 200, json, items })
    const bad = (why?: string) => ({ status: 422, text: why ? `${DESERIALIZE_FAILED}: ${why}` : DESERIALIZE_FAILED, items: 0 })
    switch (body.type) {
      case 'meta':
        return ok(this.#meta())
      case 'metaAndAssetCtxs':
        return ok([this.#meta(), this.coins.map((c) => wireAssetCtx(this.market.assetCtx(c, now)!))])
      case 'allMids':
        return ok(Object.fromEntries(Object.entries(this.market.mids(now)).map(([c, px]) => [c, wireDecimal(px)])))
      case 'l2Book': {
        if (typeof body.coin !== 'string') return bad('missing field `coin`')
        const book = this.market.book(body.coin, now)
        return ok(book ? wireBook(book) : null)
      }
      case 'candleSnapshot': {
        const r = body.req
        if (!isObject(r) || typeof r.coin !== 'string' || typeof r.interval !== 'string' || !Number.isSafeInteger(r.startTime)) return bad('invalid `req`')
        if (r.endTime !== undefined && r.endTime !== null && !Number.isSafeInteger(r.endTime)) return bad('invalid `endTime`')
        if (!isCandleInterval(r.interval)) return bad(`interval \`${r.interval}\` is not simulated by the local venue`)
        const end = typeof r.endTime === 'number' ? r.endTime : now
        const candles = this.#servedCandles(r.coin, r.interval, r.startTime as number, end, now)
        return ok(candles.map(wireCandle), candles.length)
      }
      case 'fundingHistory': {
        if (typeof body.coin !== 'string' || !Number.isSafeInteger(body.startTime)) return bad('missing field `coin` or `startTime`')
        if (body.endTime !== undefined && body.endTime !== null && !Number.isSafeInteger(body.endTime)) return bad('invalid `endTime`')
        const end = typeof body.endTime === 'number' ? body.endTime : null
        const rows = this.market.fundingHistory(body.coin, body.startTime as number, end, now, PAGE_LIMIT)
        return ok(rows.map(wireFundingRow), rows.length)
      }
      case 'predictedFundings':
        return ok(this.coins.map((c) => [c, this.#predicted(c, now)]))
      default:
        return bad(`unknown variant \`${String(body.type)}\``)
    }
  }

  #meta(): Record<string, unknown> {
    return {
      universe: this.coins.map((name) => {
        const coin = name as keyof typeof MAX_LEVERAGE
        return { name, szDecimals: SYNTHETIC_MODEL.assets[coin].szDecimals, maxLeverage: MAX_LEVERAGE[coin], marginTableId: MAX_LEVERAGE[coin] }
      }),
      marginTables: [],
      collateralToken: 0,
    }
  }

  /**
   * predictedFundings: HlPerp is the venue's own predicted hourly rate. The BinPerp and BybitPerp entries are
   * CONSTRUCTED (no CEX is simulated): the same rate on their 8-hour basis, Bybit a hair apart, next settlement on the
   * 8-hour grid.
   */
  #predicted(coin: string, now: number): unknown[] {
    const p = this.market.predictedFunding(coin, now)!
    const next8h = Math.floor(now / (8 * HOUR_MS)) * 8 * HOUR_MS + 8 * HOUR_MS
    return [
      ['BinPerp', { fundingRate: wireDecimal(roundTo(p.rate * 8, 8)), nextFundingTime: next8h, fundingIntervalHours: 8 }],
      ['HlPerp', { fundingRate: wireDecimal(p.rate), nextFundingTime: p.nextFundingTime, fundingIntervalHours: 1 }],
      ['BybitPerp', { fundingRate: wireDecimal(roundTo(p.rate * 8 + 0.000005, 8)), nextFundingTime: next8h, fundingIntervalHours: 8 }],
    ]
  }

  #servedCandles(coin: string, interval: CandleInterval, start: number, end: number, now: number): VenueCandle[] {
    return this.market
      .candles(coin, interval, start, end, now)
      .filter((c) => !this.#faults.purged(coin, interval, c.closeTime + 1))
      .map((c) => this.#faults.correction(coin, interval, c.openTime)?.corrected ?? c)
  }

  #weightUsed(ip: string): number {
    const cutoff = Date.now() - MINUTE_MS
    const list = (this.#weights.get(ip) ?? []).filter((w) => w.wall > cutoff)
    this.#weights.set(ip, list)
    return list.reduce((n, w) => n + w.weight, 0)
  }

  #spend(ip: string, weight: number): void {
    const list = this.#weights.get(ip) ?? []
    list.push({ wall: Date.now(), weight })
    this.#weights.set(ip, list)
  }

  // ---------- control ----------

  #control(method: string, url: URL, text: string, res: ServerResponse): void {
    const json = (status: number, v: unknown) => send(res, status, 'application/json', JSON.stringify(v))
    const route = url.pathname.slice('/_venue/'.length)
    if (route === 'state' && method === 'GET') return json(200, this.state())
    if (route === 'bars' && method === 'GET') {
      const coin = url.searchParams.get('coin')
      const interval = url.searchParams.get('interval') ?? '1h'
      if (!this.market.hasCoin(coin)) return json(400, { error: `coin: one of ${this.coins.join(', ')}` })
      if (!isCandleInterval(interval)) return json(400, { error: `interval: one of ${Object.keys(CANDLE_INTERVALS).join(', ')}` })
      return json(200, { coin, interval, bars: this.bars(coin, interval) })
    }
    if (route === 'funding' && method === 'GET') {
      const coin = url.searchParams.get('coin')
      if (!this.market.hasCoin(coin)) return json(400, { error: `coin: one of ${this.coins.join(', ')}` })
      return json(200, { coin, rows: this.fundingRows(coin) })
    }
    if (route === 'fault' && method === 'POST') {
      let body: unknown
      try {
        body = JSON.parse(text)
      } catch {
        return json(400, { error: 'body is not JSON' })
      }
      try {
        return json(200, this.#apply(LocalVenueFaults.parseFault(body, FAULT_ROOT), 'control'))
      } catch (err) {
        if (err instanceof OptionsError) return json(400, { error: err.message, path: err.path })
        throw err
      }
    }
    send(res, 404, 'text/plain', 'Not Found')
  }

  // ---------- websocket ----------

  #onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = new URL(req.url ?? '/', 'http://venue').pathname
    if (path !== '/ws') return refuse(socket, 404, 'Not Found')
    const ip = req.socket.remoteAddress ?? 'unknown'
    const now = this.now()
    if (this.#faults.outage(now)) {
      this.#refused('outage')
      socket.destroy()
      return
    }
    const open = [...this.#connections].filter((c) => c.ip === ip).length
    if (open >= this.#o.maxConnections) {
      this.#refused('concurrent')
      return refuse(socket, 429, `Too many connections: at most ${this.#o.maxConnections} per IP`)
    }
    const wall = Date.now()
    const recent = (this.#newConnections.get(ip) ?? []).filter((w) => w > wall - MINUTE_MS)
    if (recent.length >= this.#o.maxNewConnectionsPerMinute) {
      this.#newConnections.set(ip, recent)
      this.#refused('rate')
      return refuse(socket, 429, `Too many new connections: at most ${this.#o.maxNewConnectionsPerMinute} per minute per IP`)
    }
    recent.push(wall)
    this.#newConnections.set(ip, recent)
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#onConnection(ws, ip))
  }

  #refused(why: 'outage' | 'concurrent' | 'rate'): void {
    this.stats.connectionsRefused++
    this.stats.refusedBy[why]++
  }

  #onConnection(ws: WebSocket, ip: string): void {
    const conn: Connection = { id: ++this.#connectionIds, ip, ws, subs: new Map(), lastSentWall: Date.now(), closing: false }
    this.#connections.add(conn)
    this.stats.connectionsAccepted++
    ws.on('close', () => this.#connections.delete(conn))
    ws.on('error', () => this.#connections.delete(conn))
    ws.on('message', (raw: RawData) => {
      try {
        this.#onMessage(conn, raw.toString())
      } catch (err) {
        this.#log.error({ err }, 'websocket message failed')
      }
    })
  }

  #onMessage(conn: Connection, text: string): void {
    let msg: unknown
    try {
      msg = JSON.parse(text)
    } catch {
      return this.#sendError(conn, `Error parsing JSON into valid websocket request: ${text.slice(0, 100)}`)
    }
    if (!isObject(msg)) return this.#sendError(conn, `Invalid websocket request: ${text.slice(0, 100)}`)
    if (msg.method === 'ping') {
      this.#sendRaw(conn, '{"channel":"pong"}', 'pong')
      return
    }
    if (msg.method !== 'subscribe' && msg.method !== 'unsubscribe') return this.#sendError(conn, `Unknown method: ${String(msg.method)}`)
    const subscription = msg.subscription
    const parsed = this.#parseSubscription(subscription)
    if (typeof parsed === 'string') return this.#sendError(conn, parsed)
    const ack = JSON.stringify({ channel: 'subscriptionResponse', data: { method: msg.method, subscription } })
    if (msg.method === 'unsubscribe') {
      if (!conn.subs.delete(parsed.key)) return this.#sendError(conn, `Already unsubscribed: ${JSON.stringify(subscription)}`)
      this.#sendRaw(conn, ack, 'subscriptionResponse')
      return
    }
    if (conn.subs.has(parsed.key)) return this.#sendError(conn, `Already subscribed: ${JSON.stringify(subscription)}`)
    let total = 0
    for (const c of this.#connections) if (c.ip === conn.ip) total += c.subs.size
    if (total >= this.#o.maxSubscriptions) {
      this.stats.subscriptionsRefused++
      return this.#sendError(conn, `Cannot track more than ${this.#o.maxSubscriptions} total subscriptions`)
    }
    const now = this.now()
    conn.subs.set(parsed.key, {
      ...parsed,
      subscription: subscription as Record<string, unknown>,
      since: now,
      bookAt: null,
      minute: null,
      candle: null,
      firstTrade: null,
      newestTrade: null,
      lastFrame: null,
    })
    this.#sendRaw(conn, ack, 'subscriptionResponse')
  }

  #parseSubscription(sub: unknown): { key: string; type: SubType; coin: string; interval: CandleInterval | null } | string {
    const invalid = `Invalid subscription ${JSON.stringify(sub) ?? String(sub)}`
    if (!isObject(sub)) return invalid
    switch (sub.type) {
      case 'allMids':
        return { key: subscriptionKey('allMids', '', null), type: 'allMids', coin: '', interval: null }
      case 'trades':
      case 'l2Book':
      case 'activeAssetCtx':
        if (!this.market.hasCoin(sub.coin)) return invalid
        return { key: subscriptionKey(sub.type, sub.coin, null), type: sub.type, coin: sub.coin, interval: null }
      case 'candle':
        if (!this.market.hasCoin(sub.coin) || !isCandleInterval(sub.interval)) return invalid
        return { key: subscriptionKey('candle', sub.coin, sub.interval), type: 'candle', coin: sub.coin, interval: sub.interval }
      default:
        return invalid
    }
  }

  #sendError(conn: Connection, text: string): void {
    this.#sendRaw(conn, JSON.stringify({ channel: 'error', data: text }), 'error')
  }

  /** Sends unless the venue is silenced (or `force`, for fault frames); counts the frame by channel. */
  #sendRaw(conn: Connection, text: string, channel: string, force = false): boolean {
    if (conn.ws.readyState !== WebSocket.OPEN || conn.closing) return false
    if (!force && this.#faults.silenced(this.now())) return false
    if (conn.ws.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.#log.warn({ connection: conn.id }, 'websocket consumer too slow; dropped')
      conn.ws.terminate()
      return false
    }
    conn.ws.send(text)
    conn.lastSentWall = Date.now()
    this.stats.framesSent[channel] = (this.stats.framesSent[channel] ?? 0) + 1
    return true
  }

  #sendData(conn: Connection, sub: Subscription, channel: string, data: unknown): void {
    const text = JSON.stringify({ channel, data })
    if (this.#sendRaw(conn, text, channel)) sub.lastFrame = text
  }

  /** One push: what became due in venue time since the last one, per connection and subscription. */
  #push(): void {
    try {
      const now = this.now()
      this.market.advance(now)
      for (const { fault } of this.#faults.due(now)) {
        try {
          this.#apply(fault, 'script', now)
        } catch (err) {
          this.#log.error({ err, fault }, 'scripted fault could not be applied')
        }
      }
      const wall = Date.now()
      for (const conn of this.#connections) {
        if (!conn.closing && wall - conn.lastSentWall >= this.#o.idleTimeoutMs) {
          conn.closing = true
          this.stats.idleClosed++
          conn.ws.close(1000, `idle: nothing sent for ${this.#o.idleTimeoutMs} ms`)
        }
      }
      const silenced = this.#faults.silenced(now)
      for (const conn of this.#connections) {
        if (conn.closing) continue
        for (const sub of conn.subs.values()) {
          // What happens during a silence is lost, as when a venue's feed stalls: the client back-fills over REST.
          if (silenced) sub.since = now
          else this.#pushSubscription(conn, sub, now)
        }
      }
    } catch (err) {
      this.#log.error({ err }, 'push failed')
    }
  }

  #pushSubscription(conn: Connection, sub: Subscription, now: number): void {
    switch (sub.type) {
      case 'trades': {
        const trades = this.market.trades(sub.coin, sub.since, now)
        sub.since = now
        if (trades.length === 0) return
        this.#sendData(conn, sub, 'trades', trades.map(wireTrade))
        sub.firstTrade ??= trades[0]!.time
        sub.newestTrade = trades.at(-1)!.time
        return
      }
      case 'l2Book': {
        // The venue publishes the book once a block, to every subscriber alike: one schedule for all connections (a
        // 500 ms grid of venue time), so two clients see the same books with the same times.
        if (sub.bookAt !== null && Math.floor(now / BOOK_PERIOD_MS) === Math.floor(sub.bookAt / BOOK_PERIOD_MS)) return
        const book = this.market.book(sub.coin, now)
        sub.bookAt = now
        if (book) this.#sendData(conn, sub, 'l2Book', wireBook(book))
        return
      }
      case 'activeAssetCtx': {
        const minute = this.market.lastClosedMinute(now)
        if (minute === sub.minute) return
        sub.minute = minute
        const ctx = this.market.assetCtx(sub.coin, now)
        if (ctx) this.#sendData(conn, sub, 'activeAssetCtx', { coin: sub.coin, ctx: wireAssetCtx(ctx) })
        return
      }
      case 'allMids': {
        const minute = this.market.lastClosedMinute(now)
        if (minute === sub.minute) return
        sub.minute = minute
        const mids = Object.fromEntries(Object.entries(this.market.mids(now)).map(([c, px]) => [c, wireDecimal(px)]))
        this.#sendData(conn, sub, 'allMids', { mids })
        return
      }
      case 'candle': {
        // Every candle that changed since the last push, each as it stands now (a closed one in its final state),
        // so the last update a client sees of a candle is the candle.
        const interval = sub.interval!
        const ivMs = CANDLE_INTERVALS[interval]
        const newest = Math.floor(now / ivMs) * ivMs
        const first = Math.max(Math.floor(sub.since / ivMs) * ivMs, newest - (MAX_CANDLES_PER_PUSH - 1) * ivMs)
        sub.since = now
        for (let openTime = first; openTime <= newest; openTime += ivMs) {
          if (sub.candle && openTime < sub.candle.openTime) continue
          const c = this.market.candle(sub.coin, interval, openTime, now)
          if (!c || (sub.candle && sub.candle.openTime === openTime && sub.candle.trades === c.trades)) continue
          this.#sendData(conn, sub, 'candle', wireCandle(c))
          sub.candle = { openTime, trades: c.trades }
        }
        return
      }
    }
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function subscriptionKey(type: string, coin: string, interval: string | null): string {
  return `${type}|${coin}|${interval ?? ''}`
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) })
  res.end(body)
}

/** Answers an upgrade request with a plain HTTP status and closes the socket (no websocket is opened). */
function refuse(socket: Duplex, status: number, text: string): void {
  socket.once('finish', () => socket.destroy())
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nConnection: close\r\nContent-Type: text/plain\r\n` +
      `Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
  )
}

function numericBar(c: VenueCandle): Omit<VenueBar, 'purged' | 'corrected' | 'original' | 'served'> {
  return { openTime: c.openTime, closeTime: c.closeTime + 1, open: c.open, high: c.high, low: c.low, close: c.close, volume: c.volume, trades: c.trades }
}

/** A fault naming a coin must name one this venue serves. */
function checkServedCoin(root: string, path: string, fault: VenueFault, coins: readonly string[]): void {
  if ('coin' in fault && fault.coin !== undefined && !coins.includes(fault.coin)) {
    throw OptionsError.at(root, path, `${fault.coin} is not served by this venue (${coins.join(', ')})`)
  }
}
