/**
 * Labelled samples from a tape, in event time: the decisions the service would have made and what then happened.
 *
 * Decisions: at every multiple of a question's horizon (UTC epoch grid; cadence = horizon, so one question's windows
 * never overlap) and for every asset seen so far, the feature snapshot at t (ticks with event time ≤ t only). A
 * market that lacks an input surface the question needs (e.g. funding on a spot venue) gets no decision for it: the
 * question is unavailable there, not refused (counted in `unavailable`).
 * Resolution: once the tape has passed t + h + RESOLUTION_GRACE_MS (late data allowance), the question re-derives the
 * event from the window's ticks under the conditions fixed at t. Windows still open when the tape ends are dropped
 * (counted in `pendingAtEnd`), never guessed.
 * Gaps: when two consecutive ticks are more than `gapMs` apart (default DATASET_GAP_MS: concatenated tapes, an
 * outage), nothing is decided inside the gap and no window crosses it: windows that closed before it are resolved,
 * windows still open at its start are dropped (counted in `droppedAtGap`), and deciding resumes on the grid after it.
 * Time split: splitSamples() gives training samples whose WINDOW END is strictly before the split, so no training
 * label uses a tick after it, and evaluation samples whose decision time is at or after it. Samples straddling the
 * split are in neither (an embargo of one horizon).
 */
import type { FeatureSnapshot } from '../pipeline/features/FeatureSnapshot.ts'
import type { LabelledSample, QuestionId, QuestionModel, Resolution } from './QuestionModel.ts'
import { FeatureState } from '../pipeline/features/FeatureState.ts'
import { TickHistory } from '../pipeline/features/TickHistory.ts'
import { tickTime, type Tick } from '../ingest/Tick.ts'
import { HOUR_MS, DAY_MS } from '../common/time.ts'

/** Late-data allowance after a window closes before it is resolved (live: records can arrive after their event time). */
export const RESOLUTION_GRACE_MS = 5 * 60_000
/**
 * Two consecutive ticks further apart than this mark a gap. Longer than any stream's own cadence on the recorded tapes
 * (OKX funding settles every 8 h; every bar series is 1 h or shorter), shorter than any question's window could
 * honestly span without data.
 */
export const DATASET_GAP_MS = 12 * HOUR_MS

interface Pending {
  question: QuestionModel
  snapshot: FeatureSnapshot
  conditions: Record<string, unknown>
  end: number
}

export interface DatasetStats {
  ticks: number
  decisions: Record<string, number>
  unavailable: Record<string, number>
  pendingAtEnd: Record<string, number>
  /** Windows open when a gap began, per question: dropped, never resolved across it. */
  droppedAtGap: Record<string, number>
  /** The gaps met, as [last tick before, first tick after] ISO instants. */
  gaps: Array<[string, string]>
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b)
}

export class DatasetBuilder {
  private readonly questions: readonly QuestionModel[]
  private readonly features = new FeatureState()
  private readonly history = new TickHistory()
  private readonly step: number
  private readonly samples = new Map<QuestionId, LabelledSample[]>()
  private pending: Pending[] = []
  /** Next grid instant not yet decided. */
  private nextGrid: number | null = null
  private lastTime = -Infinity
  private readonly stats: DatasetStats = { ticks: 0, decisions: {}, unavailable: {}, pendingAtEnd: {}, droppedAtGap: {}, gaps: [] }
  private readonly gapMs: number

  constructor(questions: readonly QuestionModel[], options: { gapMs?: number } = {}) {
    if (questions.length === 0) throw new RangeError('DatasetBuilder needs at least one question')
    this.questions = questions
    this.gapMs = options.gapMs ?? DATASET_GAP_MS
    this.step = questions.map((q) => q.horizonMs).reduce(gcd)
    for (const q of questions) {
      this.samples.set(q.id, [])
      this.stats.decisions[q.id] = 0
      this.stats.unavailable[q.id] = 0
      this.stats.pendingAtEnd[q.id] = 0
      this.stats.droppedAtGap[q.id] = 0
    }
  }

  /** Feeds one tick; ticks must come in event-time order. */
  push(tick: Tick): void {
    const time = tickTime(tick)
    if (time < this.lastTime) throw new RangeError(`DatasetBuilder.push: tick at ${tick.provenance.timestamp} is earlier than the previous one`)
    if (this.nextGrid === null) this.nextGrid = Math.ceil(time / this.step) * this.step
    if (time > this.lastTime) {
      if (Number.isFinite(this.lastTime) && time - this.lastTime > this.gapMs) this.crossGap(time)
      // Every tick at or before a grid instant < time is in: decide there, then resolve what has closed.
      while (this.nextGrid < time) {
        this.decide(this.nextGrid)
        this.nextGrid += this.step
      }
      this.resolveClosed(time)
    }
    this.lastTime = time
    this.stats.ticks++
    this.features.ingest(tick)
    this.history.ingest(tick)
  }

  /**
   * A gap from the last tick to `time`: windows closed by the last tick are resolved (all their data is in), the rest
   * are dropped, and the grid resumes at or after `time`.
   */
  private crossGap(time: number): void {
    this.stats.gaps.push([new Date(this.lastTime).toISOString(), new Date(time).toISOString()])
    this.resolveClosed(this.lastTime + RESOLUTION_GRACE_MS + 1) // resolves every window with end ≤ the last tick
    for (const p of this.pending) this.stats.droppedAtGap[p.question.id]!++
    this.pending = []
    this.nextGrid = Math.ceil(time / this.step) * this.step
  }

  private decide(t: number): void {
    for (const asset of this.features.assetList()) {
      let snapshot: FeatureSnapshot | null = null
      for (const q of this.questions) {
        if (t % q.horizonMs !== 0) continue
        snapshot ??= this.features.snapshot(asset, t)
        // The template answer (no fitted parameters) carries the conditions fixed at t, which the resolver needs.
        const template = q.evaluate(snapshot, null)
        if (template.kind === 'refusal' && template.reason.startsWith('input_unavailable:')) {
          this.stats.unavailable[q.id]!++
          continue
        }
        this.stats.decisions[q.id]!++
        this.pending.push({ question: q, snapshot, conditions: template.conditions, end: t + q.horizonMs })
      }
    }
  }

  private resolveClosed(now: number): void {
    if (this.pending.length === 0) return
    const still: Pending[] = []
    let oldest = Infinity
    for (const p of this.pending) {
      if (now > p.end + RESOLUTION_GRACE_MS) {
        const window = this.history.window(p.snapshot.asset, p.snapshot.at, p.end)
        let resolution: Resolution
        try {
          resolution = p.question.resolve(p.conditions, window)
        } catch {
          // Conditions of a decision refused before the model (e.g. no baseline) cannot be re-derived: nothing to grade.
          resolution = { outcome: 'unresolvable', statistic: null, realized_choice: null, reason: 'conditions_incomplete' }
        }
        this.samples.get(p.question.id)!.push({ snapshot: p.snapshot, resolution })
      } else {
        still.push(p)
        oldest = Math.min(oldest, p.snapshot.at)
      }
    }
    this.pending = still
    // Keep a day before the oldest open window (its start price and funding coverage look back before it).
    this.history.prune(Math.min(oldest, now) - DAY_MS)
  }

  /** Ends the tape: windows not closed by its last record are dropped and counted. */
  finish(): { samples: Map<QuestionId, LabelledSample[]>; stats: DatasetStats } {
    if (this.nextGrid !== null) {
      while (this.nextGrid <= this.lastTime) {
        this.decide(this.nextGrid)
        this.nextGrid += this.step
      }
    }
    for (const p of this.pending) this.stats.pendingAtEnd[p.question.id]!++
    this.pending = []
    return { samples: this.samples, stats: this.stats }
  }
}

/** Builds the labelled samples of `questions` from ticks in event-time order. */
export function buildDataset(ticks: Iterable<Tick>, questions: readonly QuestionModel[], onProgress?: (n: number) => void, options: { gapMs?: number } = {}) {
  const builder = new DatasetBuilder(questions, options)
  let n = 0
  for (const tick of ticks) {
    builder.push(tick)
    if (onProgress && ++n % 10_000 === 0) onProgress(n)
  }
  return builder.finish()
}

/**
 * The strict time split. Training: window end (decision time + horizon) strictly before `split`. Evaluation: decision
 * time at or after `split`.
 */
export function splitSamples(samples: readonly LabelledSample[], horizonMs: number, split: number): { train: LabelledSample[]; test: LabelledSample[] } {
  const train: LabelledSample[] = []
  const test: LabelledSample[] = []
  for (const s of samples) {
    if (s.snapshot.at + horizonMs < split) train.push(s)
    else if (s.snapshot.at >= split) test.push(s)
  }
  return { train, test }
}
