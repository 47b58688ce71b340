/**
 * What decisions are made from, and when: the live feature state fed by every tick the engine folds in, and the
 * engine's event time (the newest tick it has seen, unless a clock is injected; account-scoped questions may run on
 * their own clock, e.g. wall time for a live wallet provider).
 *
 * Event time only: a decision's created_at is a snapshot's instant, never Date.now() (unless a wall clock is the
 * injected one).
 */
import type { Clock } from '../common/Clock.ts'
import { tickTime, type Tick } from '../ingest/Tick.ts'
import type { FeatureSnapshot } from '../pipeline/features/FeatureSnapshot.ts'
import { FeatureState } from '../pipeline/features/FeatureState.ts'
import { journalOf } from './identity.ts'

export class LiveFeatures {
  readonly state = new FeatureState()
  private watermark = -Infinity

  constructor(
    /** Event time of API decisions; null: the newest tick time observed. */
    private readonly clock: Clock | null = null,
    /** The instant account decisions are made at and account clocks resolve at; null: this event time. */
    private readonly accountClock: Clock | null = null,
  ) {}

  /** Folds a tick into the live features and moves the event time. */
  observe(tick: Tick): void {
    this.state.ingest(tick)
    const t = tickTime(tick)
    if (t > this.watermark) this.watermark = t
  }

  /** The newest tick time folded in (−Infinity before any): part of the engine's state snapshot. */
  get eventTime(): number {
    return this.watermark
  }

  /** Sets the newest tick time folded in (a state restored from a snapshot). */
  restoreEventTime(time: number): void {
    this.watermark = time
  }

  /** Event time now (epoch ms), or null before any data. */
  now(): number | null {
    if (this.clock) return this.clock.now()
    return Number.isFinite(this.watermark) ? this.watermark : null
  }

  /** Account event time now: the account clock, else the engine's. */
  accountNow(): number | null {
    return this.accountClock ? this.accountClock.now() : this.now()
  }

  /**
   * The live snapshot of `asset` at `at`. A feature that is not a finite number is journaled as null: JSON has no NaN,
   * and models already read a non-finite feature as missing (models/questions/common.ts feature()), so the answer is
   * the same and the journal replays it exactly.
   */
  snapshotAt(asset: string, at: number): FeatureSnapshot {
    const s = this.state.snapshot(asset, at)
    for (const [k, v] of Object.entries(s.features)) if (v !== null && !Number.isFinite(v)) s.features[k] = null
    return s
  }

  /** The snapshot of `asset` at `at` with its journal and input_hash (one per cadence instant, shared by its questions). */
  journaled(asset: string, at: number): { snapshot: FeatureSnapshot; journal: string; input_hash: string } {
    const snapshot = this.snapshotAt(asset, at)
    return { snapshot, ...journalOf(snapshot) }
  }

  assetList(): string[] {
    return this.state.assetList()
  }
}
