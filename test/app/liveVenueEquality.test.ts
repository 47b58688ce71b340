/**
 * Issue 28: "the ticks the connector writes for a scripted session equal what `svc tape record` records from the same
 * local venue and script (same ticks, same order)". `svc start` (SVC_VENUE=hyperliquid) and `svc tape record` (a real
 * child process) run side by side against one local Hyperliquid stand-in in real time, through a script of bad frames,
 * duplicates, a late trade and a 429 burst. Both are the same connector, so:
 * - every record whose identity is the venue's (bars and funding settlements, and the stream's trades and book
 *   snapshots) is the same, with the same values, in the same order, in the service's Parquet ticks and on the tape,
 *   over the span both were connected;
 * - what neither could place is refused the same way (bad frames by reason, the late trade, the duplicates).
 * Observations the venue sends without a time of its own (asset contexts, polled books, universe snapshots) are stamped
 * with each client's own arrival instant, so two clients never agree on them to the millisecond: they are compared by
 * kind and asset only (docs/decisions.md).
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { ServiceApp } from '../../app/ServiceApp.ts'
import { loadConfig } from '../../app/config.ts'
import { readTape } from '../../ingest/TapeReader.ts'
import { tickTime, type Tick } from '../../ingest/Tick.ts'
import { withCatalog } from '../../sql/Catalog.ts'
import { until, withLocalVenue } from '../helpers/venue.ts'
import { makeTempDir } from '../helpers/tmp.ts'

const SVC = fileURLToPath(new URL('../../bin/svc.js', import.meta.url))
const DAY = 86_400_000

/** What identifies a venue-keyed record and what it says; null for receive-stamped observations. */
function venueRecord(x: Pick<Tick, 'kind' | 'asset'> & Record<string, unknown>, provider: string): string | null {
  switch (x.kind) {
    case 'bar':
      return `bar ${x.asset} ${x.ts} ${x.open} ${x.high} ${x.low} ${x.close} ${x.volume}`
    case 'funding':
      return `funding ${x.asset} ${x.ts} ${x.rate}`
    case 'trade':
      return `trade ${x.asset} ${x.ts} ${x.trade_id} ${x.side} ${x.price} ${x.size}`
    case 'book_top':
      return provider === 'hyperliquid-ws' ? `book ${x.asset} ${x.ts} ${x.bid} ${x.ask} ${x.bid_size} ${x.ask_size}` : null
    default:
      return null
  }
}

/** A tape tick in the shape the Parquet ticks table gives (ts = event time in ms), for one comparison. */
function flat(tick: Tick): Record<string, unknown> & Pick<Tick, 'kind' | 'asset'> {
  const { provenance, ...rest } = tick
  const x: Record<string, unknown> = { ...rest, ts: tickTime(tick), provider: provenance.provider }
  if (tick.kind === 'open_interest') x.oi = tick.value
  return x as Record<string, unknown> & Pick<Tick, 'kind' | 'asset'>
}

t.test('the service and `svc tape record` on one session: the same venue records, in the same order', async (t) => {
  const { venue, clock } = await withLocalVenue(t, { speed: 1, anchorIso: new Date().toISOString(), historyDays: 45, frameMs: 100 })
  const dir = await makeTempDir(t, 'svc-live-equal-')
  const tape = join(dir, 'session.ndjson')
  const config = loadConfig({
    PORT: '0', SVC_DATA_DIR: join(dir, 'data'), SVC_VENUE: 'hyperliquid', SVC_HL_BASE_URL: venue.baseUrl, SVC_HL_WS_URL: venue.wsUrl,
    SVC_RECORD_INTERVAL_S: '0', SVC_COMPACT_INTERVAL_S: '0', LOG_LEVEL: 'warn',
  })
  // The same connector settings on both sides (the recorder's flags).
  const app = await ServiceApp.start(config, () => undefined, { clock, venueTiming: { pollMs: 2000, reorderWindowMs: 2000 } })
  const abort = new AbortController()
  const running = app.run(abort.signal)
  let stopped = false
  const stopApp = async () => {
    if (stopped) return
    stopped = true
    abort.abort()
    await app.server.close()
    await running
    await app.close()
  }
  t.teardown(stopApp)
  await until('the service streams', async () => (await fetch(`${app.server.url}/readyz`)).status === 200, 60_000)

  const recorder = spawn(process.execPath, [SVC, 'tape', 'record', '--coins', 'BTC,ETH,SOL', '--out', tape, '--base-url', venue.baseUrl, '--ws-url', venue.wsUrl, '--backfill-days', '1', '--poll-s', '2', '--reorder-ms', '2000'], {
    env: { ...process.env, NODE_ENV: 'test', LOG_FORMAT: 'json' },
  })
  let recorderLog = ''
  recorder.stderr.on('data', (d: Buffer) => void (recorderLog += d.toString()))
  recorder.stdout.on('data', (d: Buffer) => void (recorderLog += d.toString()))
  const recorderExit = new Promise<number | null>((resolve) => recorder.on('exit', resolve))
  t.teardown(() => void recorder.kill('SIGKILL'))
  await until('the recorder records', () => /"msg":"recording"/.test(recorderLog), 60_000)
  await sleep(3000)
  const common = clock.now()
  // Both connections have seen a stretch of trades before the script starts (the late trade must be one both were sent).
  await sleep(15_000)

  // The script: one bad frame of each kind, duplicates, a late trade, a 429 burst.
  for (const variant of ['invalid_json', 'unknown_channel', 'nan_price', 'negative_size', 'future_candle'] as const) venue.fault({ kind: 'malformed', variant, coin: 'SOL' })
  await sleep(1500)
  venue.fault({ kind: 'duplicate', count: 2 })
  await sleep(1500)
  venue.fault({ kind: 'out_of_order_trades', coin: 'BTC', lagMs: 6_000 })
  venue.fault({ kind: 'rest_status', status: 429, count: 6 })
  await sleep(20_000)
  const commonEnd = clock.now() - 5000
  recorder.kill('SIGINT')
  t.equal(await recorderExit, 0, 'the recorder stops cleanly')
  const venueStatus = ((await (await fetch(`${app.server.url}/readyz`)).json()) as { data: { venue: { rejected: Record<string, number>; late: number } } }).data.venue
  await stopApp()

  const tapeTicks: Tick[] = []
  for await (const { tick } of readTape(tape)) tapeTicks.push(tick)
  const recorded = JSON.parse(/\{[^\n]*"msg":"recording stopped"[^\n]*\}/.exec(recorderLog)![0]) as { rejected: Record<string, number>; late: number; duplicates: number }
  const served = await withCatalog(join(dir, 'data'), { readOnly: true }, (catalog) =>
    catalog.query(
      `SELECT kind, asset, epoch_ms(timezone('UTC', ts)) AS ts, provider, open, high, low, close, volume, rate, trade_id, side, price, size, bid, ask, bid_size, ask_size, tape_seq FROM ticks ORDER BY tape_seq`,
    ),
  )
  const backfillFrom = common - DAY + 2 * 3_600_000
  const inSpan = (kind: string, at: number) => (kind === 'bar' || kind === 'funding' ? at > backfillFrom && at < commonEnd : at >= common && at < commonEnd)
  const project = (rows: Array<Record<string, unknown> & Pick<Tick, 'kind' | 'asset'>>) =>
    rows.filter((r) => inSpan(r.kind, Number(r.ts))).map((r) => venueRecord({ ...r, ts: Number(r.ts) }, String(r.provider))).filter((x): x is string => x !== null)
  const fromService = project(served as Array<Record<string, unknown> & Pick<Tick, 'kind' | 'asset'>>)
  const fromTape = project(tapeTicks.map(flat))
  const count = (kind: string) => fromService.filter((x) => x.startsWith(kind)).length
  t.ok(count('bar') >= 3 * 20 && count('funding') >= 3 * 20, `the span holds the last day's bars (${count('bar')}) and settlements (${count('funding')})`)
  // Enough of each kind for the comparison to mean something. The trades are the replayed tape's at this hour of its day
  // (speed 1, anchored at the wall clock), so their number varies by when the test runs: 7 in one 20:45 UTC run.
  t.ok(count('trade') >= 3 && count('book') > 50, `and the session's trades (${count('trade')}) and stream books (${count('book')})`)
  // A client starved past its reorder window (2 s) places nothing it receives late: its timers release the window
  // before its socket delivers the frames that waited, and those are counted late and kept out (a CI run on two busy
  // cores: the recorder lacked one stream book the service had). Both are sent the same frames and the same script, so
  // their late counts are equal unless one was starved: a record one side lacks is allowed only as one of that side's
  // late drops beyond the other's, and only a stream record (a trade or a book); every other record is the same, in
  // the same order.
  const onTape = new Set(fromTape)
  const inService = new Set(fromService)
  const lackedByTape = fromService.filter((x) => !onTape.has(x))
  const lackedByService = fromTape.filter((x) => !inService.has(x))
  const stream = (x: string) => x.startsWith('trade ') || x.startsWith('book ')
  t.ok(lackedByTape.every(stream) && lackedByTape.length <= Math.max(0, recorded.late - venueStatus.late), `the tape lacks only stream records it dropped late (${lackedByTape.length}; late drops: the recorder ${recorded.late}, the service ${venueStatus.late})`, { lackedByTape })
  t.ok(lackedByService.every(stream) && lackedByService.length <= Math.max(0, venueStatus.late - recorded.late), `the log lacks only stream records it dropped late (${lackedByService.length})`, { lackedByService })
  const both = (xs: string[], other: Set<string>) => xs.filter((x) => other.has(x))
  const [service, tapeSide] = [both(fromService, onTape), both(fromTape, inService)]
  t.equal(tapeSide.length, service.length, `as many venue records on the tape as in the log (${service.length}), those aside`)
  const firstDiff = service.findIndex((x, i) => x !== tapeSide[i])
  t.equal(firstDiff, -1, firstDiff < 0 ? 'the same records, in the same order' : `first difference at ${firstDiff}: ${service[firstDiff]} vs ${tapeSide[firstDiff]}`)

  // The observations without a venue time: the same kinds for the same assets on both sides.
  const kinds = (rows: Array<{ kind: string; asset: string; provider: unknown }>) => new Set(rows.filter((r) => venueRecord(r as never, String(r.provider)) === null).map((r) => `${r.kind} ${r.asset} ${r.provider}`))
  t.same([...kinds(tapeTicks.map(flat) as never)].sort(), [...kinds(served as never)].sort(), 'receive-stamped observations: the same kinds, assets and providers')

  // Refused the same way.
  for (const reason of ['not_json', 'unknown_channel', 'bad_field', 'bad_size', 'future_time']) {
    t.equal(recorded.rejected[reason], venueStatus.rejected[reason], `${reason}: refused alike (${venueStatus.rejected[reason]})`)
  }
  t.ok(recorded.late >= 1 && venueStatus.late >= 1, 'the late trade kept out of both')
})
