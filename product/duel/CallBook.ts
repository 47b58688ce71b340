/**
 * The duel's projection, bounded (issue 31, Bounded memory): each payer's and each question's running totals (what the
 * boards and scoreboards read), each payer's consent, and only the hot calls in memory: the calls not graded yet and
 * the graded (or void) ones whose grade is inside the hot window. A call that leaves memory is read back from the duel
 * calls Parquet table (ColdCalls.ts). Fed only by journal records (calls, opt-ins) and outcome records (the outcome
 * bus), in whatever order they arrive, and idempotent on both: a call id is admitted once (the first record wins, as in
 * the `calls` view), a call is graded once.
 *
 * Eviction is decided by event time from the log's content, never by wall clock: a graded call leaves memory once its
 * grade (the resolution's resolved_at) is older than the newest resolution seen minus the hot window. The newest
 * resolution is part of the state, so a rebuild and a restore evict the same calls and give the same rows.
 *
 * Its state snapshot (pipeline/state/, CALL_BOOK_SCHEMA) is the whole state: the newest resolution, the hot calls
 * ordered by (locked_at, call_id) with the outcome of each graded one (so a replayed old outcome grades nothing twice:
 * an evicted call is no longer a call of its clock, a hot graded one keeps its grade), the totals and the consent.
 * Sums of Brier scores are kept exactly (integers of 1e-12, the grades' own rounding) so that the order the grades
 * arrive in (a rebuild's replay or a restore's) cannot change a bit of them.
 */
import { canonicalJson, isCanonicalOrder } from '../../common/jcs.ts'
import { sharedTexts } from '../../common/sharedTexts.ts'
import { CALL_OPT_INS, CALLS, type CallRow, type OptInRow } from '../../pipeline/records/callRecord.ts'
import type { CallGraded } from './CallEvents.ts'
import { grade, type OutcomeFacts } from './grading.ts'

/** The snapshot rows' shape: bump when it or the meaning of a row changes (older snapshots are then rebuilt). */
export const CALL_BOOK_SCHEMA = 2

const byKey = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)
/** A record in canonical key order; one read back from the log or a snapshot is already, and is kept as it is. */
const canonical = <T>(record: T): T => (isCanonicalOrder(record) ? record : (JSON.parse(canonicalJson(record)) as T))
/** A Brier score (rounded to 1e-12 by grading.ts) as an exact integer. */
const e12 = (x: number): bigint => BigInt(Math.round(x * 1e12))

export interface CallBookOptions {
  /** How long a graded call stays in memory after its grade, in the clocks' event time (ms); Infinity keeps all. */
  hotWindowMs: number
  /** How far back the per-payer grade marks reach (the longest windowed board), in event time (ms). */
  marksWindowMs: number
  /**
   * Whether calls past the window may leave memory now (the Parquet sink is sealing; absent: always). Not state: the
   * rows never hold a call past the window either way, only the drop from memory waits, so no call is read back from
   * Parquet before the sink has had a chance to seal it.
   */
  evictable?: () => boolean
}

export interface PayerTotals {
  /** Every call of the payer the book admitted (hot or not). */
  count: number
  /** The payer's hot calls in the order the book learned them (the newest calls are always among them). */
  hot: CallRow[]
  graded: number
  void: number
  correct: number
  house_correct: number
  /** Σ Brier in units of 1e-12 (exact). */
  player_brier_e12: bigint
  house_brier_e12: bigint
  /** Graded (not void) calls inside the marks window, each one number (mark()), for the windowed boards. */
  marks: number[]
}

/**
 * A grade mark packed in one number, graded_at ms × 2 + correct (exact: ms instants × 2 stay far below 2^53), so a
 * payer's marks are one array of doubles, 8 bytes a mark. As [at, ok] pairs they were ~70 bytes each (an array and
 * its elements): the duel's restored heap was 131 MiB with them and 79 MiB without, 860,000 marks in the 30-day window
 * at a million calls over 35 days (issue 31). The snapshot keeps the pairs. Numeric order is (at, ok) order.
 */
export const mark = (at: number, ok: 0 | 1): number => at * 2 + ok
export const markAt = (m: number): number => Math.floor(m / 2)
export const markOk = (m: number): 0 | 1 => (m % 2) as 0 | 1

interface QuestionTotals {
  n: number
  player_brier_e12: bigint
  house_brier_e12: bigint
}

const emptyTotals = (): PayerTotals => ({ count: 0, hot: [], graded: 0, void: 0, correct: 0, house_correct: 0, player_brier_e12: 0n, house_brier_e12: 0n, marks: [] })

/** A snapshot's totals row value (bigints as decimal strings). */
interface TotalsRow {
  count: number
  graded: number
  void: number
  correct: number
  house_correct: number
  player_brier_e12: string
  house_brier_e12: string
  marks: [number, 0 | 1][]
}

const isCount = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0
const isE12 = (x: unknown): x is string => typeof x === 'string' && /^(0|[1-9][0-9]*)$/.test(x)

/**
 * The values a snapshot's call rows repeat, held once: every call on a clock names its decision, question, horizon
 * and lock instant, and was graded on the same outcome, but JSON.parse gives each row its own copies (a fifth of a
 * million hot calls at 1M calls over 35 days). Same values, so the rows and the snapshot written back are unchanged.
 */
function shareRepeats(calls: Array<[CallRow, OutcomeFacts | null]>): void {
  const one = sharedTexts()
  // One outcome per clock, with its text: compared once per call, serialized once per clock.
  const outcomes = new Map<string, { o: OutcomeFacts; text: string }>()
  for (const pair of calls) {
    const c = pair[0]
    c.decision_id = one(c.decision_id)
    c.question_id = one(c.question_id)
    c.asset = one(c.asset)
    c.horizon_end = one(c.horizon_end)
    c.locked_at = one(c.locked_at)
    c.payer = one(c.payer)
    const o = pair[1]
    if (o === null) continue
    const held = outcomes.get(o.decision_id)
    if (!held) outcomes.set(o.decision_id, { o, text: canonicalJson(o) })
    else if (held.text === canonicalJson(o)) pair[1] = held.o
  }
}

export class CallBook {
  private readonly calls = new Map<string, CallRow>()
  /**
   * The outcome each hot graded call was graded on (what the snapshot keeps of it): its grade is derived from the call
   * and this when asked (grading.ts grade, pure), not held beside them (a fifth of a million hot grades at 1M calls).
   */
  private readonly gradedBy = new Map<string, OutcomeFacts>()
  private readonly payers = new Map<string, PayerTotals>()
  /** Hot call ids per decision: what a resolution grades (an evicted call is graded already). */
  private readonly byDecision = new Map<string, string[]>()
  /**
   * Outcomes seen inside the hot window, by decision id: a call that reaches the book after its clock resolved is
   * graded at once. Not state: the outcome bus replays every resolution at each start.
   */
  private readonly outcomes = new Map<string, OutcomeFacts>()
  private readonly consent = new Map<string, OptInRow>()
  private readonly questions = new Map<string, QuestionTotals>()
  /** The newest resolved_at seen (ms), the present eviction is measured from; null before any resolution. */
  private newest: number | null = null
  /** Graded hot calls by grade time, oldest on top: what a sweep evicts next (in O(log n) per call). */
  private readonly byGrade = new MinHeap()
  /** The newest graded_at (ms) of a grade made or restored here; null: none. Not state (see newestGrade()). */
  private latestGrade: number | null = null
  /** The newest value the outcomes and marks were last pruned at: again once it moved by a tenth of a window. */
  private prunedAt: number | null = null
  /** Bumped on every change, so derived boards can be cached per version. */
  version = 0

  constructor(private readonly options: CallBookOptions = { hotWindowMs: Infinity, marksWindowMs: Infinity }) {}

  /** Admitted calls, graded and void counts (all time: the totals, not the hot set). */
  get size(): { calls: number; graded: number; void: number; hot: number } {
    let calls = 0
    let graded = 0
    let voided = 0
    for (const t of this.payers.values()) {
      calls += t.count
      graded += t.graded
      voided += t.void
    }
    return { calls, graded, void: voided, hot: this.calls.size }
  }

  /** A hot call (null: unknown, or left memory: ColdCalls reads it). */
  call(callId: string): CallRow | null {
    return this.calls.get(callId) ?? null
  }

  gradeOf(callId: string): CallGraded | null {
    const o = this.gradedBy.get(callId)
    const c = o ? this.calls.get(callId) : undefined
    return o && c ? grade(c, o) : null
  }

  /** A resolution seen inside the hot window (an older clock is closed by its horizon_end anyway). */
  resolved(decisionId: string): OutcomeFacts | null {
    return this.outcomes.get(decisionId) ?? null
  }

  /** The hot calls (what the call events replay after a start). */
  hotCalls(): IterableIterator<CallRow> {
    return this.calls.values()
  }

  /** The grades of the hot calls. */
  *hotGrades(): IterableIterator<CallGraded> {
    for (const [id, o] of this.gradedBy) yield grade(this.calls.get(id)!, o)
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

  /** Graded calls per question (void calls excluded: they have no resolved pair); sums in units of 1e-12. */
  questionTotals(): ReadonlyMap<string, Readonly<QuestionTotals>> {
    return this.questions
  }

  /**
   * The newest graded_at (ms) among the grades made here or restored with a hot call; null: none. Never later than the
   * newest grade of the call history (a grade that left memory is older than every hot one).
   */
  newestGrade(): number | null {
    return this.latestGrade
  }

  private noteGrade(at: number): void {
    if (this.latestGrade === null || at > this.latestGrade) this.latestGrade = at
  }

  /** The event time (ms) from which every grade is in memory; null while no call left it. */
  hotSince(): number | null {
    return this.size.hot === this.size.calls ? null : this.cutoff()
  }

  /** Event time (ms) before which a grade leaves memory; null while nothing resolved. */
  private cutoff(): number | null {
    return this.newest === null ? null : this.newest - this.options.hotWindowMs
  }

  private marksCutoff(): number | null {
    return this.newest === null ? null : this.newest - this.options.marksWindowMs
  }

  /** Whether a call stays in memory: not graded yet, or graded inside the window. */
  private isHot(callId: string, cutoff: number | null): boolean {
    const o = this.gradedBy.get(callId)
    return !o || cutoff === null || Date.parse(o.resolved_at) >= cutoff
  }

  /**
   * The state as snapshot rows: ['n', newest], then ['c', call, outcome | null] per hot call by (locked_at, call_id),
   * ['t', payer, totals] by payer, ['q', question, totals] by question, ['p', consent] by payer. Only hot calls and
   * marks inside their window are written, whether or not a sweep removed the others yet.
   */
  *rows(): Iterable<unknown> {
    yield ['n', this.newest]
    const cutoff = this.cutoff()
    const hot = [...this.calls.values()].filter((c) => this.isHot(c.call_id, cutoff))
    for (const c of hot.sort((a, b) => byKey(a.locked_at, b.locked_at) || byKey(a.call_id, b.call_id))) {
      const o = this.gradedBy.get(c.call_id)
      yield ['c', canonical(c), o ? canonical(o) : null]
    }
    const marksCutoff = this.marksCutoff()
    for (const payer of [...this.payers.keys()].sort()) {
      const t = this.payers.get(payer)!
      const marks = t.marks.filter((m) => marksCutoff === null || markAt(m) >= marksCutoff).sort((a, b) => a - b).map((m): [number, 0 | 1] => [markAt(m), markOk(m)])
      const row: TotalsRow = {
        count: t.count, graded: t.graded, void: t.void, correct: t.correct, house_correct: t.house_correct,
        player_brier_e12: String(t.player_brier_e12), house_brier_e12: String(t.house_brier_e12), marks,
      }
      yield ['t', payer, row]
    }
    for (const q of [...this.questions.keys()].sort()) {
      const v = this.questions.get(q)!
      yield ['q', q, { n: v.n, player_brier_e12: String(v.player_brier_e12), house_brier_e12: String(v.house_brier_e12) }]
    }
    for (const payer of [...this.consent.keys()].sort()) yield ['p', canonical(this.consent.get(payer)!)]
  }

  /** Fills this (empty) book from snapshot rows, all or nothing: every row is checked before the first is applied. */
  load(rows: readonly unknown[]): void {
    if (this.calls.size > 0 || this.consent.size > 0 || this.payers.size > 0) throw new Error('the call book is not empty')
    let newest: number | null | undefined
    const calls: [CallRow, OutcomeFacts | null][] = []
    const totals = new Map<string, PayerTotals>()
    const questions = new Map<string, QuestionTotals>()
    const consents = new Map<string, OptInRow>()
    for (const row of rows) {
      if (!Array.isArray(row) || row.length < 2) throw new Error('a call book row is not a [kind, ...values] array')
      const [kind, a, b] = row as [unknown, unknown, unknown]
      if (kind === 'n') {
        if (newest !== undefined || (a !== null && !Number.isFinite(a))) throw new Error('a bad or second newest-resolution row')
        newest = a as number | null
      } else if (kind === 'c') {
        calls.push([CALLS.check(a), b === null ? null : checkOutcome(b)])
      } else if (kind === 't') {
        if (typeof a !== 'string' || totals.has(a)) throw new Error(`totals of ${String(a)} are bad or appear twice`)
        totals.set(a, checkTotals(b))
      } else if (kind === 'q') {
        const v = b as Record<string, unknown> | null
        if (typeof a !== 'string' || questions.has(a) || !v || !isCount(v.n) || !isE12(v.player_brier_e12) || !isE12(v.house_brier_e12)) {
          throw new Error(`question totals of ${String(a)} are bad or appear twice`)
        }
        questions.set(a, { n: v.n, player_brier_e12: BigInt(v.player_brier_e12), house_brier_e12: BigInt(v.house_brier_e12) })
      } else if (kind === 'p') {
        const r = CALL_OPT_INS.check(a)
        if (consents.has(r.payer)) throw new Error(`consent of ${r.payer} appears twice`)
        consents.set(r.payer, r)
      } else throw new Error(`unexpected call book row ${JSON.stringify(kind)}`)
    }
    if (newest === undefined) throw new Error('the newest-resolution row is missing')
    if (new Set(calls.map(([c]) => c.call_id)).size !== calls.length) throw new Error('a call appears twice')
    for (const [c, o] of calls) {
      if (!totals.has(c.payer)) throw new Error(`call ${c.call_id} has no totals of its payer`)
      if (o && o.decision_id !== c.decision_id) throw new Error(`call ${c.call_id} is graded on another clock`)
    }
    this.newest = newest
    this.prunedAt = newest
    shareRepeats(calls)
    for (const [payer, t] of totals) this.payers.set(payer, t)
    for (const [q, v] of questions) this.questions.set(q, v)
    for (const [c, o] of calls) {
      this.calls.set(c.call_id, c)
      this.payers.get(c.payer)!.hot.push(c)
      if (o) {
        // Totals already count it: the grade is restored, not applied again.
        this.gradedBy.set(c.call_id, o)
        this.byGrade.push(Date.parse(o.resolved_at), c.call_id)
        this.noteGrade(Date.parse(o.resolved_at))
      } else this.indexByDecision(c)
    }
    for (const r of consents.values()) this.setConsent(r)
  }

  private indexByDecision(row: CallRow): void {
    const ids = this.byDecision.get(row.decision_id)
    if (ids) ids.push(row.call_id)
    else this.byDecision.set(row.decision_id, [row.call_id])
  }

  /**
   * Admits a call once (a second record with its id is a duplicate or a conflict; the first is kept). The id check
   * covers the hot calls only: a duplicate of a call that left memory would be counted again, which the log cannot
   * hold (a record is written once per lock, a producer's retry lands beside the first, days before its clock's grade
   * leaves the window; docs/decisions.md).
   */
  addCall(row: CallRow): { added: boolean; graded: CallGraded | null } {
    if (this.calls.has(row.call_id)) return { added: false, graded: null }
    this.calls.set(row.call_id, row)
    let totals = this.payers.get(row.payer)
    if (!totals) {
      totals = emptyTotals()
      this.payers.set(row.payer, totals)
    }
    totals.count++
    totals.hot.push(row)
    this.indexByDecision(row)
    this.version++
    const o = this.outcomes.get(row.decision_id)
    return { added: true, graded: o ? this.grade(row, o) : null }
  }

  /** A clock resolved: grades its hot calls not graded yet (a second delivery grades nothing). */
  resolve(o: OutcomeFacts): CallGraded[] {
    const at = Date.parse(o.resolved_at)
    if (this.newest === null || at > this.newest) this.newest = at
    const cutoff = this.cutoff()!
    if (at >= cutoff && !this.outcomes.has(o.decision_id)) this.outcomes.set(o.decision_id, o)
    const out: CallGraded[] = []
    const ids = this.byDecision.get(o.decision_id)
    if (ids) {
      this.byDecision.delete(o.decision_id)
      for (const id of ids) {
        const g = this.grade(this.calls.get(id)!, o)
        if (g) out.push(g)
      }
    }
    this.maybeSweep()
    return out
  }

  setConsent(row: OptInRow): void {
    this.consent.set(row.payer, row)
    this.version++
  }

  private grade(row: CallRow, o: OutcomeFacts): CallGraded | null {
    if (this.gradedBy.has(row.call_id)) return null
    const g = grade(row, o)
    this.gradedBy.set(row.call_id, o)
    this.byGrade.push(Date.parse(g.graded_at), row.call_id)
    this.noteGrade(Date.parse(g.graded_at))
    const t = this.payers.get(row.payer)!
    if (g.status === 'void') t.void++
    else {
      t.graded++
      if (g.correct) t.correct++
      if (g.house_correct) t.house_correct++
      t.player_brier_e12 += e12(g.player_brier!)
      t.house_brier_e12 += e12(g.house_brier!)
      t.marks.push(mark(Date.parse(g.graded_at), g.correct ? 1 : 0))
      let q = this.questions.get(row.question_id)
      if (!q) {
        q = { n: 0, player_brier_e12: 0n, house_brier_e12: 0n }
        this.questions.set(row.question_id, q)
      }
      q.n++
      q.player_brier_e12 += e12(g.player_brier!)
      q.house_brier_e12 += e12(g.house_brier!)
    }
    this.version++
    return g
  }

  /** Evicts on every resolution (a look at the heap's top when nothing is due); prunes the rest now and then. */
  private maybeSweep(): void {
    if (this.newest === null || !Number.isFinite(this.options.hotWindowMs)) return
    this.sweep(this.prunedAt !== null && this.newest - this.prunedAt < this.options.hotWindowMs / 10)
  }

  /** Drops the calls and grades that left the window (and, unless `callsOnly`, the old outcomes and marks). */
  sweep(callsOnly = false): void {
    const cutoff = this.cutoff()
    if (cutoff === null || !(this.options.evictable?.() ?? true)) return
    const payers = new Map<string, Set<string>>()
    for (let top = this.byGrade.peek(); top !== null && top < cutoff; top = this.byGrade.peek()) {
      const id = this.byGrade.pop()
      const c = this.calls.get(id)
      if (!c) continue
      this.calls.delete(id)
      this.gradedBy.delete(id)
      const gone = payers.get(c.payer)
      if (gone) gone.add(id)
      else payers.set(c.payer, new Set([id]))
    }
    for (const [p, gone] of payers) {
      const t = this.payers.get(p)!
      t.hot = t.hot.filter((c) => !gone.has(c.call_id))
    }
    if (payers.size > 0) this.version++
    if (callsOnly) return
    this.prunedAt = this.newest
    for (const [id, o] of this.outcomes) if (Date.parse(o.resolved_at) < cutoff) this.outcomes.delete(id)
    const marksCutoff = this.marksCutoff()!
    for (const t of this.payers.values()) if (t.marks.some((m) => markAt(m) < marksCutoff)) t.marks = t.marks.filter((m) => markAt(m) >= marksCutoff)
  }
}

/** A binary min-heap of (time, id). */
class MinHeap {
  private readonly times: number[] = []
  private readonly ids: string[] = []

  peek(): number | null {
    return this.times.length === 0 ? null : this.times[0]!
  }

  push(time: number, id: string): void {
    let i = this.times.length
    this.times.push(time)
    this.ids.push(id)
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (this.times[parent]! <= time) break
      this.swap(i, parent)
      i = parent
    }
  }

  pop(): string {
    const id = this.ids[0]!
    const lastTime = this.times.pop()!
    const lastId = this.ids.pop()!
    if (this.times.length > 0) {
      this.times[0] = lastTime
      this.ids[0] = lastId
      let i = 0
      for (;;) {
        const l = 2 * i + 1
        const r = l + 1
        let m = i
        if (l < this.times.length && this.times[l]! < this.times[m]!) m = l
        if (r < this.times.length && this.times[r]! < this.times[m]!) m = r
        if (m === i) break
        this.swap(i, m)
        i = m
      }
    }
    return id
  }

  private swap(a: number, b: number): void {
    ;[this.times[a], this.times[b]] = [this.times[b]!, this.times[a]!]
    ;[this.ids[a], this.ids[b]] = [this.ids[b]!, this.ids[a]!]
  }
}

function checkOutcome(x: unknown): OutcomeFacts {
  const o = x as Record<string, unknown> | null
  if (
    !o || typeof o.decision_id !== 'string' || !['obtains', 'not', 'unresolvable'].includes(o.outcome as string) ||
    (o.realized_choice !== null && typeof o.realized_choice !== 'string') || typeof o.resolved_at !== 'string' || !Number.isFinite(Date.parse(o.resolved_at))
  ) {
    throw new Error('a call book outcome is malformed')
  }
  return { decision_id: o.decision_id, outcome: o.outcome as OutcomeFacts['outcome'], realized_choice: o.realized_choice as string | null, resolved_at: o.resolved_at }
}

function checkTotals(x: unknown): PayerTotals {
  const v = x as Record<string, unknown> | null
  if (
    !v || !isCount(v.count) || !isCount(v.graded) || !isCount(v.void) || !isCount(v.correct) || !isCount(v.house_correct) ||
    !isE12(v.player_brier_e12) || !isE12(v.house_brier_e12) || !Array.isArray(v.marks) ||
    !v.marks.every((m) => Array.isArray(m) && m.length === 2 && Number.isSafeInteger(m[0]) && (m[1] === 0 || m[1] === 1))
  ) {
    throw new Error('payer totals are malformed')
  }
  return {
    count: v.count, hot: [], graded: v.graded, void: v.void, correct: v.correct, house_correct: v.house_correct,
    player_brier_e12: BigInt(v.player_brier_e12), house_brier_e12: BigInt(v.house_brier_e12), marks: (v.marks as [number, 0 | 1][]).map(([at, ok]) => mark(at, ok)),
  }
}
