/**
 * Real call-event channels for Arena tests (the engine's Channel, the duel's CallLocked/CallGraded types): what a test
 * publishes is kept, so a subscriber that comes later (a restarted Arena) gets it all replayed, as the duel promises.
 */
import { Channel } from '../../engine/LedgerBus.ts'
import { byResolution, type CallEvents, type CallGraded, type CallHistoryFold, type CallLocked } from '../../product/duel/CallEvents.ts'

export class TestCallEvents implements CallEvents {
  readonly lockedLog: CallLocked[] = []
  readonly gradedLog: CallGraded[] = []
  // The replay holds what the duel keeps in memory (product/duel/CallBook.ts): calls not graded, or graded inside the
  // window of the newest grade; history() every event.
  readonly locked = new Channel<CallLocked>('call-locked', () => this.hot().locked, (e) => e.call_id)
  readonly graded = new Channel<CallGraded>('call-graded', () => this.hot().graded, (e) => e.call_id)
  #n = 0

  /** hotWindowMs: how long a graded call stays in the replay after the newest grade (default: always, as before). */
  constructor(private readonly hotWindowMs = Infinity) {}

  hotSince(): number | null {
    const newest = this.newestGrade()
    return !Number.isFinite(this.hotWindowMs) || newest === null ? null : newest - this.hotWindowMs
  }

  newestGrade(): number | null {
    return this.gradedLog.length === 0 ? null : Math.max(...this.gradedLog.map((g) => Date.parse(g.graded_at)))
  }

  /** Every event published, as the duel hands its history over (CallEvents.history): locks first, then grades in resolution order. */
  async history(fold: CallHistoryFold): Promise<void> {
    const since = fold.since
    const old = new Set(since === null ? [] : this.gradedLog.filter((g) => Date.parse(g.graded_at) < since).map((g) => g.call_id))
    for (const e of [...this.lockedLog]) if (!old.has(e.call_id)) fold.locked(e)
    for (const e of [...this.gradedLog].sort(byResolution)) if (!old.has(e.call_id)) fold.graded(e)
  }

  private hot(): { locked: CallLocked[]; graded: CallGraded[] } {
    const since = this.hotSince()
    if (since === null) return { locked: this.lockedLog, graded: this.gradedLog }
    const gone = new Set(this.gradedLog.filter((g) => Date.parse(g.graded_at) < since).map((g) => g.call_id))
    return { locked: this.lockedLog.filter((e) => !gone.has(e.call_id)), graded: this.gradedLog.filter((g) => !gone.has(g.call_id)) }
  }

  lock(payer: string, at: number, o: Partial<CallLocked> = {}): CallLocked {
    const n = ++this.#n
    const e: CallLocked = {
      call_id: `call-${String(n).padStart(7, '0')}`, payer, decision_id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
      question_id: 'S05_funding_flip', asset: 'BTC', call: 'obtains', call_probability: null, house_probability: 0.6,
      locked_at: new Date(at).toISOString(), horizon_end: new Date(at + 3_600_000).toISOString(), ...o,
    }
    this.lockedLog.push(e)
    this.locked.publish(e)
    return e
  }

  grade(call: CallLocked, at: number, result: 'correct' | 'wrong' | 'void'): CallGraded {
    const outcome = result === 'void' ? 'unresolvable' : (result === 'correct') === (call.call === 'obtains') ? 'obtains' : 'not'
    const e: CallGraded = {
      ...call, status: result === 'void' ? 'void' : 'graded', outcome, correct: result === 'void' ? null : result === 'correct',
      player_brier: result === 'void' ? null : result === 'correct' ? 0 : 1, house_brier: null, graded_at: new Date(at).toISOString(),
    }
    this.gradedLog.push(e)
    this.graded.publish(e)
    return e
  }

  /** Publishes an already-published event again (at-least-once delivery). */
  redeliver(e: CallGraded): void {
    this.graded.publish(e)
  }
}

export class TestClock {
  constructor(public t: number) {}
  now(): number {
    return this.t
  }
}
