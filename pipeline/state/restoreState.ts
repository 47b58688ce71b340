/**
 * A checkpointed processor's start: load the newest valid snapshot of its store and tell it where the tail begins, or
 * say why not and start it from the beginning (a full rebuild, the same state byte for byte: the snapshot is only a
 * shortcut). One log line either way, with the reason when the snapshot was not used.
 */
import type { Logger } from 'pino'
import type { ConsumerPosition, EventLog } from '../log/EventLog.ts'
import type { StateSnapshots, SnapshotRefusal } from './StateSnapshots.ts'
import type { StateStore } from './StateStore.ts'

export interface RestoredState {
  /** Per partition of every topic, where the processor's consumer starts (0 on a rebuild). */
  from: ConsumerPosition[]
  /** True when the state came from a snapshot; false when it is rebuilt from the log. */
  restored: boolean
  /** Why a snapshot was not used (absent when restored). */
  reason?: SnapshotRefusal | 'load_failed'
  detail?: string
}

export async function restoreState(options: {
  log: EventLog
  snapshots: StateSnapshots | null
  store: StateStore
  topics: readonly string[]
  logger: Logger
}): Promise<RestoredState> {
  const { log, snapshots, store, topics, logger } = options
  const ends = new Map<string, number[]>()
  for (const topic of topics) ends.set(topic, await log.endOffsets(topic))
  const beginning = (): ConsumerPosition[] => topics.flatMap((topic) => ends.get(topic)!.map((_, partition) => ({ topic, partition, next: 0 })))
  if (snapshots === null) return { from: beginning(), restored: false, reason: 'missing', detail: 'no state folder (memory only)' }
  const started = Date.now()
  const read = await snapshots.read(store.name, store.schema)
  let refusal: { reason: SnapshotRefusal | 'load_failed'; detail: string } | null = read.ok ? null : { reason: read.reason, detail: read.detail }
  let from: ConsumerPosition[] = []
  if (read.ok) {
    // Every partition the processor reads gets a start: the snapshot's, or 0 for a partition (or topic) it did not know.
    from = beginning().map((p) => read.header.positions.find((s) => s.topic === p.topic && s.partition === p.partition) ?? p)
    const ahead = read.header.positions.find((p) => p.next > (ends.get(p.topic)?.[p.partition] ?? 0))
    if (ahead) {
      refusal = { reason: 'ahead_of_log', detail: `the snapshot reflects ${ahead.topic}/${ahead.partition} up to offset ${ahead.next}, the log ends at ${ends.get(ahead.topic)?.[ahead.partition] ?? 0} (truncated or replaced log)` }
    } else {
      try {
        store.load(read.rows)
      } catch (err) {
        refusal = { reason: 'load_failed', detail: `rows do not fit state schema ${store.schema}: ${(err as Error).message}` }
      }
    }
  }
  if (refusal) {
    if (refusal.reason === 'missing') logger.info({ store: store.name, reason: refusal.reason }, 'no state snapshot yet; building the state from the log')
    else logger.warn({ store: store.name, reason: refusal.reason, detail: refusal.detail }, 'state snapshot not used; rebuilding the state from the log')
    return { from: beginning(), restored: false, ...refusal }
  }
  const tail = from.reduce((n, p) => n + Math.max(0, (ends.get(p.topic)?.[p.partition] ?? 0) - p.next), 0)
  logger.info({ store: store.name, rows: read.ok ? read.rows.length : 0, tailRecords: tail, ms: Date.now() - started }, 'state restored from its snapshot; reading the tail')
  return { from, restored: true }
}
