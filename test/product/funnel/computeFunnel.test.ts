/**
 * The funnel computation on a hand-built history with known answers (fixtures.ts works them out): counts per step,
 * activation, the median first lock → first grade, an empty window's null median, and unmeasured steps null, never 0.
 */
import t from 'tap'
import { FUNNEL_STEPS, computeFunnel, drawFacts, median } from '../../../product/funnel/computeFunnel.ts'
import { FunnelTally } from '../../../product/funnel/FunnelTally.ts'
import type { FunnelStep } from '../../../pipeline/records/funnelRecord.ts'
import { A, DECISIONS, GRADES, LOCKS, RESOLVED, callSource, drawRows, ledgerSource } from './fixtures.ts'

const byStep = (steps: FunnelStep[]) => Object.fromEntries(steps.map((s) => [s.step, s]))

t.test('every source wired: each step counts the hand-worked answer and says how', async (t) => {
  const ledger = ledgerSource(DECISIONS, RESOLVED)
  const tally = new FunnelTally({ ledger: ledger.source, calls: callSource(LOCKS, GRADES) })
  const f = computeFunnel({
    ledger: tally.ledgerFacts(), draws: drawFacts(drawRows()), calls: tally.callFacts(),
    arena: { xpByKind: { ask: 7, correct_call: 2 }, questCompletions: 3, badgeAwards: 1 },
  })
  t.same(f.steps.map((s) => s.step), FUNNEL_STEPS, 'every spec step, in the spec order')
  const s = byStep(f.steps)
  const counts = Object.fromEntries(f.steps.map((x) => [x.step, x.count]))
  t.same(counts, {
    anonymous_read: null, question_open: null, free_credit_claim: 2, decision_run: 3, player_call_lock: 4, decision_resolve: 2,
    player_call_grade: 3, xp_award: 9, quest_complete: 3, badge_award: 1, rank_up: null, credit_purchase_begin: null,
    credit_purchase: 2, second_paid_run: 2,
  })
  for (const x of f.steps) {
    if (x.count === null) {
      t.equal(x.measurable, false, `${x.step}: unmeasured`)
      t.ok(x.note && x.note.length > 20 && x.derivation === undefined, `${x.step}: a note says why`)
    } else {
      t.equal(x.measurable, true, `${x.step}: measured`)
      t.ok(x.derivation && x.derivation.length > 20 && x.note === undefined, `${x.step}: a derivation says how`)
    }
  }
  t.match(s.anonymous_read!.note, /never measurable/)
  t.match(s.rank_up!.note, /derived/)
  t.same(f.xp_by_kind, { ask: 7, correct_call: 2 })
  t.equal(f.window_calls, 3 + 4, 'paid decision runs plus player calls locked')
  t.same(f.activation, { activated_payers: 2, graded_calls: 3, first_lock_to_first_grade: { median_ms: 3_600_000, n: 2, window_calls: 4 } })

  // Live events after the replay: a new paid decision counts, a house one and a repeated id do not.
  ledger.decide({ decision_id: 'd4', payment_rail: 'credits' })
  ledger.decide({ decision_id: 'h3', payment_rail: 'none' })
  ledger.source.decisions.publish({ decision_id: 'd4', payment_rail: 'credits' })
  t.equal(tally.ledgerFacts()!.paidDecisions, 4, 'once per decision_id, paid ones only')
  tally.close()
})

t.test('nothing but the ledger wired: the other steps are null with a note naming the unwired source, never 0', async (t) => {
  const tally = new FunnelTally({ ledger: ledgerSource(DECISIONS, RESOLVED).source })
  const f = computeFunnel({ ledger: tally.ledgerFacts(), draws: null, calls: null, arena: null })
  const s = byStep(f.steps)
  for (const step of ['player_call_lock', 'player_call_grade'] as const) t.match(s[step], { count: null, measurable: false, note: /duel/ })
  for (const step of ['xp_award', 'quest_complete', 'badge_award'] as const) {
    t.match(s[step], { count: null, measurable: false, note: 'the Arena is not wired on this deployment' })
  }
  for (const step of ['free_credit_claim', 'credit_purchase', 'second_paid_run'] as const) t.match(s[step], { count: null, measurable: false, note: /billing/ })
  t.equal(s.decision_run!.count, 3)
  t.equal(f.xp_by_kind, null)
  t.equal(f.window_calls, 3)
  t.same(f.activation, { activated_payers: null, graded_calls: null, first_lock_to_first_grade: { median_ms: null, n: null, window_calls: null } })
  t.notOk(f.steps.some((x) => x.count === 0), 'no unmeasured step reads 0')
  tally.close()
})

t.test('an empty window: measured zeros where a source is wired, a null median', async (t) => {
  const tally = new FunnelTally({ ledger: ledgerSource([], []).source, calls: callSource([], []) })
  const f = computeFunnel({ ledger: tally.ledgerFacts(), draws: drawFacts([]), calls: tally.callFacts(), arena: null })
  const s = byStep(f.steps)
  t.match(s.decision_run, { count: 0, measurable: true }, 'a wired source measures 0')
  t.match(s.player_call_lock, { count: 0, measurable: true })
  t.same(f.activation, { activated_payers: 0, graded_calls: 0, first_lock_to_first_grade: { median_ms: null, n: 0, window_calls: 0 } })
  t.equal(f.window_calls, 0)
  tally.close()
})

t.test('activation: locks without a grade, only void grades, and an odd count', async (t) => {
  const locks = [{ call_id: 'x', payer: A, locked_at: '2026-03-01T00:00:00.000Z' }]
  const onlyVoid = callSource(locks, [{ ...locks[0]!, status: 'void', graded_at: '2026-03-01T01:00:00.000Z' }])
  const tally = new FunnelTally({ calls: onlyVoid })
  const f = computeFunnel({ ledger: null, draws: null, calls: tally.callFacts(), arena: null })
  t.same(f.activation, { activated_payers: 0, graded_calls: 0, first_lock_to_first_grade: { median_ms: null, n: 0, window_calls: 1 } }, 'a void call activates nobody')
  t.equal(median([5, 1, 3]), 3)
  t.equal(median([4, 1]), 2.5)
  t.equal(median([]), null)
  tally.close()
})

t.test('drawFacts: one paid run per payment ref, reversed and free-allowance debits excluded', async (t) => {
  t.same(drawFacts(drawRows()), { scoutClaims: 2, purchases: 2, secondPaidRunPayers: 2 })
})
