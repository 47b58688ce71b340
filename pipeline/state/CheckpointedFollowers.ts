/**
 * The journal followers of one checkpointed processor (a DecisionLedger, a duel book, a delivery book): its start
 * (restore the newest valid snapshot of its store, then follow each journal from the snapshot's positions, or from
 * the beginning on a rebuild), its periodic snapshots, and its stop (one final snapshot, then the positions commit).
 *
 * The consistency rule (docs/decisions.md): a processor that applies its own writes when they are acknowledged
 * (`skipOwnWrites` followers) holds records past its followers' positions until the follower has read them back, so
 * `capture()` is null while any of its journals has a write queued, in flight, or acknowledged and not yet read back
 * (Journal.writesUnsettled); the snapshot is then taken at the next interval, or at stop once the writes settled.
 *
 * Without checkpoint settings the followers start at offset 0 as before and nothing is written: explicitly at 0, not
 * at the group's committed offsets (a checkpointed start commits them; a start without snapshots must not take them
 * for a state it does not have).
 */
import type { Logger } from 'pino'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Static, TObject } from '../../common/schema.ts'
import type { Journal, JournalFollower, JournalPosition } from '../journal/Journal.ts'
import type { ConsumerPosition, EventLog } from '../log/EventLog.ts'
import { Checkpointer } from './Checkpointer.ts'
import { restoreState, type RestoredState } from './restoreState.ts'
import type { CheckpointSettings, StateStore } from './StateStore.ts'

/** One journal the processor follows: its topic, whether its own writes settled, and how to follow it from a start. */
export interface FollowedJournal {
  journal: { readonly topic: string; readonly writesUnsettled: boolean }
  /** Starts the follower at `from` (the tail after a snapshot; 0 everywhere on a rebuild). */
  follow: (from: JournalPosition[]) => Promise<JournalFollower>
}

/**
 * A journal followed into a state its own writes also feed at acknowledgement (skipOwnWrites), from the positions it
 * is given; an undecodable record is logged and skipped.
 */
export function followOwnWrites<S extends TObject>(
  journal: Journal<S>,
  o: { group: string; what: string; logger: Logger; catchUpTimeoutMs?: number; onOwnWrite?: (value: Buffer) => void },
  onRecord: (record: Static<S>) => void,
): FollowedJournal {
  return {
    journal,
    follow: (from) =>
      journal.follow(o.group, (record) => onRecord(record), {
        from,
        skipOwnWrites: true,
        ...(o.onOwnWrite ? { onOwnWrite: o.onOwnWrite } : {}),
        ...(o.catchUpTimeoutMs !== undefined ? { catchUpTimeoutMs: o.catchUpTimeoutMs } : {}),
        onInvalid: (err, r) => o.logger.warn({ topic: r.topic, partition: r.partition, offset: r.offset, err: err.message }, `undecodable ${o.what} record ignored`),
      }),
  }
}

/** How long a stop waits for the processor's own writes to be read back before its final snapshot (then skipped). */
const SETTLE_MS = 5_000

export class CheckpointedFollowers {
  private checkpointer: Checkpointer | null = null

  private constructor(
    private readonly journals: readonly FollowedJournal[],
    readonly followers: JournalFollower[],
    readonly restored: RestoredState | null,
    private readonly snapshotWhen: () => boolean,
  ) {}

  /**
   * Restores `store` (when `checkpoints` is given) and starts a follower per journal at the restored positions. A
   * follower that fails to start stops the ones already started, and the error is rethrown.
   */
  static async open(options: {
    log: EventLog
    store: StateStore
    checkpoints: CheckpointSettings | null | undefined
    journals: readonly FollowedJournal[]
    /** False while the state must not be snapshotted for a reason of the processor's own (default: always may). */
    snapshotWhen?: () => boolean
    logger: Logger
  }): Promise<CheckpointedFollowers> {
    const { log, store, checkpoints, journals, logger } = options
    const topics = journals.map((j) => j.journal.topic)
    const start = await restoreState({ log, snapshots: checkpoints?.snapshots ?? null, store, topics, logger })
    const restored = checkpoints ? start : null
    const followers: JournalFollower[] = []
    try {
      for (const j of journals) {
        const from = start.from.filter((p) => p.topic === j.journal.topic).map((p) => ({ partition: p.partition, offset: p.next }))
        followers.push(await j.follow(from))
      }
    } catch (err) {
      for (const f of followers) await f.stop().catch(() => undefined)
      throw err
    }
    const self = new CheckpointedFollowers(journals, followers, restored, options.snapshotWhen ?? (() => true))
    if (checkpoints) {
      self.checkpointer = new Checkpointer({
        snapshots: checkpoints.snapshots,
        store,
        everyMs: checkpoints.everyMs,
        capture: () => self.capture(),
        commit: (positions) => self.commit(positions),
        logger,
      })
      self.checkpointer.start()
    }
    return self
  }

  /** The positions the state reflects now; null while an own write of any journal has not settled (header). */
  capture(): ConsumerPosition[] | null {
    if (!this.snapshotWhen() || this.journals.some((j) => j.journal.writesUnsettled)) return null
    // Read after the check, synchronously: no record can be applied in between.
    return this.journals.flatMap((j, i) => this.followers[i]!.positions().map((p) => ({ topic: j.journal.topic, partition: p.partition, next: p.offset })))
  }

  private async commit(positions: ConsumerPosition[]): Promise<void> {
    for (const [i, j] of this.journals.entries()) {
      await this.followers[i]!.commit(positions.filter((p) => p.topic === j.journal.topic).map((p) => ({ partition: p.partition, offset: p.next })))
    }
  }

  /**
   * Resolves once every follower has read what its journal held when this was called: what another instance wrote
   * before this one takes its work over is in the state (a new holder of delivery's lease, issue 32).
   */
  async caughtUp(log: EventLog, signal?: AbortSignal): Promise<void> {
    const ends = await Promise.all(this.journals.map((j) => log.endOffsets(j.journal.topic)))
    for (;;) {
      signal?.throwIfAborted()
      const failed = this.followers.find((f) => f.failed)
      if (failed) throw failed.failed
      const done = this.journals.every((_, i) => {
        const at = new Map(this.followers[i]!.positions().map((p) => [p.partition, p.offset]))
        return ends[i]!.every((end, partition) => end === 0 || (at.get(partition) ?? 0) >= end)
      })
      if (done) return
      await sleep(20)
    }
  }

  /** A snapshot now (tests, and a caller that wants one before a risky step); null when skipped or not checkpointed. */
  checkpoint(): Promise<unknown> {
    return this.checkpointer?.checkpoint() ?? Promise.resolve(null)
  }

  /**
   * Stops the snapshots (a final one once the own writes settled, within SETTLE_MS), then the followers. The caller
   * has stopped writing (its appends awaited) before.
   */
  async stop(): Promise<void> {
    if (this.checkpointer) {
      const deadline = Date.now() + SETTLE_MS
      while (this.capture() === null && this.snapshotWhen() && Date.now() < deadline && !this.followers.some((f) => f.failed)) await sleep(5)
      await this.checkpointer.stop({ final: true })
    }
    for (const f of this.followers) await f.stop().catch(() => undefined)
  }
}
