/**
 * The acceptance of a checkpointed processor (issue 31), one driver for all of them:
 *
 *   await checkCheckpointEquivalence(t, { snapshots, total, open, write })
 *
 * - equivalence: for random cut points of a generated history, a processor started at each cut (restoring the
 *   previous cut's snapshot) writes the history up to its cut through its own write path and stops (its final
 *   snapshot); the rest is written by another writer while it is down; a restart from the last snapshot + the tail
 *   has the same state digest as a full rebuild without snapshots;
 * - fallbacks: a corrupt, an older-schema and an ahead-of-log snapshot are each refused with that reason and the
 *   rebuild gives the same digest.
 */
import { createHash } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import type { RestoredState } from '../../pipeline/state/restoreState.ts'
import { StateSnapshots } from '../../pipeline/state/StateSnapshots.ts'
import type { CheckpointSettings } from '../../pipeline/state/StateStore.ts'
import type { TapTest } from './logs.ts'
import { makeTempDir } from './tmp.ts'

export interface OpenedProcessor {
  digest(): string
  restored: RestoredState | null
  close(): Promise<void>
}

export interface CheckpointSubject<P extends OpenedProcessor> {
  /** The snapshot's store name (the file spoiled for the fallbacks). */
  store: string
  /** Items in the generated history. */
  total: number
  /** Opens the processor (resolves once it caught up with the log). */
  open(checkpoints: CheckpointSettings | null): Promise<P>
  /** Writes history items [from, to): through the open processor's own write path, or as another writer (null). */
  write(from: number, to: number, through: P | null): Promise<void>
  /** Seed of the cut points (printed, so a failure can be replayed). */
  seed?: number
  cuts?: number
}

/** A small seeded generator (the same history and cuts for a seed). */
export function seeded(seed: number): () => number {
  let x = seed % 2 ** 31
  return () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
}

export type SnapshotFallback = 'corrupt' | 'old_schema' | 'ahead_of_log'

/** A snapshot file whose header or rows were edited, sealed again (new trailer: row count and content hash). */
export function resealed(body: string): string {
  const lines = body.trimEnd().split('\n')
  lines.pop()
  const content = lines.map((l) => l + '\n').join('')
  return content + JSON.stringify({ rows: lines.length - 1, sha256: createHash('sha256').update(content).digest('hex') }) + '\n'
}

/** The snapshot file `good` spoiled as `reason`: edits not meant as corruption are re-sealed (the hash covers all). */
export function spoiled(good: string, reason: SnapshotFallback): string {
  const lines = good.trimEnd().split('\n')
  lines.pop()
  if (reason === 'corrupt') {
    // One flipped character in a row: the content hash no longer matches.
    lines[1] = lines[1]!.replace(/[0-9a-f]/, (c) => (c === '0' ? '1' : '0'))
    return lines.join('\n') + '\n' + good.trimEnd().split('\n').pop()! + '\n'
  }
  const header = JSON.parse(lines[0]!) as { schema: number; positions: Array<{ next: number }> }
  if (reason === 'old_schema') header.schema -= 1
  else header.positions[0]!.next += 100_000
  lines[0] = JSON.stringify(header)
  return resealed(lines.join('\n') + '\n{}\n')
}

/** Runs the acceptance; resolves with the snapshot folder it used (the last snapshot is a good one). */
export async function checkCheckpointEquivalence<P extends OpenedProcessor>(t: TapTest, s: CheckpointSubject<P>): Promise<StateSnapshots> {
  const snapshots = await StateSnapshots.open(await makeTempDir(t))
  const checkpoints: CheckpointSettings = { snapshots, everyMs: 0 }
  const seed = s.seed ?? Date.now() % 1_000_000
  t.comment(`cut seed ${seed}`)
  const rnd = seeded(seed)
  const cuts = [...new Set(Array.from({ length: s.cuts ?? 3 }, () => 1 + Math.floor(rnd() * (s.total - 1))))].sort((a, b) => a - b)

  let written = 0
  for (const cut of cuts) {
    const p = await s.open(checkpoints)
    t.equal(p.restored?.restored ?? false, written > 0, `cut ${cut}: ${written > 0 ? 'restored from the previous cut' : 'nothing to restore yet'}`)
    await s.write(written, cut, p)
    written = cut
    await p.close()
  }
  await s.write(written, s.total, null)

  const full = await s.open(null)
  const reference = full.digest()
  await full.close()

  const restored = await s.open(checkpoints)
  t.equal(restored.restored?.restored, true, 'the last cut’s snapshot is used')
  t.equal(restored.digest(), reference, `snapshot at cut ${cuts[cuts.length - 1]} + tail == full rebuild (cuts ${cuts.join(', ')} of ${s.total})`)
  await restored.close()

  const path = snapshots.pathOf(s.store)
  const good = await readFile(path, 'utf8')
  for (const reason of ['corrupt', 'old_schema', 'ahead_of_log'] as const) {
    await writeFile(path, spoiled(good, reason))
    const r = await s.open(checkpoints)
    t.equal(r.restored?.reason, reason, `${reason}: refused with its reason`)
    t.equal(r.digest(), reference, `${reason}: the rebuild gives the same state`)
    await r.close()
  }
  return snapshots
}
