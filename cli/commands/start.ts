/**
 * `svc start` (what `npm start` runs): the whole service in one process (app/ServiceApp.ts). By default it runs the
 * seeded simulated venue in the present: its history is generated up to now and pushed through at full speed (the
 * models fit on its first SVC_TRAIN_DAYS), then ticks arrive live at 1x, so every instant served is wall time. With
 * SVC_VENUE=hyperliquid it ingests the live venue (REST backfill, then the websocket). With SVC_TAPE it replays that
 * dated tape instead (warm-up at full speed, then accelerated). Ticks go through the event log into Parquet and the
 * DuckDB catalog, and the API serves them. SIGTERM/SIGINT stop the feed, drain in-flight requests, seal what the sink
 * buffers and commit.
 */
import { parseArgs } from 'node:util'
import type { Command } from '../Command.ts'
import { ServiceApp } from '../../app/ServiceApp.ts'
import { environment } from '../environment.ts'

const usage = `Usage: svc start [--port N] [--host H] [--data-dir DIR] [--tape TAPE] [--speed S]

Runs the service in one process: feeds a venue through the event log into Parquet + DuckDB and serves the API.
Default: the simulated BTC/ETH/SOL venue in the present (SIMULATED data, said on every answer in x-svc-data-time).
SVC_VENUE=hyperliquid: the live venue (SVC_HL_BASE_URL, SVC_HL_WS_URL; a local stand-in: svc venue serve).

Options (each overrides the environment variable in brackets; every variable is in README, Environment):
  --port N        listen port (PORT, default 8080; 0 picks a free one)
  --host H        listen address (HOST, default 127.0.0.1)
  --data-dir DIR  data folder (SVC_DATA_DIR, default ./data)
  --tape TAPE     replay this dated tape instead of the live simulated venue (SVC_TAPE): the fast demo and
                  regression mode; answers then live in the tape's virtual time
  --speed S       with --tape: replay speed after the warm-up, event time per wall time (SVC_REPLAY_SPEED, default
                  60: a minute per second)
Also: SVC_LOG=kafka with KAFKA_BROKERS to run on Kafka; SVC_PAY_TO to accept x402 payments (unset: paid routes take
credits, x-svc-payer); SVC_FACILITATOR_URL for x402 settlement; SVC_OPS_TOKEN to enable operator routes (grants,
rate-lock issue, surge).
Engine: fits each question per asset on its first SVC_TRAIN_DAYS days (default 30) or up to SVC_TRAIN_UNTIL (ISO
instant), then decides at every clock's close and resolves clocks as the venue's time passes them.
Warm-up, simulated venue: its history (SVC_SIM_HISTORY_DAYS, default 35, before the first start in the folder;
kept in <data>/venue.json) up to now at full speed (a restart: only the gap since the stop), then live at 1x.
Warm-up, tape: up to the training cut, and on until every sold question has resolved a clock, at full speed (a
restart: up to the next cadence hour after what the log holds), then at --speed. The Parquet sink starts when the
warm-up ends and catches up in the background; market routes answer 503 STALE_DATA (WARMING_UP) until then.
Live venue: first start backfills SVC_TRAIN_DAYS + 7 days of 1h bars and hourly funding over REST and fits on them
(the cut is kept in <data>/venue.json), then streams; a restart repairs the span since the newest tick in the log.
Market: SVC_UNIVERSE=replay|hyperliquid (default hyperliquid on the live venue, else replay), SVC_COINGECKO_URL,
SVC_COINGECKO_KEY.
Wallets: SVC_WALLET_PROVIDER=hyperliquid|none (default none: wallet/risk routes 503, S09..S11 PROVIDER_DOWN).
`

export const command: Command = {
  name: 'start',
  summary: 'Run the whole service: the simulated venue in the present, the live venue (SVC_VENUE=hyperliquid) or a tape, into Parquet + DuckDB, serving the API',
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
