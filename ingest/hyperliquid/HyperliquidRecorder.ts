/**
 * Live recording: REST polls (metaAndAssetCtxs, predictedFundings, l2Book per coin) every `pollMs` plus the
 * websocket stream (trades, l2Book, activeAssetCtx), merged through a TickReorderBuffer into event-time order.
 *
 * Released ticks go to `write` one at a time, in order; ticks that arrive after later ones were already released
 * go to `late` (see TickReorderBuffer). A failed poll is logged with its error code and the next poll goes ahead:
 * gaps in a recording are visible as gaps, never filled in.
 */
import { childLogger } from '../../common/logger.ts'
import { TickReorderBuffer } from '../TickReorderBuffer.ts'
import type { Tick } from '../Tick.ts'
import { HyperliquidError } from './HyperliquidError.ts'
import { HyperliquidInfoClient } from './HyperliquidInfoClient.ts'
import { HyperliquidStream, type HyperliquidStreamOptions } from './HyperliquidStream.ts'
import { l2BookToTick, metaAndAssetCtxsToTicks, predictedFundingsToTicks, type HlTickContext } from './toTicks.ts'
import { validateOptions } from '../../common/validation.ts'

export interface HyperliquidRecorderOptions {
  coins: string[]
  baseUrl?: string
  wsUrl?: string
  /** REST poll period. Default 5000 (≈ 46 weight per poll for 3 coins, well under 1200/min). */
  pollMs?: number
  /** Universe snapshot period (a universe tick lists every market). Default 60 000; the first poll always has one. */
  universeEveryMs?: number
  /** Reorder window. Default 2000. */
  reorderWindowMs?: number
  /** REST timeout per request. Default 10 000. */
  timeoutMs?: number
  /** Passed to HyperliquidStream (keepalive and backoff). */
  stream?: Pick<HyperliquidStreamOptions, 'pingAfterMs' | 'pongTimeoutMs' | 'backoffBaseMs' | 'backoffCapMs' | 'connectTimeoutMs'>
  /** Receives ticks in event-time order, one call at a time. */
  write: (tick: Tick) => Promise<void>
  /** Receives ticks too late to place in order. */
  late: (tick: Tick) => Promise<void>
}

const OPTIONS_SCHEMA = {
  type: 'object',
  required: ['coins', 'write', 'late'],
  additionalProperties: false,
  properties: {
    coins: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', pattern: '^[A-Za-z0-9]{1,20}$' } },
    baseUrl: { type: 'string', minLength: 1 },
    wsUrl: { type: 'string', minLength: 1 },
    pollMs: { type: 'integer', minimum: 100 },
    universeEveryMs: { type: 'integer', minimum: 0 },
    reorderWindowMs: { type: 'integer', minimum: 0 },
    timeoutMs: { type: 'integer', minimum: 1 },
    stream: { type: 'object' },
    write: {},
    late: {},
  },
} as const

export interface HyperliquidRecorderStats {
  polls: number
  pollErrors: number
  written: number
  late: number
}

export class HyperliquidRecorder {
  readonly stats: HyperliquidRecorderStats = { polls: 0, pollErrors: 0, written: 0, late: 0 }
  readonly #o: HyperliquidRecorderOptions
  readonly #client: HyperliquidInfoClient
  readonly #buffer: TickReorderBuffer
  readonly #log = childLogger('hyperliquid-recorder')
  #stream: HyperliquidStream | null = null
  #stopped = false
  #pollLoop: Promise<void> = Promise.resolve()
  #wakePoll: (() => void) | null = null
  #releaseTimer: NodeJS.Timeout | null = null
  #writing: Promise<void> = Promise.resolve()
  #failure: unknown = null
  #lastUniverseAt = -Infinity
  #signalFailure: (err: unknown) => void = () => {}
  /** Resolves with the error if the sink fails (the recording cannot continue); the caller then calls stop(). */
  readonly failed: Promise<unknown> = new Promise((resolve) => {
    this.#signalFailure = resolve
  })

  private constructor(o: HyperliquidRecorderOptions) {
    this.#o = o
    this.#client = new HyperliquidInfoClient({ ...(o.baseUrl ? { baseUrl: o.baseUrl } : {}), timeoutMs: o.timeoutMs ?? 10_000 })
    this.#buffer = new TickReorderBuffer(o.reorderWindowMs ?? 2000)
  }

  static async start(options: HyperliquidRecorderOptions): Promise<HyperliquidRecorder> {
    const o = validateOptions<HyperliquidRecorderOptions>('HyperliquidRecorder options', OPTIONS_SCHEMA, options)
    const rec = new HyperliquidRecorder(o)
    rec.#stream = await HyperliquidStream.open({
      ...(o.stream ?? {}),
      ...(o.wsUrl ? { url: o.wsUrl } : {}),
      coins: o.coins,
      onTick: (tick) => rec.#accept(tick),
    })
    rec.#pollLoop = rec.#runPolls()
    rec.#releaseTimer = setInterval(() => rec.#release(false), Math.max(50, Math.min(250, o.reorderWindowMs ?? 2000)))
    return rec
  }

  get streamStats() {
    return this.#stream?.stats ?? null
  }

  /** Stops polling and streaming, then writes everything still held, in order. Rethrows a sink failure. */
  async stop(): Promise<void> {
    if (!this.#stopped) {
      this.#stopped = true
      this.#wakePoll?.()
      if (this.#releaseTimer) clearInterval(this.#releaseTimer)
      this.#releaseTimer = null
      await this.#stream?.stop()
      await this.#pollLoop
      this.#release(true)
    }
    await this.#writing
    if (this.#failure) throw this.#failure
  }

  #accept(tick: Tick): void {
    if (this.#buffer.push(tick)) return
    this.stats.late++
    this.#log.warn({ kind: tick.kind, asset: tick.asset, timestamp: tick.provenance.timestamp }, 'tick arrived after later ticks were written; sent to the late sink')
    this.#enqueue(() => this.#o.late(tick))
  }

  #release(all: boolean): void {
    const ticks = all ? this.#buffer.releaseAll() : this.#buffer.release(Date.now())
    if (ticks.length === 0) return
    this.#enqueue(async () => {
      for (const tick of ticks) {
        await this.#o.write(tick)
        this.stats.written++
      }
    })
  }

  #enqueue(job: () => Promise<void>): void {
    this.#writing = this.#writing.then(async () => {
      if (this.#failure) return
      try {
        await job()
      } catch (err) {
        this.#failure = err
        this.#signalFailure(err)
        this.#log.error({ err }, 'tape sink failed; recording stops')
        this.#stopped = true
        this.#wakePoll?.()
      }
    })
  }

  async #runPolls(): Promise<void> {
    const pollMs = this.#o.pollMs ?? 5000
    while (!this.#stopped) {
      const started = Date.now()
      await this.#pollOnce()
      const wait = Math.max(0, pollMs - (Date.now() - started))
      if (this.#stopped) break
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.#wakePoll = null
          resolve()
        }, wait)
        this.#wakePoll = () => {
          clearTimeout(timer)
          this.#wakePoll = null
          resolve()
        }
      })
    }
  }

  async #pollOnce(): Promise<void> {
    this.stats.polls++
    const coins = this.#o.coins
    const withUniverse = Date.now() - this.#lastUniverseAt >= (this.#o.universeEveryMs ?? 60_000)
    const jobs: Array<Promise<void>> = [
      this.#client.metaAndAssetCtxs().then((r) => {
        if (withUniverse) this.#lastUniverseAt = r.receivedAt
        this.#acceptAll(metaAndAssetCtxsToTicks(r.data, this.#ctx(r.receivedAt), { coins, universe: withUniverse }))
      }),
      this.#client.predictedFundings().then((r) => this.#acceptAll(predictedFundingsToTicks(r.data, this.#ctx(r.receivedAt), coins))),
      ...coins.map((coin) =>
        this.#client.l2Book(coin).then((r) => {
          const tick = l2BookToTick(r.data, this.#ctx(r.receivedAt))
          if (tick) this.#accept(tick)
        }),
      ),
    ]
    for (const result of await Promise.allSettled(jobs)) {
      if (result.status === 'fulfilled') continue
      this.stats.pollErrors++
      const err = result.reason
      if (err instanceof HyperliquidError) {
        this.#log.warn({ code: err.code, retryable: err.retryable, request: err.request, err: err.message }, 'poll failed')
      } else {
        this.#log.error({ err }, 'poll failed')
      }
    }
  }

  #acceptAll(ticks: Tick[]): void {
    for (const tick of ticks) this.#accept(tick)
  }

  #ctx(receivedAt: number): HlTickContext {
    return { receivedAt, provider: 'hyperliquid-info' }
  }
}
