/**
 * A state snapshot's cost at a restart on a long history (issue 31).
 *
 * Part 1, the ledger index: DecisionLedger.open rebuilt from the log beside restored from its snapshot, and one
 * snapshot write (what the checkpointer does every SVC_STATE_SNAPSHOT_S, on the event loop). The ledger: `decisions`
 * claims over `days` of event time, each resolved, on an embedded log (kept in `keep-dir` when given, for a rerun).
 *
 * Part 2, the engine's tick state (with `engine-data-dir`: the data folder of a stopped `svc start`, e.g. one with
 * SVC_SIM_HISTORY_DAYS=35): its snapshot read and loaded into fresh parts, then written back (rows + durable file).
 *
 *   node --expose-gc --import tsx bench/stateRestore.ts [decisions] [days] [keep-dir] [engine-data-dir]
 */
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DecisionLedger } from '../engine/DecisionLedger.ts'
import { LEDGER_STATE_SCHEMA, LedgerIndex } from '../engine/LedgerIndex.ts'
import { EngineTickState } from '../engine/EngineTickState.ts'
import { LiveFeatures } from '../engine/LiveFeatures.ts'
import { ResolutionEngine } from '../engine/ResolutionEngine.ts'
import { EmbeddedLog } from '../pipeline/log/EmbeddedLog.ts'
import { StateSnapshots } from '../pipeline/state/StateSnapshots.ts'
import { appendLedgerHistory } from './ledgerRecords.ts'

const ASSETS = ['BTC', 'ETH', 'SOL']
const decisions = Number(process.argv[2] ?? 96_000)
const days = Number(process.argv[3] ?? 35)
const keep = process.argv[4] || undefined
const engineDir = process.argv[5]

/** This process's CPU time since `from` (user + system, ms): steadier than wall time on a shared machine. */
const cpuMs = (from: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(from)
  return (d.user + d.system) / 1000
}

const dir = keep ?? (await mkdtemp(join(tmpdir(), 'svc-bench-state-restore-')))
try {
  const log = await EmbeddedLog.open(dir)
  const snapshots = await StateSnapshots.open(join(dir, 'state'))
  const checkpoints = { snapshots, everyMs: 0 }
  let ledger = await DecisionLedger.open({ log })
  if (ledger.index.size.decisions < decisions) {
    await appendLedgerHistory(ledger, days, decisions, ASSETS)
  }
  await ledger.close()
  await snapshots.remove('svc.ledger-index')
  for (const from of ['rebuild from the log', 'restore from its snapshot', 'restore from its snapshot (again)']) {
    const t0 = performance.now()
    const c0 = process.cpuUsage()
    ledger = await DecisionLedger.open({ log, checkpoints })
    const openMs = performance.now() - t0
    const openCpu = cpuMs(c0)
    const how = ledger.restored?.restored ? 'restored' : `rebuilt (${ledger.restored?.reason})`
    // One snapshot write, as the checkpointer runs it (positions captured, rows streamed, file made durable).
    await snapshots.remove('svc.ledger-index')
    const t1 = performance.now()
    await ledger.checkpoint()
    const writeMs = performance.now() - t1
    const bytes = (await stat(snapshots.pathOf('svc.ledger-index'))).size
    console.log(`ledger index, ${from}: ${how}, open ${openMs.toFixed(0)} ms (cpu ${openCpu.toFixed(0)} ms; ${ledger.index.size.decisions} decisions, ${ledger.index.size.outcomes} outcomes); one snapshot write ${writeMs.toFixed(0)} ms, ${(bytes / 2 ** 20).toFixed(1)} MB`)
    await ledger.close()
  }
  // The restore's own part, without opening the journals and followers: the snapshot read (hash, parse) and the load.
  for (let run = 1; run <= 2; run++) {
    const index = new LedgerIndex()
    const t0 = performance.now()
    const c0 = process.cpuUsage()
    const read = await snapshots.read('svc.ledger-index', LEDGER_STATE_SCHEMA)
    const readMs = performance.now() - t0
    const readCpu = cpuMs(c0)
    if (!read.ok) throw new Error(`ledger index: ${read.reason} ${read.detail}`)
    const t1 = performance.now()
    index.load(read.rows)
    console.log(`ledger index snapshot, run ${run}: read ${readMs.toFixed(0)} ms (cpu ${readCpu.toFixed(0)} ms) + load ${(performance.now() - t1).toFixed(0)} ms`)
  }
  await log.close()

  if (engineDir) {
    const snaps = await StateSnapshots.open(join(engineDir, 'state'))
    const store = 'svc.engine.ticks'
    for (let run = 1; run <= 2; run++) {
      const live = new LiveFeatures(null, null)
      const resolver = new ResolutionEngine({ ledger: null as unknown as DecisionLedger })
      const state = new EngineTickState(store, { live, features: live.state, resolver, cadence: new Map(), ticks: { value: 0 } })
      const bytes = (await stat(snaps.pathOf(store))).size
      const t0 = performance.now()
      const read = await snaps.read(store, state.schema)
      const readMs = performance.now() - t0
      if (!read.ok) throw new Error(`engine tick state: ${read.reason} ${read.detail}`)
      const t1 = performance.now()
      state.load(read.rows)
      const loadMs = performance.now() - t1
      const t2 = performance.now()
      await snaps.write(`${store}.bench`, state.schema, read.header.positions, state.rows())
      const writeMs = performance.now() - t2
      await snaps.remove(`${store}.bench`)
      console.log(`engine tick state (${(bytes / 2 ** 20).toFixed(1)} MB, ${read.rows.length} rows), run ${run}: read ${readMs.toFixed(0)} ms + load ${loadMs.toFixed(0)} ms; one snapshot write ${writeMs.toFixed(0)} ms`)
    }
  }
} finally {
  if (!keep) await rm(dir, { recursive: true, force: true })
}
