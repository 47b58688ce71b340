/**
 * Non-finite numbers and −0 survive a JSON round trip through the state snapshot's number markers, nested anywhere;
 * plain values pass unchanged (long number arrays are not copied); an unknown marker is refused.
 */
import t from 'tap'
import { decodeNumbers, encodeNumbers } from '../../../pipeline/state/jsonNumbers.ts'

t.test('round trip keeps NaN, ±Infinity and −0 exactly', async (t) => {
  const value = { a: [1, NaN, -Infinity, 2.5, -0], b: { c: Infinity, d: 'NaN', e: null, f: [[NaN]] }, g: 0 }
  const back = decodeNumbers(JSON.parse(JSON.stringify(encodeNumbers(value)))) as typeof value
  t.ok(Number.isNaN(back.a[1]))
  t.equal(back.a[2], -Infinity)
  t.ok(Object.is(back.a[4], -0), '−0 stays −0')
  t.equal(back.b.c, Infinity)
  t.equal(back.b.d, 'NaN', 'a string that reads NaN stays a string')
  t.ok(Number.isNaN(back.b.f[0]![0]))
  t.ok(Object.is(back.g, 0), '0 stays +0')
  t.same(back.a[0], 1)
})

t.test('plain arrays are returned as they are; an unknown marker throws', async (t) => {
  const plain = [1, 2, 3]
  t.equal(encodeNumbers(plain), plain, 'no copy when nothing needs a marker')
  t.equal(decodeNumbers(plain), plain)
  t.throws(() => decodeNumbers({ '#': 'Nope' }), /unknown number marker/)
})
