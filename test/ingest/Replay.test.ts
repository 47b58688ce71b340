/**
 * Replay with a virtual clock: order, pacing against the wall clock (lower bounds only, generous upper bounds),
 * the clock's value, resume by line and by predicate, abort, and the `svc replay` CLI.
 */
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { Replay } from '../../ingest/Replay.ts'
import { VirtualClock } from '../../ingest/VirtualClock.ts'
import { TapeWriter } from '../../ingest/TapeWriter.ts'
import { SyntheticMarket } from '../../ingest/SyntheticMarket.ts'
import type { Tick } from '../../ingest/Tick.ts'
import type { TapeEntry } from '../../ingest/TapeReader.ts'
import { SimulatedVenue } from '../../ingest/SimulatedVenue.ts'
import { tickLine } from '../../ingest/Tick.ts'
import { makeTempDir } from '../helpers/tmp.ts'
import { simulatedMid } from '../helpers/ticks.ts'

const REPO = fileURLToPath(new URL('../../', import.meta.url))
const run = promisify(execFile)
const T0 = Date.parse('2026-01-01T00:00:00Z')

const mid = simulatedMid

/** BTC and ETH mids every `stepMs` of event time over `spanMs`, two records per instant. */
async function writeTape(file: string, spanMs: number, stepMs: number): Promise<Tick[]> {
  const ticks: Tick[] = []
  for (let ms = 0; ms <= spanMs; ms += stepMs) ticks.push(mid('BTC', T0 + ms, 100_000 + ms / 1000), mid('ETH', T0 + ms, 3_000 + ms / 1000))
  const w = TapeWriter.open(file)
  for (const tick of ticks) await w.write(tick)
  await w.close()
  return ticks
}

t.test('VirtualClock: no time before the first record, never backwards', async (t) => {
  const clock = new VirtualClock()
  t.notOk(clock.started)
  t.throws(() => clock.now(), /no time yet/)
  clock.advanceTo(T0)
  t.equal(clock.now(), T0)
  t.equal(clock.nowIso(), '2026-01-01T00:00:00.000Z')
  clock.advanceTo(T0)
  t.throws(() => clock.advanceTo(T0 - 1), RangeError)
  t.equal(new VirtualClock(5).now(), 5)
})

t.test('speed 0 emits every record in tape order, and the clock follows event time', async (t) => {
  const dir = await makeTempDir(t)
  const file = join(dir, 'tape.ndjson')
  const ticks = await writeTape(file, 60_000, 1_000)
  const replay = new Replay({ tape: file, speed: 0 })
  const seen: TapeEntry[] = []
  let clockMatches = true
  const result = await replay.run((entry, clock) => {
    if (clock.now() !== entry.time) clockMatches = false
    seen.push(entry)
  })
  t.equal(seen.length, ticks.length)
  t.same(seen.map((e) => e.line), ticks.map((_, i) => i + 1), 'in line order')
  t.ok(seen.every((e, i) => i === 0 || e.time >= seen[i - 1]!.time), 'event time non-decreasing')
  t.ok(clockMatches, 'clock.now() is the record event time while the consumer runs')
  t.equal(replay.clock.now(), seen.at(-1)!.time, 'clock ends at the last emitted event time')
  t.same({ emitted: result.emitted, skipped: result.skipped, aborted: result.aborted, line: result.line }, { emitted: ticks.length, skipped: 0, aborted: false, line: ticks.length })
})

t.test('speed 60 paces by event time against the wall clock', async (t) => {
  const dir = await makeTempDir(t)
  const file = join(dir, 'tape.ndjson')
  // 90 event-seconds → 1.5 wall seconds at speed 60.
  await writeTape(file, 90_000, 15_000)
  const progress: number[] = []
  const replay = new Replay({ tape: file, speed: 60, progressEvery: 2, onProgress: (p) => progress.push(p.emitted) })
  const emittedAt: { event: number; wall: number }[] = []
  let start = 0
  const result = await replay.run((entry) => {
    const now = performance.now()
    if (emittedAt.length === 0) start = now
    emittedAt.push({ event: entry.time - T0, wall: now - start })
  })
  const elapsed = emittedAt.at(-1)!.wall
  t.ok(elapsed >= 1500 - 5, `last record no earlier than its schedule (${elapsed.toFixed(0)} ms ≥ 1500 ms)`)
  t.ok(elapsed < 15_000, 'and not wildly late (a generous bound: this machine is shared)')
  t.ok(emittedAt.every((e) => e.wall >= e.event / 60 - 5), 'no record emitted before its wall time')
  t.ok(emittedAt.every((e, i) => i === 0 || e.event >= emittedAt[i - 1]!.event), 'in event order')
  t.equal(replay.clock.now(), T0 + 90_000)
  t.equal(result.emitted, 14)
  t.same(progress, [2, 4, 6, 8, 10, 12, 14, 14], 'progress every 2 records and once at the end')
  t.ok(result.wallElapsedMs >= 1495)
})

t.test('paceFrom: history before it at full speed, pacing anchored at its first record', async (t) => {
  const dir = await makeTempDir(t)
  const file = join(dir, 'tape.ndjson')
  // An hour of history (at speed 60 it would take a minute), then 60 paced event-seconds → ≥ 1 wall second.
  const ticks = await writeTape(file, 3_660_000, 15_000)
  const paceFrom = T0 + 3_600_000
  const emittedAt: { event: number; wall: number }[] = []
  const started = performance.now()
  const result = await new Replay({ tape: file, speed: 60, paceFrom }).run((entry) => void emittedAt.push({ event: entry.time, wall: performance.now() - started }))
  t.equal(result.emitted, ticks.length)
  const firstPaced = emittedAt.find((e) => e.event >= paceFrom)!
  t.ok(firstPaced.wall < 2_000, `an hour of history went at full speed (${firstPaced.wall.toFixed(0)} ms)`)
  const last = emittedAt.at(-1)!
  t.ok(last.wall - firstPaced.wall >= 1000 - 5, `then paced: 60 event-seconds took ${(last.wall - firstPaced.wall).toFixed(0)} ms at speed 60`)
  t.ok(
    emittedAt.filter((e) => e.event >= paceFrom).every((e) => e.wall - firstPaced.wall >= (e.event - paceFrom) / 60 - 5),
    'no paced record before its wall time',
  )
})

t.test('resume: fromLine and a skip predicate', async (t) => {
  const dir = await makeTempDir(t)
  const file = join(dir, 'tape.ndjson')
  const ticks = await writeTape(file, 10_000, 1_000)

  const resumed: number[] = []
  const r1 = await new Replay({ tape: file, fromLine: 7 }).run((e) => void resumed.push(e.line))
  t.same(resumed, ticks.map((_, i) => i + 1).filter((l) => l > 7))
  t.equal(r1.skipped, 7)

  const clock = new VirtualClock()
  const eth: TapeEntry[] = []
  const r2 = await new Replay({ tape: file, clock, skip: (e) => e.tick.asset !== 'ETH' || e.time < T0 + 5_000 }).run((e) => void eth.push(e))
  t.ok(eth.length === 6 && eth.every((e) => e.tick.asset === 'ETH' && e.time >= T0 + 5_000))
  t.equal(r2.skipped, ticks.length - 6)
  t.equal(clock.now(), T0 + 10_000, 'a caller-supplied clock is driven')

  // Resuming a resumed run: skipped records do not move the clock.
  const late = new Replay({ tape: file, fromLine: ticks.length })
  const r3 = await late.run(() => {
    t.fail('nothing left to emit')
  })
  t.equal(r3.emitted, 0)
  t.notOk(late.clock.started)
})

t.test('an AbortSignal stops the replay, also mid-sleep', async (t) => {
  const dir = await makeTempDir(t)
  const file = join(dir, 'tape.ndjson')
  // 60 event-seconds at speed 1: a full run would take a minute.
  const ticks = await writeTape(file, 60_000, 10_000)
  const controller = new AbortController()
  const started = performance.now()
  setTimeout(() => controller.abort(), 300)
  const seen: number[] = []
  const result = await new Replay({ tape: file, speed: 1, signal: controller.signal }).run((e) => void seen.push(e.time))
  const took = performance.now() - started
  t.ok(result.aborted)
  t.ok(seen.length >= 2 && seen.length < ticks.length, `stopped after ${seen.length} records`)
  t.ok(seen.every((time) => time === T0), 'only the first instant was due')
  t.ok(took < 30_000, `returned long before the minute a full run takes (${took.toFixed(0)} ms)`)

  // Aborting from the consumer.
  const c2 = new AbortController()
  const r2 = await new Replay({ tape: file, signal: c2.signal }).run((e) => {
    if (e.line === 3) c2.abort()
  })
  t.equal(r2.emitted, 3)
  t.ok(r2.aborted)
})

t.test('options are validated and errors name the field', async (t) => {
  t.throws(() => new Replay({ tape: 'x', speed: -1 }), /Replay options\/speed/)
  t.throws(() => new Replay({ tape: 'x', fromLine: 1.5 }), /Replay options\/fromLine/)
  t.throws(() => new Replay({ tape: '' }), /Replay options\/tape/)
  t.throws(() => new Replay({}), /needs exactly one of tape and source/)
  t.throws(() => new Replay({ tape: 'x', source: () => [] }), /needs exactly one of tape and source/)
  t.throws(() => new Replay({ tape: 'x', skip: 3 as never }), /Replay options\/skip/)
})

t.test('svc replay prints the tape byte for byte, paced', async (t) => {
  const dir = await makeTempDir(t)
  const file = join(dir, 'gen.ndjson.gz')
  const plain = join(dir, 'gen.ndjson')
  for (const out of [file, plain]) {
    const w = TapeWriter.open(out)
    await new SyntheticMarket({ seed: 3, hours: 0.05, assets: ['BTC', 'ETH'] }).writeTo(w)
    await w.close()
  }
  // 3 minutes on the grid: records from minute 1 to minute 3 → 120 event-seconds → ≥ 1 s at speed 120.
  const started = performance.now()
  const { stdout } = await run(process.execPath, ['bin/svc.js', 'replay', '--tape', file, '--speed', '120'], { cwd: REPO, maxBuffer: 1 << 26 })
  const took = performance.now() - started
  t.equal(stdout, await readFile(plain, 'utf8'))
  t.ok(took >= 1000, `paced: ${took.toFixed(0)} ms for 120 event-seconds at speed 120`)

  const resumed = await run(process.execPath, ['bin/svc.js', 'replay', '--tape', plain, '--speed', '0', '--from-line', '5'], { cwd: REPO })
  t.equal(resumed.stdout, (await readFile(plain, 'utf8')).split('\n').slice(5).join('\n'))
})

t.test('live: history at once, each later record when the clock reaches it; a batching consumer flushes before each wait', async (t) => {
  // A present the test moves by hand: records at or before it are history, the rest wait for it.
  let now = T0 + 10_000
  const clock = { now: () => now }
  const entries: TapeEntry[] = [0, 5_000, 10_000, 20_000, 30_000].map((ms, i) => {
    const tick = mid('BTC', T0 + ms, 100_000 + i)
    return { line: i + 1, tick, raw: tickLine(tick), time: T0 + ms }
  })
  const seen: Array<{ line: number; at: number }> = []
  const events: string[] = []
  const replay = new Replay({
    source: () => entries,
    liveClock: clock,
    maxSleepMs: 5,
    beforeWait: () => void events.push(`flush after ${seen.length}`),
  })
  const done = replay.run((entry) => {
    seen.push({ line: entry.line, at: now })
    events.push(`record ${entry.line}`)
  })
  await new Promise((r) => setTimeout(r, 50))
  t.same(seen.map((s) => s.line), [1, 2, 3], 'the history up to the present, without waiting')
  now = T0 + 20_000
  await new Promise((r) => setTimeout(r, 50))
  t.same(seen.map((s) => s.line), [1, 2, 3, 4], 'the next record once the clock reached its time')
  now = T0 + 31_000
  const result = await done
  t.equal(result.emitted, 5)
  t.ok(seen.every((s) => s.at >= entries[s.line - 1]!.time), 'no record before its time')
  t.same(events, ['record 1', 'record 2', 'record 3', 'flush after 3', 'record 4', 'flush after 4', 'record 5'], 'the consumer may send what it holds before every wait')
})

t.test('SimulatedVenue: the synthetic market from its origin, numbered like tape lines, the same after a restart', async (t) => {
  const origin = Date.parse('2026-03-01T00:00:00Z')
  const venue = new SimulatedVenue({ seed: 4, assets: ['BTC', 'SOL'], originMs: origin })
  t.equal(venue.tapeId, 'sim-s4-20260301T000000Z')
  t.equal(SimulatedVenue.originBefore(Date.parse('2026-03-05T10:20:30.400Z'), 4 * 86_400_000), Date.parse('2026-03-01T00:00:00Z'), 'history floored to the UTC day')
  t.throws(() => new SimulatedVenue({ seed: 4, assets: ['BTC'], originMs: origin + 1 }), /whole minute/)
  const reference = [...new SyntheticMarket({ seed: 4, hours: 0.5, assets: ['BTC', 'SOL'], start: '2026-03-01T00:00:00Z' }).ticks()]
  const take = (v: SimulatedVenue) => {
    const out: TapeEntry[] = []
    for (const e of v.entries()) {
      if (out.length === reference.length) break
      out.push(e)
    }
    return out
  }
  const first = take(venue)
  t.same(first.map((e) => e.line), reference.map((_, i) => i + 1))
  t.same(first.map((e) => e.raw), reference.map(tickLine), 'the same records as the market run from the origin')
  t.same(take(new SimulatedVenue({ seed: 4, assets: ['BTC', 'SOL'], originMs: origin })).map((e) => e.raw), first.map((e) => e.raw), 'deterministic: a restart regenerates the same history')
})
