/**
 * The live venue's feed as two instances of a cluster hold it (issue 32), on the embedded log: the one that feeds
 * reports its connector, the other the log's view; the second takes the feed over by reading where the log ends and
 * repairs the span since the first's newest tick, so every bar and settlement is in the log once.
 */
import t from 'tap'
import { HyperliquidInfoClient } from '../../../ingest/hyperliquid/HyperliquidInfoClient.ts'
import { RestWeightBudget } from '../../../ingest/hyperliquid/RestWeightBudget.ts'
import { Journal } from '../../../pipeline/journal/Journal.ts'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { VENUE_GAPS } from '../../../pipeline/records/venueGapRecord.ts'
import { decodeTickRecord } from '../../../pipeline/TickEnvelope.ts'
import { HL_VENUE_SOURCE } from '../../../pipeline/venue/HyperliquidConnector.ts'
import { LiveVenueFeed } from '../../../pipeline/venue/LiveVenueFeed.ts'
import { consume } from '../../helpers/logs.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { compareBars, compareFunding, compressedRestBudget, compressedTimings, hourOf, repeatedKeys, until, withLocalVenue } from '../../helpers/venue.ts'

const HOUR = 3_600_000
const TOPIC = 'venue.ticks'

t.test('one instance feeds, the other reports the log and takes the feed over from where the log ends', async (t) => {
  const { venue, clock } = await withLocalVenue(t, { speed: 300, historyDays: 2 })
  const log = await EmbeddedLog.open(await makeTempDir(t, 'live-feed-'))
  t.teardown(() => log.close())
  let holder: 'a' | 'b' = 'a'
  /** What each instance's market state has read of the venue (here: the newest tick in the log, set by the test). */
  const read: Record<'a' | 'b', number | null> = { a: null, b: null }
  const open = (name: 'a' | 'b') =>
    LiveVenueFeed.open({
      sink: { log, ticksTopic: TOPIC, source: HL_VENUE_SOURCE, partitions: 3 },
      connector: {
        coins: ['BTC', 'ETH', 'SOL'],
        historyMs: 86_400_000,
        client: new HyperliquidInfoClient({ baseUrl: venue.baseUrl, timeoutMs: 2000, budget: new RestWeightBudget(compressedRestBudget()), clock }),
        wsUrl: venue.wsUrl,
        clock,
        ...compressedTimings(clock.speed),
      },
      feeds: () => holder === name,
      readEventTime: () => read[name],
    })
  const a = await open('a')
  const b = await open('b')
  t.teardown(() => Promise.all([a.close(), b.close()]))

  t.match(b.status(), { stage: 'starting', connected: false, event_time: null }, 'a replica that has read nothing: starting')
  const feeding = new AbortController()
  let live = false
  const running = a.run(feeding.signal, () => (live = true))
  await until('a streams', () => live, 30_000)
  const from = clock.now()
  await until('an hour of the stream', () => a.written > hourOf(from) + HOUR, 60_000)
  t.equal(a.stage(), 'streaming', 'the feeder reports its connector')
  read.b = a.written
  t.match(b.status(), { stage: 'streaming', connected: false, event_time: new Date(a.written).toISOString() }, 'the replica reports the newest tick it read, current, without a websocket')
  t.equal(b.stage(), 'streaming', 'its stage, cheaply, the same')
  t.equal(b.lastError(), null, 'and no REST error of its own')

  // a stops feeding (its lease moved); b takes over after a bar close and a settlement it must repair.
  feeding.abort()
  await running
  const stoppedAt = a.written
  await until('a bar closed with nobody feeding', () => clock.now() > hourOf(stoppedAt) + HOUR + 10 * 60_000, 30_000)
  t.equal(b.stage(), 'stale', 'past the staleness budget the replica says stale')
  holder = 'b'
  read.a = stoppedAt
  t.match(a.status(), { connected: false, event_time: new Date(stoppedAt).toISOString() }, 'a, no longer feeding, reports the log')
  await b.reopen()
  t.equal(b.written, stoppedAt, 'reopened, b resumes after the newest tick in the log, which a wrote')
  const again = new AbortController()
  live = false
  const running2 = b.run(again.signal, () => (live = true))
  await until('b streams', () => live, 30_000)
  await until('an hour of b streaming', () => b.written > hourOf(clock.now()) - 1 && b.written > stoppedAt + 2 * HOUR, 60_000)
  again.abort()
  await running2

  const last = await log.lastRecords(TOPIC)
  const records = await consume(log, {
    groupId: `read-${Date.now()}`,
    topics: [TOPIC],
    until: (got) => last.every((r, p) => r === null || got.some((g) => g.partition === p && g.offset === r.offset)),
  })
  const decoded = records.map((r) => decodeTickRecord(r))
  const seqs = decoded.map((d) => d.seq!)
  t.equal(new Set(seqs).size, seqs.length, `no seq twice (${seqs.length} ticks)`)
  const ticks = decoded.map((d) => d.tick)
  t.same(repeatedKeys(ticks), [], 'no trade, bar, settlement or book twice across the takeover')
  const start = Date.parse(a.status().backfill.from ?? new Date(from - 86_400_000).toISOString())
  const end = hourOf(b.written)
  for (const coin of ['BTC', 'ETH', 'SOL']) {
    t.same(compareBars(ticks, venue, coin, start, end), [], `${coin}: every bar once across the takeover`)
    t.same(compareFunding(ticks, venue, coin, start, end), [], `${coin}: every settlement once`)
  }
  const gaps = await (await Journal.open({ log, def: VENUE_GAPS })).readAll()
  const takeover = gaps.filter((g) => g.cause === 'restart')
  t.equal(takeover.length, 1, 'the takeover is one recorded restart episode')
  t.equal(takeover[0]?.span_start, new Date(stoppedAt).toISOString(), 'starting at the newest tick a wrote')
  t.equal(takeover[0]?.status, 'repaired', 'repaired in full')
})
