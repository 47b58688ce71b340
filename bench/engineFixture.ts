/**
 * The engine `svc start` runs, over the recorded OKX SOL-USDT-SWAP tape (1 h bars + 8 h funding, ../shared/tapes,
 * 2026-03-01 → 2026-08-22) on its own embedded log: fitted before 2026-06-20, cadence decisions and resolutions after,
 * both appended to the ledger topics and indexed by the ledger follower. Shared by the serving and payment benches.
 */
import { join } from 'node:path'
import type { Clock } from '../common/Clock.ts'
import { EngineRunner } from '../engine/EngineRunner.ts'
import { ServedRelease } from '../engine/ServedRelease.ts'
import { releaseOfTicks } from '../record/releases/fromTicks.ts'
import { importFiles } from '../ingest/importers/index.ts'
import { tickKey, tickTime, type Tick } from '../ingest/Tick.ts'
import { EmbeddedLog } from '../pipeline/log/EmbeddedLog.ts'
import type { EventLog } from '../pipeline/log/EventLog.ts'
import { encodeTickEnvelope } from '../pipeline/TickEnvelope.ts'
import { topicNames, topicSpecs, type TopicNames } from '../pipeline/topics.ts'

const OKX = new URL('../../shared/tapes/okx_swap_1h_2023_2026/', import.meta.url).pathname
/** The first event time the engine benches feed. */
export const ENGINE_FROM = Date.parse('2026-03-01T00:00:00Z')
/** The training cut: fitted before it, decisions after it. */
export const ENGINE_CUT = Date.parse('2026-06-20T00:00:00Z')

/** The SOL ticks (1 h bars + 8 h funding) from ENGINE_FROM to the end of the tape, in event-time order. */
export async function engineTicks(): Promise<Tick[]> {
  const all = (await importFiles([join(OKX, 'SOL-USDT-SWAP_1H.csv'), join(OKX, 'SOL-USDT-SWAP_funding_8h.csv')])).ticks
  return all.filter((x) => tickTime(x) >= ENGINE_FROM)
}

let release: Promise<ServedRelease> | null = null

/** The release the engine benches serve: fitted by the release build's code on the decisions closed before ENGINE_CUT. */
export function engineRelease(): Promise<ServedRelease> {
  release ??= engineTicks().then(async (ticks) => ServedRelease.load(await releaseOfTicks(ticks, ENGINE_CUT)))
  return release
}

/** Creates the topics and produces the ticks onto the ticks topic as the tape producer does (envelopes keyed by asset). */
export async function produceEngineTicks(log: EventLog, ticks: readonly Tick[]): Promise<TopicNames> {
  const names = topicNames({})
  await log.ensureTopics(topicSpecs(names, 3))
  const producer = await log.createProducer()
  for (let i = 0; i < ticks.length; i += 2000) {
    await producer.send(names.ticks, ticks.slice(i, i + 2000).map((x, j) => ({ key: tickKey(x), value: encodeTickEnvelope({ seq: i + j + 1, tape: 'bench', tick: x }), timestamp: tickTime(x) })))
  }
  await producer.close()
  return names
}

/** Resolves once the engine consumed the whole tape. `clock`: the event time of API decisions (default: the newest tick). */
export async function startEngine(dir: string, options: { clock?: Clock } = {}): Promise<{ log: EmbeddedLog; runner: EngineRunner; ticks: number; lastTick: number }> {
  const ticks = await engineTicks()
  const log = await EmbeddedLog.open(join(dir, 'engine-log'))
  try {
    const names = await produceEngineTicks(log, ticks)
    const runner = await EngineRunner.start({ log, dataDir: join(dir, 'engine-data'), names, trainUntil: ENGINE_CUT, release: await engineRelease(), ...(options.clock ? { clock: options.clock } : {}) })
    await runner.waitForTicks()
    return { log, runner, ticks: ticks.length, lastTick: Math.max(...ticks.map(tickTime)) }
  } catch (err) {
    await log.close()
    throw err
  }
}
