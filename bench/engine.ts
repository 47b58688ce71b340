/**
 * Decision engine throughput: decisions evaluated and appended to the ledger per second on each log (journal, ids,
 * dedupe index, durable send of the decisions topic), beside the model evaluation alone in the same run (feature
 * snapshot + question model + sealed policy, no journal, no log).
 *
 * Data: the recorded OKX SOL-USDT-SWAP tape of bench/engineFixture.ts (1 h bars + 8 h funding, ../shared/tapes),
 * 2026-03-01 → 2026-08-22; models fitted on the window before 2026-06-20; decisions at every sold question's cadence
 * instant after it.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { tickTime } from '../ingest/Tick.ts'
import { EmbeddedLog } from '../pipeline/log/EmbeddedLog.ts'
import { KafkaLog } from '../pipeline/log/KafkaLog.ts'
import type { EventLog } from '../pipeline/log/EventLog.ts'
import { FeatureState } from '../pipeline/features/FeatureState.ts'
import { DatasetBuilder } from '../models/Dataset.ts'
import { EngineRunner } from '../engine/EngineRunner.ts'
import { activePolicy } from '../models/policy/rulesets.ts'
import { soldMarketQuestions } from '../models/questions/index.ts'
import type { FittedParams } from '../models/QuestionModel.ts'
import { ENGINE_CUT as CUT, engineRelease, engineTicks, produceEngineTicks } from './engineFixture.ts'

const HOUR = 3_600_000

export interface EngineBenchResult {
  name: string
  decisions: number
  decisionsPerSec: number
}

function instants(end: number): number[] {
  const out: number[] = []
  for (let at = CUT; at < end; at += HOUR) out.push(at)
  return out
}

export async function benchEngine(options: { kafkaBrokers?: string[] | null; print?: (line: string) => void } = {}): Promise<EngineBenchResult[]> {
  const print = options.print ?? (() => undefined)
  const ticks = await engineTicks()
  const end = tickTime(ticks[ticks.length - 1]!)
  const questions = soldMarketQuestions()
  const results: EngineBenchResult[] = []

  // Baseline: the model evaluation alone.
  {
    const features = new FeatureState()
    const builder = new DatasetBuilder(questions)
    for (const x of ticks) {
      features.ingest(x)
      if (tickTime(x) <= CUT) builder.push(x)
    }
    const { samples } = builder.finish()
    const fitted = new Map<string, FittedParams>(questions.map((q) => [q.id, q.fit(samples.get(q.id) ?? [])]))
    const policy = activePolicy()
    const t0 = performance.now()
    let n = 0
    for (const at of instants(end)) {
      const snapshot = features.snapshot('SOL', at)
      for (const q of questions) {
        if (at % q.horizonMs !== 0) continue
        policy.apply(q.evaluate(snapshot, fitted.get(q.id)!), q.id)
        n++
      }
    }
    const secs = (performance.now() - t0) / 1000
    results.push({ name: 'model evaluation only (no log)', decisions: n, decisionsPerSec: n / secs })
  }

  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-engine-'))
  try {
    const logs: Array<[string, () => Promise<EventLog>]> = [['embedded', () => EmbeddedLog.open(join(dir, 'log'))]]
    if (options.kafkaBrokers) {
      const brokers = options.kafkaBrokers
      logs.push(['kafka', () => KafkaLog.connect({ brokers, clientId: 'svc-bench', topicPrefix: `be${randomBytes(4).toString('hex')}.` })])
    }
    for (const [name, open] of logs) {
      const log = await open()
      try {
        await produceEngineTicks(log, ticks)
        const runner = await EngineRunner.start({ log, dataDir: join(dir, name), trainUntil: CUT, cadence: false, release: await engineRelease() })
        try {
          await runner.waitForTicks()
          const engine = runner.engine
          const t0 = performance.now()
          let n = 0
          for (const at of instants(end)) {
            const journaled = runner.live.journaled('SOL', at)
            for (const q of questions) {
              if (at % q.horizonMs !== 0) continue
              const { record, isNew } = engine.compose(q, 'SOL', null, at, null, journaled)
              if (isNew) engine.stage(record)
              n++
            }
            if (runner.ledger.pending >= 200) await runner.ledger.flush()
          }
          await runner.ledger.flush()
          const secs = (performance.now() - t0) / 1000
          results.push({ name: `${name}: evaluated + journaled + appended`, decisions: n, decisionsPerSec: n / secs })
          print(`  ${name}: ${n} decisions appended`)
        } finally {
          await runner.close()
        }
      } finally {
        await log.close()
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
  return results
}
