/**
 * The checkpoint cycle on both logs with a small store: state from (snapshot at a cut + the tail) equals the full
 * rebuild; a corrupt, old-schema or ahead-of-log snapshot falls back to the rebuild with one log line and the same state.
 */
import t from 'tap'
import { writeFile, readFile } from 'node:fs/promises'
import { Type } from '../../../common/schema.ts'
import { childLogger } from '../../../common/logger.ts'
import { Journal, type JournalFollower } from '../../../pipeline/journal/Journal.ts'
import { JournalDef } from '../../../pipeline/journal/JournalDef.ts'
import type { EventLog } from '../../../pipeline/log/EventLog.ts'
import { Checkpointer } from '../../../pipeline/state/Checkpointer.ts'
import { restoreState } from '../../../pipeline/state/restoreState.ts'
import { StateSnapshots } from '../../../pipeline/state/StateSnapshots.ts'
import { stateDigest, type StateStore } from '../../../pipeline/state/StateStore.ts'
import { forEachLog } from '../../helpers/logs.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const MOVES = new JournalDef({
  name: 'test.moves',
  schema: Type.Object({ id: Type.String(), who: Type.String(), amount: Type.Integer() }, { additionalProperties: false }),
  key: (r) => r.who,
  id: (r) => r.id,
  time: () => 0,
  table: { rows: 'test_move_rows', dir: 'test.moves' },
})

/** Balances by holder plus the count of moves: order-sensitive enough (last mover) to catch a double or a skip. */
class Balances implements StateStore {
  readonly name = 'test-balances'
  readonly schema = 2
  readonly byWho = new Map<string, { balance: number; moves: number; last: string }>()
  apply(m: { id: string; who: string; amount: number }): void {
    const b = this.byWho.get(m.who) ?? { balance: 0, moves: 0, last: '' }
    this.byWho.set(m.who, { balance: b.balance + m.amount, moves: b.moves + 1, last: m.id })
  }
  *rows(): Iterable<unknown> {
    for (const who of [...this.byWho.keys()].sort()) yield [who, this.byWho.get(who)]
  }
  load(rows: readonly unknown[]): void {
    const next = new Map<string, { balance: number; moves: number; last: string }>()
    for (const row of rows) {
      if (!Array.isArray(row) || typeof row[0] !== 'string' || typeof row[1]?.balance !== 'number') throw new Error('not a balance row')
      next.set(row[0], row[1])
    }
    for (const [k, v] of next) this.byWho.set(k, v)
  }
}

function history(n: number, seed: number) {
  let x = seed
  const rnd = () => ((x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31)
  return Array.from({ length: n }, (_, i) => ({ id: `m${i}`, who: `p${Math.floor(rnd() * 7)}`, amount: Math.floor(rnd() * 200) - 100 }))
}

const logger = childLogger('test-state')

async function startProcessor(log: EventLog, journal: Journal<typeof MOVES.schema>, snapshots: StateSnapshots, group: string) {
  const state = new Balances()
  const restored = await restoreState({ log, snapshots, store: state, topics: [journal.topic], logger })
  const follower: JournalFollower = await journal.follow(group, (m) => state.apply(m), { from: restored.from.map((p) => ({ partition: p.partition, offset: p.next })) })
  const checkpointer = new Checkpointer({
    snapshots,
    store: state,
    everyMs: 0,
    capture: () => follower.positions().map((p) => ({ topic: journal.topic, partition: p.partition, next: p.offset })),
    commit: (positions) => follower.commit(positions.map((p) => ({ partition: p.partition, offset: p.next }))),
    logger,
  })
  return { state, restored, follower, checkpointer }
}

async function drained(journal: Journal<typeof MOVES.schema>, follower: JournalFollower): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    const ends = await journal.log.endOffsets(journal.topic)
    if (follower.positions().every((p) => p.offset >= (ends[p.partition] ?? 0))) return
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error('follower did not drain')
}

t.test('snapshot at random cuts + tail == full rebuild; bad snapshots fall back to the rebuild', (t) =>
  forEachLog(t, async (t, makeLog, kind) => {
    const log = await makeLog()
    const journal = await Journal.open({ log, def: MOVES, partitions: 3 })
    const moves = history(kind === 'kafka' ? 400 : 1500, 42)
    const snapshots = await StateSnapshots.open(await makeTempDir(t))

    // The full rebuild of the whole history: the reference digest.
    await journal.append(moves)
    const full = await startProcessor(log, journal, await StateSnapshots.open(await makeTempDir(t)), 'g-full')
    t.equal(full.restored.restored, false)
    await drained(journal, full.follower)
    await full.follower.stop()
    const reference = stateDigest(full.state)

    // Cuts: a processor that saw only a prefix snapshots it; a fresh one restores and reads the tail.
    const journal2 = await Journal.open({ log, def: MOVES, topic: `${journal.topic}-cut`, partitions: 3 })
    const cuts = kind === 'kafka' ? [137] : [1, 333, 999]
    let written = 0
    for (const cut of cuts) {
      await journal2.append(moves.slice(written, cut))
      written = cut
      const p = await startProcessor(log, journal2, snapshots, `g-${cut}`)
      await drained(journal2, p.follower)
      await p.checkpointer.checkpoint()
      await p.follower.stop()
    }
    await journal2.append(moves.slice(written))
    const q = await startProcessor(log, journal2, snapshots, 'g-restore')
    t.equal(q.restored.restored, true, 'the last cut’s snapshot is used')
    await drained(journal2, q.follower)
    await q.follower.stop()
    t.equal(stateDigest(q.state), reference, 'snapshot + tail == full rebuild')

    // Each bad snapshot: one fallback, the same state.
    const path = snapshots.pathOf('test-balances')
    const good = await readFile(path, 'utf8')
    const variants: Array<[string, string]> = [
      ['corrupt', good.replace('"balance"', '"balancf"')],
      ['old_schema', good.replace('"schema":2', '"schema":1')],
      ['ahead_of_log', good.replace(/"next":(\d+)/, (_, n) => `"next":${Number(n) + 100000}`)],
    ]
    for (const [reason, body] of variants) {
      await writeFile(path, body)
      // The hash covers the header: re-seal the edited ones that are not meant as corruption.
      if (reason !== 'corrupt') {
        const lines = body.trimEnd().split('\n')
        lines.pop()
        const { createHash } = await import('node:crypto')
        const content = lines.map((l) => l + '\n').join('')
        await writeFile(path, content + JSON.stringify({ rows: lines.length - 1, sha256: createHash('sha256').update(content).digest('hex') }) + '\n')
      }
      const r = await startProcessor(log, journal2, snapshots, `g-bad-${reason}`)
      t.equal(r.restored.reason, reason, `${reason}: refused with its reason`)
      await drained(journal2, r.follower)
      await r.follower.stop()
      t.equal(stateDigest(r.state), reference, `${reason}: the rebuild gives the same state`)
    }
  }),
)
