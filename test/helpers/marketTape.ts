/**
 * A generated market replayed through a real EmbeddedLog into a real MarketState, for MarketState and market
 * adapter tests. The ticks are also returned in memory so tests can compute expectations independently.
 */
import { join } from 'node:path'
import { SyntheticMarket, type SyntheticMarketOptions } from '../../ingest/SyntheticMarket.ts'
import { TapeWriter } from '../../ingest/TapeWriter.ts'
import { tickKey, tickTime, type Tick } from '../../ingest/Tick.ts'
import { EmbeddedLog } from '../../pipeline/log/EmbeddedLog.ts'
import type { EventLog } from '../../pipeline/log/EventLog.ts'
import { MarketState } from '../../pipeline/MarketState.ts'
import { produceTape } from '../../pipeline/TapeProducer.ts'
import { encodeTick } from '../../pipeline/TickEnvelope.ts'
import { makeTempDir } from './tmp.ts'

export const TICKS_TOPIC = 'venue.ticks'

export interface MarketFixture {
  log: EventLog
  state: MarketState
  ticks: Tick[]
  /** Event time of the last tick (NaN for an empty tape). */
  endMs: number
  /** Appends ticks to the topic (bare values) and waits until the state has folded them in. */
  append(ticks: Tick[]): Promise<void>
}

/**
 * Generates `opts` (minus the ticks `drop` rejects), writes them to a tape, replays the tape into an EmbeddedLog
 * and starts a MarketState on it; everything is closed at teardown.
 */
export async function marketFixture(
  t: { teardown(fn: () => unknown): void },
  opts: SyntheticMarketOptions,
  drop: (tick: Tick) => boolean = () => false,
): Promise<MarketFixture> {
  const dir = await makeTempDir(t, 'svc-market-')
  const ticks = [...new SyntheticMarket(opts)].filter((tk) => !drop(tk))
  const tape = join(dir, 'tape.ndjson')
  const writer = TapeWriter.open(tape)
  for (const tk of ticks) await writer.write(tk)
  await writer.close()
  const log = await EmbeddedLog.open(join(dir, 'log'))
  await log.ensureTopics([{ name: TICKS_TOPIC, partitions: 3 }])
  await produceTape({ log, topic: TICKS_TOPIC, tape, speed: 0 })
  const state = await MarketState.start({ log, topic: TICKS_TOPIC, groupId: 'test.market-state' })
  t.teardown(async () => {
    await state.close()
    await log.close()
  })
  await state.caughtUp()
  const producer = await log.createProducer()
  t.teardown(() => producer.close())
  return {
    log,
    state,
    ticks,
    endMs: ticks.length > 0 ? tickTime(ticks[ticks.length - 1]!) : NaN,
    async append(more) {
      await producer.send(TICKS_TOPIC, more.map((tk) => ({ key: tickKey(tk), value: encodeTick(tk), timestamp: tickTime(tk) })))
      await state.caughtUp()
    },
  }
}

/** The last tick of `kind` for `asset` in tape order, or undefined. */
export function lastTick<K extends Tick['kind']>(ticks: Tick[], asset: string, kind: K): Extract<Tick, { kind: K }> | undefined {
  for (let i = ticks.length - 1; i >= 0; i--) {
    const tk = ticks[i]!
    if (tk.asset === asset && tk.kind === kind) return tk as Extract<Tick, { kind: K }>
  }
  return undefined
}
