/**
 * MarketState as a checkpointed processor (issue 31), on both logs: for random cuts of a generated market (bars over
 * more than 24 h, liquidations, funding, universe), the state from (snapshot at each cut + the tail) equals a full
 * rebuild, digest of every row; a corrupt, old-schema or ahead-of-log snapshot falls back to the rebuild, same state.
 */
import t from 'tap'
import { readFile, writeFile } from 'node:fs/promises'
import { SyntheticMarket } from '../../ingest/SyntheticMarket.ts'
import { tickKey, tickTime, type Tick } from '../../ingest/Tick.ts'
import type { EventLog } from '../../pipeline/log/EventLog.ts'
import { MarketState } from '../../pipeline/MarketState.ts'
import { StateSnapshots } from '../../pipeline/state/StateSnapshots.ts'
import { stateDigest } from '../../pipeline/state/StateStore.ts'
import { encodeTick } from '../../pipeline/TickEnvelope.ts'
import { resealed } from '../helpers/checkpoint.ts'
import { forEachLog } from '../helpers/logs.ts'
import { makeTempDir } from '../helpers/tmp.ts'

const TOPIC = 'venue.ticks'

async function send(log: EventLog, ticks: Tick[]): Promise<void> {
  const producer = await log.createProducer()
  for (let i = 0; i < ticks.length; i += 2000) {
    await producer.send(TOPIC, ticks.slice(i, i + 2000).map((tk) => ({ key: tickKey(tk), value: encodeTick(tk), timestamp: tickTime(tk) })))
  }
  await producer.close()
}

async function runOnce(log: EventLog, group: string, snapshots: StateSnapshots | null): Promise<{ digest: string; consumed: number; asset: unknown; restored: boolean | null }> {
  const state = await MarketState.start({ log, topic: TOPIC, groupId: group, checkpoints: snapshots ? { snapshots, everyMs: 0 } : null })
  await state.caughtUp(120_000)
  const digest = stateDigest(state.stateStore(group))
  const out = { digest, consumed: state.consumedCount, asset: state.asset('BTC'), restored: state.restoredFromSnapshot }
  await state.close()
  return out
}

t.test('snapshot at random cuts + the tail == a full rebuild; bad snapshots rebuild the same state', (t) =>
  forEachLog(t, async (t, makeLog, kind) => {
    const log = await makeLog()
    await log.ensureTopics([{ name: TOPIC, partitions: 3 }])
    const ticks = [...new SyntheticMarket({ seed: 11, hours: kind === 'kafka' ? 30 : 60, assets: ['BTC', 'ETH', 'SOL'], start: '2026-02-01T00:00:00Z' })]
    const seed = Number(process.env.CKPT_SEED ?? Date.now() % 100_000)
    let x = seed
    const rnd = () => ((x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31)
    const cuts = [...new Set(Array.from({ length: 3 }, () => Math.floor(rnd() * ticks.length)))].sort((a, b) => a - b)
    t.comment(`seed ${seed}: cuts ${cuts.join(', ')} of ${ticks.length} ticks`)

    const snapshots = await StateSnapshots.open(await makeTempDir(t))
    let sent = 0
    for (const cut of cuts) {
      await send(log, ticks.slice(sent, cut))
      sent = cut
      await runOnce(log, 'svc.market-state', snapshots) // folds up to the cut, writes its final snapshot at close
    }
    await send(log, ticks.slice(sent))
    const restored = await runOnce(log, 'svc.market-state', snapshots)
    const rebuilt = await runOnce(log, 'rebuild', null)
    t.equal(restored.restored, true, 'the last start loaded the snapshot')
    t.equal(restored.consumed, ticks.length, 'every tick folded in exactly once across the restarts')
    t.equal(restored.digest, rebuilt.digest, 'snapshot + tail == full rebuild')
    t.same(restored.asset, rebuilt.asset, 'the reads agree')

    const path = snapshots.pathOf('svc.market-state')
    const good = await readFile(path, 'utf8')
    const variants: Array<[string, string]> = [
      ['corrupt', good.replace('"consumed":', '"consumef":')],
      ['old_schema', resealed(good.replace('"schema":1', '"schema":0'))],
      ['ahead_of_log', resealed(good.replace(/"next":(\d+)/, (_, n) => `"next":${Number(n) + 10_000_000}`))],
      ['load_failed', resealed(good.replace('"consumed":', '"consumef":'))],
    ]
    for (const [reason, body] of variants) {
      await writeFile(path, body)
      const r = await runOnce(log, 'svc.market-state', snapshots)
      t.equal(r.restored, false, `${reason}: the snapshot is not used`)
      t.equal(r.digest, rebuilt.digest, `${reason}: rebuilt to the same state`)
      t.equal(r.consumed, ticks.length, `${reason}: every tick once`)
    }
  }),
)
