import t from 'tap'
import canonicalize from 'canonicalize'
import { jcsSha256, sha256Hex } from '../../common/hash.ts'
import { canonicalJson, isCanonicalOrder } from '../../common/jcs.ts'
import { Prng } from '../../ingest/Prng.ts'

function ieee754(hex: string): number {
  return Buffer.from(hex, 'hex').readDoubleBE(0)
}

// RFC 8785 Appendix B ("Number Serialization Samples"): IEEE-754 bit pattern → canonical text.
const APPENDIX_B: Array<[string, string]> = [
  ['0000000000000000', '0'],
  ['8000000000000000', '0'], // minus zero
  ['0000000000000001', '5e-324'],
  ['8000000000000001', '-5e-324'],
  ['7fefffffffffffff', '1.7976931348623157e+308'],
  ['ffefffffffffffff', '-1.7976931348623157e+308'],
  ['4340000000000000', '9007199254740992'],
  ['c340000000000000', '-9007199254740992'],
  ['4430000000000000', '295147905179352830000'],
  ['44b52d02c7e14af5', '9.999999999999997e+22'],
  ['44b52d02c7e14af6', '1e+23'],
  ['44b52d02c7e14af7', '1.0000000000000001e+23'],
  ['444b1ae4d6e2ef4e', '999999999999999700000'],
  ['444b1ae4d6e2ef4f', '999999999999999900000'],
  ['444b1ae4d6e2ef50', '1e+21'],
  ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
  ['3eb0c6f7a0b5ed8d', '0.000001'],
  ['41b3de4355555553', '333333333.3333332'],
  ['41b3de4355555554', '333333333.33333325'],
  ['41b3de4355555555', '333333333.3333333'],
  ['41b3de4355555556', '333333333.3333334'],
  ['41b3de4355555557', '333333333.33333343'],
  ['becbf647612f3696', '-0.0000033333333333333333'],
  ['43143ff3c1cb0959', '1424953923781206.2'], // round to even
]

t.test('RFC 8785 Appendix B number samples (ours and the canonicalize package)', async (t) => {
  for (const [hex, expected] of APPENDIX_B) {
    t.equal(canonicalJson(ieee754(hex)), expected, `${hex} → ${expected}`)
    t.equal(canonicalize(ieee754(hex)), expected, `canonicalize package: ${hex}`)
  }
  // Appendix B: NaN (7fffffffffffffff) and Infinity (7ff0000000000000) are errors.
  t.throws(() => canonicalJson(ieee754('7fffffffffffffff')), TypeError)
  t.throws(() => canonicalJson(ieee754('7ff0000000000000')), TypeError)
  t.throws(() => canonicalJson({ a: [1, -Infinity] }), /\$\.a\[1\]/)
})

// RFC 8785 §3.2.2 (the sample input of §3.2.2, output as printed in §3.2.3's note and Appendix A flow):
const RFC_SAMPLE_INPUT = String.raw`{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`
const RFC_SAMPLE_OUTPUT = String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`

t.test('RFC 8785 §3.2.2 sample object', async (t) => {
  const value = JSON.parse(RFC_SAMPLE_INPUT)
  t.equal(canonicalJson(value), RFC_SAMPLE_OUTPUT)
  t.equal(canonicalize(value), RFC_SAMPLE_OUTPUT)
  // The canonical form is a fixed point.
  t.equal(canonicalJson(JSON.parse(RFC_SAMPLE_OUTPUT)), RFC_SAMPLE_OUTPUT)
})

// RFC 8785 §3.2.3 sorting example: properties sorted by UTF-16 code units ("\r", "1", "\u0080", "ö", "€", "😀", "דּ").
t.test('RFC 8785 §3.2.3 property sorting', async (t) => {
  const input = JSON.parse(String.raw`{
    "\u20ac": "Euro Sign",
    "\r": "Carriage Return",
    "\ufb33": "Hebrew Letter Dalet With Dagesh",
    "1": "One",
    "\ud83d\ude00": "Emoji: Grinning Face",
    "\u0080": "Control",
    "\u00f6": "Latin Small Letter O With Diaeresis"
  }`)
  const expected =
    '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
    '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}'
  t.equal(canonicalJson(input), expected)
  t.equal(canonicalize(input), expected)
  // UTF-16 order, not code-point order: U+1F600 (surrogates D83D…) sorts before U+FB33.
  // (Read from the text: Object.keys would list the integer-like key "1" first whatever the text order.)
  const out = canonicalJson(input)
  t.ok(out.indexOf('"\ud83d\ude00"') < out.indexOf('"\ufb33"'), 'surrogate pair before U+FB33')
})

t.test('non-JSON values are rejected, JSON.stringify-compatible values are kept', async (t) => {
  t.throws(() => canonicalJson('\ud800'), /lone surrogate/)
  t.throws(() => canonicalJson({ ['\udc00']: 1 }), /lone surrogate/)
  t.throws(() => canonicalJson(10n), /bigint/)
  t.throws(() => canonicalJson([undefined]), /\$\[0\]: undefined/)
  t.throws(() => canonicalJson(() => 1), /function/)
  t.throws(() => canonicalJson(new Map([[1, 2]])), /Map/)
  const cyclic: Record<string, unknown> = {}
  cyclic.self = cyclic
  t.throws(() => canonicalJson(cyclic), /circular/)
  t.equal(canonicalJson({ b: 1, a: undefined }), '{"b":1}', 'undefined members are omitted, as JSON.stringify does')
  t.equal(canonicalJson({ at: new Date(Date.UTC(2026, 0, 2, 3, 4, 5)) }), '{"at":"2026-01-02T03:04:05.000Z"}')
  t.equal(canonicalJson(Object.assign(Object.create(null), { z: 1, y: [] })), '{"y":[],"z":1}')
  t.equal(canonicalJson(-0), '0')
  t.equal(canonicalJson({ s: '\u001f\b\t\n\f\r"\\</>' }), '{"s":"\\u001f\\b\\t\\n\\f\\r\\"\\\\</>"}')
})

t.test('agrees with the canonicalize package on random nested values', async (t) => {
  const rng = new Prng(2024)
  const chars = ['a', 'B', 'z', '1', 'é', '€', '\u0000', '"', '\\', '😀', 'דּ', '\n', ' ']
  const str = (): string => Array.from({ length: rng.int(0, 6 - 1) }, () => chars[rng.int(0, chars.length - 1)]).join('')
  const gen = (depth: number): unknown => {
    const kind = rng.int(0, depth > 3 ? 3 : 5)
    if (kind === 0) return null
    if (kind === 1) return rng.int(0, 2 - 1) === 1
    if (kind === 2) return (rng.float() - 0.5) * 10 ** (rng.int(0, 40 - 1) - 20)
    if (kind === 3) return str()
    if (kind === 4) return Array.from({ length: rng.int(0, 4 - 1) }, () => gen(depth + 1))
    const o: Record<string, unknown> = {}
    for (let i = rng.int(0, 5 - 1); i > 0; i--) o[str()] = gen(depth + 1)
    return o
  }
  for (let i = 0; i < 500; i++) {
    const v = gen(0)
    const ours = canonicalJson(v)
    if (ours !== canonicalize(v)) t.fail(`mismatch on ${JSON.stringify(v)}`)
    if (canonicalJson(JSON.parse(ours)) !== ours) t.fail('not a fixed point after a JSON round trip')
  }
  t.pass('500 random values')
})

t.test('isCanonicalOrder: true exactly when JSON.stringify already writes the canonical text', async (t) => {
  t.ok(isCanonicalOrder(JSON.parse(canonicalJson({ b: [1, { z: 1, a: 'x' }], a: null, c: -0 }))), 'a value read back from canonical text')
  t.notOk(isCanonicalOrder({ b: 1, a: 2 }), 'members out of order')
  t.notOk(isCanonicalOrder({ a: [{ y: 1, x: 2 }] }), 'out of order deep inside an array')
  t.notOk(isCanonicalOrder({ 10: 1, 9: 2 }), 'integer keys, which objects enumerate numerically')
  t.notOk(isCanonicalOrder({ a: NaN }), 'a number JSON cannot carry')
  t.notOk(isCanonicalOrder({ a: undefined }), 'an undefined member')
  t.notOk(isCanonicalOrder({ a: new Date(0) }), 'a non-plain object')
  t.notOk(isCanonicalOrder({ a: '\ud800' }), 'a lone surrogate')
  const rng = new Prng(31)
  // No integer-like keys: objects enumerate those first, so such a value is refused (tested above), never misjudged.
  const keys = ['a', 'B', 'é', '€', '😀', 'דּ', 'aa', '1x', '']
  const gen = (depth: number): unknown => {
    const kind = rng.int(0, depth > 3 ? 2 : 4)
    if (kind === 0) return rng.float() * 1e6
    if (kind === 1) return keys[rng.int(0, keys.length - 1)]
    if (kind === 2) return null
    if (kind === 3) return Array.from({ length: rng.int(0, 3) }, () => gen(depth + 1))
    const o: Record<string, unknown> = {}
    for (let i = rng.int(0, 4); i > 0; i--) o[keys[rng.int(0, keys.length - 1)]!] = gen(depth + 1)
    return o
  }
  let sorted = 0
  for (let i = 0; i < 2000; i++) {
    const v = gen(0)
    if (isCanonicalOrder(v)) {
      sorted++
      if (JSON.stringify(v) !== canonicalJson(v)) t.fail(`said canonical but differs: ${JSON.stringify(v)}`)
    }
    if (!isCanonicalOrder(JSON.parse(canonicalJson(v)))) t.fail(`canonical text read back not recognized: ${canonicalJson(v)}`)
  }
  t.ok(sorted > 200 && sorted < 2000, `${sorted} of 2000 random values already in order, the rest not`)
})

t.test('values the fast walk gives up on (deep nesting, cycles, Dates inside) get the checked walk\'s text or error', async (t) => {
  let deep: unknown = { z: 'end', a: [1, '"'] }
  for (let i = 0; i < 200; i++) deep = i % 2 ? { k: deep, b: i } : [deep, i]
  t.equal(canonicalJson(deep), canonicalize(deep), '200 levels: the same text as the canonicalize package')
  const nested: Record<string, unknown> = { x: { y: [{}] } }
  ;((nested.x as { y: Array<Record<string, unknown>> }).y[0]!).back = nested
  t.throws(() => canonicalJson(nested), /circular/, 'a cycle is still named (the fast walk stops at its depth cap)')
  t.throws(() => canonicalJson({ a: { b: [0, 'ok', '\udc00'] } }), /\$\.a\.b\[2\]: lone surrogate/, 'the failing member keeps its path')
  t.equal(canonicalJson({ b: { at: new Date(0) }, a: 1 }), '{"a":1,"b":{"at":"1970-01-01T00:00:00.000Z"}}')
  t.equal(canonicalJson({ 'q"k': 1, 'b\\s': 2, 'c\u0001': 3 }), '{"b\\\\s":2,"c\\u0001":3,"q\\"k":1}', 'member names escaped as JSON.stringify does')
})

// SHA-256 known answers: FIPS 180-2 Appendix B.1 ("abc") and the empty string.
t.test('sha256Hex and jcsSha256: plain lowercase hex', async (t) => {
  t.equal(sha256Hex('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
  t.equal(sha256Hex(''), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855')
  t.equal(sha256Hex(Buffer.from('abc')), sha256Hex('abc'))
  t.equal(sha256Hex('€'), sha256Hex(Buffer.from([0xe2, 0x82, 0xac])), 'strings hash as UTF-8')
  const value = JSON.parse(RFC_SAMPLE_INPUT)
  t.equal(jcsSha256(value), sha256Hex(RFC_SAMPLE_OUTPUT))
  t.match(jcsSha256(value), /^[0-9a-f]{64}$/)
  t.equal(jcsSha256({ b: [1, 2], a: 'x' }), jcsSha256({ a: 'x', b: [1, 2] }), 'member order does not change the hash')
  t.not(jcsSha256({ a: 1 }), jcsSha256({ a: 1.5 }))
})
