/**
 * `svc tape generate`: writes a seeded synthetic market tape (ingest/SyntheticMarket.ts, model in
 * docs/generator.md). Same seed and arguments → byte-identical output.
 */
import { parseArgs } from 'node:util'
import { OptionsError } from '../../common/validation.ts'
import { UsageError, type Command } from '../Command.ts'
import { startProgress } from '../../common/progress.ts'
import { progressSettings } from '../environment.ts'
import { DEFAULT_START, SyntheticMarket } from '../../ingest/SyntheticMarket.ts'
import { TapeWriter } from '../../ingest/TapeWriter.ts'

const usage = `Usage: svc tape generate --seed N --hours H --assets BTC,ETH,SOL [--out TAPE] [--start ISO]

Writes a synthetic BTC/ETH/SOL perpetuals tape on a 1-minute grid (bars, mid, mark, index, hourly funding,
predicted funding, open interest, book top, liquidation bursts), provenance 'simulated'.

Options:
  --seed N        non-negative integer; the same seed and options give byte-identical output
  --hours H       length of the run in hours (a whole number of minutes, e.g. 0.5 or 168)
  --assets LIST   comma-separated subset of BTC,ETH,SOL (default BTC,ETH,SOL); order sets record order
  --out TAPE      output file; '.gz' compresses; default '-' (stdout)
  --start ISO     first instant, on a whole minute (default ${DEFAULT_START})
`

function parseNumber(flag: string, text: string | undefined): number {
  if (text === undefined) throw new UsageError(`--${flag} is required`)
  if (!/^\d+(\.\d+)?$/.test(text)) throw new UsageError(`--${flag} must be a non-negative number, got '${text}'`)
  return Number(text)
}

export const command: Command = {
  name: 'tape generate',
  summary: 'Generate a seeded synthetic market tape (BTC/ETH/SOL perps, 1-minute grid)',
  usage,
  async run(argv) {
    const { values } = parseArgs({
      args: argv,
      options: {
        seed: { type: 'string' },
        hours: { type: 'string' },
        assets: { type: 'string', default: 'BTC,ETH,SOL' },
        out: { type: 'string', default: '-' },
        start: { type: 'string' },
      },
      strict: true,
      allowPositionals: false,
    })
    const seed = parseNumber('seed', values.seed)
    const hours = parseNumber('hours', values.hours)
    const assets = values.assets.split(',').map((a) => a.trim().toUpperCase()).filter((a) => a.length > 0)
    let market: SyntheticMarket
    try {
      market = new SyntheticMarket({ seed, hours, assets, ...(values.start ? { start: values.start } : {}) })
    } catch (err) {
      if (err instanceof OptionsError) throw new UsageError(err.message)
      throw err
    }

    const writer = TapeWriter.open(values.out)
    const progress = startProgress('tape generate', market.minutes, 'minutes', progressSettings())
    // A closed pipe (`| head`) ends the run quietly: the reader has all it asked for.
    const onStdoutError = (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err
    }
    process.stdout.on('error', onStdoutError)
    try {
      await market.writeTo(writer, (done) => progress.update(done))
      await writer.close()
    } catch (err) {
      await writer.abort()
      if ((err as NodeJS.ErrnoException).code === 'EPIPE') return 0
      throw err
    } finally {
      progress.stop()
      process.stdout.off('error', onStdoutError)
    }
    if (values.out !== '-') process.stderr.write(`tape generate: ${writer.count} records → ${values.out}\n`)
    return 0
  },
}
