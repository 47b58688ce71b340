/**
 * The venue side of the live-venue bench (bench/venue.ts): a fixed set of websocket frames in the venue's real shapes,
 * recorded once per run, and a replay server that sends them as fast as the client's socket drains, with the local
 * Hyperliquid stand-in (LocalVenue) answering the REST the connector needs. It all runs in a worker thread, so the
 * client being measured (a bare websocket reader, or the connector) has a core of its own and the sending is not
 * charged to it.
 *
 * The frames are what LocalVenue would push to a subscriber of trades, l2Book, activeAssetCtx and candle for each coin
 * at 1x (a push every 100 ms of venue time: every trade as it happens with its candle update, the book every 500 ms,
 * the context once a venue minute), built from the same seeded market the REST side serves, so the bars and funding
 * the connector fetches over REST agree with the stream.
 *
 * One clock for both sides: a shared 64-bit cell holding venue time, which LocalVenue reads here and the measuring
 * side sets (to the venue time of the frames its client has received, bench/venue.ts) and reads. The server itself
 * cannot drive it: megabytes sit in the socket buffers between it and the client, minutes of venue time.
 */
import { createServer, type Server } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import type { AddressInfo } from 'node:net'
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads'
import { WebSocketServer, WebSocket, type RawData } from 'ws'
import type { Clock } from '../common/Clock.ts'
import { LocalVenue } from '../ingest/hyperliquid/local/LocalVenue.ts'
import { LocalVenueMarket } from '../ingest/hyperliquid/local/LocalVenueMarket.ts'
import { CANDLE_INTERVALS, wireAssetCtx, wireBook, wireCandle, wireTrade, type CandleInterval } from '../ingest/hyperliquid/local/wire.ts'
import { HOUR_MS, DAY_MS } from '../common/time.ts'

/** LocalVenue's pacing at 1x: a push every 100 ms; the book at most every 500 ms (the real venue's l2Book cap). */
const PUSH_MS = 100
const BOOK_PERIOD_MS = 500
/** LocalVenue's cap on candles caught up in one push. */
const MAX_CANDLES_PER_PUSH = 60
/** The replay waits for the socket to drain past this (ws.bufferedAmount), so the sender's memory stays bounded. */
const HIGH_WATER_BYTES = 1 << 20
const TEXT = { binary: false } as const

/** Channel codes of the recorded frames (FrameIndex.channels). */
export const FRAME_CHANNELS = ['trades', 'l2Book', 'activeAssetCtx', 'candle'] as const
export type FrameChannel = (typeof FRAME_CHANNELS)[number]

export interface RecordOptions {
  /** The market's seed (LocalVenue's `seed`). */
  seed: number
  coins: string[]
  /** Venue time the replay starts at (the connector backfills up to it). */
  t0: number
  /** Venue time the frames cover, after t0. */
  spanMs: number
  /** LocalVenue history before t0 (its origin is floor_hour(t0 − historyMs)). */
  historyMs: number
  /** The candle subscription's interval (the connector's bar interval). */
  candleInterval: CandleInterval
}

/** What the main thread needs to know of each frame, in send order. */
export interface FrameIndex {
  t0: number
  originMs: number
  /** Venue time of the push that carried the frame. */
  times: Float64Array
  /** Index into FRAME_CHANNELS. */
  channels: Uint8Array
  /** Trades in a trades frame (0 otherwise). */
  trades: Uint16Array
  bytes: number
  recordMs: number
}

export interface ReplayVenue {
  index: FrameIndex
  /** Venue time now (the shared cell): the clock of LocalVenue and of whatever is measured. */
  clock: Clock
  /** Sets the shared clock (the measuring side drives it, from what its client has received). */
  setTime(ms: number): void
  /**
   * Starts a round: the clock back at t0, a fresh LocalVenue on it, and the next connection replays the first
   * `frames` frames once it has sent `subscriptions` subscribe messages: as fast as the socket takes them, or with
   * `speed` each at its venue time divided by `speed` after the first (a compressed real-time replay).
   */
  round(frames: number, subscriptions: number, speed?: number): Promise<{ baseUrl: string; wsUrl: string }>
  /** Resolves when the replay server has handed the round's last frame to the socket. */
  sent(): Promise<{ frames: number; ms: number }>
  close(): Promise<void>
}

/** Starts the venue worker and records the frames in it. */
export async function startReplayVenue(options: RecordOptions): Promise<ReplayVenue> {
  const shared = new BigInt64Array(new SharedArrayBuffer(8))
  Atomics.store(shared, 0, BigInt(options.t0))
  // Workers do not inherit `--import tsx`: the worker registers tsx itself before loading this file.
  const tsxApi = import.meta.resolve('tsx/esm/api')
  const self = import.meta.url
  const worker = new Worker(
    `import(${JSON.stringify(tsxApi)}).then(({ register }) => { register(); return import(${JSON.stringify(self)}) })`,
    { eval: true, workerData: { role: 'venue-replay', shared, options } },
  )
  let nextId = 0
  const calls = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>()
  let sentWaiter: { resolve: (v: { frames: number; ms: number }) => void } | null = null
  let sentEarly: { frames: number; ms: number } | null = null
  let failure: Error | null = null
  const failAll = (err: Error) => {
    failure = err
    for (const c of calls.values()) c.reject(err)
    calls.clear()
  }
  worker.on('error', (err) => failAll(err instanceof Error ? err : new Error(String(err))))
  worker.on('exit', (code) => failAll(new Error(`the venue worker exited (${code})`)))
  worker.on('message', (m: { id?: number; result?: unknown; error?: string; event?: string; frames?: number; ms?: number }) => {
    if (m.event === 'sent') {
      const done = { frames: m.frames!, ms: m.ms! }
      if (sentWaiter) sentWaiter.resolve(done)
      else sentEarly = done
      sentWaiter = null
      return
    }
    const call = calls.get(m.id!)
    if (!call) return
    calls.delete(m.id!)
    if (m.error !== undefined) call.reject(new Error(m.error))
    else call.resolve(m.result)
  })
  const rpc = <T>(cmd: string, args: unknown = null): Promise<T> => {
    if (failure) return Promise.reject(failure)
    const id = ++nextId
    return new Promise<T>((resolve, reject) => {
      calls.set(id, { resolve: resolve as (v: unknown) => void, reject })
      worker.postMessage({ id, cmd, args })
    })
  }
  const index = await rpc<FrameIndex>('record')
  return {
    index,
    clock: { now: () => Number(Atomics.load(shared, 0)) },
    setTime: (ms) => void Atomics.store(shared, 0, BigInt(Math.floor(ms))),
    round: (frames, subscriptions, speed) => {
      sentEarly = null
      return rpc('round', { frames, subscriptions, speed })
    },
    sent: () => {
      if (sentEarly) {
        const done = sentEarly
        sentEarly = null
        return Promise.resolve(done)
      }
      return new Promise((resolve) => (sentWaiter = { resolve }))
    },
    close: async () => {
      if (!failure) await rpc('close').catch(() => undefined)
      worker.removeAllListeners('exit')
      await worker.terminate()
    },
  }
}

/**
 * LocalVenue's pushes to one connection subscribed to every channel of every coin (LocalVenue #pushSubscription, at
 * 1x): per push, coin by coin in subscription order, trades → l2Book → activeAssetCtx → candle.
 */
function recordFrames(o: RecordOptions): { frames: Buffer[]; index: FrameIndex } {
  const started = performance.now()
  const originMs = Math.floor((o.t0 - o.historyMs) / HOUR_MS) * HOUR_MS
  const market = new LocalVenueMarket({ seed: o.seed, coins: o.coins, originMs, clock: { now: () => o.t0 } })
  const ivMs = CANDLE_INTERVALS[o.candleInterval]
  const frames: Buffer[] = []
  const times: number[] = []
  const channels: number[] = []
  const trades: number[] = []
  let bytes = 0
  const add = (channel: FrameChannel, data: unknown, at: number, tradeCount = 0) => {
    const frame = Buffer.from(JSON.stringify({ channel, data }))
    frames.push(frame)
    times.push(at)
    channels.push(FRAME_CHANNELS.indexOf(channel))
    trades.push(tradeCount)
    bytes += frame.length
  }
  const subs = o.coins.map((coin) => ({ coin, tradesSince: o.t0, bookAt: null as number | null, minute: null as number | null, candleSince: o.t0, candle: null as { openTime: number; trades: number } | null }))
  for (let now = o.t0 + PUSH_MS; now <= o.t0 + o.spanMs; now += PUSH_MS) {
    for (const s of subs) {
      const dealt = market.trades(s.coin, s.tradesSince, now)
      s.tradesSince = now
      if (dealt.length > 0) add('trades', dealt.map(wireTrade), now, dealt.length)
      if (s.bookAt === null || now - s.bookAt >= BOOK_PERIOD_MS) {
        const book = market.book(s.coin, now)
        s.bookAt = now
        if (book) add('l2Book', wireBook(book), now)
      }
      const minute = market.lastClosedMinute(now)
      if (minute !== s.minute) {
        s.minute = minute
        const ctx = market.assetCtx(s.coin, now)
        if (ctx) add('activeAssetCtx', { coin: s.coin, ctx: wireAssetCtx(ctx) }, now)
      }
      const newest = Math.floor(now / ivMs) * ivMs
      const first = Math.max(Math.floor(s.candleSince / ivMs) * ivMs, newest - (MAX_CANDLES_PER_PUSH - 1) * ivMs)
      s.candleSince = now
      // A candle changes only when a trade of the coin happened since the last push (what LocalVenue compares is the
      // candle's trade count), so the aggregation is skipped otherwise: the same frames, in a fraction of the time.
      if (dealt.length === 0 && s.candle !== null) continue
      for (let openTime = first; openTime <= newest; openTime += ivMs) {
        if (s.candle && openTime < s.candle.openTime) continue
        const c = market.candle(s.coin, o.candleInterval, openTime, now)
        if (!c || (s.candle && s.candle.openTime === openTime && s.candle.trades === c.trades)) continue
        add('candle', wireCandle(c), now)
        s.candle = { openTime, trades: c.trades }
      }
    }
  }
  return {
    frames,
    index: {
      t0: o.t0,
      originMs,
      times: Float64Array.from(times),
      channels: Uint8Array.from(channels),
      trades: Uint16Array.from(trades),
      bytes,
      recordMs: performance.now() - started,
    },
  }
}

/** The worker: records, then serves rounds until told to close. */
async function runWorker(data: { shared: BigInt64Array; options: RecordOptions }): Promise<void> {
  const port = parentPort!
  const { shared, options } = data
  const clock: Clock = { now: () => Number(Atomics.load(shared, 0)) }
  let recorded: { frames: Buffer[]; index: FrameIndex } | null = null
  let venue: LocalVenue | null = null
  let plan: { frames: number; subscriptions: number; speed?: number } = { frames: 0, subscriptions: 0 }
  const http: Server = createServer()
  const wss = new WebSocketServer({ server: http, path: '/ws' })
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  const wsUrl = `ws://127.0.0.1:${(http.address() as AddressInfo).port}/ws`

  const play = async (ws: WebSocket, frames: Buffer[], times: Float64Array, n: number, speed: number | undefined) => {
    const started = performance.now()
    for (let i = 0; i < n; i++) {
      if (speed !== undefined) {
        const wait = started + (times[i]! - times[0]!) / speed - performance.now()
        if (wait >= 1) await sleep(wait)
      }
      if (ws.readyState !== WebSocket.OPEN) return
      if (ws.bufferedAmount < HIGH_WATER_BYTES) ws.send(frames[i]!, TEXT)
      else await new Promise<void>((resolve) => ws.send(frames[i]!, TEXT, () => resolve()))
    }
    port.postMessage({ event: 'sent', frames: n, ms: performance.now() - started })
  }

  // No end marker and no close after the last frame: the client knows how many frames a round has, and the connector
  // would take a close for a dropped connection and reconnect.
  wss.on('connection', (ws) => {
    const { frames: n, subscriptions, speed } = plan
    let subscribed = 0
    ws.on('error', () => undefined)
    ws.on('message', (raw: RawData) => {
      let msg: { method?: unknown; subscription?: unknown }
      try {
        msg = JSON.parse(raw.toString()) as typeof msg
      } catch {
        return
      }
      if (msg?.method === 'ping') {
        ws.send('{"channel":"pong"}')
        return
      }
      if (msg?.method !== 'subscribe') return
      ws.send(JSON.stringify({ channel: 'subscriptionResponse', data: { method: 'subscribe', subscription: msg.subscription } }))
      if (++subscribed === subscriptions && recorded) void play(ws, recorded.frames, recorded.index.times, n, speed)
    })
  })

  const handlers: Record<string, (args: never) => Promise<unknown>> = {
    record: async () => {
      recorded = recordFrames(options)
      return recorded.index
    },
    round: async (args: { frames: number; subscriptions: number; speed?: number }) => {
      await venue?.close()
      Atomics.store(shared, 0, BigInt(options.t0))
      plan = args
      // REST is the stand-in itself on the shared clock; its rate limit is off (the replay compresses hours into
      // seconds, and the weight budget is per wall minute); its own push loop only advances the market.
      venue = await LocalVenue.start({ clock, seed: options.seed, coins: options.coins, historyDays: options.historyMs / DAY_MS, enforceWeightLimit: false, frameMs: 1000 })
      if (venue.originMs !== recorded?.index.originMs) throw new Error(`LocalVenue origin ${venue.originMs} differs from the recording's ${recorded?.index.originMs}`)
      return { baseUrl: venue.baseUrl, wsUrl }
    },
    close: async () => {
      await venue?.close()
      for (const c of wss.clients) c.terminate()
      await new Promise<void>((resolve) => wss.close(() => resolve()))
      http.closeAllConnections()
      await new Promise<void>((resolve) => http.close(() => resolve()))
      return null
    },
  }
  port.on('message', (m: { id: number; cmd: string; args: never }) => {
    const handler = handlers[m.cmd]
    if (!handler) return port.postMessage({ id: m.id, error: `unknown command ${m.cmd}` })
    handler(m.args).then(
      (result) => port.postMessage({ id: m.id, result }),
      (err: unknown) => port.postMessage({ id: m.id, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
    )
  })
}

if (!isMainThread && (workerData as { role?: string } | null)?.role === 'venue-replay') {
  await runWorker(workerData as { shared: BigInt64Array; options: RecordOptions })
}
