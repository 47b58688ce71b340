/**
 * `svc venue serve`: runs the local Hyperliquid stand-in (ingest/hyperliquid/local/LocalVenue.ts) until SIGINT or
 * SIGTERM, and prints where it listens and how to point the service at it. docs/local-venue.md describes it.
 */
import { parseArgs } from 'node:util'
import { readFile } from 'node:fs/promises'
import { UsageError, numberFlag, type Command } from '../Command.ts'
import { systemClock, type Clock } from '../../common/Clock.ts'
import { ScaledClock } from '../../common/ScaledClock.ts'
import { CANONICAL_ASSETS } from '../../ingest/Tick.ts'
import { LocalVenue } from '../../ingest/hyperliquid/local/LocalVenue.ts'
import { LocalVenueFaults } from '../../ingest/hyperliquid/local/LocalVenueFaults.ts'

const usage = `Usage: svc venue serve [--port N] [--host H] [--speed S] [--seed N] [--history-days D]
                       [--coins BTC,ETH,SOL] [--script FILE]

Serves a simulated Hyperliquid perp venue on the real protocol: POST /info, the websocket at /ws, and control
routes under /_venue/ (state, bars, funding, fault). Market data is the seeded synthetic market; see
docs/local-venue.md.

Options:
  --port N           port, default 9100 (0: a free port)
  --host H           interface, default 127.0.0.1
  --speed S          venue time per wall time, default 1 (60: an hour of venue time per wall minute)
  --seed N           synthetic market seed, default 1
  --history-days D   simulated history before now, default 45 (the service backfills 37 by default)
  --coins LIST       subset of BTC,ETH,SOL, comma-separated, default all
  --script FILE      a JSON fault script: [{ "afterMs": <venue ms after start>, "fault": {...} }, ...]
`


export const command: Command = {
  name: 'venue serve',
  summary: 'Serve a simulated Hyperliquid venue (REST + websocket, scripted faults) for local runs and tests',
  usage,
  async run(argv) {
    const { values } = parseArgs({
      args: argv,
      allowPositionals: false,
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        speed: { type: 'string' },
        seed: { type: 'string' },
        'history-days': { type: 'string' },
        coins: { type: 'string' },
        script: { type: 'string' },
      },
    })
    const port = numberFlag('port', values.port, 9100, (n) => Number.isInteger(n) && n >= 0 && n <= 65535, 'an integer port 0..65535')
    const speed = numberFlag('speed', values.speed, 1, (n) => n > 0, 'a number > 0')
    const seed = numberFlag('seed', values.seed, 1, (n) => Number.isSafeInteger(n) && n >= 0, 'a non-negative integer')
    const historyDays = numberFlag('history-days', values['history-days'], 45, (n) => n >= 0.1 && n <= 3650, 'a number of days from 0.1 to 3650')
    const coins = (values.coins ?? CANONICAL_ASSETS.join(',')).split(',').map((c) => c.trim().toUpperCase()).filter((c) => c.length > 0)
    const badCoin = coins.find((c) => !(CANONICAL_ASSETS as readonly string[]).includes(c))
    if (coins.length === 0 || badCoin !== undefined) throw new UsageError(`--coins: '${badCoin ?? values.coins}' is not one of ${CANONICAL_ASSETS.join(', ')}`)
    if (new Set(coins).size !== coins.length) throw new UsageError('--coins: duplicate coin')

    let script: ReturnType<typeof LocalVenueFaults.parseScript> | undefined
    if (values.script !== undefined) {
      let parsed: unknown
      try {
        parsed = JSON.parse(await readFile(values.script, 'utf8'))
      } catch (err) {
        throw new UsageError(`--script ${values.script}: ${(err as Error).message}`)
      }
      script = LocalVenueFaults.parseScript(parsed, `venue script ${values.script}`)
    }

    const wallAnchorMs = Date.now()
    const clock: Clock = speed === 1 ? systemClock : new ScaledClock({ anchorMs: wallAnchorMs, wallAnchorMs, speed })
    let venue: LocalVenue
    try {
      venue = await LocalVenue.start({
        port,
        clock,
        seed,
        historyDays,
        coins,
        ...(values.host === undefined ? {} : { host: values.host }),
        ...(script === undefined ? {} : { script }),
      })
    } catch (err) {
      const code = (err as { code?: string }).code
      if (code !== 'EADDRINUSE' && code !== 'EADDRNOTAVAIL' && code !== 'EACCES') throw err
      process.stderr.write(`svc venue serve: cannot listen on ${values.host ?? '127.0.0.1'}:${port} (${code}); try --port 0\n`)
      return 1
    }

    const lines = [
      `local Hyperliquid venue (simulated ${coins.join(', ')}; seed ${seed}; history from ${new Date(venue.originMs).toISOString()})`,
      `  REST       ${venue.baseUrl}/info`,
      `  websocket  ${venue.wsUrl}`,
      `  control    ${venue.baseUrl}/_venue/state`,
      ...(speed === 1
        ? []
        : [`  clock      venue time = ${new Date(wallAnchorMs).toISOString()} + (wall − the same instant) × ${speed} (anchorMs=${wallAnchorMs}, wallAnchorMs=${wallAnchorMs}, speed=${speed})`]),
      ...(script === undefined ? [] : [`  script     ${script.length} fault(s) from ${values.script}`]),
      'Point the service at it:',
      `SVC_VENUE=hyperliquid SVC_HL_BASE_URL=${venue.baseUrl} SVC_HL_WS_URL=${venue.wsUrl} npm start`,
      '',
    ]
    process.stdout.write(lines.join('\n'))

    const signal = await new Promise<string>((resolve) => {
      process.once('SIGINT', () => resolve('SIGINT'))
      process.once('SIGTERM', () => resolve('SIGTERM'))
    })
    await venue.close()
    process.stderr.write(`svc venue serve: ${signal}; closed (${venue.stats.connectionsAccepted} websocket connection(s) served)\n`)
    return 0
  },
}
