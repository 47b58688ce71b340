/**
 * The live connector on the event log, embedded and Kafka (the real broker test/run.sh starts): units land atomically
 * as envelopes {seq, tape: 'hyperliquid', tick} keyed by asset, a restart resumes after the newest tick in the log and
 * repairs the span it missed over REST (recorded as a restart episode on venue.gaps), and no tick is in the log twice.
 */
import t from 'tap'
import { tickTime } from '../../../ingest/Tick.ts'
import { Journal } from '../../../pipeline/journal/Journal.ts'
import { VENUE_GAPS } from '../../../pipeline/records/venueGapRecord.ts'
import { decodeTickRecord } from '../../../pipeline/TickEnvelope.ts'
import { HL_VENUE_SOURCE } from '../../../pipeline/venue/HyperliquidConnector.ts'
import { VenueLogSink } from '../../../pipeline/venue/VenueLogSink.ts'
import { consume, forEachLog } from '../../helpers/logs.ts'
import { compareBars, compareFunding, connectorOn, hourOf, outOfOrder, repeatedKeys, until, withLocalVenue } from '../../helpers/venue.ts'

const HOUR = 3_600_000
const TOPIC = 'venue.ticks'

t.test('the live path on both logs: atomic units, resume after a restart, nothing twice', async (t) => {
  await forEachLog(t, async (t, makeLog) => {
    const { venue, clock } = await withLocalVenue(t, { speed: 300, historyDays: 2 })
    const runOnce = async (hours: number) => {
      const log = await makeLog()
      const { sink, resume } = await VenueLogSink.open({ log, ticksTopic: TOPIC, source: HL_VENUE_SOURCE, partitions: 3 })
      const connector = connectorOn(venue, clock, { sink, resume, historyMs: 86_400_000 })
      const abort = new AbortController()
      let live = false
      const running = connector.run(abort.signal, () => (live = true))
      await until('live', () => live, 30_000)
      const from = clock.now()
      await until(`${hours} venue hour(s)`, () => connector.written > hourOf(from) + hours * HOUR, 60_000)
      abort.abort()
      await running
      await sink.close()
      return { log, resume, connector }
    }

    const first = await runOnce(1)
    t.equal(first.resume.watermark, null, 'a first start resumes from nothing')
    await first.log.close()
    // Down past the next bar close and settlement, so the restart has something to repair.
    const stoppedAt = clock.now()
    await until('a bar closed while stopped', () => clock.now() > hourOf(stoppedAt) + HOUR + 10 * 60_000, 30_000)
    const second = await runOnce(1)
    t.ok(second.resume.watermark !== null && second.resume.watermark === first.connector.written, 'the restart resumes after the newest tick the first run wrote')

    const log = second.log
    // Kafka's transaction markers take offsets, so read until each partition's last readable record is in.
    const last = await log.lastRecords(TOPIC)
    const ends = last.map((r) => (r === null ? 0 : r.offset + 1))
    const records = await consume(log, {
      groupId: `read-${Date.now()}`,
      topics: [TOPIC],
      until: (got) => last.every((r, p) => r === null || got.some((g) => g.partition === p && g.offset === r.offset)),
    })
    const decoded = records.map((r) => ({ partition: r.partition, offset: r.offset, ...decodeTickRecord(r) }))
    t.ok(decoded.every((d) => d.tape === HL_VENUE_SOURCE), 'every tick names the venue')
    const seqs = decoded.map((d) => d.seq!)
    t.equal(new Set(seqs).size, seqs.length, `${seqs.length} distinct seqs`)
    const bySeq = [...decoded].sort((a, b) => a.seq! - b.seq!)
    t.equal(outOfOrder(bySeq.map((d) => d.tick)), 0, 'in seq order the ticks are in event-time order')
    for (let p = 0; p < ends.length; p++) {
      const part = decoded.filter((d) => d.partition === p).sort((a, b) => a.offset - b.offset)
      t.ok(part.every((d, i) => i === 0 || d.seq! > part[i - 1]!.seq!), `partition ${p}: seq grows with the offset`)
    }
    const ticks = bySeq.map((d) => d.tick)
    t.same(repeatedKeys(ticks), [], 'no trade, bar, settlement or book twice across the restart')
    const partitionsOf = new Map<string, Set<number>>()
    for (const d of decoded) partitionsOf.set(d.tick.asset, (partitionsOf.get(d.tick.asset) ?? new Set()).add(d.partition))
    t.ok([...partitionsOf.values()].every((ps) => ps.size === 1), `keyed by asset: each asset on one partition (${[...partitionsOf].map(([a, ps]) => `${a}→${[...ps]}`).join(' ')})`)
    const start = Date.parse(first.connector.status().backfill.from!)
    const end = hourOf(second.connector.written)
    for (const coin of ['BTC', 'ETH', 'SOL']) {
      t.same(compareBars(ticks, venue, coin, start, end), [], `${coin}: every bar once across the restart`)
      t.same(compareFunding(ticks, venue, coin, start, end), [], `${coin}: every settlement once`)
    }
    const gaps = await (await Journal.open({ log, def: VENUE_GAPS })).readAll()
    const restart = gaps.find((g) => g.cause === 'restart')
    t.ok(restart, 'the restart is a recorded episode')
    t.equal(restart?.span_start, new Date(first.connector.written).toISOString(), 'starting at the newest tick the first run wrote')
    t.equal(restart?.status, 'repaired')
    t.ok((restart?.bars_expected ?? 0) >= 3, `bars closed while it was stopped (${restart?.bars_expected})`)
    t.equal(restart?.bars_repaired, restart?.bars_expected, 'and every one of them was fetched over REST')
    t.equal(restart?.funding_repaired, restart?.funding_expected, `so were the settlements (${restart?.funding_expected})`)
    t.ok(ticks.some((x) => tickTime(x) > first.connector.written && x.kind === 'bar'), 'and bars after it written')
  })
})
