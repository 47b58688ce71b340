/**
 * Hyperliquid websocket client: subscribes to trades, l2Book and activeAssetCtx for the given coins and hands each
 * message to `onTick` as tick records (provider 'hyperliquid-ws').
 *
 * Reference §3: "server closes a connection it has sent nothing to for 60 s. Send {"method":"ping"} (e.g. after
 * 30–50 s quiet); reply {"channel":"pong"}" and "Reconnect: re-subscribe; missed data must be re-requested over
 * REST". So: after `pingAfterMs` without an inbound message we ping; if nothing at all arrives within
 * `pongTimeoutMs` the socket is presumed dead and terminated. Any close (other than stop()) schedules a reconnect
 * with exponential backoff and jitter, and every new connection subscribes again to everything.
 * Gap back-fill over REST is the caller's business (tape record polls REST alongside the stream).
 */
import { EventEmitter } from 'node:events'
import { WebSocket, type RawData } from 'ws'
import type { Tick } from '../Tick.ts'
import { childLogger } from '../../common/logger.ts'
import { HyperliquidError } from './HyperliquidError.ts'
import { validateOptions } from '../../common/validation.ts'
import { parseActiveAssetCtx, parseBook, parseTrades } from './parseInfo.ts'
import { activeAssetCtxToTicks, l2BookToTick, tradesToTicks, type HlTickContext } from './toTicks.ts'

export const HL_DEFAULT_WS_URL = 'wss://api.hyperliquid.xyz/ws'
export const HL_STREAM_CHANNELS = ['trades', 'l2Book', 'activeAssetCtx'] as const
export type HlStreamChannel = (typeof HL_STREAM_CHANNELS)[number]

export interface HyperliquidStreamOptions {
  /** Default wss://api.hyperliquid.xyz/ws. */
  url?: string
  /** Venue coin names, e.g. ['BTC', 'ETH', 'SOL']. */
  coins: string[]
  /** Default: all of trades, l2Book, activeAssetCtx. */
  channels?: HlStreamChannel[]
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
  /** Receives every tick, in arrival order (not sorted). */
  onTick: (tick: Tick) => void
}

const OPTIONS_SCHEMA = {
  type: 'object',
  required: ['coins', 'onTick'],
  additionalProperties: false,
  properties: {
    url: { type: 'string', pattern: '^wss?://[^\\s]+$' },
    coins: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', minLength: 1 } },
    channels: { type: 'array', minItems: 1, uniqueItems: true, items: { enum: [...HL_STREAM_CHANNELS] } },
    pingAfterMs: { type: 'integer', minimum: 1 },
    pongTimeoutMs: { type: 'integer', minimum: 1 },
    backoffBaseMs: { type: 'integer', minimum: 1 },
    backoffCapMs: { type: 'integer', minimum: 1 },
    connectTimeoutMs: { type: 'integer', minimum: 1 },
    onTick: {},
  },
} as const

export interface HyperliquidStreamStats {
  connects: number
  reconnectsScheduled: number
  subscriptionsSent: number
  subscriptionAcks: number
  pingsSent: number
  pongs: number
  messages: number
  badMessages: number
  ticks: number
}

/**
 * Events: 'open' (connection number), 'close' (code), 'reconnecting' ({ attempt, delayMs }), 'subscribed'
 * (subscription object), 'ping', 'pong', 'venueError' (message). Ticks go to `onTick`, not to an event, so none is
 * emitted before a listener could attach.
 */
export class HyperliquidStream extends EventEmitter {
  readonly url: string
  readonly #coins: readonly string[]
  readonly #subscriptions: ReadonlyArray<Record<string, string>>
  readonly #pingAfterMs: number
  readonly #pongTimeoutMs: number
  readonly #backoffBaseMs: number
  readonly #backoffCapMs: number
  readonly #connectTimeoutMs: number
  readonly #onTick: (tick: Tick) => void
  readonly #log = childLogger('hyperliquid-stream')
  readonly stats: HyperliquidStreamStats = {
    connects: 0,
    reconnectsScheduled: 0,
    subscriptionsSent: 0,
    subscriptionAcks: 0,
    pingsSent: 0,
    pongs: 0,
    messages: 0,
    badMessages: 0,
    ticks: 0,
  }
  #ws: WebSocket | null = null
  #stopped = false
  #attempt = 0
  #reconnectTimer: NodeJS.Timeout | null = null
  #quietTimer: NodeJS.Timeout | null = null
  #pongTimer: NodeJS.Timeout | null = null

  private constructor(o: HyperliquidStreamOptions) {
    super()
    if (typeof o.onTick !== 'function') throw new TypeError('HyperliquidStream options/onTick: must be a function')
    this.url = o.url ?? HL_DEFAULT_WS_URL
    this.#coins = [...o.coins]
    const channels = o.channels ?? [...HL_STREAM_CHANNELS]
    this.#subscriptions = o.coins.flatMap((coin) => channels.map((type) => ({ type, coin })))
    this.#pingAfterMs = o.pingAfterMs ?? 30_000
    this.#pongTimeoutMs = o.pongTimeoutMs ?? 10_000
    this.#backoffBaseMs = o.backoffBaseMs ?? 500
    this.#backoffCapMs = Math.max(o.backoffCapMs ?? 30_000, this.#backoffBaseMs)
    this.#connectTimeoutMs = o.connectTimeoutMs ?? 10_000
    this.#onTick = o.onTick
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
    const ws = new WebSocket(this.url, { handshakeTimeout: this.#connectTimeoutMs })
    this.#ws = ws
    let receivedAny = false
    ws.on('open', () => {
      this.stats.connects++
      for (const subscription of this.#subscriptions) {
        ws.send(JSON.stringify({ method: 'subscribe', subscription }))
        this.stats.subscriptionsSent++
      }
      this.#armQuietTimer(ws)
      this.#log.info({ url: this.url, connection: this.stats.connects, subscriptions: this.#subscriptions.length }, 'websocket open')
      this.emit('open', this.stats.connects)
    })
    ws.on('message', (data: RawData) => {
      if (!receivedAny) {
        // The connection works end to end: the next drop starts backing off from the base delay again.
        receivedAny = true
        this.#attempt = 0
      }
      this.#armQuietTimer(ws)
      this.#handle(data)
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
      this.emit('close', code)
      if (!this.#stopped) this.#scheduleReconnect()
    })
  }

  #scheduleReconnect(): void {
    if (this.#reconnectTimer) return
    const ceiling = Math.min(this.#backoffCapMs, this.#backoffBaseMs * 2 ** this.#attempt)
    // "Equal jitter": half fixed, half random, so clients spread out yet never retry immediately.
    const delayMs = Math.round(ceiling / 2 + Math.random() * (ceiling / 2))
    this.#attempt++
    this.stats.reconnectsScheduled++
    this.#log.warn({ attempt: this.#attempt, delayMs }, 'websocket closed; reconnecting')
    this.emit('reconnecting', { attempt: this.#attempt, delayMs })
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = null
      this.#connect()
    }, delayMs)
  }

  #armQuietTimer(ws: WebSocket): void {
    if (this.#pongTimer) clearTimeout(this.#pongTimer)
    this.#pongTimer = null
    if (this.#quietTimer) clearTimeout(this.#quietTimer)
    this.#quietTimer = setTimeout(() => {
      this.#quietTimer = null
      if (ws.readyState !== WebSocket.OPEN) return
      ws.send(JSON.stringify({ method: 'ping' }))
      this.stats.pingsSent++
      this.emit('ping')
      this.#pongTimer = setTimeout(() => {
        this.#pongTimer = null
        this.#log.warn({ pongTimeoutMs: this.#pongTimeoutMs }, 'no pong; dropping the connection')
        ws.terminate()
      }, this.#pongTimeoutMs)
    }, this.#pingAfterMs)
  }

  #clearTimers(): void {
    if (this.#quietTimer) clearTimeout(this.#quietTimer)
    if (this.#pongTimer) clearTimeout(this.#pongTimer)
    this.#quietTimer = null
    this.#pongTimer = null
  }

  #handle(data: RawData): void {
    this.stats.messages++
    const receivedAt = Date.now()
    const ctx: HlTickContext = { receivedAt, provider: 'hyperliquid-ws' }
    let ticks: Tick[] = []
    try {
      const msg = JSON.parse(data.toString()) as { channel?: unknown; data?: unknown }
      switch (msg.channel) {
        case 'pong':
          this.stats.pongs++
          this.emit('pong')
          return
        case 'subscriptionResponse':
          this.stats.subscriptionAcks++
          this.emit('subscribed', (msg.data as { subscription?: unknown } | undefined)?.subscription ?? null)
          return
        case 'trades':
          ticks = tradesToTicks(parseTrades(msg.data, '/data'), ctx)
          break
        case 'l2Book': {
          const tick = l2BookToTick(parseBook(msg.data, '/data'), ctx)
          ticks = tick ? [tick] : []
          break
        }
        case 'activeAssetCtx':
          ticks = activeAssetCtxToTicks(parseActiveAssetCtx(msg.data, '/data'), ctx)
          break
        case 'error':
          this.#log.warn({ message: msg.data }, 'venue reported an error')
          this.emit('venueError', msg.data)
          return
        default:
          return
      }
    } catch (err) {
      this.stats.badMessages++
      this.#log.warn({ err: (err as Error).message }, 'unreadable websocket message skipped')
      return
    }
    for (const tick of ticks) {
      if (!this.#coins.includes(tick.instrument)) continue
      this.stats.ticks++
      try {
        this.#onTick(tick)
      } catch (err) {
        this.#log.error({ err }, 'onTick threw')
      }
    }
  }
}
