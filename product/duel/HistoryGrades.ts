/**
 * The grades of the duel's history (CallEvents.history), held compactly until they are handed over in resolution
 * order. A million of them as CallGraded events, beside the call records decoded from the journal that the events
 * kept alive, were ~1 GB of a 365-day rebuild's 3.1 GiB peak (issue 31). Held here per grade: the call id, the payer
 * and the clock's facts shared with every other call that has the same ones, the outcome that grades it, and three
 * numbers. Each CallGraded is built only when it is handed over, by grade() from the same facts, so it is the event
 * grade() gives for the call's record.
 */
import { sharedTexts } from '../../common/sharedTexts.ts'
import { inResolutionOrder, type CallGraded } from './CallEvents.ts'
import { grade, type CallFacts, type OutcomeFacts } from './grading.ts'

/** A call's facts that are its clock's (the same in every call on the clock): one object per distinct set. */
type ClockFacts = Pick<CallFacts, 'question_id' | 'asset' | 'choice_id' | 'house_probability' | 'horizon_end'>

const isoOf = (ms: number): string => new Date(ms).toISOString()

export class HistoryGrades {
  private readonly callIds: string[] = []
  private readonly payers: string[] = []
  private readonly clocks: ClockFacts[] = []
  private readonly outcomes: OutcomeFacts[] = []
  /** graded_at (ms), what resolution order compares first. */
  private readonly gradedAt: number[] = []
  /** locked_at (ms) × 2, + 1 when the call says obtains (exact: ms instants × 2 stay far below 2^53). */
  private readonly lockedAndSide: number[] = []
  /** The player's own probability; NaN for none. */
  private readonly callProbabilities: number[] = []
  private readonly payer = sharedTexts()
  private readonly clockOf = new Map<string, ClockFacts>()
  private readonly gradedAtOf = new Map<OutcomeFacts, number>()
  /** A locked_at that its ms instant would not give back as written (none from a validated record): kept as text. */
  private readonly lockedAtTexts = new Map<number, string>()

  get size(): number {
    return this.callIds.length
  }

  /** A call (the first record of its id) and the outcome of its clock. */
  add(call: CallFacts, o: OutcomeFacts): void {
    const i = this.callIds.length
    this.callIds.push(call.call_id)
    this.payers.push(this.payer(call.payer))
    const key = JSON.stringify([call.question_id, call.asset, call.choice_id, call.house_probability, call.horizon_end])
    let clock = this.clockOf.get(key)
    if (clock === undefined) {
      clock = { question_id: call.question_id, asset: call.asset, choice_id: call.choice_id, house_probability: call.house_probability, horizon_end: call.horizon_end }
      this.clockOf.set(key, clock)
    }
    this.clocks.push(clock)
    this.outcomes.push(o)
    let at = this.gradedAtOf.get(o)
    if (at === undefined) {
      at = Date.parse(o.resolved_at)
      this.gradedAtOf.set(o, at)
    }
    this.gradedAt.push(at)
    let locked = Date.parse(call.locked_at)
    if (!Number.isFinite(locked) || isoOf(locked) !== call.locked_at) {
      this.lockedAtTexts.set(i, call.locked_at)
      locked = 0
    }
    this.lockedAndSide.push(locked * 2 + (call.call === 'obtains' ? 1 : 0))
    this.callProbabilities.push(call.call_probability ?? NaN)
  }

  /** Hands every grade over in resolution order (graded_at, then call_id), each built as it is handed over. */
  handOver(graded: (e: CallGraded) => void): void {
    const { callIds: ids, gradedAt: at } = this
    const order = new Uint32Array(ids.length)
    for (let i = 0; i < order.length; i++) order[i] = i
    order.sort((a, b) => inResolutionOrder(at[a]!, ids[a]!, at[b]!, ids[b]!))
    for (const i of order) graded(grade(this.facts(i), this.outcomes[i]!))
  }

  private facts(i: number): CallFacts {
    const clock = this.clocks[i]!
    const packed = this.lockedAndSide[i]!
    const locked = Math.floor(packed / 2)
    const p = this.callProbabilities[i]!
    return {
      call_id: this.callIds[i]!,
      payer: this.payers[i]!,
      decision_id: this.outcomes[i]!.decision_id,
      question_id: clock.question_id,
      asset: clock.asset,
      call: packed - locked * 2 === 1 ? 'obtains' : 'not',
      call_probability: Number.isNaN(p) ? null : p,
      house_probability: clock.house_probability,
      locked_at: this.lockedAtTexts.get(i) ?? isoOf(locked),
      horizon_end: clock.horizon_end,
      choice_id: clock.choice_id,
    }
  }
}
