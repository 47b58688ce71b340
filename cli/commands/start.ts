/**
 * `svc start` (what `npm start` runs): the whole service in one process (app/ServiceApp.ts). It generates a seeded
 * synthetic tape on first start (or takes SVC_TAPE), warms up at full speed until the models are fitted and every sold
 * question has a resolved clock, replays the rest at an accelerated speed through the event log into Parquet and the
 * DuckDB catalog, and serves the API. SIGTERM/SIGINT stop the replay, drain in-flight requests, seal what the sink
 * buffers and commit.
 */
import { parseArgs } from 'node:util'
import type { Command } from '../Command.ts'
import { ServiceApp } from '../../app/ServiceApp.ts'
import { environment } from '../environment.ts'

const usage = `Usage: svc start [--port N] [--host H] [--data-dir DIR] [--tape TAPE] [--speed S]

Runs the service in one process: replays a tape through the event log into Parquet + DuckDB and serves the API.

Options (each overrides the environment variable in brackets; every variable is in README, Environment):
  --port N        listen port (PORT, default 8080; 0 picks a free one)
  --host H        listen address (HOST, default 127.0.0.1)
  --data-dir DIR  data folder (SVC_DATA_DIR, default ./data)
  --tape TAPE     tape to replay (SVC_TAPE); default: a seeded 45-day BTC/ETH/SOL tape generated on first start
  --speed S       replay speed after the warm-up, event time per wall time (SVC_REPLAY_SPEED, default 60: a minute
                  per second)
Also: SVC_LOG=kafka with KAFKA_BROKERS to run on Kafka; SVC_PAY_TO to accept x402 payments (unset: paid routes take
credits, x-svc-payer); SVC_FACILITATOR_URL for x402 settlement; SVC_OPS_TOKEN to enable operator routes (grants,
rate-lock issue, surge).
Engine: fits each question per asset on its first SVC_TRAIN_DAYS days (default 30) or up to SVC_TRAIN_UNTIL (ISO
instant), then decides at every clock's close and resolves clocks as the tape passes them.
Warm-up: the tape up to the training cut, and on until every sold question has resolved a clock, replays at full
speed (a restart: up to the next cadence hour after what the log holds), then at --speed; the Parquet sink starts
when the warm-up ends and catches up in the background.
Market: SVC_UNIVERSE=replay|hyperliquid (default replay), SVC_HL_BASE_URL, SVC_COINGECKO_URL, SVC_COINGECKO_KEY.
Wallets: SVC_WALLET_PROVIDER=hyperliquid|none (default none: wallet/risk routes 503, S09..S11 PROVIDER_DOWN).
`

export const command: Command = {
  name: 'start',
  summary: 'Run the whole service: replay a tape into Parquet + DuckDB and serve the API',
  usage,
  async run(argv) {
    const { values } = parseArgs({
      args: argv,
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        'data-dir': { type: 'string' },
        tape: { type: 'string' },
        speed: { type: 'string' },
      },
      strict: true,
    })
    const config = environment({
      PORT: values.port,
      HOST: values.host,
      SVC_DATA_DIR: values['data-dir'],
      SVC_TAPE: values.tape,
      SVC_REPLAY_SPEED: values.speed,
    })
    const say = (line: string) => void process.stdout.write(line + '\n')
    const app = await ServiceApp.start(config, say)
    const abort = new AbortController()
    let stopping: Promise<void> | null = null
    const stop = () => {
      stopping ??= (async () => {
        abort.abort()
        await app.server.close()
      })()
    }
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
    try {
      await app.run(abort.signal)
      await stopping
      return 0
    } finally {
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
      await app.close()
      say('svc: stopped')
    }
  },
}
