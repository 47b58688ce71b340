/**
 * The live venue connector's throughput and memory (issue 28): frames per second that HyperliquidConnector turns into
 * ticks durable in the event log (VenueLogSink on a fresh EmbeddedLog, as `svc start` writes them), beside a bare
 * websocket client that only receives and JSON.parses the same replayed frames from the same server, in adjacent
 * rounds; each round's ratio is judged, then the median of the rounds (this machine is shared and noisy). Goal: the
 * connector ≥ 0.5 × the bare client. And memory over 30 minutes of venue time at LocalVenue's 1x frame rate, replayed
 * at MEMORY_SPEED times real time (a pace the connector keeps up with, so what the heap holds is its steady state,
 * not a backlog), read after a full collection every few dozen frames: flat means the second half's slope is ~0.
 *
 * The frames and the replay server are bench/venueFrames.ts (a worker thread). Time: the connector, and LocalVenue
 * answering its REST, read one shared venue clock, which a probe on the client's socket sets to the venue time of the
 * frames that have arrived, so each frame is "now" when it is handled (none is refused as future, none comes late),
 * and which after the last frame moves on by one reorder window so the connector can release everything. The
 * connector runs with the timings of a compressed session (pipeline/venue/compressedTimings.ts) at SPEED.
 * Every connector round checks that the log holds exactly the ticks the frames carry, and the bars and settlements
 * of the hours replayed.
 *
 *   node --max-semi-space-size=32 --import tsx bench/venue.ts [hours] [rounds]
 */
import dc from 'node:diagnostics_channel'
import { mkdtemp, rm } from 'node:fs/promises'
import type { Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { median } from 'simple-statistics'
import { WebSocket, type RawData } from 'ws'
import { tickTime } from '../ingest/Tick.ts'
import { HyperliquidInfoClient } from '../ingest/hyperliquid/HyperliquidInfoClient.ts'
import { HL_STREAM_CHANNELS } from '../ingest/hyperliquid/HyperliquidStream.ts'
import { RestWeightBudget } from '../ingest/hyperliquid/RestWeightBudget.ts'
import { EmbeddedLog } from '../pipeline/log/EmbeddedLog.ts'
import { HL_VENUE_SOURCE, HyperliquidConnector, type HyperliquidConnectorOptions, type VenueSink, type VenueUnit } from '../pipeline/venue/HyperliquidConnector.ts'
import { VenueLogSink } from '../pipeline/venue/VenueLogSink.ts'
import { FRAME_CHANNELS, startReplayVenue, type FrameIndex, type ReplayVenue } from './venueFrames.ts'
import { compressedRestBudget, compressedTimings } from '../pipeline/venue/compressedTimings.ts'
import { MINUTE_MS, HOUR_MS, DAY_MS } from '../common/time.ts'

const COINS = ['BTC', 'ETH', 'SOL']
const BAR_INTERVAL = '1h'
/** Mid-hour, so the replay crosses hour boundaries mid-span: bars and settlements (and their barriers) are in it. */
const T0 = Date.parse('2026-03-01T10:50:00Z')
const HISTORY_MS = DAY_MS
const TICKS_TOPIC = 'venue.ticks'
/**
 * Venue time per wall time the connector's timings are set for: the replay runs at about this compression (some
 * 18,000 frames a second through the connector against LocalVenue's 7 a second), so clock-time waits are the wall
 * durations of a real session scaled up and wall-time network schedules are shortened, as in a compressed test
 * session. A REST answer that takes longer than reorderWindowMs / SPEED of wall time (200 ms, e.g. behind a 2 MB
 * batch of frames on the main thread) comes late, as it would in a live session answering after the window.
 */
const SPEED = 3000
/** The memory run's replay: 30 minutes of venue time in 30 s of wall time, frames at their own spacing. */
const MEMORY_SPEED = 60
/** What HyperliquidStream subscribes to, in its order (the bare client sends the same). */
const SUBSCRIPTIONS = COINS.flatMap((coin) => HL_STREAM_CHANNELS.map((type) => (type === 'candle' ? { type, coin, interval: BAR_INTERVAL } : { type, coin })))
/** Ticks of one activeAssetCtx frame: mark, index, mid, open_interest, predicted_funding (toTicks assetCtxToTicks). */
const CTX_TICKS = ['mark', 'index', 'mid', 'open_interest', 'predicted_funding'] as const
const ROUND_TIMEOUT_MS = 120_000

export interface VenueBenchRound {
  bareFramesPerSec: number
  connectorFramesPerSec: number
  ratio: number
  /** Ticks after t0 made durable by the connector, per second of the same interval. */
  ticksPerSec: number
}

/** One read of process.memoryUsage() right after a full collection. */
export interface VenueMemorySample {
  frames: number
  venueMinutes: number
  heapUsedMb: number
  externalMb: number
  rssMb: number
  /** Ticks in the connector's reorder buffer, and arrived but not durable (held or being written): Backlog. */
  held: number
  notDurable: number
}

export interface VenueMemory {
  minutes: number
  frames: number
  /** Replay pace: venue time per wall time. */
  speed: number
  ms: number
  samples: VenueMemorySample[]
  /** Least-squares slopes over the reads of the second half, per 10 minutes of venue time. */
  heapSlopeMbPer10Min: number
  externalSlopeMbPer10Min: number
  rssSlopeMbPer10Min: number
  /** Ticks arrived but not durable yet: a backlog the heap would carry (≈ 0 when the connector keeps up). */
  notDurableSlopePer10Min: number
}

export interface VenueBenchResult {
  frames: number
  venueHours: number
  rounds: VenueBenchRound[]
  median: VenueBenchRound
  memory: VenueMemory
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')

export async function benchVenue(options: { hours?: number; rounds?: number; memoryMinutes?: number; print?: (line: string) => void } = {}): Promise<VenueBenchResult> {
  const print = options.print ?? (() => undefined)
  const hours = options.hours ?? 6
  const rounds = options.rounds ?? 3
  const memoryMinutes = options.memoryMinutes ?? 30
  const venue = await startReplayVenue({ seed: 1, coins: COINS, t0: T0, spanMs: hours * HOUR_MS, historyMs: HISTORY_MS, candleInterval: BAR_INTERVAL })
  try {
    const index = venue.index
    const n = index.times.length
    const byChannel = FRAME_CHANNELS.map((name, c) => `${fmt(index.channels.filter((x) => x === c).length)} ${name}`)
    print(`frames: ${fmt(n)} (${(index.bytes / 2 ** 20).toFixed(1)} MiB, ${hours} h of venue time from LocalVenue seed 1 at 1x: ${byChannel.join(', ')}), recorded in ${(index.recordMs / 1000).toFixed(1)} s`)

    // Warm-up (not counted): both paths once over a short prefix, so the first round is not the JIT's.
    const warm = Math.min(n, 8000)
    await bareRound(venue, warm)
    await connectorRound(venue, warm)

    // Memory first, while the heap holds little else (no rounds' garbage waiting for a full collection).
    const memory = await memoryRun(venue, memoryMinutes)
    printMemory(print, memory)

    const results: VenueBenchRound[] = []
    for (let i = 0; i < rounds; i++) {
      const bare = await bareRound(venue, n)
      const conn = await connectorRound(venue, n)
      const row: VenueBenchRound = {
        bareFramesPerSec: n / (bare.ms / 1000),
        connectorFramesPerSec: n / (conn.ms / 1000),
        ratio: bare.ms / conn.ms,
        ticksPerSec: conn.liveTicks / (conn.ms / 1000),
      }
      results.push(row)
      print(
        `  round ${i + 1}/${rounds}: bare client ${fmt(row.bareFramesPerSec)} frames/s  vs  connector ${fmt(row.connectorFramesPerSec)} frames/s (${fmt(row.ticksPerSec)} ticks/s durable; ${fmt(conn.liveTicks)} ticks${conn.late ? `; late: ${conn.late}` : ''}) → ratio ${row.ratio.toFixed(2)}`,
      )
    }
    const med: VenueBenchRound = {
      bareFramesPerSec: median(results.map((r) => r.bareFramesPerSec)),
      connectorFramesPerSec: median(results.map((r) => r.connectorFramesPerSec)),
      ratio: median(results.map((r) => r.ratio)),
      ticksPerSec: median(results.map((r) => r.ticksPerSec)),
    }
    print(`goal: connector ≥ 0.5 × bare websocket client → ratio ${med.ratio.toFixed(2)} (median of ${rounds} rounds: bare ${fmt(med.bareFramesPerSec)} frames/s, connector ${fmt(med.connectorFramesPerSec)} frames/s, ${fmt(med.ticksPerSec)} ticks/s durable)`)
    return { frames: n, venueHours: hours, rounds: results, median: med, memory }
  } finally {
    await venue.close()
  }
}

/**
 * The connector over the first `minutes` of venue time replayed at MEMORY_SPEED, reading process.memoryUsage() after a
 * full collection some 60 times. Slopes are fitted to the second half (the first holds the start-up: the backfill's
 * garbage, the JIT, the buffers growing to their working size).
 */
async function memoryRun(venue: ReplayVenue, minutes: number): Promise<VenueMemory> {
  const index = venue.index
  const end = index.times.findIndex((t) => t > T0 + minutes * MINUTE_MS)
  const m = end < 0 ? index.times.length : end
  const gc = exposedGc()
  const every = Math.max(1, Math.floor(m / 60))
  const samples: VenueMemorySample[] = []
  let next = every
  const run = await connectorRound(venue, m, {
    speed: MEMORY_SPEED,
    // The log keeps its newest records in memory up to a bound (EmbeddedLog recentBytes, 16 MiB a partition): 30 minutes
    // of ticks would fill it only near the end, which reads as growth. A 256 KiB bound is full within minutes.
    logCacheBytes: 2 ** 18,
    onFrames: (frames, backlog) => {
      if (frames < next && frames !== m) return
      next = frames + every
      gc()
      const u = process.memoryUsage()
      samples.push({
        frames,
        venueMinutes: (index.times[frames - 1]! - T0) / MINUTE_MS,
        heapUsedMb: u.heapUsed / 2 ** 20,
        externalMb: u.external / 2 ** 20,
        rssMb: u.rss / 2 ** 20,
        held: backlog.held,
        notDurable: backlog.notDurable,
      })
    },
  })
  const secondHalf = samples.filter((x) => x.venueMinutes >= minutes / 2)
  const per10 = (y: (x: VenueMemorySample) => number) => slope(secondHalf.map((x) => x.venueMinutes), secondHalf.map(y)) * 10
  return {
    minutes,
    frames: m,
    speed: MEMORY_SPEED,
    ms: run.ms,
    samples,
    heapSlopeMbPer10Min: per10((x) => x.heapUsedMb),
    externalSlopeMbPer10Min: per10((x) => x.externalMb),
    rssSlopeMbPer10Min: per10((x) => x.rssMb),
    notDurableSlopePer10Min: per10((x) => x.notDurable),
  }
}

/** gc() without --expose-gc on the command line (bench/run.sh does not pass it): the flag set at run time. */
function exposedGc(): () => void {
  const global = (globalThis as { gc?: () => void }).gc
  if (global) return global
  setFlagsFromString('--expose-gc')
  return runInNewContext('gc') as () => void
}

function printMemory(print: (line: string) => void, r: VenueMemory): void {
  const show = (x: VenueMemorySample | undefined) => (x ? `${x.venueMinutes.toFixed(0)} min: heap ${x.heapUsedMb.toFixed(1)}, external ${x.externalMb.toFixed(1)}, rss ${x.rssMb.toFixed(0)} MiB, ${fmt(x.notDurable)} ticks not durable yet` : '-')
  const xs = r.samples
  print(
    `memory over ${r.minutes} min of venue time (${fmt(r.frames)} frames at LocalVenue's 1x rate, replayed at ${r.speed}x: ${(r.ms / 1000).toFixed(1)} s) through the connector: ${xs.length} reads, each after a full collection`,
  )
  print(`  first ${show(xs[0])} | middle ${show(xs[Math.floor(xs.length / 2)])} | last ${show(xs.at(-1))}`)
  print(
    `  second half, per 10 min of venue time: heapUsed ${signed(r.heapSlopeMbPer10Min)} MiB, external ${signed(r.externalSlopeMbPer10Min)}, rss ${signed(r.rssSlopeMbPer10Min)}; ticks not durable yet ${r.notDurableSlopePer10Min >= 0 ? '+' : ''}${fmt(r.notDurableSlopePer10Min)}`,
  )
}

const signed = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(2)}`

/** Least-squares slope of y over x (0 for fewer than two points). */
function slope(x: number[], y: number[]): number {
  if (x.length < 2) return 0
  const mx = x.reduce((a, b) => a + b, 0) / x.length
  const my = y.reduce((a, b) => a + b, 0) / y.length
  let num = 0
  let den = 0
  for (let i = 0; i < x.length; i++) {
    num += (x[i]! - mx) * (y[i]! - my)
    den += (x[i]! - mx) ** 2
  }
  return den === 0 ? 0 : num / den
}

/** The bare client: receive, JSON.parse, count, until the round's last frame. Wall ms from open to the last frame. */
async function bareRound(venue: ReplayVenue, n: number): Promise<{ ms: number }> {
  const { wsUrl } = await venue.round(n, SUBSCRIPTIONS.length)
  // The connector's socket carries the clock probe; the bare client pays for the same one.
  const detach = probeFrames(wsUrl, () => undefined)
  try {
    const ws = new WebSocket(wsUrl)
    try {
      const ms = await withTimeout(
        new Promise<number>((resolve, reject) => {
          let opened = 0
          let count = 0
          let data = 0
          ws.on('error', reject)
          ws.on('open', () => {
            opened = performance.now()
            for (const subscription of SUBSCRIPTIONS) ws.send(JSON.stringify({ method: 'subscribe', subscription }))
          })
          ws.on('message', (raw: RawData) => {
            const msg = JSON.parse(raw.toString()) as { channel?: string }
            count++
            if (msg.channel !== 'subscriptionResponse' && msg.channel !== 'pong') data++
            if (count === n + SUBSCRIPTIONS.length) {
              if (data !== n) reject(new Error(`bare client: ${data} data frames of ${n}`))
              else resolve(performance.now() - opened)
            }
          })
        }),
        'the bare client to read every frame',
      )
      await venue.sent()
      return { ms }
    } finally {
      ws.terminate()
    }
  } finally {
    detach()
  }
}

/** Where a run's ticks are that are not durable yet. */
interface Backlog {
  /** In the connector's reorder buffer (the reorder window's worth, or more while the sink is behind). */
  held: number
  /** Arrived in frames and not durable yet: held, or in a unit being written. */
  notDurable: number
}

interface ConnectorRun {
  ms: number
  liveTicks: number
  stats: HyperliquidConnector['stats']
  /** Late ticks by provider and kind ('' when none). */
  late: string
}

/**
 * The connector over the first `n` frames, into a VenueLogSink on a fresh EmbeddedLog: wall ms from the stream going
 * live (the backfill is done by then) until the unit holding the last frame's ticks is durable. Checks that every
 * tick the frames hold, and every bar and settlement of the replayed hours, is in the log once, and no frame's tick was
 * late, refused or repeated. `onFrames` sees the count of frames arrived, per socket read.
 */
async function connectorRound(
  venue: ReplayVenue,
  n: number,
  { speed, onFrames, logCacheBytes }: { speed?: number; onFrames?: (frames: number, backlog: Backlog) => void; logCacheBytes?: number } = {},
): Promise<ConnectorRun> {
  const index = venue.index
  // Timings for the pace of the replay: as fast as it goes is about SPEED.
  const timings = compressedTimings(speed ?? SPEED)
  const lastTime = index.times[n - 1]!
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-venue-'))
  try {
    const log = await EmbeddedLog.open(join(dir, 'log'), logCacheBytes === undefined ? {} : { recentBytes: logCacheBytes })
    const { sink, resume } = await VenueLogSink.open({ log, ticksTopic: TICKS_TOPIC, source: HL_VENUE_SOURCE })
    try {
      const { baseUrl, wsUrl } = await venue.round(n, SUBSCRIPTIONS.length, speed)
      let durableAt = NaN
      let durable: () => void = () => undefined
      const durablePromise = new Promise<void>((resolve) => (durable = resolve))
      const counting = countingSink(sink, T0, lastTime, (at) => {
        durableAt = at
        durable()
      })
      const late = new Map<string, number>()
      const connector = HyperliquidConnector.create({
        coins: COINS,
        barInterval: BAR_INTERVAL,
        historyMs: HISTORY_MS,
        client: new HyperliquidInfoClient({ baseUrl, timeoutMs: 5000, budget: new RestWeightBudget(compressedRestBudget()), clock: venue.clock }),
        wsUrl,
        clock: venue.clock,
        sink: counting,
        resume,
        ...timings,
        late: (tick) => {
          const key = `${tick.provenance.provider === 'hyperliquid-ws' ? 'ws' : 'rest'} ${tick.kind}`
          late.set(key, (late.get(key) ?? 0) + 1)
        },
      })
      // Ticks the frames so far hold (prefix sums), to tell how many have arrived but are not durable yet.
      const frameTicks = new Float64Array(n + 1)
      for (let i = 0; i < n; i++) frameTicks[i + 1] = frameTicks[i]! + ticksOfFrame(index, i)
      let arrived = 0
      const detach = probeFrames(wsUrl, (frames) => {
        const data = Math.min(n, frames - SUBSCRIPTIONS.length)
        if (data <= arrived) return
        arrived = data
        venue.setTime(index.times[data - 1]! + 1)
        onFrames?.(data, { held: connector.stats.held, notDurable: frameTicks[data]! - counting.frameTicks })
        // Once the chunk holding the last frame has been handled, time moves one reorder window on: everything is due.
        if (data === n) setImmediate(() => venue.setTime(lastTime + timings.reorderWindowMs + 2))
      })
      const ac = new AbortController()
      let liveAt = NaN
      const running = connector.run(ac.signal, () => (liveAt = performance.now()))
      try {
        await withTimeout(Promise.race([durablePromise, running.then(() => Promise.reject(new Error('the connector stopped')))]), 'the last frame to be durable', () =>
          JSON.stringify({ arrived, of: n, written: connector.written, status: connector.status() }),
          // A paced replay takes its span of venue time divided by the speed, on top.
          ROUND_TIMEOUT_MS + (speed === undefined ? 0 : (lastTime - index.times[0]!) / speed),
        )
      } finally {
        ac.abort()
        await running
        detach()
      }
      await venue.sent()
      const stats = connector.stats
      const problems = counting.check(expectedTicks(index, n, T0, lastTime))
      const inLog = (await log.endOffsets(TICKS_TOPIC)).reduce((a, b) => a + b, 0)
      if (inLog !== stats.written || stats.written !== counting.total) problems.push(`log holds ${inLog} ticks, connector wrote ${stats.written}, sink saw ${counting.total}`)
      // A REST poll's snapshot that comes late is dropped by design (the stream carries the same series); a frame's never.
      const lateFrames = [...late].filter(([key]) => key.startsWith('ws '))
      if (lateFrames.length > 0 || stats.duplicates > 0 || stats.rejected > 0) problems.push(`late ${JSON.stringify(Object.fromEntries(late))}, duplicates ${stats.duplicates}, rejected ${stats.rejected} (${JSON.stringify(connector.guard.counts())})`)
      const gaps = connector.status().gaps
      if (gaps.unrepairable > 0 || gaps.missing > 0) problems.push(`gaps ${JSON.stringify(gaps)}`)
      if (problems.length > 0) throw new Error(`connector round over ${n} frames: ${problems.join('; ')}`)
      return { ms: durableAt - liveAt, liveTicks: counting.live, stats, late: [...late].map(([key, k]) => `${k} ${key}`).join(', ') }
    } finally {
      await sink.close()
      await log.close()
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** Ticks the connector makes of frame `i` (bars come from candle frames only when an hour closes: not counted here). */
function ticksOfFrame(index: FrameIndex, i: number): number {
  const channel = FRAME_CHANNELS[index.channels[i]!]
  return channel === 'trades' ? index.trades[i]! : channel === 'l2Book' ? 1 : channel === 'activeAssetCtx' ? CTX_TICKS.length : 0
}

/** What the first `n` frames hold, by tick kind, plus the bars and settlements of every hour closed in (t0, last]. */
function expectedTicks(index: FrameIndex, n: number, t0: number, last: number): Map<string, number> {
  const want = new Map<string, number>()
  const add = (key: string, k: number) => want.set(key, (want.get(key) ?? 0) + k)
  for (let i = 0; i < n; i++) {
    const channel = FRAME_CHANNELS[index.channels[i]!]
    if (channel === 'trades') add('ws trade', index.trades[i]!)
    else if (channel === 'l2Book') add('ws book_top', 1)
    else if (channel === 'activeAssetCtx') for (const kind of CTX_TICKS) add(`ws ${kind}`, 1)
  }
  const hours = Math.floor(last / HOUR_MS) - Math.floor(t0 / HOUR_MS)
  add('bar', hours * COINS.length)
  add('funding', hours * COINS.length)
  return want
}

/**
 * The sink the connector writes to: the VenueLogSink, counting what each durable unit held (live ticks, after t0, by
 * provider and kind; bars and settlements by kind alone, since the stream or REST may bring a bar) and reporting the
 * instant the unit holding the last frame's time is durable.
 */
function countingSink(inner: VenueSink, t0: number, last: number, onDurable: (at: number) => void) {
  const counts = new Map<string, number>()
  let done = false
  const sink = {
    total: 0,
    live: 0,
    /** Durable ticks that came in frames (not bars, settlements or REST polls). */
    frameTicks: 0,
    async write(unit: VenueUnit): Promise<void> {
      await inner.write(unit)
      const at = performance.now()
      let newest = -Infinity
      for (const tick of unit.ticks) {
        const time = tickTime(tick)
        if (time > newest) newest = time
        sink.total++
        if (time <= t0) continue
        sink.live++
        // Frame ticks are checked against the frames, bars and settlements against the hours; REST polls only counted.
        const key = tick.kind === 'bar' || tick.kind === 'funding' ? tick.kind : tick.provenance.provider === 'hyperliquid-ws' ? `ws ${tick.kind}` : `rest ${tick.kind}`
        counts.set(key, (counts.get(key) ?? 0) + 1)
        if (key.startsWith('ws ')) sink.frameTicks++
      }
      if (!done && newest >= last) {
        done = true
        onDurable(at)
      }
    },
    /** Differences from `want` (REST-polled kinds are left out: how many polls fall in a round is wall timing). */
    check(want: Map<string, number>): string[] {
      const problems: string[] = []
      for (const [key, n] of want) if ((counts.get(key) ?? 0) !== n) problems.push(`${key}: ${counts.get(key) ?? 0} written, ${n} expected`)
      for (const [key, n] of counts) if (!want.has(key) && !key.startsWith('rest ')) problems.push(`${key}: ${n} written, none expected`)
      return problems
    },
  }
  return sink satisfies VenueSink
}

/**
 * Watches the websocket connections this process opens to `wsUrl`'s port and calls `onChunk(frames)` after each
 * socket read with the count of whole websocket frames received so far (server frames are unmasked: 2 header bytes,
 * 2 or 8 more for a longer payload, then the payload). It listens to the socket before the websocket client does, so
 * the clock it drives has reached a frame by the time the frame is handled. Returns the detach function.
 */
function probeFrames(wsUrl: string, onChunk: (frames: number) => void): () => void {
  const port = Number(new URL(wsUrl).port)
  const onSocket = (message: unknown) => {
    const socket = (message as { socket: Socket }).socket
    socket.once('connect', () => {
      if (socket.remotePort === port) socket.on('data', frameCounter(onChunk))
    })
  }
  dc.subscribe('net.client.socket', onSocket)
  return () => dc.unsubscribe('net.client.socket', onSocket)
}

function frameCounter(onChunk: (frames: number) => void): (chunk: Buffer) => void {
  let inHttp = true
  let matched = 0
  let frames = 0
  let payloadLeft = 0
  const header = Buffer.alloc(10)
  let have = 0
  let need = 2
  return (chunk) => {
    let i = 0
    if (inHttp) {
      for (; i < chunk.length && matched < 4; i++) {
        const b = chunk[i]!
        matched = b === (matched % 2 === 0 ? 13 : 10) ? matched + 1 : b === 13 ? 1 : 0
      }
      if (matched === 4) inHttp = false
      // Bytes after the 101 response in this read are handed back to the socket by ws (unshift) and read again.
      return
    }
    while (i < chunk.length) {
      if (payloadLeft > 0) {
        const take = Math.min(payloadLeft, chunk.length - i)
        payloadLeft -= take
        i += take
        if (payloadLeft === 0) frames++
        continue
      }
      header[have++] = chunk[i++]!
      if (have === 2) {
        const len7 = header[1]! & 0x7f
        need = len7 === 126 ? 4 : len7 === 127 ? 10 : 2
      }
      if (have < need) continue
      const len7 = header[1]! & 0x7f
      const len = len7 === 126 ? header.readUInt16BE(2) : len7 === 127 ? Number(header.readBigUInt64BE(2)) : len7
      have = 0
      need = 2
      if (len === 0) frames++
      else payloadLeft = len
    }
    onChunk(frames)
  }
}

async function withTimeout<T>(p: Promise<T>, what: string, detail?: () => string, timeoutMs = ROUND_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail ? `: ${detail()}` : ''}`)), timeoutMs)
  })
  try {
    return await Promise.race([p, timeout])
  } finally {
    clearTimeout(timer)
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await benchVenue({ hours: Number(process.argv[2] ?? 6), rounds: Number(process.argv[3] ?? 3), print: (line) => process.stdout.write(line + '\n') })
}
