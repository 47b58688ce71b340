/**
 * The engine as a checkpointed processor (issue 31), on both logs, over the recorded OKX SOL tape with a served
 * release (so there are claims, clocks and outcomes):
 * - for seeded random cut points, state from (snapshot at the cut + the tail) has the digest of the reference run that
 *   read everything in one go, and the ledger rows (decisions, outcomes) are identical with no duplicate — including a
 *   crash after a periodic snapshot (the ledger holds rows past the snapshot: the tail re-derives them, deduped);
 * - the training-cut hook runs once along the chain (never again after a restore past the cut);
 * - a corrupt, old-schema or ahead-of-log snapshot falls back to the full rebuild with one log line and the same state
 *   (and no new ledger row);
 * - the final snapshot reflects every tick;
 * - a stop while the training-cut hook runs leaves the tick past the cut unread: the next start runs the hook and
 *   ends in the reference state; a restore past the cut then runs it no more.
 * Cut seed: CKPT_SEED (default 31).
 */
import t from 'tap'
import pino from 'pino'
import { copyFile, readFile, writeFile } from 'node:fs/promises'
import { tickKey, tickTime, type Tick } from '../../ingest/Tick.ts'
import { EngineRunner } from '../../engine/EngineRunner.ts'
import type { ServedRelease } from '../../engine/ServedRelease.ts'
import type { EventLog } from '../../pipeline/log/EventLog.ts'
import { StateSnapshots } from '../../pipeline/state/StateSnapshots.ts'
import { stateDigest } from '../../pipeline/state/StateStore.ts'
import { encodeTickEnvelope } from '../../pipeline/TickEnvelope.ts'
import { topicNames, topicSpecs, type TopicNames } from '../../pipeline/topics.ts'
import { resealed } from '../helpers/checkpoint.ts'
import { forEachLog, readAll } from '../helpers/logs.ts'
import { makeTempDir } from '../helpers/tmp.ts'
import { solTicksBetween } from '../helpers/engine.ts'
import { H, T0, mergeTicks, syntheticBars, syntheticFunding } from '../helpers/ticks.ts'
import { EmbeddedLog } from '../../pipeline/log/EmbeddedLog.ts'
import { join } from 'node:path'
import { releaseOf } from '../helpers/release.ts'

const TRAIN_UNTIL = Date.parse('2026-06-10T00:00:00Z')
const SEED = Number(process.env.CKPT_SEED ?? 31)

function lcg(seed: number): () => number {
  let x = seed >>> 0
  return () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32
}

async function produce(log: EventLog, names: TopicNames, ticks: readonly Tick[], seq0: number): Promise<void> {
  await log.ensureTopics(topicSpecs(names, 3))
  const producer = await log.createProducer()
  try {
    for (let i = 0; i < ticks.length; i += 2000) {
      const slice = ticks.slice(i, i + 2000)
      await producer.send(names.ticks, slice.map((tick, j) => ({ key: tickKey(tick), value: encodeTickEnvelope({ seq: seq0 + i + j + 1, tape: 'ckpt', tick }), timestamp: tickTime(tick) })))
    }
  } finally {
    await producer.close()
  }
}

/** The ledger as written: every decision and outcome record's bytes, sorted, and whether any decision_id repeats. */
async function ledgerRows(log: EventLog, names: TopicNames): Promise<{ decisions: string[]; outcomes: string[]; duplicates: number }> {
  const decisions = (await readAll(log, names.decisions)).map((r) => r.value.toString('utf8')).sort()
  const outcomes = (await readAll(log, names.outcomes)).map((r) => r.value.toString('utf8')).sort()
  const ids = (rows: string[]) => rows.map((r) => (JSON.parse(r) as { decision_id: string }).decision_id)
  const duplicates = decisions.length - new Set(ids(decisions)).size + (outcomes.length - new Set(ids(outcomes)).size)
  return { decisions, outcomes, duplicates }
}

/** A logger whose lines land in `lines` (level ≥ info). */
function capture(lines: Array<{ level: number; msg: string; reason?: string }>) {
  return pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) })
}

t.test('snapshot at random cuts + tail == full rebuild, same ledger; bad snapshots rebuild', async (t) => {
  const ticks = await solTicksBetween('2025-11-01', '2026-07-10')
  const release: ServedRelease = await releaseOf(ticks.filter((x) => tickTime(x) <= TRAIN_UNTIL), TRAIN_UNTIL)
  const rnd = lcg(SEED)
  const firstPast = ticks.findIndex((x) => tickTime(x) > TRAIN_UNTIL)
  // One cut before the training cut, one after it (restored past it: the hook must not rerun), then a crash a bit later.
  const cut1 = 1 + Math.floor(rnd() * (firstPast - 1))
  const cut2 = firstPast + 1 + Math.floor(rnd() * (ticks.length - firstPast - 400))
  const cut3 = cut2 + 1 + Math.floor(rnd() * 300)
  t.comment(`seed ${SEED}: ${ticks.length} ticks, cuts at ${cut1}, ${cut2} (snapshot, then a crash at ${cut3})`)

  await forEachLog(t, async (t, makeLog) => {
    const log = await makeLog()
    const dataDir = await makeTempDir(t)

    // Reference: one engine reads the whole history (no checkpoints: today's path).
    const refNames = topicNames({ ticks: 'ref.ticks', decisions: 'ref.decisions', outcomes: 'ref.outcomes' })
    await produce(log, refNames, ticks, 0)
    const ref = await EngineRunner.start({ log, dataDir, names: refNames, trainUntil: TRAIN_UNTIL, release, groupId: 'ref.engine', accountResolveIntervalMs: 0 })
    await ref.waitForTicks(300_000)
    const reference = stateDigest(ref.tickState)
    const refStats = ref.stats()
    await ref.close()
    const refLedger = await ledgerRows(log, refNames)
    t.ok(refStats.decisionsStaged > 500 && refStats.outcomesStaged > 300, `reference: ${refStats.ticks} ticks, ${refStats.decisionsStaged} decisions, ${refStats.outcomesStaged} outcomes`)
    t.equal(refLedger.duplicates, 0)

    // The chain: each start restores the previous snapshot and reads the tail.
    const names = topicNames({ ticks: 'cut.ticks', decisions: 'cut.decisions', outcomes: 'cut.outcomes' })
    const snapshots = await StateSnapshots.open(await makeTempDir(t))
    const checkpoints = { snapshots, everyMs: 0 }
    let hookRuns = 0
    const atCut = async () => {
      hookRuns++
    }
    const start = (lines: Array<{ level: number; msg: string; reason?: string }> = []) =>
      EngineRunner.start({ log, dataDir, names, trainUntil: TRAIN_UNTIL, release, atCut, checkpoints, stateLogger: capture(lines), accountResolveIntervalMs: 0 })

    await produce(log, names, ticks.slice(0, cut1), 0)
    let runner = await start()
    t.equal(runner.restored?.restored, false, 'first start: nothing to restore')
    await runner.waitForTicks(300_000)
    await runner.close() // the final snapshot
    t.equal(hookRuns, 0, 'the cut is not passed yet')

    await produce(log, names, ticks.slice(cut1, cut2), cut1)
    runner = await start()
    t.equal(runner.restored?.restored, true, `restored at ${cut1}`)
    t.same(runner.restored?.from.map((p) => p.next).reduce((a, b) => a + b, 0), cut1, 'the tail starts after the snapshot')
    await runner.waitForTicks(300_000)
    t.equal(hookRuns, 1, 'the hook ran when the cut was passed')
    await runner.checkpoint() // a periodic snapshot at cut2 ...
    const path = snapshots.pathOf(runner.tickState.name)
    await copyFile(path, `${path}.at-cut2`)
    await produce(log, names, ticks.slice(cut2, cut3), cut2)
    await runner.waitForTicks(300_000) // ... then more decisions and outcomes reach the ledger ...
    await runner.close()
    await copyFile(`${path}.at-cut2`, path) // ... and the process dies before the next snapshot.

    await produce(log, names, ticks.slice(cut3), cut3)
    runner = await start()
    t.equal(runner.restored?.restored, true, `restored at ${cut2} with the ledger ahead of it`)
    await runner.waitForTicks(300_000)
    t.equal(hookRuns, 1, 'no second hook after a restore past the cut')
    t.equal(stateDigest(runner.tickState), reference, 'snapshot + tail == the reference state')
    t.equal(runner.stats().ticks, refStats.ticks, 'every tick counted once')
    await runner.close()
    const chainLedger = await ledgerRows(log, names)
    t.equal(chainLedger.duplicates, 0, 'no decision or outcome twice')
    t.equal(chainLedger.decisions.length, refLedger.decisions.length, `${refLedger.decisions.length} decisions`)
    t.equal(chainLedger.outcomes.length, refLedger.outcomes.length, `${refLedger.outcomes.length} outcomes`)
    t.ok(chainLedger.decisions.every((d, i) => d === refLedger.decisions[i]) && chainLedger.outcomes.every((o, i) => o === refLedger.outcomes[i]), 'the same rows, byte for byte')

    // The final snapshot's positions are the group's committed ones (a restart without it resumes there too).
    const good = await readFile(path, 'utf8')
    const header = JSON.parse(good.slice(0, good.indexOf('\n'))) as { positions: Array<{ next: number }> }
    t.equal(header.positions.reduce((a, p) => a + p.next, 0), ticks.length, 'the final snapshot reflects every tick')

    // A restart from the final snapshot reads no tick (what a restart costs, beside the rebuilds below).
    let t0 = performance.now()
    runner = await start()
    await runner.waitForTicks(300_000)
    const restartMs = performance.now() - t0
    t.equal(runner.restored?.restored, true)
    t.equal(stateDigest(runner.tickState), reference, 'a restart with an empty tail holds the reference state')
    await runner.close()

    // Bad snapshots: one line saying why, then the full rebuild, the same state and no new ledger row.
    const variants: Array<[string, string]> = [
      ['corrupt', good.replace('"serving":true', '"serving":false')],
      ['old_schema', resealed(good.replace('"schema":1', '"schema":0'))],
      ['ahead_of_log', resealed(good.replace(/"next":(\d+)/, (_, n) => `"next":${Number(n) + 100000}`))],
      ['load_failed', resealed(good.replace('["resolution",', '["resolutio",'))],
    ]
    for (const [reason, body] of variants) {
      await writeFile(path, body)
      const lines: Array<{ level: number; msg: string; reason?: string }> = []
      t0 = performance.now()
      const r = await start(lines)
      t.equal(r.restored?.reason, reason, `${reason}: refused with its reason`)
      const said = lines.filter((l) => l.level >= 40)
      t.equal(said.length, 1, `${reason}: one warning`)
      t.equal(said[0]?.reason, reason)
      await r.waitForTicks(300_000)
      if (reason === 'corrupt') t.comment(`${ticks.length} ticks: restart from the snapshot ${restartMs.toFixed(0)} ms, full rebuild ${(performance.now() - t0).toFixed(0)} ms (start to caught up)`)
      t.equal(stateDigest(r.tickState), reference, `${reason}: the rebuild gives the same state`)
      await r.close()
      await writeFile(path, good)
    }
    const after = await ledgerRows(log, names)
    t.equal(after.decisions.length + after.outcomes.length, chainLedger.decisions.length + chainLedger.outcomes.length, 'the rebuilds wrote no ledger row')
  })
})

t.test('a stop during the training-cut hook: the cut is not passed in the snapshot, the next start runs the hook', async (t) => {
  const ticks = mergeTicks(syntheticBars('BTC', 24 * 6), syntheticFunding('ETH', 24 * 6))
  const trainUntil = T0 + 72 * H
  const log = await EmbeddedLog.open(join(await makeTempDir(t), 'log'))
  t.teardown(() => log.close())
  const dataDir = await makeTempDir(t)

  const refNames = topicNames({ ticks: 'ref.ticks', decisions: 'ref.decisions', outcomes: 'ref.outcomes' })
  await produce(log, refNames, ticks, 0)
  const ref = await EngineRunner.start({ log, dataDir, names: refNames, trainUntil, groupId: 'ref.engine', accountResolveIntervalMs: 0 })
  await ref.waitForTicks()
  const reference = stateDigest(ref.tickState)
  await ref.close()

  const names = topicNames({ ticks: 'cut.ticks', decisions: 'cut.decisions', outcomes: 'cut.outcomes' })
  await produce(log, names, ticks, 0)
  const snapshots = await StateSnapshots.open(await makeTempDir(t))
  let calls = 0
  let hang = true
  const atCut = async (_cut: number, signal: AbortSignal) => {
    calls++
    // The first run's hook is still working when the stop comes (the bootstrap release takes minutes).
    if (hang) await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))
  }
  const start = () => EngineRunner.start({ log, dataDir, names, trainUntil, atCut, checkpoints: { snapshots, everyMs: 0 }, accountResolveIntervalMs: 0 })
  let runner = await start()
  for (let i = 0; calls === 0 && i < 1500; i++) await new Promise((r) => setTimeout(r, 20))
  t.equal(calls, 1, 'the hook started')
  await runner.close()
  const path = snapshots.pathOf(runner.tickState.name)
  const body = await readFile(path, 'utf8')
  const header = JSON.parse(body.slice(0, body.indexOf('\n'))) as { positions: Array<{ next: number }> }
  t.ok(header.positions.reduce((a, p) => a + p.next, 0) < ticks.length, 'the snapshot stops before the tick past the cut')
  t.notMatch(body, /"serving":true/, 'no asset has passed its cut in the snapshot')

  hang = false
  runner = await start()
  t.equal(runner.restored?.restored, true)
  await runner.waitForTicks()
  t.equal(calls, 2, 'the next start ran the hook')
  t.equal(stateDigest(runner.tickState), reference, 'and ends in the reference state')
  await runner.close()

  runner = await start()
  t.equal(runner.restored?.restored, true)
  await runner.waitForTicks()
  t.equal(calls, 2, 'a restore past the cut does not run it again')
  await runner.close()
})

t.test('periodic snapshots while the consumer is busy: taken at a batch end, and the last one reflects every tick', async (t) => {
  const ticks = mergeTicks(syntheticBars('BTC', 24 * 20), syntheticFunding('ETH', 24 * 20))
  const log = await EmbeddedLog.open(join(await makeTempDir(t), 'log'))
  t.teardown(() => log.close())
  const names = topicNames({ ticks: 'p.ticks', decisions: 'p.decisions', outcomes: 'p.outcomes' })
  await produce(log, names, ticks, 0)
  const snapshots = await StateSnapshots.open(await makeTempDir(t))
  const runner = await EngineRunner.start({ log, dataDir: null, names, trainUntil: T0 + 72 * H, checkpoints: { snapshots, everyMs: 5 }, accountResolveIntervalMs: 0 })
  await runner.waitForTicks()
  let next = 0
  for (let i = 0; next < ticks.length && i < 500; i++) {
    await new Promise((r) => setTimeout(r, 20))
    const read = await snapshots.read(runner.tickState.name, runner.tickState.schema)
    if (read.ok) next = read.header.positions.reduce((a, p) => a + p.next, 0)
  }
  t.equal(next, ticks.length, 'a periodic snapshot (no stop) reflects every tick')
  const digest = stateDigest(runner.tickState)
  await runner.close()
  const again = await EngineRunner.start({ log, dataDir: null, names, trainUntil: T0 + 72 * H, checkpoints: { snapshots, everyMs: 5 }, accountResolveIntervalMs: 0 })
  t.teardown(() => again.close())
  await again.waitForTicks()
  t.equal(again.restored?.restored, true)
  t.equal(stateDigest(again.tickState), digest, 'restored from it: the same state')
})
