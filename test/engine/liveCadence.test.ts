/**
 * The engine's rules on the live venue (EngineRunner `live`), over the recorded OKX SOL tape (1 h bars, 8 h funding):
 * - cadence decisions are made live or not at all: ticks received hours after their grid instant (a backfill, a gap
 *   repaired over REST) decide nothing;
 * - a grid instant no tick passed is decided by the clock after the delay, from what the engine holds: stale_input
 *   once the bars are past their budget; an instant further back than the delay plus the tolerance is skipped;
 * - one cadence decision per instant, whichever came first (a late tick after the clock decided it adds no row);
 * - API decisions are made at the clock's present, so a feed that stopped shows its age;
 * - a restart re-derives the same rows and writes none.
 */
import t from 'tap'
import { EngineRunner } from '../../engine/EngineRunner.ts'
import { isoMs, tickTime, type Tick } from '../../ingest/Tick.ts'
import { EmbeddedLog } from '../../pipeline/log/EmbeddedLog.ts'
import type { LedgerDecision } from '../../pipeline/records/decisionRecord.ts'
import { decideNow, produceTicks, solTicksBetween } from '../helpers/engine.ts'
import { releaseOf } from '../helpers/release.ts'
import { makeTempDir } from '../helpers/tmp.ts'

const TRAIN_UNTIL = Date.parse('2026-06-20T00:00:00Z')
const S01 = 'S01_market_regime'

async function until(what: string, cond: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/**
 * Live traffic: the venue's trades and books arrive all the time, so the first tick past a grid instant comes a moment
 * after it. A bar-only tape has none (its next tick is the next bar, an hour on): a mid tick a second after each bar
 * close stands for them.
 */
function withPulses(bars: readonly Tick[]): Tick[] {
  const out: Tick[] = []
  for (const x of bars) {
    out.push(x)
    if (x.kind !== 'bar') continue
    const at = isoMs(tickTime(x) + 1000)
    out.push({ v: 1, kind: 'mid', asset: x.asset, instrument: x.instrument, price: x.close, provenance: { ...x.provenance, timestamp: at, received_at: at } })
  }
  return out
}

/** The same ticks as if they reached the service at `receivedAt` (a gap repaired over REST). */
function receivedAt(ticks: readonly Tick[], at: string): Tick[] {
  return ticks.map((x) => ({ ...x, provenance: { ...x.provenance, received_at: isoMs(Math.max(tickTime(x), Date.parse(at))) } }) as Tick)
}

t.test('live cadence: decided live or by the clock, never backdated, once per instant; asks in the present', async (t) => {
  const dataDir = await makeTempDir(t, 'svc-live-cadence-')
  const log = await EmbeddedLog.open(`${dataDir}/log`)
  t.teardown(() => log.close())
  let now = Date.parse('2026-07-01T00:00:30Z')
  const clock = { now: () => now }
  const live = { clock, checkEveryMs: 20 }
  const decisionsOf = new WeakMap<EngineRunner, LedgerDecision[]>()
  /** Every decision the runner's ledger holds (the bus replays the ledger to a new subscriber, then each new one). */
  const watch = (runner: EngineRunner) => {
    const seen: LedgerDecision[] = []
    decisionsOf.set(runner, seen)
    runner.ledger.bus.decisions.subscribe('test', (d) => void seen.push(d))
  }
  const cadenceOf = (runner: EngineRunner, at: string) =>
    decisionsOf.get(runner)!.filter((d) => d.question_id === S01 && d.asset === 'SOL' && d.payment_rail === 'none' && d.created_at === new Date(at).toISOString())
  const atHour = (h: number) => `2026-07-01T${String(h).padStart(2, '0')}:00:00Z`

  // History up to the first live instant, received as it happened.
  await produceTicks(log, withPulses(await solTicksBetween('2026-03-01T00:00:00Z', '2026-07-01T00:00:01Z')))
  const release = await releaseOf(await solTicksBetween('2026-03-01T00:00:00Z', '2026-07-01T00:00:01Z'), TRAIN_UNTIL)
  let runner = await EngineRunner.start({ log, dataDir, trainUntil: TRAIN_UNTIL, live, accountResolveIntervalMs: 0, release })
  watch(runner)
  await runner.waitForTicks()
  t.ok(runner.stats().decisionsStaged > 0, `cadence decided on live ticks (${runner.stats().decisionsStaged})`)
  t.equal(runner.stats().cadenceSkippedNotLive, 0, 'nothing skipped while ticks arrive on time')
  t.equal(cadenceOf(runner, atHour(0)).length, 1, '00:00 decided by the tick just after it')

  // The venue was down from 00:00 to 06:00; at 06:02 a repair fetches its bars: no decision at their instants.
  now = Date.parse('2026-07-01T06:02:00Z')
  await produceTicks(log, receivedAt(await solTicksBetween('2026-07-01T00:00:01Z', '2026-07-01T06:00:01Z'), '2026-07-01T06:02:00Z'), 'repair')
  await runner.waitForTicks()
  for (let h = 1; h <= 5; h++) t.same(cadenceOf(runner, atHour(h)), [], `no backdated decision at 0${h}:00`)
  t.ok(runner.stats().cadenceSkippedNotLive >= 5, `instants skipped as not live (${runner.stats().cadenceSkippedNotLive})`)

  // The feed stops after 06:00. At 09:05:30 the instant 09:00 is decided by the clock, from bars three hours old (past
  // the 2 h 1 min budget): stale_input. 06:00, 07:00 and 08:00 are further back than the delay plus the tolerance:
  // missed, never decided late.
  now = Date.parse('2026-07-01T09:05:30Z')
  await until('the clock decides 09:00', () => cadenceOf(runner, atHour(9)).length === 1)
  const byClock = cadenceOf(runner, atHour(9))[0]!
  t.equal(byClock.decision, 'stale_input', 'decided by the clock with stale bars: a stale_input refusal')
  t.equal(byClock.refusal_reason, 'input_stale:bars')
  for (const h of [6, 7, 8]) t.same(cadenceOf(runner, atHour(h)), [], `0${h}:00 missed, not decided late`)
  t.ok(runner.stats().cadenceByClock >= 1)

  // An ask now is made at the clock's present: the same stale bars, the same refusal (never a claim on old data).
  const ask = await decideNow(runner.engine, { question_id: S01, asset: 'SOL' })
  t.equal(ask.record.created_at, isoMs(now), 'an ask is made at the present')
  t.equal(ask.record.decision, 'stale_input')

  // The feed comes back: bars from 06:00 to 09:00 received at 09:04 (within the tolerance of 09:00, which the clock has
  // decided: still one row), then live again at 10:00.
  await produceTicks(log, receivedAt(await solTicksBetween('2026-07-01T06:00:01Z', '2026-07-01T09:00:01Z'), '2026-07-01T09:04:00Z'), 'back')
  await produceTicks(log, withPulses(await solTicksBetween('2026-07-01T09:00:01Z', '2026-07-01T10:00:01Z')), 'live')
  now = Date.parse('2026-07-01T10:00:30Z')
  await runner.waitForTicks()
  t.equal(cadenceOf(runner, atHour(9)).length, 1, '09:00 keeps its one decision: the late ticks add none')
  t.equal(cadenceOf(runner, atHour(9))[0]!.decision_id, byClock.decision_id)
  t.equal(cadenceOf(runner, atHour(10)).length, 1, '10:00 decided by its tick, received on time')
  for (const h of [6, 7, 8]) t.same(cadenceOf(runner, atHour(h)), [], `0${h}:00 still not decided`)

  // A restart re-reads the whole log: the same rows, none new.
  const rows = runner.ledger.index.size.decisions
  await runner.close()
  runner = await EngineRunner.start({ log, dataDir, trainUntil: TRAIN_UNTIL, live, accountResolveIntervalMs: 0, release })
  t.teardown(() => runner.close())
  watch(runner)
  await runner.waitForTicks()
  await new Promise((r) => setTimeout(r, 200)) // the clock's checks run: nothing is due
  t.equal(runner.ledger.index.size.decisions, rows, 'the restart wrote no decision')
  t.equal(runner.stats().decisionsStaged, 0)
  t.equal(cadenceOf(runner, atHour(9)).length, 1, 'the clock-made decision stands after the restart')
})
