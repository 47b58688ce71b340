/**
 * CallEvents.history as a fold (issue 31: a year's rebuild held a million calls as events at once): the locks handed
 * over as the call journal is read and the grades held compactly (HistoryGrades) until handed over in resolution
 * order give the very events, in the very order, of the arrays the duel returned before (the whole journal read,
 * first record per call id, every lock, then every grade sorted by resolution), byte for byte, with and without a
 * `since`. A consumer folding the same events in the same order (the Arena) ends in the same state.
 */
import t from 'tap'
import { Channel, type ResolutionEvent } from '../../../engine/LedgerBus.ts'
import { Journal } from '../../../pipeline/journal/Journal.ts'
import type { EventLog } from '../../../pipeline/log/EventLog.ts'
import { CALL_RECORD_VERSION, CALLS, callId, type CallRow } from '../../../pipeline/records/callRecord.ts'
import type { LedgerDecision } from '../../../pipeline/records/decisionRecord.ts'
import { topicNames } from '../../../pipeline/topics.ts'
import { byResolution, type CallGraded, type CallLocked } from '../../../product/duel/CallEvents.ts'
import { DuelService } from '../../../product/duel/DuelService.ts'
import { grade, lockedEvent, type OutcomeFacts } from '../../../product/duel/grading.ts'
import { seeded } from '../../helpers/checkpoint.ts'
import { testDecision, testOutcome } from '../../helpers/ledgerRecords.ts'
import { forEachLog } from '../../helpers/logs.ts'

const T0 = Date.UTC(2026, 6, 1)
const HOUR = 3_600_000
const PAYERS = Array.from({ length: 25 }, (_, i) => `0x${(i + 1).toString(16).padStart(40, '0')}`)

/** 40 clocks, some of them distribution questions (a chosen class). */
const DECISIONS: LedgerDecision[] = Array.from({ length: 40 }, (_, n) =>
  testDecision(n, {
    probability: 0.1 + (n % 9) / 10,
    horizon_end: new Date(T0 + (n + 4) * HOUR).toISOString(),
    ...(n % 7 === 3 ? { question_id: 'S01_regime', choice: { choice_id: `c${n % 3}`, distribution: { c0: 0.2, c1: 0.5, c2: 0.3 } } } : {}),
  }),
)

/**
 * 32 of them resolved, at only 6 distinct instants (grades of several clocks tie on graded_at, so call_id orders
 * them), in an order unrelated to the clocks'; some unresolvable, some distributions realized or not.
 */
function resolutions(rnd: () => number): ResolutionEvent[] {
  const out: ResolutionEvent[] = []
  for (const n of DECISIONS.map((_, i) => i).sort(() => rnd() - 0.5).slice(0, 32)) {
    const d = DECISIONS[n]!
    const resolved_at = new Date(T0 + 48 * HOUR + Math.floor(rnd() * 6) * 7 * HOUR).toISOString()
    const outcome = rnd() < 0.1 ? 'unresolvable' : rnd() < 0.5 ? 'obtains' : 'not'
    const realized_choice = n % 7 === 3 && outcome !== 'unresolvable' && rnd() < 0.8 ? `c${Math.floor(rnd() * 3)}` : null
    out.push({ decision: d, outcome: testOutcome(d, { outcome, resolved_at, realized_choice }) })
  }
  return out
}

/** Calls of random payers on random clocks, with duplicate records of some (another side and payment: the first wins). */
function calls(rnd: () => number, n: number): CallRow[] {
  const rows: CallRow[] = []
  for (let i = 0; i < n; i++) {
    const payer = PAYERS[Math.floor(rnd() * PAYERS.length)]!
    const d = DECISIONS[Math.floor(rnd() * DECISIONS.length)]!
    const id = callId(payer, d.decision_id)
    const earlier = rows.find((r) => r.call_id === id)
    rows.push({
      v: CALL_RECORD_VERSION,
      call_id: id,
      payer,
      decision_id: d.decision_id,
      question_id: d.question_id,
      asset: d.asset,
      subject: null,
      call: earlier ? (earlier.call === 'obtains' ? 'not' : 'obtains') : rnd() < 0.5 ? 'obtains' : 'not',
      call_probability: rnd() < 0.3 ? null : Math.round(rnd() * 1000) / 1000,
      house_probability: d.probability,
      choice_id: d.choice?.choice_id ?? null,
      locked_at: new Date(T0 + Math.floor(rnd() * 3 * HOUR)).toISOString(),
      horizon_end: d.horizon_end,
      payment_id: `pay_${i}`,
      payment_rail: 'credits',
    })
  }
  return rows
}

type Fold = Array<[kind: 'locked' | 'graded', json: string]>

/** What the duel returned before: the whole journal, first record per id, every lock, then the grades sorted by resolution. */
function arrayFold(rows: CallRow[], resolved: ResolutionEvent[], since: number | null): Fold {
  const outcomes = new Map<string, OutcomeFacts>()
  for (const e of resolved) if (!outcomes.has(e.outcome.decision_id)) outcomes.set(e.outcome.decision_id, { decision_id: e.outcome.decision_id, outcome: e.outcome.outcome, realized_choice: e.outcome.realized_choice, resolved_at: e.outcome.resolved_at })
  const seen = new Set<string>()
  const locked: CallLocked[] = []
  const graded: CallGraded[] = []
  for (const row of rows) {
    if (seen.has(row.call_id)) continue
    seen.add(row.call_id)
    locked.push(lockedEvent(row))
    const o = outcomes.get(row.decision_id)
    if (o) graded.push(grade(row, o))
  }
  const old = new Set(since === null ? [] : graded.filter((g) => Date.parse(g.graded_at) < since).map((g) => g.call_id))
  return [
    ...locked.filter((e) => !old.has(e.call_id)).map((e): [string, string] => ['locked', JSON.stringify(e)]),
    ...graded.sort(byResolution).filter((e) => !old.has(e.call_id)).map((e): [string, string] => ['graded', JSON.stringify(e)]),
  ] as Fold
}

t.test('history as a fold hands over the array fold\'s events in its order, byte for byte', (t) =>
  forEachLog(t, async (t, makeLog: () => Promise<EventLog>, kind) => {
    const log = await makeLog()
    const rnd = seeded(31)
    const resolved = resolutions(rnd)
    // A resolution delivered twice (the bus is at-least-once): the first is the clock's.
    resolved.push({ ...resolved[0]!, outcome: { ...resolved[0]!.outcome, outcome: 'unresolvable' } })
    const names = topicNames()
    const journal = await Journal.open({ log, def: CALLS, topic: names.calls, partitions: 3 })
    const rows = calls(rnd, kind === 'kafka' ? 300 : 1500)
    for (let i = 0; i < rows.length; i += 200) await journal.append(rows.slice(i, i + 200))
    const byId = new Map(DECISIONS.map((d) => [d.decision_id, d]))
    const duel = await DuelService.open({
      log,
      partitions: 3,
      now: () => T0 + 100 * HOUR,
      // A window of two hours: most grades left memory, so history reads the journal.
      hotWindowMs: 2 * HOUR,
      ledger: { decision: (id) => byId.get(id) ?? null, clockNow: () => T0, resolutions: new Channel<ResolutionEvent>('resolution', () => resolved, (e) => e.outcome.decision_id) },
    })
    t.teardown(async () => {
      await duel.close()
      await journal.close()
      await log.close()
    })
    const size = duel.book.size
    t.ok(size.hot < size.calls, `the journal is read (${size.hot} of ${size.calls} calls in memory)`)
    // The journal's order as readAll gives it (partitions one after another), the order the arrays were built in.
    const inJournal = await journal.readAll()
    t.ok(new Set(inJournal.map((r) => r.call_id)).size < inJournal.length, 'the journal holds duplicate records of some calls')
    const interleaved: string[] = []
    await journal.scan((r) => void interleaved.push(r.payment_id))
    t.not(interleaved.join(), inJournal.map((r) => r.payment_id).join(), 'one read of every partition meets the records in another order than readAll (so the order is tested)')
    const graded = arrayFold(inJournal, resolved, null).filter(([k]) => k === 'graded').map(([, j]) => JSON.parse(j) as CallGraded)
    t.ok(new Set(graded.map((g) => g.graded_at)).size < graded.length / 10, 'grades of several clocks tie on graded_at')
    const middle = Date.parse(graded[Math.floor(graded.length / 2)]!.graded_at)
    for (const since of [null, middle]) {
      const got: Fold = []
      await duel.events.history!({ since, locked: (e) => got.push(['locked', JSON.stringify(e)]), graded: (e) => got.push(['graded', JSON.stringify(e)]) })
      const want = arrayFold(inJournal, resolved, since)
      t.ok(want.some(([k]) => k === 'graded'), `since ${since}: grades to hand over`)
      t.same(got, want, `since ${since === null ? 'none' : new Date(since).toISOString()}: ${want.length} events, the same bytes in the same order`)
    }
  }),
)
