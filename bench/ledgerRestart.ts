/**
 * The ledger's in-memory parts at a restart on a long ledger (issue 31, item 2).
 *
 * Part 1, the live streams: how long LedgerStreams.open takes, how many records
 * it reads and how much heap its window holds, with the bounded window (the default) beside following both journals
 * from the beginning and keeping every record (what the streams did before: window unbounded), on the same ledger in
 * the same run; then a resume from the very beginning (a cursor older than the window), read from the log.
 *
 * Part 2, the rest of engine/ at the same restart (measured, not changed): DecisionLedger.open rebuilding its index from
 * the log and from its state snapshot (time, records held, heap), and the LedgerBus replay every subscriber gets at
 * subscribe (events, time, the heap of the subscriber's delivered-id set).
 *
 * The ledger: `decisions` claims spread evenly over `days` of event time, each resolved (1M calls a year is about
 * 2,740 a day: 35 days ≈ 96,000), on an embedded log, written through DecisionLedger as the engine writes them.
 *
 *   node --expose-gc --import tsx bench/ledgerRestart.ts [decisions] [days]
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { encodeCursor } from '../common/Cursor.ts'
import { DecisionLedger } from '../engine/DecisionLedger.ts'
import { LedgerStreams, type LedgerStreamWindow } from '../engine/LedgerStreams.ts'
import { openClockOf } from '../engine/LedgerView.ts'
import { QuestionCatalog } from '../engine/QuestionCatalog.ts'
import { EmbeddedLog } from '../pipeline/log/EmbeddedLog.ts'
import { StateSnapshots } from '../pipeline/state/StateSnapshots.ts'
import type { LedgerDecision } from '../pipeline/records/decisionRecord.ts'
import { appendLedgerHistory } from './ledgerRecords.ts'

const ASSETS = ['BTC', 'ETH', 'SOL']
const decisions = Number(process.argv[2] ?? 96_000)
const days = Number(process.argv[3] ?? 35)

const gc = (globalThis as { gc?: () => void }).gc
const heapMb = () => {
  gc?.()
  return process.memoryUsage().heapUsed / 2 ** 20
}

const dir = await mkdtemp(join(tmpdir(), 'svc-bench-streams-start-'))
try {
  const log = await EmbeddedLog.open(dir)
  let ledger: DecisionLedger | null = await DecisionLedger.open({ log })
  const t0 = performance.now()
  await appendLedgerHistory(ledger, days, decisions, ASSETS)
  console.log(`ledger: ${decisions} decisions and their outcomes over ${days} days, written in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
  const catalog = new QuestionCatalog()
  const clockOf = (d: LedgerDecision) => openClockOf(catalog, d)

  const run = async (label: string, window: LedgerStreamWindow) => {
    const before = heapMb()
    const t1 = performance.now()
    const streams = await LedgerStreams.open({ ledger: ledger!, clockOf, window })
    const ms = performance.now() - t1
    const held = heapMb() - before
    console.log(`${label}: start ${ms.toFixed(0)} ms, ${streams.size.read} records read, ${streams.size.entries} in memory, heap +${held.toFixed(1)} MB`)
    return streams
  }
  const full = await run('from the beginning, every record kept (before)', { ms: Number.POSITIVE_INFINITY, entries: Number.POSITIVE_INFINITY, restartRecords: Number.POSITIVE_INFINITY })
  await full.close()
  const bounded = await run('bounded window (defaults)', {})

  // A resume from the very beginning: every resolution read back from the log through the cold path.
  const zero = encodeCursor('feed', new Array<number>(6).fill(0))
  const cold = bounded.feed.reader(zero, 'cursor')
  const t2 = performance.now()
  let events = 0
  for (;;) {
    const { events: got, done, wait } = cold.next(256)
    events += got.length
    if (done) break
    if (wait) await wait
  }
  cold.close?.()
  const coldMs = performance.now() - t2
  console.log(`resume from the beginning: ${events} events in ${(coldMs / 1000).toFixed(1)} s (${Math.round(events / (coldMs / 1000))} events/s), then live`)
  await bounded.close()
  await ledger.close()
  ledger = null

  // Part 2: the ledger index, rebuilt from the log and restored from its snapshot, and the bus replay.
  const snapshots = await StateSnapshots.open(join(dir, 'state'))
  const checkpoints = { snapshots, everyMs: 0 }
  for (const from of ['the log (rebuild)', 'its snapshot']) {
    const before = heapMb()
    const t3 = performance.now()
    let reopened: DecisionLedger | null = await DecisionLedger.open({ log, checkpoints })
    const ms = performance.now() - t3
    const withIndex = heapMb()
    const size = reopened.index.size
    const restored = reopened.restored
    const how = restored?.restored ? 'restored' : `rebuilt (${restored?.reason ?? 'no snapshot'})`
    if (from === 'its snapshot') {
      for (const channel of ['decisions', 'resolutions'] as const) {
        const b = heapMb()
        const t4 = performance.now()
        let replayed = 0
        const sub = reopened!.bus[channel].subscribe('bench', () => void replayed++)
        const replayMs = performance.now() - t4
        console.log(`bus ${channel}: a subscriber's replay ${replayed} events in ${replayMs.toFixed(0)} ms, heap +${(heapMb() - b).toFixed(1)} MB (its delivered-id set)`)
        sub.unsubscribe()
      }
    }
    await reopened.close() // writes the snapshot the second open restores
    reopened = null
    const held = withIndex - before
    console.log(`ledger index from ${from}, ${how}: open ${ms.toFixed(0)} ms, ${size.decisions} decisions and ${size.outcomes} outcomes in memory, heap +${held.toFixed(1)} MB`)
  }
  await log.close()
} finally {
  await rm(dir, { recursive: true, force: true })
}
