/**
 * `svc tape record --coins BTC,ETH,SOL [--out TAPE] ...`: records live Hyperliquid data (REST polls + websocket)
 * into a tape in event-time order. Runs for --duration seconds, or until SIGINT/SIGTERM; either way everything
 * received is written before exit and a file tape appears atomically (renamed from .partial when complete).
 * Ticks that arrive too late for their place in the order go to a side file (--late-out), never out of order
 * into the tape and never dropped.
 */
import { parseArgs } from 'node:util'
import { createWriteStream, type WriteStream } from 'node:fs'
import { once } from 'node:events'
import { UsageError, type Command } from '../Command.ts'
import { TapeWriter } from '../../ingest/TapeWriter.ts'
import { tickLine, type Tick } from '../../ingest/Tick.ts'
import { HyperliquidRecorder } from '../../ingest/hyperliquid/HyperliquidRecorder.ts'
import { HL_DEFAULT_BASE_URL } from '../../ingest/hyperliquid/HyperliquidInfoClient.ts'
import { HL_DEFAULT_WS_URL } from '../../ingest/hyperliquid/HyperliquidStream.ts'
import { childLogger } from '../../common/logger.ts'

const log = childLogger('tape-record')

const usage = `Usage: svc tape record --coins BTC,ETH,SOL [--out TAPE] [--base-url URL] [--ws-url URL]
                        [--duration S] [--poll-s N] [--universe-s N] [--reorder-ms N] [--late-out FILE]

Records live Hyperliquid perp data into a tape: REST polls of metaAndAssetCtxs, predictedFundings and l2Book
every --poll-s seconds, plus the websocket trades, l2Book and activeAssetCtx streams.

Options:
  --coins LIST       venue coins, comma-separated (required)
  -o, --out TAPE     write the tape to TAPE instead of stdout ('.gz' → gzip); written atomically
  --base-url URL     REST base, default ${HL_DEFAULT_BASE_URL}
  --ws-url URL       websocket URL, default ${HL_DEFAULT_WS_URL}
  --duration S       stop after S seconds (default: until SIGINT/SIGTERM)
  --poll-s N         REST poll period in seconds, default 5
  --universe-s N     universe snapshot period in seconds, default 60
  --reorder-ms N     reorder window in milliseconds, default 2000
  --late-out FILE    where ticks too late to place in order go (NDJSON); default TAPE.late.ndjson,
                     or the log when writing to stdout
`

/** A numeric flag that must be at least `min`. */
function numberFlag(name: string, raw: string | undefined, fallback: number, min: number): number {
  if (raw === undefined) return fallback
  const n = Number(raw)
  if (raw.trim() === '' || !Number.isFinite(n) || n < min) throw new UsageError(`--${name} must be a number >= ${min}, got '${raw}'`)
  return n
}

/** Lazily opened NDJSON side file for late ticks. */
class LateSink {
  readonly path: string | null
  #file: WriteStream | null = null
  constructor(path: string | null) {
    this.path = path
  }
  async write(tick: Tick): Promise<void> {
    if (!this.path) {
      log.warn({ tick }, 'late tick (no --late-out file when writing to stdout)')
      return
    }
    this.#file ??= createWriteStream(this.path, { flags: 'a' })
    if (!this.#file.write(tickLine(tick) + '\n')) await once(this.#file, 'drain')
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
  summary: 'Record live Hyperliquid data (REST polls + websocket) into a tape',
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
    const durationS = values.duration === undefined ? null : numberFlag('duration', values.duration, 0, 0.001)
    const pollMs = Math.round(numberFlag('poll-s', values['poll-s'], 5, 0.1) * 1000)
    const universeMs = Math.round(numberFlag('universe-s', values['universe-s'], 60, 0.1) * 1000)
    const reorderMs = Math.round(numberFlag('reorder-ms', values['reorder-ms'], 2000, 0))

    const toStdout = values.out === undefined || values.out === '-'
    const late = new LateSink(values['late-out'] ?? (toStdout ? null : `${values.out}.late.ndjson`))
    const writer = TapeWriter.open(values.out)

    const recorder = await HyperliquidRecorder.start({
      coins,
      ...(values['base-url'] ? { baseUrl: values['base-url'] } : {}),
      ...(values['ws-url'] ? { wsUrl: values['ws-url'] } : {}),
      pollMs,
      universeEveryMs: universeMs,
      reorderWindowMs: reorderMs,
      write: (tick) => writer.write(tick),
      late: (tick) => late.write(tick),
    })
    log.info({ coins, out: values.out ?? '-', durationS, pollMs }, 'recording')

    let onSignal: () => void = () => {}
    let timer: NodeJS.Timeout | null = null
    const reason = await Promise.race([
      new Promise<string>((resolve) => {
        onSignal = () => resolve('signal')
        process.once('SIGINT', onSignal)
        process.once('SIGTERM', onSignal)
      }),
      new Promise<string>((resolve) => {
        if (durationS !== null) timer = setTimeout(() => resolve('duration'), durationS * 1000)
      }),
      recorder.failed.then(() => 'failure'),
    ])
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    if (timer) clearTimeout(timer)

    let failed = false
    try {
      await recorder.stop()
    } catch (err) {
      failed = true
      process.stderr.write(`svc tape record: ${(err as Error).message}\n`)
    }
    // What was written is in order and valid, so the tape is kept even after a sink failure.
    await writer.close()
    await late.close()
    const stream = recorder.streamStats
    log.info(
      { reason, written: recorder.stats.written, late: recorder.stats.late, polls: recorder.stats.polls, pollErrors: recorder.stats.pollErrors, stream },
      'recording stopped',
    )
    if (recorder.stats.late > 0 && late.path) process.stderr.write(`svc tape record: ${recorder.stats.late} late tick(s) written to ${late.path}\n`)
    return failed ? 1 : 0
  },
}
