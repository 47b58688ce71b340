/**
 * Helpers for the checkpointed processors' tests (pipeline/state/): a logger whose lines a test can count, the three
 * bad snapshots a start must refuse (each re-sealed where only its meaning, not its bytes' integrity, is wrong), and
 * seeded randomness for generated histories and cut points.
 */
import { createHash } from 'node:crypto'
import { copyFile, readFile, writeFile } from 'node:fs/promises'
import { Writable } from 'node:stream'
import { pino, type Logger } from 'pino'
import type { StateSnapshots } from '../../pipeline/state/StateSnapshots.ts'

/** A logger that keeps every line it writes (parsed), for asserting "one log line". */
export function capturingLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = []
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    },
  })
  return { logger: pino({ level: 'info' }, sink), lines }
}

export type BadSnapshot = 'corrupt' | 'old_schema' | 'ahead_of_log'

/**
 * The good snapshot of `store` rewritten as one bad kind: a flipped byte in a row (hash mismatch), the schema one
 * lower, or positions past the log's end (both re-sealed so only the meaning is wrong).
 */
export async function spoilSnapshot(snapshots: StateSnapshots, store: string, good: string, kind: BadSnapshot): Promise<void> {
  const path = snapshots.pathOf(store)
  const lines = good.trimEnd().split('\n')
  lines.pop()
  const header = JSON.parse(lines[0]!) as { schema: number; positions: Array<{ next: number }> }
  if (kind === 'corrupt') {
    const i = lines.length > 1 ? 1 : 0
    lines[i] = lines[i]!.replace(/[0-9a-f]/, (c) => (c === '0' ? '1' : '0'))
    const content = lines.map((l) => l + '\n').join('')
    await writeFile(path, content + JSON.stringify({ rows: lines.length - 1, sha256: createHash('sha256').update(good).digest('hex') }) + '\n')
    return
  }
  if (kind === 'old_schema') header.schema -= 1
  else header.positions = header.positions.map((p, i) => (i === 0 ? { ...p, next: p.next + 100_000 } : p))
  lines[0] = JSON.stringify(header)
  const content = lines.map((l) => l + '\n').join('')
  await writeFile(path, content + JSON.stringify({ rows: lines.length - 1, sha256: createHash('sha256').update(content).digest('hex') }) + '\n')
}

export async function readSnapshot(snapshots: StateSnapshots, store: string): Promise<string> {
  return readFile(snapshots.pathOf(store), 'utf8')
}

/** Copies a store's current snapshot into another snapshots folder (a cut kept aside while the writer goes on). */
export async function keepSnapshot(from: StateSnapshots, to: StateSnapshots, store: string): Promise<void> {
  await copyFile(from.pathOf(store), to.pathOf(store))
}

/** A seeded PRNG in [0, 1) (mulberry32): the same history for the same seed. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = Math.imul(a ^ (a >>> 15), 1 | a)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

/** `n` distinct sorted cut points in [1, total - 1]. */
export function cutPoints(rnd: () => number, total: number, n: number): number[] {
  const cuts = new Set<number>()
  while (cuts.size < Math.min(n, total - 1)) cuts.add(1 + Math.floor(rnd() * (total - 1)))
  return [...cuts].sort((a, b) => a - b)
}
