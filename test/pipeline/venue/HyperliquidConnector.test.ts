/**
 * The live venue connector against the local Hyperliquid stand-in (real HTTP and websocket on 127.0.0.1), on a clock
 * running hundreds of times faster than the wall clock so hours of venue time pass in seconds. Every check is made
 * against the venue's own lists: the bars and settlements it served, once each, in event-time order.
 */
import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { tickTime } from '../../../ingest/Tick.ts'
import {
  compareBars,
  compareFunding,
  connectorOn,
  hourOf,
  memorySink,
  outOfOrder,
  repeatedKeys,
  until,
  withLocalVenue,
} from '../../helpers/venue.ts'

const HOUR = 3_600_000
const COINS = ['BTC', 'ETH', 'SOL']

t.test('backfill, then live: every bar and settlement the venue served, once, in order; the stream finishes bars', async (t) => {
  const { venue, clock } = await withLocalVenue(t, { speed: 300, historyDays: 4 })
  const sink = memorySink(2)
  const connector = connectorOn(venue, clock, { sink, historyMs: 2 * 86_400_000 })
  const abort = new AbortController()
  let live = false
  const running = connector.run(abort.signal, () => (live = true))
  await until('the backfill', () => live, 30_000)
  const backfill = connector.status().backfill
  t.ok(backfill.done && backfill.ticks > 2 * 24 * 3 * 2, `backfilled ${backfill.ticks} bars and settlements`)
  const start = Date.parse(backfill.from!)
  // Three venue hours of streaming.
  const liveFrom = clock.now()
  await until('three venue hours', () => clock.now() > liveFrom + 3 * HOUR + 10 * 60_000, 60_000)
  await until('the third hour written', () => connector.written > hourOf(liveFrom) + 3 * HOUR, 30_000)
  t.equal(connector.status().stage, 'streaming')
  abort.abort()
  await running

  const ticks = sink.ticks()
  t.equal(sink.attempts, sink.units.length + 2, 'the two failed writes were retried with the same unit')
  t.equal(outOfOrder(ticks), 0, `${ticks.length} ticks in event-time order`)
  t.same(repeatedKeys(ticks), [], 'no trade, bar, settlement or book twice')
  const end = hourOf(connector.written)
  for (const coin of COINS) {
    t.same(compareBars(ticks, venue, coin, start, end), [], `${coin}: every venue bar once, with its values`)
    t.same(compareFunding(ticks, venue, coin, start, end), [], `${coin}: every settlement once, with its rate`)
  }
  const liveBars = ticks.filter((x) => x.kind === 'bar' && tickTime(x) > liveFrom)
  t.ok(liveBars.some((x) => x.provenance.provider === 'hyperliquid-ws'), 'live bars come from the candle channel')
  const kinds = new Set(ticks.map((x) => `${x.kind}:${x.provenance.provider}`))
  for (const k of ['trade:hyperliquid-ws', 'book_top:hyperliquid-ws', 'mark:hyperliquid-ws', 'mark:hyperliquid-info', 'universe:hyperliquid-info', 'predicted_funding:hyperliquid-info', 'funding:hyperliquid-info']) {
    t.ok(kinds.has(k), k)
  }
  t.same(connector.status().rejected, {}, 'nothing refused from a well-behaved venue')
  t.equal(connector.status().stage, 'stopped')
})

t.test('faults: bad frames refused by reason, duplicates and late trades kept out, drops and silence repaired', async (t) => {
  const { venue, clock } = await withLocalVenue(t, { speed: 300, historyDays: 2 })
  const sink = memorySink()
  const connector = connectorOn(venue, clock, { sink, historyMs: 86_400_000 })
  const abort = new AbortController()
  let live = false
  const running = connector.run(abort.signal, () => (live = true))
  t.teardown(() => abort.abort())
  await until('live', () => live, 30_000)
  await until('the first live hour', () => connector.written > hourOf(clock.now()) - 1 && sink.ticks().some((x) => x.kind === 'bar' && x.provenance.provider === 'hyperliquid-ws'), 60_000)
  const start = Date.parse(connector.status().backfill.from!)

  for (const variant of ['invalid_json', 'unknown_channel', 'nan_price', 'negative_size', 'future_candle'] as const) venue.fault({ kind: 'malformed', variant, coin: 'BTC' })
  venue.fault({ kind: 'duplicate', count: 2 })
  venue.fault({ kind: 'out_of_order_trades', coin: 'ETH', lagMs: 5 * 60_000 })
  venue.fault({ kind: 'candle_correction', coin: 'BTC', interval: '1h' })
  await until('every bad frame counted', () => {
    const r = connector.status().rejected
    return ['not_json', 'unknown_channel', 'bad_field', 'bad_size', 'future_time'].every((k) => (r[k] ?? 0) >= 1)
  }, 20_000)
  venue.fault({ kind: 'rest_status', status: 429, count: 4 })
  venue.fault({ kind: 'disconnect' })
  await until('reconnected', () => connector.status().websocket.connects >= 2, 20_000)
  await sleep(500)
  venue.fault({ kind: 'silence', forMs: 20 * 60_000 })
  await until('the silence detected and a third connection', () => connector.status().websocket.connects >= 3, 30_000)
  // Every gap episode settles once the bars and settlements after it are in.
  await until('the episodes settled', () => connector.status().gaps.open === 0 && sink.gaps().length >= 2, 90_000)
  abort.abort()
  await running

  const ticks = sink.ticks()
  const status = connector.status()
  t.match(status.rejected, { not_json: 1, unknown_channel: 1, bad_field: 1, bad_size: 1, future_time: 1 }, 'each bad frame counted once with its reason')
  t.ok(status.duplicates >= 1, `${status.duplicates} repeated records dropped`)
  t.ok(status.late >= 1, `${status.late} late trade(s) kept out of the ordered stream`)
  t.equal(outOfOrder(ticks), 0, 'still in event-time order')
  t.same(repeatedKeys(ticks), [], 'no record twice')
  t.notOk(ticks.some((x) => 'price' in x && !(x.price > 0)), 'no NaN or non-positive price reached the sink')
  t.notOk(ticks.some((x) => x.kind === 'trade' && !(x.size > 0)), 'no negative size reached the sink')
  const end = hourOf(connector.written)
  for (const coin of COINS) {
    t.same(compareBars(ticks, venue, coin, start, end), [], `${coin}: every venue bar once; the corrected one as first served`)
    t.same(compareFunding(ticks, venue, coin, start, end), [], `${coin}: every settlement once`)
  }
  const causes = sink.gaps().map((g) => g.cause)
  t.ok(causes.includes('disconnect'), `the drop is an episode (${causes.join(', ')})`)
  t.ok(causes.includes('silence'), 'the silence is an episode')
  for (const g of sink.gaps()) {
    t.equal(g.status, 'repaired', `${g.cause} ${g.span_start} → ${g.span_end}: repaired`)
    t.equal(g.bars_repaired, g.bars_expected, `${g.cause}: every bar of its span fetched (${g.bars_expected})`)
  }
  t.ok(status.rest.throttled >= 1, 'the 429s were seen and paced')
})

t.test('an outage: unreachable, then repaired; a purged bar is recorded missing, never invented', async (t) => {
  // 300x keeps the connector's REST calls within the venue's real budget (1200 weight a wall minute, 5 venue hours).
  const { venue, clock } = await withLocalVenue(t, { speed: 300, historyDays: 2 })
  // Down from the start: the connector must say unreachable, never serve or write anything made up.
  venue.fault({ kind: 'outage', forMs: 25 * 60_000 })
  const sink = memorySink()
  const connector = connectorOn(venue, clock, { sink, historyMs: 86_400_000, pollMs: 8000 })
  const abort = new AbortController()
  let live = false
  const running = connector.run(abort.signal, () => (live = true))
  t.teardown(() => abort.abort())
  await until('unreachable', () => connector.status().stage === 'unreachable', 10_000)
  t.equal(sink.ticks().length, 0, 'nothing written while the venue has not answered')
  await until('live once the venue is back', () => live, 30_000)
  await until('a live bar', () => sink.ticks().some((x) => x.kind === 'bar' && tickTime(x) > hourOf(clock.now()) - HOUR), 30_000)

  // A two-and-a-half-hour outage; the venue loses the candles of one hour in it.
  const outageStart = clock.now()
  const lost = hourOf(outageStart) + 2 * HOUR
  venue.fault({ kind: 'purge_candles', interval: '1h', from: lost, to: lost })
  venue.fault({ kind: 'outage', forMs: 2.5 * HOUR })
  await until('the outage seen', () => connector.status().stage !== 'streaming', 20_000)
  await until('stale past the budget', () => connector.status().stage === 'stale', 30_000)
  await until('the outage over and repaired', () => connector.written > outageStart + 2.5 * HOUR + 10 * 60_000 && connector.status().gaps.open === 0, 90_000)
  abort.abort()
  await running

  const ticks = sink.ticks()
  const gaps = sink.gaps()
  const outage = gaps.find((g) => Date.parse(g.span_start) >= outageStart - HOUR && g.missing.length > 0)
  t.ok(outage, `the outage is an episode with missing bars: ${JSON.stringify(gaps.map((g) => [g.cause, g.status, g.missing.length]))}`)
  t.equal(outage?.status, 'unrepairable')
  t.same(outage?.missing.map((m) => `${m.asset} ${m.kind} ${m.at}`), COINS.map((c) => `${c} bar ${new Date(lost).toISOString()}`), 'exactly the purged bars are missing')
  t.equal(outage?.bars_repaired, (outage?.bars_expected ?? 0) - 3, `the other bars of the outage were fetched (${outage?.bars_repaired} of ${outage?.bars_expected})`)
  t.equal(outage?.funding_repaired, outage?.funding_expected, `and all its settlements (${outage?.funding_repaired})`)
  const start = Date.parse(connector.status().backfill.from!)
  for (const coin of COINS) {
    t.same(compareBars(ticks, venue, coin, start, hourOf(connector.written)), [], `${coin}: every bar the venue served once, the purged one absent`)
    t.same(compareFunding(ticks, venue, coin, start, hourOf(connector.written)), [], `${coin}: every settlement once`)
  }
  t.equal(outOfOrder(ticks), 0)
  t.same(repeatedKeys(ticks), [])
})
