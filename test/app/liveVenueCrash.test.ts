/**
 * Crashes of `svc start` on the live venue (SIGKILL, test/fixtures/live-service.ts in a child process) mid-backfill
 * and mid-stream, each followed by a restart on the same data folder, against one local Hyperliquid stand-in that
 * keeps running, on a clock 120 times the wall clock. Issue 28: "SIGKILL of the service mid-stream and mid-backfill,
 * restart: no tick twice, no tick missing that the venue still serves." Checked in the Parquet ticks after a final
 * clean stop, against the venue's own lists.
 */
import t from 'tap'
import { withCatalog } from '../../sql/Catalog.ts'
import { hourOf, until, withLocalVenue } from '../helpers/venue.ts'
import { makeTempDir } from '../helpers/tmp.ts'
import { spawnLiveService, type LiveServiceChild as Child } from '../helpers/liveService.ts'

const SPEED = 120
const HOUR = 3_600_000
const COINS = ['BTC', 'ETH', 'SOL']

t.test('SIGKILL mid-backfill and mid-stream, then restart: no tick twice, none missing that the venue serves', async (t) => {
  const { venue, clock } = await withLocalVenue(t, { speed: SPEED, historyDays: 75 })
  const dataDir = await makeTempDir(t, 'svc-live-crash-')
  const children: Child[] = []
  t.teardown(() => {
    for (const c of children) c.process.kill('SIGKILL')
  })
  const start = (): Child => {
    const child = spawnLiveService({ dataDir, venue, clock, env: { SVC_TRAIN_DAYS: '60' } })
    children.push(child)
    return child
  }
  const ready = async (child: Child) => {
    await until('the child serves', () => child.url() !== null, 60_000)
    await until('ready', async () => (await fetch(`${child.url()}/readyz`).catch(() => null))?.status === 200, 180_000)
  }
  const venueOf = async (child: Child) => ((await (await fetch(`${child.url()}/healthz`)).json()) as { data: { venue: { event_time: string; stage: string } } }).data.venue

  // 1. Killed in the middle of the first backfill (67 days: several chunks, each written as it comes).
  const first = start()
  await until('a few backfill requests done', () => {
    const m = [...first.err.matchAll(/backfill: (\d+)\/(\d+) requests/g)].at(-1)
    return m !== undefined && Number(m[1]) >= 7 && Number(m[1]) < Number(m[2])
  }, 120_000)
  first.process.kill('SIGKILL')
  await first.exited
  const firstStart = Date.parse(/fitted up to (\S+);/.exec(first.out)?.[1] ?? '')
  t.ok(Number.isFinite(firstStart), 'the first start fixed its training cut')

  // 2. Restarted: it resumes the backfill after the newest tick in the log, then streams; killed mid-stream.
  const second = start()
  await until('the resume line', () => /repairing bars and funding since/.test(second.out), 60_000)
  const resumedAt = Date.parse(/repairing bars and funding since (\S+) over REST/.exec(second.out)![1]!)
  t.ok(resumedAt < firstStart - 7 * 24 * HOUR, `the kill came mid-backfill: the log held history up to ${new Date(resumedAt).toISOString()}, weeks before the cut`)
  await ready(second)
  const streamingFrom = clock.now()
  // Killed while streaming: an hour after the start, at a moment the connector is current (the fit at the first live
  // tick blocks the process a few wall seconds, hours of this clock, during which it is rightly stale).
  await until('an hour of streaming, and current', async () => clock.now() > streamingFrom + HOUR && (await venueOf(second)).stage === 'streaming', 90_000)
  t.pass('streaming when killed')
  second.process.kill('SIGKILL')
  await second.exited
  const killedAt = clock.now()

  // 3. Down for an hour and a half of venue time; restarted, it repairs the gap, streams, and stops cleanly.
  await until('down past two bar closes', () => clock.now() > killedAt + 1.5 * HOUR, 60_000)
  const third = start()
  await until('the resume line', () => /repairing bars and funding since/.test(third.out), 60_000)
  await ready(third)
  const resumedAgain = Date.parse(/repairing bars and funding since (\S+) over REST/.exec(third.out)![1]!)
  t.ok(resumedAgain > killedAt - 10 * 60_000 && resumedAgain <= killedAt, `resumed after the newest tick the killed run wrote (${new Date(resumedAgain).toISOString()})`)
  await until('half an hour of streaming', async () => Date.parse((await venueOf(third)).event_time) > clock.now() - 5 * 60_000 && clock.now() > killedAt + 2.5 * HOUR, 60_000)
  third.process.kill('SIGTERM')
  t.equal(await third.exited, 0, 'a clean stop')
  const end = hourOf(clock.now()) - HOUR

  await withCatalog(dataDir, { readOnly: true }, async (catalog) => {
    const first = Date.parse(String((await catalog.query(`SELECT min(ts)::VARCHAR AS t FROM ticks WHERE kind = 'bar'`))[0]!.t) + 'Z')
    for (const coin of COINS) {
      const bars = await catalog.query(`SELECT epoch_ms(timezone('UTC', ts)) AS at, close, count(*) OVER (PARTITION BY ts) AS copies FROM ticks WHERE kind = 'bar' AND asset = $coin`, { coin })
      const written = new Map(bars.map((r) => [Number(r.at), r]))
      const served = venue.bars(coin, '1h').filter((b) => b.closeTime >= first && b.closeTime <= end && b.served)
      const wrong = served.filter((b) => Number(written.get(b.closeTime)?.copies) !== 1 || written.get(b.closeTime)?.close !== b.close)
      t.same(wrong.map((b) => new Date(b.closeTime).toISOString()), [], `${coin}: all ${served.length} bars the venue serves, each exactly once, across both crashes`)
      t.ok(bars.every((r) => Number(r.copies) === 1), `${coin}: no bar twice`)
      const funding = await catalog.query(`SELECT epoch_ms(timezone('UTC', ts)) AS at, count(*) OVER (PARTITION BY ts) AS copies FROM ticks WHERE kind = 'funding' AND asset = $coin`, { coin })
      const settled = new Map(funding.map((r) => [Number(r.at), Number(r.copies)]))
      const wrongFunding = venue.fundingRows(coin).filter((r) => r.hour > first && r.hour <= end && settled.get(r.time) !== 1)
      t.same(wrongFunding.map((r) => new Date(r.hour).toISOString()), [], `${coin}: every settlement exactly once`)
    }
    const dupTrades = await catalog.query(`SELECT count(*) AS n FROM (SELECT asset, trade_id, ts FROM ticks WHERE kind = 'trade' GROUP BY ALL HAVING count(*) > 1)`)
    t.equal(Number(dupTrades[0]!.n), 0, 'no trade twice')
    const dupSeq = await catalog.query(`SELECT count(*) AS n FROM (SELECT tape_seq FROM ticks GROUP BY tape_seq HAVING count(*) > 1)`)
    t.equal(Number(dupSeq[0]!.n), 0, 'no connector sequence number twice')
    const restarts = await catalog.query(`SELECT status, bars_expected, bars_repaired FROM venue_gaps WHERE cause = 'restart' ORDER BY span_start`)
    t.equal(restarts.length, 2, 'both restarts are recorded episodes')
    t.ok(restarts.every((r) => r.status === 'repaired' && Number(r.bars_repaired) === Number(r.bars_expected)), `each repaired in full (${restarts.map((r) => `${r.bars_repaired}/${r.bars_expected}`).join(', ')})`)
  })
})
