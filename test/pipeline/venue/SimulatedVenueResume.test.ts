/**
 * The simulated venue's resume through the log (issue 31): a run keeps the checkpoint of the newest minute the log
 * holds; the next one generates only after it (the log then holds every line once, the same bytes as a run from the
 * origin); one behind the log resumes and skips what the log holds; a missing, corrupt, old-schema, other-venue or
 * ahead-of-log checkpoint regenerates from the origin with one log line saying why.
 */
import t from 'tap'
import { SimulatedVenue } from '../../../ingest/SimulatedVenue.ts'
import { MARKET_CHECKPOINT_SCHEMA } from '../../../ingest/SyntheticMarket.ts'
import type { EventLog } from '../../../pipeline/log/EventLog.ts'
import { StateSnapshots } from '../../../pipeline/state/StateSnapshots.ts'
import { decodeTickValue } from '../../../pipeline/TickEnvelope.ts'
import { produceTape } from '../../../pipeline/TapeProducer.ts'
import { MAX_PENDING_CHECKPOINTS, SIMULATED_VENUE_STORE, SimulatedVenueResume } from '../../../pipeline/venue/SimulatedVenueResume.ts'
import { forEachLog, makeEmbeddedFactory, readAll, type TapTest } from '../../helpers/logs.ts'
import { capturingLogger, readSnapshot, spoilSnapshot } from '../../helpers/stateSnapshots.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const HOUR = 3_600_000
const ORIGIN = Date.parse('2026-04-01T00:00:00Z')
const venue = new SimulatedVenue({ seed: 5, assets: ['BTC', 'ETH', 'SOL'], originMs: ORIGIN })

/** The run from the origin up to `until` (exclusive), line → tickLine: what the log must hold, byte for byte. */
function reference(until: number): Map<number, string> {
  const lines = new Map<number, string>()
  for (const e of venue.entries()) {
    if (e.time >= until) break
    lines.set(e.line, e.raw)
  }
  return lines
}

async function openResume(log: EventLog, snapshots: StateSnapshots, topic = 'ticks', everyMs = 0) {
  const { logger, lines } = capturingLogger()
  const resume = await SimulatedVenueResume.open({ venue, snapshots, log, topic, everyMs, logger })
  return { resume, lines }
}

/** One start of the service's feed, as app/ServiceApp.ts wires it: produce up to `until`, then the checkpoint at stop. */
async function run(log: EventLog, resume: SimulatedVenueResume, until: number, topic = 'ticks', save = true) {
  const result = await produceTape({ log, topic, source: resume.source(), tapeId: venue.tapeId, until, batchSize: 500, onDurable: (line) => resume.onDurable(line) })
  if (save) await resume.save()
  return result
}

/** Every line 1..n exactly once, each the bytes of the run from the origin. */
async function checkLog(t: TapTest, log: EventLog, topic: string, expected: Map<number, string>): Promise<void> {
  const records = (await readAll(log, topic)).map((r) => ({ seq: decodeTickValue(r.value).seq!, value: r.value.toString('utf8') }))
  const seqs = records.map((r) => r.seq)
  t.equal(new Set(seqs).size, seqs.length, `no line twice (${seqs.length})`)
  t.equal(seqs.length, expected.size, `no line missing (${expected.size})`)
  const wrong = records.filter((r) => r.value !== `{"seq":${r.seq},"tape":"${venue.tapeId}","tick":${expected.get(r.seq)}}`).length
  t.equal(wrong, 0, 'every record is the run from the origin, byte for byte')
}

t.test('restarts resume from the checkpoint (only the gap generated), or from behind it, with no line twice or missing', async (t) => {
  await forEachLog(t, async (t, makeLog) => {
    const log = await makeLog()
    await log.ensureTopics([{ name: 'ticks', partitions: 3 }])
    const snapshots = await StateSnapshots.open(await makeTempDir(t, 'svc-sim-state-'))

    const first = await openResume(log, snapshots)
    t.equal(first.resume.from, null, 'an empty folder: no checkpoint')
    t.same(first.lines.map((l) => [l.level, l.reason]), [[30, 'missing']], 'one info line: none yet')
    const one = await run(log, first.resume, ORIGIN + 6 * HOUR)
    t.equal(first.resume.line, one.produced, 'the checkpoint kept is of the newest line in the log')
    const early = await readSnapshot(snapshots, SIMULATED_VENUE_STORE)

    const second = await openResume(log, snapshots)
    t.equal(second.resume.from?.market.ticks, one.produced, 'the restart resumes at the checkpoint')
    t.same(second.lines.map((l) => [l.level, l.line]), [[30, one.produced]], 'one info line: resuming')
    const two = await run(log, second.resume, ORIGIN + 12 * HOUR)
    t.equal(two.skipped, 0, 'nothing regenerated only to be skipped')
    await checkLog(t, log, 'ticks', reference(ORIGIN + 12 * HOUR))

    // A checkpoint behind the log (written periodically; the stop's write lost): resume there, skip what the log holds.
    await snapshots.write(SIMULATED_VENUE_STORE, MARKET_CHECKPOINT_SCHEMA, [], early.trimEnd().split('\n').slice(1, -1).map((l) => JSON.parse(l)))
    const third = await openResume(log, snapshots)
    t.equal(third.resume.from?.market.ticks, one.produced, 'a checkpoint behind the log is used')
    const three = await run(log, third.resume, ORIGIN + 14 * HOUR)
    t.equal(three.skipped, two.produced, 'the records after it that the log holds are skipped, not sent again')
    await checkLog(t, log, 'ticks', reference(ORIGIN + 14 * HOUR))

    // Written while appending (SVC_STATE_SNAPSHOT_S), not only at stop: a crash loses at most that much of the shortcut.
    let wall = 0
    const { logger } = capturingLogger()
    const periodic = await SimulatedVenueResume.open({ venue, snapshots, log, topic: 'ticks', everyMs: 1_000, logger, now: () => (wall += 400) })
    const four = await run(log, periodic, ORIGIN + 15 * HOUR, 'ticks', false)
    const kept = await openResume(log, snapshots)
    t.ok(kept.resume.from !== null && kept.resume.from.market.ticks > three.produced + two.produced + one.produced && kept.resume.from.market.ticks <= one.produced + two.produced + three.produced + four.produced, `a checkpoint written during the run, without a stop (line ${kept.resume.from?.market.ticks})`)
  })
})

t.test('a corrupt, old-schema, other-venue or ahead-of-log checkpoint: one log line saying why, then the history regenerated', async (t) => {
  await forEachLog(t, async (t, makeLog) => {
    const log = await makeLog()
    await log.ensureTopics([{ name: 'ticks', partitions: 3 }, { name: 'short', partitions: 3 }])
    const snapshots = await StateSnapshots.open(await makeTempDir(t, 'svc-sim-state-'))
    await run(log, (await openResume(log, snapshots)).resume, ORIGIN + 3 * HOUR)
    const good = await readSnapshot(snapshots, SIMULATED_VENUE_STORE)
    const inLog = (await readAll(log, 'ticks')).length

    const cases: Array<[string, () => Promise<void>, RegExp]> = [
      ['corrupt', () => spoilSnapshot(snapshots, SIMULATED_VENUE_STORE, good, 'corrupt'), /content hash/],
      ['old_schema', () => spoilSnapshot(snapshots, SIMULATED_VENUE_STORE, good, 'old_schema'), /state schema 0/],
      [
        'mismatch',
        async () => {
          const row = JSON.parse(good.split('\n')[1]!) as { seed: number }
          await snapshots.write(SIMULATED_VENUE_STORE, MARKET_CHECKPOINT_SCHEMA, [], [{ ...row, seed: 6 }])
        },
        /seed 6, this venue's is 5/,
      ],
    ]
    for (const [reason, spoil, detail] of cases) {
      await spoil()
      const { resume, lines } = await openResume(log, snapshots)
      t.equal(resume.from, null, `${reason}: not used`)
      t.equal(lines.length, 1, `${reason}: one log line`)
      t.match(lines[0], { level: 40, reason, detail, msg: /regenerating the history from the origin/ })
      const again = await run(log, resume, ORIGIN + 3 * HOUR, 'ticks', false)
      t.same({ skipped: again.skipped, produced: again.produced }, { skipped: inLog, produced: 0 }, `${reason}: the history regenerated from the origin (and skipped: it is all in the log)`)
    }

    // A log that holds less than the checkpoint says (truncated, replaced): regenerate, and append what it lacks.
    await snapshots.write(SIMULATED_VENUE_STORE, MARKET_CHECKPOINT_SCHEMA, [], good.trimEnd().split('\n').slice(1, -1).map((l) => JSON.parse(l)))
    await produceTape({ log, topic: 'short', source: () => venue.entries(), tapeId: venue.tapeId, until: ORIGIN + HOUR })
    const ahead = await openResume(log, snapshots, 'short')
    t.equal(ahead.resume.from, null, 'ahead_of_log: not used')
    t.equal(ahead.lines.length, 1, 'ahead_of_log: one log line')
    t.match(ahead.lines[0], { level: 40, reason: 'ahead_of_log', detail: /the log holds BTC's records/ })
    await run(log, ahead.resume, ORIGIN + 3 * HOUR, 'short')
    await checkLog(t, log, 'short', reference(ORIGIN + 3 * HOUR))
  })
})

// The state folder lost (a full rebuild): the history is regenerated from the origin and skipped, a checkpoint a minute
// with none durable until the first new record. Those used to pile up (2 GiB at a year) and be taken from the front
// one by one, quadratic: a rebuild of 365 days never became ready.
t.test('the state lost over a long history: the checkpoints waiting for the log stay bounded; the next start resumes near the end', async (t) => {
  const { makeLog } = await makeEmbeddedFactory(t)
  const log = await makeLog()
  await log.ensureTopics([{ name: 'ticks', partitions: 3 }])
  const snapshots = await StateSnapshots.open(await makeTempDir(t, 'svc-sim-state-'))
  const DAYS = 3
  const first = await openResume(log, snapshots)
  const one = await run(log, first.resume, ORIGIN + DAYS * 24 * HOUR, 'ticks', false)
  t.ok(one.produced > 0, `${one.produced} records of ${DAYS} days`)

  // No checkpoint: the start regenerates from the origin; watch the waiting checkpoints while it skips.
  const lost = await openResume(log, snapshots)
  t.equal(lost.resume.from, null, 'no checkpoint')
  let most = 0
  const source = lost.resume.source()
  const watched = () => {
    const it = source()[Symbol.iterator]()
    return { [Symbol.iterator]: () => ({ next: () => { most = Math.max(most, lost.resume.pending); return it.next() } }) }
  }
  const two = await produceTape({ log, topic: 'ticks', source: watched, tapeId: venue.tapeId, until: ORIGIN + (DAYS * 24 + 1) * HOUR, batchSize: 500, onDurable: (line) => lost.resume.onDurable(line) })
  t.equal(two.skipped, one.produced, 'the history in the log is skipped')
  t.ok(DAYS * 24 * 60 > MAX_PENDING_CHECKPOINTS, `${DAYS * 24 * 60} minutes skipped, more than ${MAX_PENDING_CHECKPOINTS}`)
  t.ok(most <= MAX_PENDING_CHECKPOINTS, `at most ${most} checkpoints waited for the log (bound ${MAX_PENDING_CHECKPOINTS})`)
  const total = one.produced + two.produced
  t.ok(lost.resume.line <= total && lost.resume.line > one.produced, `the checkpoint kept (line ${lost.resume.line}) is past the history skipped and not ahead of the log (${total})`)
  await lost.resume.save()
  const next = await openResume(log, snapshots)
  t.equal(next.resume.from?.market.ticks, lost.resume.line, 'the next start resumes from it')
  const three = await run(log, next.resume, ORIGIN + (DAYS * 24 + 2) * HOUR)
  t.ok(three.skipped < 2_000, `only the records after it are skipped (${three.skipped})`)
  await checkLog(t, log, 'ticks', reference(ORIGIN + (DAYS * 24 + 2) * HOUR))
})
