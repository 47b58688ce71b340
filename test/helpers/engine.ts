/**
 * Engine test helpers: the recorded OKX SOL-USDT-SWAP tape (1 h bars 2023-01 → 2026-08 and 8 h funding 2026-04 →
 * 2026-08, ../shared/tapes/okx_swap_1h_2023_2026, imported in-process, never copied), and producing ticks straight
 * onto the ticks topic the way the tape producer does (envelopes keyed by asset).
 */
import { join } from 'node:path'
import { importFiles } from '../../ingest/importers/index.ts'
import { TapeWriter } from '../../ingest/TapeWriter.ts'
import { tickKey, tickTime, type Tick } from '../../ingest/Tick.ts'
import type { EventLog } from '../../pipeline/log/EventLog.ts'
import { encodeTickEnvelope } from '../../pipeline/TickEnvelope.ts'
import { topicNames, topicSpecs } from '../../pipeline/topics.ts'
import { SHARED_DIR } from './tmp.ts'
import type { DecideInput, DecisionEngine, DecisionResult, PaymentRef } from '../../engine/DecisionEngine.ts'
import { UnitOfWork } from '../../pipeline/journal/UnitOfWork.ts'

export const OKX_DIR = join(SHARED_DIR, 'tapes', 'okx_swap_1h_2023_2026')
export const SOL_FILES = [join(OKX_DIR, 'SOL-USDT-SWAP_1H.csv'), join(OKX_DIR, 'SOL-USDT-SWAP_funding_8h.csv')]

let cached: Tick[] | null = null

/** Every SOL tick of the recorded OKX files, in event-time order. */
export async function solTicks(): Promise<Tick[]> {
  cached ??= (await importFiles(SOL_FILES)).ticks
  return cached
}

/** SOL ticks with event time in [from, to). */
export async function solTicksBetween(from: string, to: string): Promise<Tick[]> {
  const a = Date.parse(from)
  const b = Date.parse(to)
  return (await solTicks()).filter((t) => tickTime(t) >= a && tickTime(t) < b)
}

/** Writes ticks as a tape file (for Pipeline.replay). */
export async function writeTape(path: string, ticks: readonly Tick[]): Promise<string> {
  const w = TapeWriter.open(path)
  for (const t of ticks) await w.write(t)
  await w.close()
  return path
}

/** Produces ticks to the ticks topic (creating every topic first), as envelopes keyed by asset. */
export async function produceTicks(log: EventLog, ticks: readonly Tick[], tape = 'test'): Promise<void> {
  const names = topicNames()
  await log.ensureTopics(topicSpecs(names, 3))
  const producer = await log.createProducer()
  try {
    for (let i = 0; i < ticks.length; i += 2000) {
      const slice = ticks.slice(i, i + 2000)
      await producer.send(
        names.ticks,
        slice.map((tick, j) => ({ key: tickKey(tick), value: encodeTickEnvelope({ seq: i + j + 1, tape, tick }), timestamp: tickTime(tick) })),
      )
    }
  } finally {
    await producer.close()
  }
}

/**
 * A decision asked now and recorded the way the service records one: prepared by the engine, then appended in a unit
 * of work (DecisionLedger.appendIn, deduped against a concurrent twin) and committed — what a paid call does, without
 * the payment's own records. A re-served identical ask writes nothing.
 */
export async function decideNow(engine: DecisionEngine, input: DecideInput): Promise<DecisionResult> {
  const prepared = await engine.prepare(input)
  if (prepared.reserved) return { record: prepared.record, reserved: true }
  const unit = new UnitOfWork()
  const appended = await engine.ledger.appendIn(unit, prepared.record)
  await unit.commit()
  return { record: appended.record, reserved: !appended.isNew }
}

/** POST /v1/decisions/next through decideNow: null for an unknown id; CLOCK_OPEN while the previous clock is open. */
export async function nextDecisionNow(engine: DecisionEngine, previousId: string, payment: PaymentRef | null): Promise<DecisionResult | null> {
  const next = engine.nextDecisionInput(previousId)
  return next ? decideNow(engine, { ...next, payment }) : null
}
