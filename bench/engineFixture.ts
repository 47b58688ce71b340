/**
 * The engine `svc start` runs, over the recorded OKX SOL-USDT-SWAP tape (1 h bars + 8 h funding, ../shared/tapes,
 * 2026-03-01 → 2026-08-22) on its own embedded log: fitted before 2026-06-20, cadence decisions and resolutions after,
 * both appended to the ledger topics and indexed by the ledger follower. Shared by the serving and payment benches.
 */
import { join } from 'node:path'
import type { Clock } from '../common/Clock.ts'
import { EngineRunner } from '../engine/EngineRunner.ts'
import { importFiles } from '../ingest/importers/index.ts'
import { tickKey, tickTime } from '../ingest/Tick.ts'
import { EmbeddedLog } from '../pipeline/log/EmbeddedLog.ts'
import { encodeTickEnvelope } from '../pipeline/TickEnvelope.ts'
import { topicNames, topicSpecs } from '../pipeline/topics.ts'

const OKX = new URL('../../shared/tapes/okx_swap_1h_2023_2026/', import.meta.url).pathname
const ENGINE_FROM = Date.parse('2026-03-01T00:00:00Z')
const ENGINE_CUT = Date.parse('2026-06-20T00:00:00Z')

/** Resolves once the engine consumed the whole tape. `clock`: the event time of API decisions (default: the newest tick). */
export async function startEngine(dir: string, options: { clock?: Clock } = {}): Promise<{ log: EmbeddedLog; runner: EngineRunner; ticks: number; lastTick: number }> {
  const all = (await importFiles([join(OKX, 'SOL-USDT-SWAP_1H.csv'), join(OKX, 'SOL-USDT-SWAP_funding_8h.csv')])).ticks
  const ticks = all.filter((x) => tickTime(x) >= ENGINE_FROM)
  const names = topicNames({})
  const log = await EmbeddedLog.open(join(dir, 'engine-log'))
  try {
    await log.ensureTopics(topicSpecs(names, 3))
    const producer = await log.createProducer()
    for (let i = 0; i < ticks.length; i += 2000) {
      await producer.send(names.ticks, ticks.slice(i, i + 2000).map((x, j) => ({ key: tickKey(x), value: encodeTickEnvelope({ seq: i + j + 1, tape: 'bench', tick: x }), timestamp: tickTime(x) })))
    }
    await producer.close()
    const runner = await EngineRunner.start({ log, dataDir: join(dir, 'engine-data'), names, trainUntil: ENGINE_CUT, ...(options.clock ? { clock: options.clock } : {}) })
    await runner.waitForTicks()
    return { log, runner, ticks: ticks.length, lastTick: Math.max(...ticks.map(tickTime)) }
  } catch (err) {
    await log.close()
    throw err
  }
}
