/**
 * The duel's projection: every locked call, its grade, each payer's totals and each payer's consent, in memory. Fed
 * only by journal records (calls, opt-ins) and outcome records (the outcome bus), in whatever order they arrive, and
 * idempotent on both: a call id is admitted once (the first record wins, as in the `calls` view), a clock's outcome
 * grades its calls once. So a restart that replays the journals and the bus rebuilds exactly the same book.
 *
 * Its state snapshot (pipeline/state/, CALL_BOOK_SCHEMA) is the journals' part only: every call ordered by
 * (locked_at, call_id), then each payer's consent by payer, records in canonical JSON key order. Grades and outcomes
 * are not in it: they derive from the outcome bus, which replays every resolution when the duel subscribes (after the
 * restore), as after a rebuild.
 */
import { canonicalJson } from '../../common/jcs.ts'
import { CALL_OPT_INS, CALLS, type CallRow, type OptInRow } from '../../pipeline/records/callRecord.ts'
import type { CallGraded } from './CallEvents.ts'
import { grade, type OutcomeFacts } from './grading.ts'

/** The snapshot rows' shape: bump when it or the meaning of a row changes (older snapshots are then rebuilt). */
export const CALL_BOOK_SCHEMA = 1

const byKey = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)
const canonical = <T>(record: T): T => JSON.parse(canonicalJson(record)) as T

export interface PayerTotals {
  /** The payer's calls in the order the book learned them. */
  calls: CallRow[]
  graded: number
  void: number
  correct: number
  house_correct: number
  sum_player_brier: number
  sum_house_brier: number
}

interface QuestionTotals {
  n: number
  sum_player_brier: number
  sum_house_brier: number
}

export class CallBook {
  private readonly calls = new Map<string, CallRow>()
  private readonly grades = new Map<string, CallGraded>()
  private readonly payers = new Map<string, PayerTotals>()
  /** Call ids per decision: what a resolution grades. */
  private readonly byDecision = new Map<string, string[]>()
  /** Every outcome seen, by decision id: a call that reaches the book after its clock resolved is graded at once. */
  private readonly outcomes = new Map<string, OutcomeFacts>()
  private readonly consent = new Map<string, OptInRow>()
  private readonly questions = new Map<string, QuestionTotals>()
  /** Bumped on every change, so derived boards can be cached per version. */
  version = 0

  get size(): { calls: number; graded: number; void: number } {
    let graded = 0
    for (const g of this.grades.values()) if (g.status === 'graded') graded++
    return { calls: this.calls.size, graded, void: this.grades.size - graded }
  }

  has(callId: string): boolean {
    return this.calls.has(callId)
  }

  call(callId: string): CallRow | null {
    return this.calls.get(callId) ?? null
  }

  gradeOf(callId: string): CallGraded | null {
    return this.grades.get(callId) ?? null
  }

  resolved(decisionId: string): OutcomeFacts | null {
    return this.outcomes.get(decisionId) ?? null
  }

  allCalls(): IterableIterator<CallRow> {
    return this.calls.values()
  }

  allGrades(): IterableIterator<CallGraded> {
    return this.grades.values()
  }

  payer(payer: string): PayerTotals | null {
    return this.payers.get(payer) ?? null
  }

  payerIds(): IterableIterator<string> {
    return this.payers.keys()
  }

  optedIn(payer: string): boolean {
    return this.consent.get(payer)?.opt_in ?? false
  }

  /** Opted-in payers (the last record per payer wins). */
  *optedInPayers(): Iterable<string> {
    for (const [payer, row] of this.consent) if (row.opt_in) yield payer
  }

  /** The journals' part of the book as snapshot rows: ['c', call]…, ['p', consent]… (header). */
  *rows(): Iterable<unknown> {
    for (const c of [...this.calls.values()].sort((a, b) => byKey(a.locked_at, b.locked_at) || byKey(a.call_id, b.call_id))) yield ['c', canonical(c)]
    for (const payer of [...this.consent.keys()].sort()) yield ['p', canonical(this.consent.get(payer)!)]
  }

  /** Fills this (empty) book from snapshot rows, all or nothing: every row is checked before the first is applied. */
  load(rows: readonly unknown[]): void {
    if (this.calls.size > 0 || this.consent.size > 0) throw new Error('the call book is not empty')
    const calls: CallRow[] = []
    const consents = new Map<string, OptInRow>()
    for (const row of rows) {
      if (!Array.isArray(row) || row.length !== 2) throw new Error('a call book row is not a [kind, value] pair')
      const [kind, value] = row as [unknown, unknown]
      if (kind === 'c') calls.push(CALLS.check(value))
      else if (kind === 'p') {
        const r = CALL_OPT_INS.check(value)
        if (consents.has(r.payer)) throw new Error(`consent of ${r.payer} appears twice`)
        consents.set(r.payer, r)
      } else throw new Error(`unexpected call book row ${JSON.stringify(kind)}`)
    }
    if (new Set(calls.map((c) => c.call_id)).size !== calls.length) throw new Error('a call appears twice')
    for (const c of calls) this.addCall(c)
    for (const r of consents.values()) this.setConsent(r)
  }

  /** Admits a call once (a second record with its id is a duplicate or a conflict; the first is kept). */
  addCall(row: CallRow): { added: boolean; graded: CallGraded | null } {
    if (this.calls.has(row.call_id)) return { added: false, graded: null }
    this.calls.set(row.call_id, row)
    let totals = this.payers.get(row.payer)
    if (!totals) {
      totals = { calls: [], graded: 0, void: 0, correct: 0, house_correct: 0, sum_player_brier: 0, sum_house_brier: 0 }
      this.payers.set(row.payer, totals)
    }
    totals.calls.push(row)
    const ids = this.byDecision.get(row.decision_id)
    if (ids) ids.push(row.call_id)
    else this.byDecision.set(row.decision_id, [row.call_id])
    this.version++
    const o = this.outcomes.get(row.decision_id)
    return { added: true, graded: o ? this.grade(row, o) : null }
  }

  /** A clock resolved: grades its calls not graded yet (a second delivery grades nothing). */
  resolve(o: OutcomeFacts): CallGraded[] {
    if (this.outcomes.has(o.decision_id)) return []
    this.outcomes.set(o.decision_id, o)
    const out: CallGraded[] = []
    for (const id of this.byDecision.get(o.decision_id) ?? []) {
      const g = this.grade(this.calls.get(id)!, o)
      if (g) out.push(g)
    }
    return out
  }

  setConsent(row: OptInRow): void {
    this.consent.set(row.payer, row)
    this.version++
  }

  private grade(row: CallRow, o: OutcomeFacts): CallGraded | null {
    if (this.grades.has(row.call_id)) return null
    const g = grade(row, o)
    this.grades.set(row.call_id, g)
    const t = this.payers.get(row.payer)!
    if (g.status === 'void') t.void++
    else {
      t.graded++
      if (g.correct) t.correct++
      if (g.house_correct) t.house_correct++
      t.sum_player_brier += g.player_brier!
      t.sum_house_brier += g.house_brier!
      let q = this.questions.get(row.question_id)
      if (!q) {
        q = { n: 0, sum_player_brier: 0, sum_house_brier: 0 }
        this.questions.set(row.question_id, q)
      }
      q.n++
      q.sum_player_brier += g.player_brier!
      q.sum_house_brier += g.house_brier!
    }
    this.version++
    return g
  }

  /** Graded calls per question (void calls excluded: they have no resolved pair). */
  questionTotals(): ReadonlyMap<string, Readonly<QuestionTotals>> {
    return this.questions
  }
}
