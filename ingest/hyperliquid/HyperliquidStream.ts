/**
 * Hyperliquid websocket client: subscribes to trades, l2Book, activeAssetCtx and candle for the given coins and hands
 * each data message, parsed, to `onMessage` with the number of the connection it came on and the instant it arrived.
 * What the messages mean (ticks, closed bars) is the caller's business (pipeline/venue/HyperliquidConnector.ts).
 *
 * Reference §3: "server closes a connection it has sent nothing to for 60 s. Send {"method":"ping"} (e.g. after
 * 30–50 s quiet); reply {"channel":"pong"}" and "Reconnect: re-subscribe; missed data must be re-requested over
 * REST". So: after `pingAfterMs` without an inbound message we ping; if nothing at all arrives within
 * `pongTimeoutMs` the socket is presumed dead and terminated. Any close (other than stop()) schedules a reconnect
 * with exponential backoff and jitter, and every new connection subscribes again to everything.
 * The venue's caps (reference §1, WebSocket row): one connection here, 4 subscriptions per coin (far below 1000), and
 * at most `maxConnectsPerMinute` (default 30, the venue's limit) new connections in any minute: a reconnect that would
 * exceed it waits.
 *
 * Bad input never stops the stream: a frame that is not JSON, names a channel we did not subscribe to, or does not
 * parse is handed to `onReject` with a reason and skipped.
 */
import { EventEmitter } from 'node:events'
import { WebSocket, type RawData } from 'ws'
import { childLogger } from '../../common/logger.ts'
import { systemClock, type Clock } from '../../common/Clock.ts'
import { validateOptions } from '../../common/validation.ts'
import { HyperliquidError } from './HyperliquidError.ts'
import { bookTopOf, parseActiveAssetCtx, parseBook, parseCandle, parseTrades, type HlActiveAssetCtx, type HlBookTop, type HlCandle, type HlTrade } from './parseInfo.ts'
import { isBookFrame, scanBookFrame } from './scanBookFrame.ts'

export const HL_DEFAULT_WS_URL = 'wss://api.hyperliquid.xyz/ws'
export const HL_STREAM_CHANNELS = ['trades', 'l2Book', 'activeAssetCtx', 'candle'] as const
export type HlStreamChannel = (typeof HL_STREAM_CHANNELS)[number]

/** Why a frame was skipped (VenueInputGuard counts these by name). */
export type HlFrameRejection = 'not_json' | 'unknown_channel' | 'bad_field'

interface MessageBase {
  /** 1-based number of the connection the message came on (a reconnect starts a new one). */
  connection: number
  /** The stream clock's time when the frame arrived. */
  receivedAt: number
}

export type HlStreamMessage =
  | (MessageBase & { channel: 'trades'; data: HlTrade[] })
  /** A book's top and depths (all the connector keeps of it); null when a side is empty (no top). */
  | (MessageBase & { channel: 'l2Book'; data: HlBookTop | null })
  | (MessageBase & { channel: 'activeAssetCtx'; data: HlActiveAssetCtx })
  | (MessageBase & { channel: 'candle'; data: HlCandle })

export interface HyperliquidStreamOptions {
  /** Default wss://api.hyperliquid.xyz/ws. */
  url?: string
  /** Venue coin names, e.g. ['BTC', 'ETH', 'SOL']. */
  coins: string[]
  /** Default: all of trades, l2Book, activeAssetCtx, candle. */
  channels?: HlStreamChannel[]
  /** Interval of the candle subscription. Default '1h'. */
  candleInterval?: string
  /** Ping after this long without an inbound message. Default 30 000. */
  pingAfterMs?: number
  /** Give up on a silent socket this long after the ping. Default 10 000. */
  pongTimeoutMs?: number
  /** First reconnect delay before jitter. Default 500. */
  backoffBaseMs?: number
  /** Largest reconnect delay before jitter. Default 30 000. */
  backoffCapMs?: number
  /** Websocket handshake timeout. Default 10 000. */
  connectTimeoutMs?: number
  /** New connections allowed in any wall minute (reference §1: 30). Default 30. */
  maxConnectsPerMinute?: number
  /** Stamps `receivedAt` (default the system clock). */
  clock?: Clock
  /** Receives every data message, in arrival order. */
  onMessage: (message: HlStreamMessage) => void
  /** Receives every skipped frame with its reason and a short detail. */
  onReject?: (reason: HlFrameRejection, detail: string) => void
}

const OPTIONS_SCHEMA = {
  type: 'object',
  required: ['coins', 'onMessage'],
  additionalProperties: false,
  properties: {
    url: { type: 'string', pattern: '^wss?://[^\\s]+$' },
    coins: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', minLength: 1 } },
    channels: { type: 'array', minItems: 1, uniqueItems: true, items: { enum: [...HL_STREAM_CHANNELS] } },
    candleInterval: { type: 'string', pattern: '^\\d+[mhdw]$' },
    pingAfterMs: { type: 'integer', minimum: 1 },
    pongTimeoutMs: { type: 'integer', minimum: 1 },
    backoffBaseMs: { type: 'integer', minimum: 1 },
    backoffCapMs: { type: 'integer', minimum: 1 },
    connectTimeoutMs: { type: 'integer', minimum: 1 },
    maxConnectsPerMinute: { type: 'integer', minimum: 1, maximum: 30 },
    clock: {},
    onMessage: {},
    onReject: {},
  },
} as const

export interface HyperliquidStreamStats {
  connects: number
  reconnectsScheduled: number
  subscriptionsSent: number
  subscriptionAcks: number
  pingsSent: number
  pongs: number
  /** Frames received (any channel, good or bad). */
  frames: number
  /** Data messages handed to onMessage. */
  messages: number
  /** Frames skipped (onReject). */
  rejected: number
}

/**
 * Events: 'open' (connection number), 'close' ({ connection, code }), 'reconnecting' ({ attempt, delayMs }),
 * 'subscribed' (subscription object), 'ping', 'pong', 'venueError' (message). Data goes to `onMessage`, not to an
 * event, so none is emitted before a listener could attach.
 */
export class HyperliquidStream extends EventEmitter {
  readonly url: string
  readonly #subscriptions: ReadonlyArray<Record<string, string>>
  readonly #channels: ReadonlySet<string>
  readonly #pingAfterMs: number
  readonly #pongTimeoutMs: number
  readonly #backoffBaseMs: number
  readonly #backoffCapMs: number
  readonly #connectTimeoutMs: number
  readonly #maxConnectsPerMinute: number
  readonly #clock: Clock
  readonly #onMessage: (message: HlStreamMessage) => void
  readonly #onReject: (reason: HlFrameRejection, detail: string) => void
  readonly #log = childLogger('hyperliquid-stream')
  readonly stats: HyperliquidStreamStats = {
    connects: 0,
    reconnectsScheduled: 0,
    subscriptionsSent: 0,
    subscriptionAcks: 0,
    pingsSent: 0,
    pongs: 0,
    frames: 0,
    messages: 0,
    rejected: 0,
  }
  #ws: WebSocket | null = null
  #connection = 0
  #stopped = false
  #attempt = 0
  /** Wall instants of the recent connection attempts (the per-minute cap). */
  #connectTimes: number[] = []
  #reconnectTimer: NodeJS.Timeout | null = null
  #quietTimer: NodeJS.Timeout | null = null
  #pongTimer: NodeJS.Timeout | null = null
  /** Wall time of the last inbound frame: the quiet timer reads it instead of being re-armed on every frame. */
  #lastInbound = 0

  private constructor(o: HyperliquidStreamOptions) {
    super()
    if (typeof o.onMessage !== 'function') throw new TypeError('HyperliquidStream options/onMessage: must be a function')
    this.url = o.url ?? HL_DEFAULT_WS_URL
    const channels = o.channels ?? [...HL_STREAM_CHANNELS]
    this.#channels = new Set(channels)
    const interval = o.candleInterval ?? '1h'
    this.#subscriptions = o.coins.flatMap((coin) => channels.map((type): Record<string, string> => (type === 'candle' ? { type, coin, interval } : { type, coin })))
    this.#pingAfterMs = o.pingAfterMs ?? 30_000
    this.#pongTimeoutMs = o.pongTimeoutMs ?? 10_000
    this.#backoffBaseMs = o.backoffBaseMs ?? 500
    this.#backoffCapMs = Math.max(o.backoffCapMs ?? 30_000, this.#backoffBaseMs)
    this.#connectTimeoutMs = o.connectTimeoutMs ?? 10_000
    this.#maxConnectsPerMinute = o.maxConnectsPerMinute ?? 30
    this.#clock = o.clock ?? systemClock
    this.#onMessage = o.onMessage
    this.#onReject = o.onReject ?? (() => {})
  }

  /**
   * Starts the stream and resolves once the first connection attempt has settled (open, or failed with a reconnect
   * scheduled): an unreachable venue at start-up is retried like any later drop, never thrown.
   */
  static async open(options: HyperliquidStreamOptions): Promise<HyperliquidStream> {
    const o = validateOptions<HyperliquidStreamOptions>('HyperliquidStream options', OPTIONS_SCHEMA, options)
    const stream = new HyperliquidStream(o)
    await new Promise<void>((resolve) => {
      const settle = () => {
        stream.off('open', settle)
        stream.off('close', settle)
        resolve()
      }
      stream.on('open', settle)
      stream.on('close', settle)
      stream.#connect()
    })
    return stream
  }

  get connected(): boolean {
    return this.#ws?.readyState === WebSocket.OPEN
  }

  /** The number of the current (or last) connection; 0 before the first. */
  get connection(): number {
    return this.#connection
  }

  /** The subscriptions every connection sends. */
  get subscriptions(): ReadonlyArray<Record<string, string>> {
    return this.#subscriptions
  }

  /** Drops the current connection as a network failure would (the usual reconnect follows). */
  drop(): void {
    this.#ws?.terminate()
  }

  /** Stops for good: no reconnect, timers cleared, socket closed (terminated if the close handshake stalls). */
  async stop(): Promise<void> {
    this.#stopped = true
    this.#clearTimers()
    if (this.#reconnectTimer) clearTimeout(this.#reconnectTimer)
    this.#reconnectTimer = null
    const ws = this.#ws
    this.#ws = null
    if (!ws || ws.readyState === WebSocket.CLOSED) return
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => ws.terminate(), 1000)
      ws.once('close', () => {
        clearTimeout(force)
        resolve()
      })
      if (ws.readyState === WebSocket.CONNECTING) ws.terminate()
      else ws.close(1000, 'stop')
    })
  }

  #connect(): void {
    if (this.#stopped) return
    this.#connectTimes.push(Date.now())
    const connection = ++this.#connection
    const ws = new WebSocket(this.url, { handshakeTimeout: this.#connectTimeoutMs })
    this.#ws = ws
    let receivedAny = false
    ws.on('open', () => {
      this.stats.connects++
      for (const subscription of this.#subscriptions) {
        ws.send(JSON.stringify({ method: 'subscribe', subscription }))
        this.stats.subscriptionsSent++
      }
      this.#lastInbound = Date.now()
      this.#armQuietTimer(ws)
      this.#log.info({ url: this.url, connection, subscriptions: this.#subscriptions.length }, 'websocket open')
      this.emit('open', connection)
    })
    ws.on('message', (data: RawData) => {
      // A frame that arrives during stop()'s close handshake must not re-arm the ping timer (it would hold the process).
      if (this.#stopped) return
      if (!receivedAny) {
        // The connection works end to end: the next drop starts backing off from the base delay again.
        receivedAny = true
        this.#attempt = 0
      }
      this.#lastInbound = Date.now()
      if (this.#pongTimer) this.#answered()
      this.#handle(data, connection)
    })
    ws.on('error', (err) => {
      const e = new HyperliquidError('HL_UNREACHABLE', `websocket ${this.url}: ${err.message}`, { request: 'ws', cause: err })
      this.#log.warn({ err: e.message }, 'websocket error')
    })
    ws.on('close', (code: number) => {
      if (this.#ws === ws) {
        this.#ws = null
        this.#clearTimers()
      }
      this.emit('close', { connection, code })
      if (!this.#stopped) this.#scheduleReconnect()
    })
  }

  #scheduleReconnect(): void {
    if (this.#reconnectTimer) return
    const ceiling = Math.min(this.#backoffCapMs, this.#backoffBaseMs * 2 ** this.#attempt)
    // "Equal jitter": half fixed, half random, so clients spread out yet never retry immediately.
    let delayMs = Math.round(ceiling / 2 + Math.random() * (ceiling / 2))
    // The venue refuses more than 30 new connections a minute: wait until the oldest of the last ones is a minute old.
    const now = Date.now()
    this.#connectTimes = this.#connectTimes.filter((at) => now - at < 60_000)
    if (this.#connectTimes.length >= this.#maxConnectsPerMinute) delayMs = Math.max(delayMs, this.#connectTimes[0]! + 60_000 - now)
    this.#attempt++
    this.stats.reconnectsScheduled++
    this.#log.warn({ attempt: this.#attempt, delayMs }, 'websocket closed; reconnecting')
    this.emit('reconnecting', { attempt: this.#attempt, delayMs })
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = null
      this.#connect()
    }, delayMs)
  }

  /**
   * Pings once the connection has been quiet for pingAfterMs. The timer is armed once and, when it fires, looks at the
   * last inbound frame: a busy stream re-arms it for the rest of the quiet period rather than on every frame.
   */
  #armQuietTimer(ws: WebSocket, afterMs = this.#pingAfterMs): void {
    if (this.#quietTimer) clearTimeout(this.#quietTimer)
    this.#quietTimer = setTimeout(() => {
      this.#quietTimer = null
      if (ws.readyState !== WebSocket.OPEN || this.#stopped) return
      const quiet = Date.now() - this.#lastInbound
      if (quiet < this.#pingAfterMs) return this.#armQuietTimer(ws, this.#pingAfterMs - quiet)
      ws.send(JSON.stringify({ method: 'ping' }))
      this.stats.pingsSent++
      this.emit('ping')
      this.#pongTimer = setTimeout(() => {
        this.#pongTimer = null
        this.#log.warn({ pongTimeoutMs: this.#pongTimeoutMs }, 'no pong; dropping the connection')
        this.emit('silent', this.#connection)
        ws.terminate()
      }, this.#pongTimeoutMs)
    }, afterMs)
  }

  /** Something arrived after a ping: the connection lives; wait for the next quiet period. */
  #answered(): void {
    if (this.#pongTimer) clearTimeout(this.#pongTimer)
    this.#pongTimer = null
    const ws = this.#ws
    if (ws) this.#armQuietTimer(ws)
  }

  #clearTimers(): void {
    if (this.#quietTimer) clearTimeout(this.#quietTimer)
    if (this.#pongTimer) clearTimeout(this.#pongTimer)
    this.#quietTimer = null
    this.#pongTimer = null
  }

  #reject(reason: HlFrameRejection, detail: string): void {
    this.stats.rejected++
    this.#onReject(reason, detail)
  }

  #handle(data: RawData, connection: number): void {
    this.stats.frames++
    const receivedAt = this.#clock.now()
    const text = data.toString()
    // Books (most frames, the largest) read straight from the text when they have the venue's exact shape; anything
    // else, malformed frames included, goes the general way below (scanBookFrame.ts).
    if (isBookFrame(text) && this.#channels.has('l2Book')) {
      const top = scanBookFrame(text)
      if (top !== null) {
        this.#deliver({ connection, receivedAt, channel: 'l2Book', data: top })
        return
      }
    }
    let msg: { channel?: unknown; data?: unknown }
    try {
      msg = JSON.parse(text) as typeof msg
    } catch {
      this.#reject('not_json', text.length > 80 ? `${text.slice(0, 80)}…` : text)
      return
    }
    const channel = msg?.channel
    switch (channel) {
      case 'pong':
        this.stats.pongs++
        this.emit('pong')
        return
      case 'subscriptionResponse':
        this.stats.subscriptionAcks++
        this.emit('subscribed', (msg.data as { subscription?: unknown } | undefined)?.subscription ?? null)
        return
      case 'error':
        this.#log.warn({ message: msg.data }, 'venue reported an error')
        this.emit('venueError', msg.data)
        return
    }
    if (typeof channel !== 'string' || !this.#channels.has(channel)) {
      this.#reject('unknown_channel', String(channel))
      return
    }
    let message: HlStreamMessage
    try {
      const base = { connection, receivedAt }
      switch (channel as HlStreamChannel) {
        case 'trades':
          message = { ...base, channel: 'trades', data: parseTrades(msg.data, '/data') }
          break
        case 'l2Book':
          message = { ...base, channel: 'l2Book', data: bookTopOf(parseBook(msg.data, '/data')) }
          break
        case 'activeAssetCtx':
          message = { ...base, channel: 'activeAssetCtx', data: parseActiveAssetCtx(msg.data, '/data') }
          break
        case 'candle':
          message = { ...base, channel: 'candle', data: parseCandle(msg.data, '/data') }
          break
      }
    } catch (err) {
      if (!(err instanceof HyperliquidError)) throw err
      this.#reject('bad_field', `${channel}: ${err.message}`)
      return
    }
    this.#deliver(message)
  }

  #deliver(message: HlStreamMessage): void {
    this.stats.messages++
    try {
      this.#onMessage(message)
    } catch (err) {
      this.#log.error({ err }, 'onMessage threw')
    }
  }
}
