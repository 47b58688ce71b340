/**
 * The banned-profit-language scanner (spec, Assumptions block: "raw context, never a profit claim; tool output is
 * scanned for banned profit language"): a known-answer table of phrases that must and must not match, keys as well
 * as values, nested paths, and the assumptions block the funding surfaces serve passing clean.
 */
import t from 'tap'
import { pino } from 'pino'
import { FUNDING_ASSUMPTIONS } from '../../../product/market/PaidMarketServices.ts'
import { assertNoProfitLanguage, BANNED_PROFIT_PHRASES, normaliseForScan, scanProfitLanguage } from '../../../product/market/profitLanguage.ts'
import { ServiceError } from '../../../common/ServiceError.ts'

/** [text, the phrase id it must raise, or null when it is clean]. Written for this test (no external source). */
const TABLE: Array<[string, string | null]> = [
  ['Guaranteed 12% on your margin', 'guaranteed'],
  ['we guarantee it', 'guaranteed'],
  ['a risk-free carry', 'risk-free'],
  ['Risk Free', 'risk-free'],
  ['riskFree', 'risk-free'],
  ['riskless basis trade', 'risk-free'],
  ['expected_profit_usd', 'profit'],
  ['highly profitable', 'profit'],
  ['an arbitrage opportunity on SOL', 'arbitrage-opportunity'],
  ['arb opportunities', 'arbitrage-opportunity'],
  ['free money', 'free-money'],
  ['Annual yield of 30%', 'yield'],
  ['12% APY', 'yield'],
  ['passive income from funding', 'passive-income'],
  ["you can't lose", 'cannot-lose'],
  ['a sure thing', 'sure-thing'],
  ['earn money while you sleep', 'make-money'],
  // Clean: the words the surfaces do use, and look-alikes the word boundaries must not catch.
  ['economics_modeled', null],
  ['raw_context', null],
  ['opportunities', null],
  ['liquidation_tape_hours_below_24 (7/24)', null],
  ['a SOL funding settlement between 2026-01-01T00:00Z and 2026-01-01T08:00Z deviates from neutral 1.25e-05/h', null],
  ['basis_bps = (perp mark - index) / index x 10,000', null],
  ['hyperliquid:perp', null],
  ['simulated', null],
  ['approximate', null],
  ['fielded', null],
  ['nonprofit', null],
  ['2026-04-07T08:00:00.000Z', null],
]

t.test('known-answer table', async (t) => {
  for (const [text, expected] of TABLE) {
    const found = scanProfitLanguage(text).map((v) => v.phrase)
    if (expected === null) t.same(found, [], `clean: ${text}`)
    else t.ok(found.includes(expected), `${text} → ${expected} (got ${found.join(', ') || 'nothing'})`)
  }
})

t.test('every documented phrase has a reason and is exercised by the table', async (t) => {
  const raised = new Set(TABLE.flatMap(([, p]) => (p ? [p] : [])))
  for (const p of BANNED_PROFIT_PHRASES) {
    t.ok(p.why.length > 0, `${p.id} says why`)
    t.ok(raised.has(p.id), `${p.id} is in the table`)
  }
})

t.test('keys and nested values are scanned, with JSON-pointer paths', async (t) => {
  const v = scanProfitLanguage({ data: { rows: [{ asset: 'BTC', note: 'Free money' }], expectedProfit: 1 } })
  t.same(
    v.map((x) => [x.path, x.where, x.phrase]),
    [
      ['/data/rows/0/note', 'value', 'free-money'],
      ['/data/expectedProfit', 'key', 'profit'],
    ],
  )
  t.same(scanProfitLanguage({ a: 1, b: null, c: [true, 2.5] }), [], 'numbers, booleans and null are not text')
  t.equal(normaliseForScan('riskFree_RATE-x'), 'risk free rate x')
})

t.test('the served assumptions block is clean and states economics_modeled none', async (t) => {
  t.equal(FUNDING_ASSUMPTIONS.economics_modeled, 'none')
  t.same(scanProfitLanguage(FUNDING_ASSUMPTIONS), [])
})

t.test('assertNoProfitLanguage: clean passes through; a violation is logged and INTERNAL', async (t) => {
  const lines: string[] = []
  const log = pino({ level: 'error' }, { write: (s: string) => void lines.push(s) })
  const clean = { funding: [{ asset: 'BTC', rate: 1.25e-5 }] }
  t.equal(assertNoProfitLanguage(clean, 'funding', log), clean)
  let thrown: unknown = null
  try {
    assertNoProfitLanguage({ note: 'guaranteed yield' }, 'funding', log)
  } catch (err) {
    thrown = err
  }
  t.ok(thrown instanceof ServiceError, 'a ServiceError')
  t.match(thrown, { code: 'INTERNAL', status: 500 })
  t.equal(lines.length, 1)
  const logged = JSON.parse(lines[0]!)
  t.equal(logged.surface, 'funding')
  t.same(logged.violations.map((v: { phrase: string }) => v.phrase).sort(), ['guaranteed', 'yield'])
})
