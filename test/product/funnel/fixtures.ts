/**
 * A small hand-built event history for the funnel tests, with its known answers worked out by hand below: three
 * payers (A, B, C), the house schedule, the credit rows and the duel's calls.
 */
import { Channel } from '../../../engine/LedgerBus.ts'
import type { DrawRow } from '../../../pipeline/records/drawRecord.ts'
import type { FunnelCallGrade, FunnelCallLock, FunnelCallSource, FunnelDecision, FunnelLedgerSource } from '../../../product/funnel/ports.ts'

export const A = '0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'
export const B = '0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'
export const C = '0xcccccccccccccccccccccccccccccccccccccccc'

const T0 = Date.parse('2026-03-01T00:00:00.000Z')
export const iso = (minutes: number) => new Date(T0 + minutes * 60_000).toISOString()

/** Five decisions: three paid (x402, credits, credits), two of the house schedule (rail none). */
export const DECISIONS: FunnelDecision[] = [
  { decision_id: 'd1', payment_rail: 'credits' },
  { decision_id: 'd2', payment_rail: 'credits' },
  { decision_id: 'd3', payment_rail: 'x402' },
  { decision_id: 'h1', payment_rail: 'none' },
  { decision_id: 'h2', payment_rail: 'none' },
]
/** Resolved: d1, d3 (paid) and h1 (house): decision_resolve = 2. */
export const RESOLVED = ['d1', 'd3', 'h1']

/**
 * Credit rows: A and B claim the free allowance (2 claims); A buys a pack, B a plan, C a rate lock (2 purchases: a
 * rate lock is not a pack or plan). Debits: A pays p1 (two lots), p2, p3 from the pack → A has 3 paid runs; B pays q1
 * from the plan and q2 from the plan but q2 is reversed, plus s1 from the free allowance → B has 1 paid run; C pays r1
 * and r2 from the rate-lock lot → 2. second_paid_run = 2 (A and C).
 */
export function drawRows(): DrawRow[] {
  const at = iso(0)
  const credit = (payer: string, reason: string, lot: string, amount: number): DrawRow => ({ id: `c-${lot}`, payer, kind: 'credit', amount, reason, ref: `ref-${lot}`, lot_id: lot, created_at: at, expires_at: null })
  const debit = (payer: string, ref: string, lot: string, n = 1): DrawRow => ({ id: `d-${ref}-${lot}-${n}`, payer, kind: 'debit', amount: -1000, reason: 'decision.deep', ref, lot_id: lot, created_at: at, expires_at: null })
  return [
    credit(A, 'scout', 'la0', 3000), credit(B, 'scout', 'lb0', 3000),
    credit(A, 'pack.booster_150k', 'la1', 150_000), credit(A, 'grant', 'la2', 5000), credit(B, 'plan.desk', 'lb1', 100_000), credit(C, 'rate_lock', 'lc1', 50_000),
    debit(A, 'p1', 'la1'), debit(A, 'p1', 'la2', 2), debit(A, 'p2', 'la1'), debit(A, 'p3', 'la1'),
    { id: 'ans-p1', payer: A, kind: 'answer', amount: 0, reason: 'decision.deep', ref: 'p1', lot_id: '', created_at: at, expires_at: null },
    debit(B, 'q1', 'lb1'), debit(B, 'q2', 'lb1'), debit(B, 's1', 'lb0'),
    { id: 'rf-q2', payer: B, kind: 'refund', amount: 1000, reason: 'reversal.operator', ref: 'q2', lot_id: 'lb1', created_at: at, expires_at: null },
    debit(C, 'r1', 'lc1'), debit(C, 'r2', 'lc1'),
  ]
}

/**
 * Calls: A locks c1 at 0' and c2 at 10', c1 graded at 60', c2 graded at 30' → A's first lock 0', first grade 30':
 * 30 min. B locks c3 at 5', graded at 95' → 90 min. C locks c4 at 20', void at 80' → not activated. So: locks 4,
 * graded 3, activated 2, median of (30, 90) min = 60 min = 3,600,000 ms, n 2.
 */
export const LOCKS: FunnelCallLock[] = [
  { call_id: 'c1', payer: A, locked_at: iso(0) },
  { call_id: 'c2', payer: A, locked_at: iso(10) },
  { call_id: 'c3', payer: B, locked_at: iso(5) },
  { call_id: 'c4', payer: C, locked_at: iso(20) },
]
export const GRADES: FunnelCallGrade[] = [
  { call_id: 'c1', payer: A, locked_at: iso(0), status: 'graded', graded_at: iso(60) },
  { call_id: 'c2', payer: A, locked_at: iso(10), status: 'graded', graded_at: iso(30) },
  { call_id: 'c3', payer: B, locked_at: iso(5), status: 'graded', graded_at: iso(95) },
  { call_id: 'c4', payer: C, locked_at: iso(20), status: 'void', graded_at: iso(80) },
]

/** Real bus channels (engine/LedgerBus.ts semantics: replay on subscribe, once per id) over mutable histories. */
export function ledgerSource(decisions: FunnelDecision[], resolved: string[]) {
  const dec = [...decisions]
  const res = resolved.map((id) => ({ decision: dec.find((d) => d.decision_id === id)!, outcome: { decision_id: id } }))
  const source = {
    decisions: new Channel<FunnelDecision>('decision', () => dec, (d) => d.decision_id),
    resolutions: new Channel<{ decision: FunnelDecision; outcome: { decision_id: string } }>('resolution', () => res, (e) => e.outcome.decision_id),
  } satisfies FunnelLedgerSource
  return {
    source,
    decide(d: FunnelDecision) {
      dec.push(d)
      source.decisions.publish(d)
    },
  }
}

export function callSource(locks: FunnelCallLock[], grades: FunnelCallGrade[]) {
  const source = {
    locked: new Channel<FunnelCallLock>('call-locked', () => locks, (c) => c.call_id),
    graded: new Channel<FunnelCallGrade>('call-graded', () => grades, (c) => c.call_id),
  } satisfies FunnelCallSource
  return source
}
