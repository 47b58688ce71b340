/**
 * `svc tape record --coins BTC,ETH,SOL [--out TAPE] ...`: records live Hyperliquid into a tape through the same
 * connector `svc start` feeds the log with (pipeline/venue/HyperliquidConnector.ts): websocket trades, l2Book,
 * activeAssetCtx and candles, REST polls, bars the stream did not finish and funding settlements over REST, all in
 * event-time order. Runs for --duration seconds, or until SIGINT/SIGTERM; either way everything that can be placed
 * is written before exit and a file tape appears atomically (renamed from .partial when complete). Ticks too late for
 * their place go to a side file (--late-out), never out of order into the tape; gap episodes go to TAPE.gaps.ndjson.
 */
import { parseArgs } from 'node:util'
import { createWriteStream, type WriteStream } from 'node:fs'
import { once } from 'node:events'
import { UsageError, numberAtLeast, type Command } from '../Command.ts'
import { TapeWriter } from '../../ingest/TapeWriter.ts'
import { tickLine, type Tick } from '../../ingest/Tick.ts'
import { HL_DEFAULT_BASE_URL, HyperliquidInfoClient } from '../../ingest/hyperliquid/HyperliquidInfoClient.ts'
import { HL_DEFAULT_WS_URL } from '../../ingest/hyperliquid/HyperliquidStream.ts'
import { RestWeightBudget } from '../../ingest/hyperliquid/RestWeightBudget.ts'
import { HyperliquidConnector } from '../../pipeline/venue/HyperliquidConnector.ts'
import { VenueTapeSink } from '../../pipeline/venue/VenueTapeSink.ts'
import { systemClock } from '../../common/Clock.ts'
import { childLogger } from '../../common/logger.ts'
import { startProgress } from '../../common/progress.ts'
import { progressFromEnv } from '../../app/config.ts'

const log = childLogger('tape-record')

const usage = `Usage: svc tape record --coins BTC,ETH,SOL [--out TAPE] [--base-url URL] [--ws-url URL]
                        [--duration S] [--backfill-days D] [--interval I] [--poll-s N] [--universe-s N]
                        [--reorder-ms N] [--late-out FILE]

Records live Hyperliquid perp data into a tape with the service's venue connector: the websocket trades, l2Book,
activeAssetCtx and candle channels, REST polls of metaAndAssetCtxs, predictedFundings and l2Book every --poll-s
seconds, closed bars (candleSnapshot when the stream did not finish one) and hourly funding settlements
(fundingHistory), in event-time order.

Options:
  --coins LIST       venue coins, comma-separated (required)
  -o, --out TAPE     write the tape to TAPE instead of stdout ('.gz' → gzip); written atomically
  --base-url URL     REST base, default ${HL_DEFAULT_BASE_URL}
  --ws-url URL       websocket URL, default ${HL_DEFAULT_WS_URL}
  --duration S       stop after S seconds (default: until SIGINT/SIGTERM)
  --backfill-days D  first fetch D days of bars and funding over REST (default 0: from now on)
  --interval I       bar interval of the candle channel and candleSnapshot, default 1h
  --poll-s N         REST poll period in seconds, default 5
  --universe-s N     universe snapshot period in seconds, default 60
  --reorder-ms N     reorder window in milliseconds, default 2000
  --late-out FILE    where ticks too late to place in order go (NDJSON); default TAPE.late.ndjson,
                     or the log when writing to stdout
Gap episodes (a dropped websocket, a bar the venue did not serve) go to TAPE.gaps.ndjson.
`


/** Lazily opened NDJSON side file for late ticks. */
class LateSink {
  readonly path: string | null
  count = 0
  #file: WriteStream | null = null
  constructor(path: string | null) {
    this.path = path
  }
  write(tick: Tick): void {
    this.count++
    if (!this.path) {
      log.warn({ tick }, 'late tick (no --late-out file when writing to stdout)')
      return
    }
    this.#file ??= createWriteStream(this.path, { flags: 'a' })
    this.#file.write(tickLine(tick) + '\n')
  }
  async close(): Promise<void> {
    if (!this.#file) return
    const closed = once(this.#file, 'close')
    this.#file.end()
    await closed
  }
}

export const command: Command = {
  name: 'tape record',
  summary: "Record live Hyperliquid into a tape through the service's venue connector (websocket, REST polls, bars, funding)",
  usage,
  async run(argv) {
    const { values } = parseArgs({
      args: argv,
      allowPositionals: false,
      options: {
        coins: { type: 'string' },
        out: { type: 'string', short: 'o' },
        'base-url': { type: 'string' },
        'ws-url': { type: 'string' },
        duration: { type: 'string' },
        'poll-s': { type: 'string' },
        'universe-s': { type: 'string' },
        'reorder-ms': { type: 'string' },
        'late-out': { type: 'string' },
        'backfill-days': { type: 'string' },
        interval: { type: 'string' },
      },
    })
    if (!values.coins) throw new UsageError('missing --coins')
    const coins = values.coins.split(',').map((c) => c.trim()).filter((c) => c.length > 0)
    const badCoin = coins.find((c) => !/^[A-Za-z0-9]{1,20}$/.test(c))
    if (coins.length === 0 || badCoin !== undefined) throw new UsageError(`--coins: '${badCoin ?? values.coins}' is not a venue coin name`)
    if (new Set(coins).size !== coins.length) throw new UsageError('--coins: duplicate coin')
    for (const [flag, url, scheme] of [
      ['base-url', values['base-url'], /^https?:\/\/\S+$/],
      ['ws-url', values['ws-url'], /^wss?:\/\/\S+$/],
    ] as const) {
      if (url !== undefined && !scheme.test(url)) throw new UsageError(`--${flag}: not a ${flag === 'ws-url' ? 'ws(s)' : 'http(s)'} URL: '${url}'`)
    }
    const durationS = values.duration === undefined ? null : numberAtLeast('duration', values.duration, 0, 0.001)
    const pollMs = Math.round(numberAtLeast('poll-s', values['poll-s'], 5, 0.1) * 1000)
    const universeMs = Math.round(numberAtLeast('universe-s', values['universe-s'], 60, 0.1) * 1000)
    const reorderMs = Math.round(numberAtLeast('reorder-ms', values['reorder-ms'], 2000, 0))
    const backfillDays = numberAtLeast('backfill-days', values['backfill-days'], 0, 0)
    const interval = values.interval ?? '1h'
    if (!/^\d+[mhd]$/.test(interval)) throw new UsageError(`--interval: '${interval}' is not a bar interval (1m, 5m, 1h, 4h, 1d, …)`)

    const toStdout = values.out === undefined || values.out === '-'
    const late = new LateSink(values['late-out'] ?? (toStdout ? null : `${values.out}.late.ndjson`))
    const writer = TapeWriter.open(values.out)
    const sink = new VenueTapeSink(writer, toStdout ? null : `${values.out}.gaps.ndjson`)
    const client = new HyperliquidInfoClient({ baseUrl: values['base-url'] ?? HL_DEFAULT_BASE_URL, timeoutMs: 10_000, budget: new RestWeightBudget() })
    let progress: ReturnType<typeof startProgress> | null = null
    const connector = HyperliquidConnector.create({
      coins,
      barInterval: interval,
      historyMs: backfillDays * 86_400_000,
      client,
      wsUrl: values['ws-url'] ?? HL_DEFAULT_WS_URL,
      clock: systemClock,
      sink,
      pollMs,
      universeEveryMs: universeMs,
      reorderWindowMs: reorderMs,
      late: (tick) => late.write(tick),
      onProgress: ({ done, total }) => {
        progress ??= startProgress('backfill', total, 'requests', progressFromEnv(process.env))
        progress.setTotal(total)
        progress.update(done)
      },
    })

    const stop = new AbortController()
    let onSignal: () => void = () => {}
    let timer: NodeJS.Timeout | null = null
    let reason = 'end'
    const stopWith = (why: string) => {
      if (stop.signal.aborted) return
      reason = why
      stop.abort()
    }
    onSignal = () => stopWith('signal')
    process.once('SIGINT', onSignal)
    process.once('SIGTERM', onSignal)
    const running = connector.run(stop.signal, () => {
      ;(progress as ReturnType<typeof startProgress> | null)?.stop()
      log.info({ coins, out: values.out ?? '-', durationS, pollMs }, 'recording')
      if (durationS !== null) timer = setTimeout(() => stopWith('duration'), durationS * 1000)
    })
    let failed = false
    try {
      await running
    } catch (err) {
      failed = true
      process.stderr.write(`svc tape record: ${(err as Error).message}\n`)
    } finally {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
      if (timer) clearTimeout(timer)
    }
    // What was written is in order and valid, so the tape is kept even after a failure.
    await writer.close()
    await sink.close()
    await late.close()
    const status = connector.status()
    log.info(
      { reason, written: connector.stats.written, late: late.count, duplicates: status.duplicates, rejected: status.rejected, gaps: status.gaps, rest: status.rest, websocket: status.websocket },
      'recording stopped',
    )
    if (late.count > 0 && late.path) process.stderr.write(`svc tape record: ${late.count} late tick(s) written to ${late.path}\n`)
    if (sink.gapsWritten > 0) process.stderr.write(`svc tape record: ${sink.gapsWritten} gap episode(s) written to ${sink.gapsPath}\n`)
    return failed ? 1 : 0
  },
}
