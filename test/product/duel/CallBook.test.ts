/**
 * The call book's memory and snapshot stay flat as calls grow (issue 31, Bounded memory): the same traffic (200
 * payers, calls an hour before their clock's horizon, clocks resolving in time order) at 10,000 and at 100,000 calls
 * with the same 7-day window gives snapshots of about the same size, while the totals count every call; and a
 * resolution replayed after its calls left memory grades nothing.
 */
import t from 'tap'
import { DAY_MS } from '../../../common/time.ts'
import { CALL_RECORD_VERSION, callId, type CallRow } from '../../../pipeline/records/callRecord.ts'
import { CallBook, mark, markAt, markOk } from '../../../product/duel/CallBook.ts'
import type { OutcomeFacts } from '../../../product/duel/grading.ts'

const T0 = Date.UTC(2026, 0, 1)
const HOUR = 3_600_000
const PAYERS = Array.from({ length: 200 }, (_, i) => `0x${i.toString(16).padStart(40, '0')}`)
/** Calls per clock: one clock an hour, so 100,000 calls span about 208 days. */
const PER_CLOCK = 20

const iso = (ms: number) => new Date(ms).toISOString()
const decisionId = (k: number) => `00000000-0000-4000-8000-${k.toString(16).padStart(12, "0")}`

function feed(calls: number): { book: CallBook; outcomes: OutcomeFacts[] } {
  const book = new CallBook({ hotWindowMs: 7 * DAY_MS, marksWindowMs: 30 * DAY_MS })
  const outcomes: OutcomeFacts[] = []
  for (let k = 0; k * PER_CLOCK < calls; k++) {
    const horizon = T0 + (k + 1) * HOUR
    for (let j = 0; j < PER_CLOCK && k * PER_CLOCK + j < calls; j++) {
      const payer = PAYERS[(k * 7 + j * 13) % PAYERS.length]!
      const row: CallRow = {
        v: CALL_RECORD_VERSION, call_id: callId(payer, decisionId(k)), payer, decision_id: decisionId(k), question_id: `S0${1 + (k % 5)}_test`,
        asset: 'BTC', subject: null, call: j % 2 ? 'obtains' : 'not', call_probability: j % 3 ? 0.6 : null, house_probability: 0.4,
        choice_id: null, locked_at: iso(horizon - HOUR + j * 1000), horizon_end: iso(horizon), payment_id: `pay_${k}_${j}`, payment_rail: 'credits',
      }
      book.addCall(row)
    }
    const o: OutcomeFacts = { decision_id: decisionId(k), outcome: k % 11 === 0 ? 'unresolvable' : k % 2 ? 'obtains' : 'not', realized_choice: null, resolved_at: iso(horizon) }
    outcomes.push(o)
    book.resolve(o)
  }
  book.sweep()
  return { book, outcomes }
}

const snapshotBytes = (book: CallBook) => {
  let n = 0
  for (const row of book.rows()) n += JSON.stringify(row).length + 1
  return n
}

t.test('snapshot and hot set stay flat from 10,000 to 100,000 calls', async (t) => {
  const small = feed(10_000)
  const large = feed(100_000)
  t.equal(small.book.size.calls, 10_000)
  t.equal(large.book.size.calls, 100_000, 'the totals count every call')
  t.equal(large.book.size.graded + large.book.size.void, 100_000, 'every call graded')
  const [a, b] = [snapshotBytes(small.book), snapshotBytes(large.book)]
  t.comment(`snapshot ${a} bytes at 10,000 calls, ${b} bytes at 100,000 (hot ${small.book.size.hot} and ${large.book.size.hot} calls)`)
  t.ok(large.book.size.hot <= 8 * 24 * PER_CLOCK, `hot calls bounded by the window (${large.book.size.hot})`)
  t.ok(b < a * 1.25, 'ten times the calls, about the same snapshot')

  // Restored from its rows, the book replays every resolution (as the bus does at a start): nothing is graded twice.
  const restored = new CallBook({ hotWindowMs: 7 * DAY_MS, marksWindowMs: 30 * DAY_MS })
  restored.load([...large.book.rows()] as unknown[])
  let regraded = 0
  for (const o of large.outcomes) regraded += restored.resolve(o).length
  t.equal(regraded, 0, 'replayed resolutions grade nothing')
  t.same([...restored.rows()], [...large.book.rows()], 'the same state after the replay')
})

t.test('a snapshot row that does not fit is refused before anything is applied', async (t) => {
  const { book } = feed(500)
  const rows = [...book.rows()] as unknown[]
  for (const bad of [
    rows.filter((r) => (r as unknown[])[0] !== 'n'),
    rows.map((r) => ((r as unknown[])[0] === 't' ? ['t', (r as unknown[])[1], { ...((r as unknown[])[2] as object), player_brier_e12: '1.5' }] : r)),
    [...rows, rows.find((r) => (r as unknown[])[0] === 'c')],
  ]) {
    const fresh = new CallBook()
    t.throws(() => fresh.load(bad))
    t.same(fresh.size, { calls: 0, graded: 0, void: 0, hot: 0 }, 'nothing applied')
  }
})

t.test('grade marks are held one number each and written to the snapshot as [graded_at, correct] pairs, in order (issue 31)', async (t) => {
  for (const [at, ok] of [[T0, 1], [T0 + 1, 0], [Date.UTC(2100, 0, 1), 1]] as const) {
    t.same([markAt(mark(at, ok)), markOk(mark(at, ok))], [at, ok])
  }
  t.ok(mark(T0, 1) < mark(T0 + 1, 0), 'numeric order is (at, ok) order')
  const { book } = feed(2_000)
  const totals = [...book.rows()].filter((r) => (r as unknown[])[0] === 't') as Array<['t', string, { marks: unknown[] }]>
  const pairs = totals.flatMap(([, , v]) => v.marks)
  t.ok(pairs.length > 0 && pairs.every((m) => Array.isArray(m) && m.length === 2 && Number.isSafeInteger(m[0]) && (m[1] === 0 || m[1] === 1)), 'pairs in the snapshot')
  for (const [, , v] of totals) {
    const ats = (v.marks as Array<[number, number]>).map(([at, ok]) => at * 2 + ok)
    t.same(ats, [...ats].sort((a, b) => a - b))
  }
  const held = book.payer(totals[0]![1])!.marks
  t.ok(held.every((m) => typeof m === 'number'), 'held as numbers')
  const restored = new CallBook({ hotWindowMs: 7 * DAY_MS, marksWindowMs: 30 * DAY_MS })
  restored.load([...book.rows()] as unknown[])
  t.same(restored.payer(totals[0]![1])!.marks, held, 'loaded back to the same numbers')
  const fresh = new CallBook()
  t.throws(() => fresh.load([...book.rows()].map((r) => ((r as unknown[])[0] === 't' ? ['t', (r as unknown[])[1], { ...((r as unknown[])[2] as object), marks: [[T0 + 0.5, 1]] }] : r)) as unknown[]), 'a fractional instant is refused')
})
