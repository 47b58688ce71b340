/**
 * What a checkpointed stream processor exposes of its state (pipeline/state/): its rows in a deterministic order
 * (equal states give equal rows, so a digest of them compares a restored state with a rebuilt one) and a load that
 * replaces the state with a snapshot's rows, all or nothing.
 */
import { createHash } from 'node:crypto'
import type { StateSnapshots } from './StateSnapshots.ts'

export interface StateStore {
  /** The store's name: one snapshot file per name in the data folder's state/ folder. */
  readonly name: string
  /** The state's schema version: bump it when the rows' shape or meaning changes (older snapshots are rebuilt). */
  readonly schema: number
  /** The state as JSON-safe rows, deterministic for equal states. Iterated synchronously to the end. */
  rows(): Iterable<unknown>
  /**
   * Replaces the (empty, freshly constructed) state with a snapshot's rows. Throws without having changed anything when
   * a row does not fit the schema (the snapshot is then refused as corrupt and the state rebuilt).
   */
  load(rows: readonly unknown[]): void
}

/** SHA-256 over the store's rows, one JSON line each: equal digests mean equal states. */
export function stateDigest(store: Pick<StateStore, 'rows'>): string {
  const hash = createHash('sha256')
  for (const row of store.rows()) hash.update(JSON.stringify(row) + '\n')
  return hash.digest('hex')
}

/** How a processor is told to checkpoint (the app passes one to every checkpointed processor; absent: no snapshots). */
export interface CheckpointSettings {
  snapshots: StateSnapshots
  /** Wall time between snapshots (SVC_STATE_SNAPSHOT_S); 0: only at a clean stop. */
  everyMs: number
}
