/**
 * The success envelope is written by serializeSuccess without building meta; its text must be byte for byte what
 * JSON.stringify({ data, meta: buildMeta(...) }) gives (spec Response envelope: every meta field present, absent
 * values null or []). jsonOf reuses the JSON of frozen values; isoTimestamp is Date#toISOString.
 */
import t from 'tap'
import { buildMeta, isoTimestamp, jsonOf, serializeSuccess, type MetaOverrides, type MetaPricing } from '../../serving/envelope.ts'
const NOW = Date.parse('2026-07-01T12:34:56.789Z')
const PRICING: MetaPricing = { key: 'decision.entry', credits: 10, usd: '0.01', rung: 0, rail: 'credits', payment_id: 'cr_1' }

const overrides: Array<[string, MetaOverrides | undefined]> = [
  ['none', undefined],
  ['empty', {}],
  ['all', {
    state: 'trend_up',
    probabilities: { trend_up: 0.55, range: 0.3, trend_down: 0.15 },
    confidence: { value: 0.4, basis: 'jev' },
    freshness: [{ input: 'hyperliquid:perp', ok: true, staleness_budget_ms: 60_000, age_ms: 12, last_success_at: '2026-07-01T12:34:56.000Z' }],
    horizon: '60m',
    data_sources: ['hyperliquid:perp'],
  }],
  ['empty strings and lists', { state: '', horizon: '', freshness: [], data_sources: [] }],
  ['escapes', { state: 'a"b\\c\u2028', horizon: '\n' }],
]

const datas: Array<[string, unknown]> = [
  ['object', { a: 1, b: [1.5, null, 'x'], c: { d: true } }],
  ['frozen object', Object.freeze({ a: 0.1 + 0.2, s: 'é"' })],
  ['wrapper of a frozen list', { chips: Object.freeze([Object.freeze({ p: 0.25 })]) }],
  ['wrapper with an undefined and a function', { list: Object.freeze([1]), u: undefined, f: () => 1 }],
  ['wrapper with a Date', { at: new Date(NOW), list: Object.freeze([]) }],
  ['large frozen object', Object.freeze({ rows: Object.freeze(Array.from({ length: 300 }, (_, i) => Object.freeze({ i, p: i / 7, s: 'é' }))) })],
  ['wrapper of a large frozen list', { chips: Object.freeze(Array.from({ length: 300 }, (_, i) => Object.freeze({ i, p: i / 7, s: '→' }))) }],
  ['array', [1, 'two', null]],
  ['null', null],
  ['string', 'text'],
  ['undefined', undefined],
]

t.test('serializeSuccess equals JSON.stringify of the built envelope', async (t) => {
  for (const [dn, data] of datas) {
    for (const [on, o] of overrides) {
      for (const pricing of [null, PRICING]) {
        // A second id with characters JSON escapes and multi-byte ones: the stamp is written as UTF-8, not Latin-1.
        for (const id of ['req-1', 'ré"q\n→']) {
          const expected = JSON.stringify({ data, meta: buildMeta(id, NOW, '2026.07', pricing, o) })
          t.equal(serializeSuccess(data, JSON.stringify(id), NOW, JSON.stringify('2026.07'), pricing, o).toString(), expected, `${dn}, ${on}, pricing ${pricing ? 'set' : 'null'}, id ${JSON.stringify(id)}`)
        }
      }
    }
  }
})

t.test('frozen data is written from cached bytes', async (t) => {
  const chips = Object.freeze(Array.from({ length: 1000 }, (_, i) => Object.freeze({ i, s: 'é→' })))
  const wrapped = serializeSuccess({ chips }, '"a"', NOW, '"v"', null, undefined)
  t.ok(Buffer.isBuffer(wrapped), 'one-key wrapper of a frozen list')
  t.ok(Buffer.isBuffer(serializeSuccess(chips, '"a"', NOW, '"v"', null, undefined)), 'a frozen list')
  t.ok(Buffer.isBuffer(serializeSuccess({ chips: Object.freeze([1]) }, '"a"', NOW, '"v"', null, undefined)), 'small frozen data too')
  t.equal(wrapped.toString(), JSON.stringify({ data: { chips }, meta: buildMeta('a', NOW, 'v', null, undefined) }), 'multi-byte UTF-8 survives the byte copy')
  t.type(serializeSuccess({ chips: [1] }, '"a"', NOW, '"v"', null, undefined), 'string', 'unfrozen data stays text')
})

t.test('a body stays intact while later bodies are written (slab slices never overlap)', async (t) => {
  const data = Object.freeze({ id: 'x'.repeat(900) })
  const first = serializeSuccess(data, '"first"', NOW, '"v"', null, undefined) as Buffer
  const copy = Buffer.from(first)
  const later: Buffer[] = []
  for (let i = 0; i < 2000; i++) later.push(serializeSuccess(data, `"r${i}"`, NOW + i, '"v"', null, undefined) as Buffer)
  t.ok(first.equals(copy), 'the first body is unchanged after 2,000 more (several slabs)')
  t.equal(JSON.parse(later[1999]!.toString()).meta.request_id, 'r1999')
  const offsets = new Map<ArrayBufferLike, Set<number>>()
  let shared = 0
  for (const b of later) {
    const seen = offsets.get(b.buffer) ?? new Set<number>()
    if (seen.has(b.byteOffset)) shared++
    seen.add(b.byteOffset)
    offsets.set(b.buffer, seen)
  }
  t.equal(shared, 0, 'no two bodies share memory')
  t.ok(offsets.size > 1, 'bodies span more than one slab')
})

t.test('a large body is lent: written into one reused buffer, exact each time', async (t) => {
  // Over a slab piece (32 KiB): a fresh Buffer per response cost a full GC every few MB (byteSlab slabConcat).
  const rows = (tag: string) => Object.freeze(Array.from({ length: 400 }, (_, i) => Object.freeze({ i, tag, s: 'é→'.repeat(20) })))
  const a = rows('a')
  const b = rows('b')
  const first = serializeSuccess(a, '"one"', NOW, '"v"', null, undefined) as Buffer
  t.ok(first.length > 32 * 1024, `the body is large (${first.length} bytes)`)
  t.equal(first.toString(), JSON.stringify({ data: a, meta: buildMeta('one', NOW, 'v', null, undefined) }), 'the first large body is exact')
  const second = serializeSuccess(b, '"two"', NOW + 1, '"v"', null, undefined) as Buffer
  t.equal(second.toString(), JSON.stringify({ data: b, meta: buildMeta('two', NOW + 1, 'v', null, undefined) }), 'the next one is exact too')
  t.equal(second.buffer, first.buffer, 'the same memory: no allocation per large response (the contract: send before the next)')
  const small = serializeSuccess(Object.freeze({ x: 1 }), '"s"', NOW, '"v"', null, undefined) as Buffer
  t.not(small.buffer, second.buffer, 'a small body is still a slab slice of its own')
  t.equal(second.toString(), JSON.stringify({ data: b, meta: buildMeta('two', NOW + 1, 'v', null, undefined) }), 'a small body does not touch the lent one')
})

t.test('jsonOf: frozen values serialized once, others every time', async (t) => {
  const frozen = Object.freeze({ n: 1 })
  t.equal(jsonOf(frozen), '{"n":1}')
  t.equal(jsonOf(frozen), jsonOf(frozen))
  const open: { n: number } = { n: 1 }
  t.equal(jsonOf(open), '{"n":1}')
  open.n = 2
  t.equal(jsonOf(open), '{"n":2}', 'a mutable object is never cached')
  const wrapper = { list: Object.freeze([1]), extra: { n: 1 } }
  t.equal(jsonOf(wrapper), '{"list":[1],"extra":{"n":1}}')
  wrapper.extra.n = 3
  t.equal(jsonOf(wrapper), '{"list":[1],"extra":{"n":3}}', 'the wrapper and its mutable parts are written each time')
})

t.test('isoTimestamp equals toISOString across second and year boundaries', async (t) => {
  const instants = [NOW, NOW + 1, NOW + 211, Date.parse('2026-12-31T23:59:59.999Z'), Date.parse('2027-01-01T00:00:00.000Z'), 0, 5, 999, 1000, Date.parse('1969-12-31T23:59:59.001Z'), Date.parse('+010000-01-01T00:00:00.000Z')]
  for (const ms of instants) t.equal(isoTimestamp(ms), new Date(ms).toISOString(), String(ms))
  for (let ms = NOW; ms < NOW + 3000; ms += 7) if (isoTimestamp(ms) !== new Date(ms).toISOString()) t.fail(`differs at ${ms}`)
})
