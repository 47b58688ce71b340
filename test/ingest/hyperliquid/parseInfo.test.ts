/**
 * The venue's decimals: `dec` (and the book's fast path, which shares its parser) gives exactly the double Number()
 * gives for every string the venue's grammar allows (DECIMAL: digits, an optional fraction, an optional exponent), and
 * refuses everything else, whichever path (Clinger's fast path or the general one) the string takes.
 */
import t from 'tap'
import { dec, parseBook } from '../../../ingest/hyperliquid/parseInfo.ts'
import { HyperliquidError } from '../../../ingest/hyperliquid/HyperliquidError.ts'

const refusedBy = (v: string) => {
  try {
    dec(v, '/x')
    return false
  } catch (err) {
    return err instanceof HyperliquidError
  }
}

t.test('the same double as Number() for well-formed decimals', async (t) => {
  const fixed = ['0', '-0', '007', '1', '0.1', '0.3', '104123.5', '-2.25', '0.000001', '3.000000000000001', '123456789012345', '1234567890123456', '12345678901234567890', '9007199254740993', '0.1234567890123456789', '1e5', '-1.5E-7', '2.5e+3', '65000.00000']
  for (const s of fixed) t.ok(Object.is(dec(s, '/x'), Number(s)), `${s} → ${Number(s)}`)
  // Random prices and sizes the way the venue writes them (up to 6 decimals, 1 to 17 digits): a seeded generator.
  let seed = 7
  const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31
  let differ = 0
  for (let i = 0; i < 20_000; i++) {
    const intDigits = 1 + Math.floor(next() * 11)
    const fracDigits = Math.floor(next() * 7)
    let s = next() < 0.1 ? '-' : ''
    for (let k = 0; k < intDigits; k++) s += String(Math.floor(next() * 10))
    if (fracDigits > 0) s += '.'
    for (let k = 0; k < fracDigits; k++) s += String(Math.floor(next() * 10))
    if (!Object.is(dec(s, '/x'), Number(s))) differ++
  }
  t.equal(differ, 0, '20,000 random decimals: every one the double Number() gives')
})

t.test('refused: what the grammar does not allow', async (t) => {
  for (const s of ['', '-', '.5', '1.', '1.2.3', '+1', ' 1', '1 ', '0x10', 'NaN', 'Infinity', '-Infinity', '1e', '1e400', '1,5', '١٢']) t.ok(refusedBy(s), JSON.stringify(s))
})

t.test('a book: the fast path and the checked path agree, and the checked one names the bad field', async (t) => {
  const level = (px: string, sz: string) => ({ px, sz, n: 1 })
  const book = parseBook({ coin: 'BTC', time: 1, levels: [[level('104123.5', '0.25'), level('104123', '1.5')], [level('104124', '2'), level('104125.5', '0.001')]] })
  t.same(book.bids.map((l) => [l.px, l.sz]), [[104123.5, 0.25], [104123, 1.5]])
  t.same(book.asks.map((l) => [l.px, l.sz]), [[104124, 2], [104125.5, 0.001]])
  t.throws(() => parseBook({ coin: 'BTC', time: 1, levels: [[level('104123.5', 'NaN')], [level('104124', '2')]] }, '/data'), { message: /response\/data\/levels\/0\/0\/sz: expected a decimal, got "NaN"/ })
})
