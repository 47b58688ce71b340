import t from 'tap'
import { decodeTickRecord, decodeTickValue, encodeTick, encodeTickEnvelope } from '../../pipeline/TickEnvelope.ts'
import type { Tick } from '../../ingest/Tick.ts'

const tick: Tick = {
  v: 1,
  kind: 'mid',
  asset: 'BTC',
  instrument: 'BTC',
  provenance: { source: 'hyperliquid:perp', provider: 'test', timestamp: '2024-03-01T00:00:00.000Z', received_at: '2024-03-01T00:00:00.010Z', quality: 'real' },
  price: 61000.5,
}

t.test('bare ticks and envelopes decode to the same tick', async (t) => {
  t.same(decodeTickValue(encodeTick(tick)), { tick, seq: null, tape: null })
  const env = encodeTickEnvelope({ seq: 42, tape: 'btc-2024-03', tick })
  t.equal(env.toString(), `{"seq":42,"tape":"btc-2024-03","tick":${JSON.stringify(tick)}}`, 'fixed key order, stable bytes')
  t.same(decodeTickValue(env), { tick, seq: 42, tape: 'btc-2024-03' })
  t.same(decodeTickValue(env.toString()), { tick, seq: 42, tape: 'btc-2024-03' }, 'strings accepted too')
})

t.test('bad values name the field path', async (t) => {
  t.throws(() => decodeTickValue('{"seq":-1,"tape":"x","tick":{}}'), { name: 'TickValidationError', path: '/seq' })
  t.throws(() => decodeTickValue(`{"seq":1,"tape":"","tick":${JSON.stringify(tick)}}`), { name: 'TickValidationError', path: '/tape' })
  t.throws(() => decodeTickValue(`{"seq":1,"tape":"x","tick":${JSON.stringify(tick)},"extra":1}`), { name: 'TickValidationError', path: '/extra' })
  const { price: _price, ...noPrice } = tick
  t.throws(() => decodeTickValue(JSON.stringify({ seq: 1, tape: 'x', tick: noPrice })), { name: 'TickValidationError', path: '/tick/price' })
  t.throws(() => decodeTickValue(JSON.stringify(noPrice)), { name: 'TickValidationError', path: '/price' })
  t.throws(() => decodeTickValue('{not json'), SyntaxError)
  t.throws(() => encodeTickEnvelope({ seq: 1.5, tape: 'x', tick }), { name: 'TickValidationError', path: '/seq' })
})

t.test('an envelope can carry the tick as the tape line text it was parsed from', async (t) => {
  const line = JSON.stringify(tick)
  t.same(encodeTickEnvelope({ seq: 7, tape: 'x', tick }, line), encodeTickEnvelope({ seq: 7, tape: 'x', tick }), 'same bytes as serializing the tick')
  const spaced = ` ${JSON.stringify(tick, null, 1).replaceAll('\n', '')} `
  t.same(decodeTickValue(encodeTickEnvelope({ seq: 7, tape: 'x', tick }, spaced)), { tick, seq: 7, tape: 'x' }, 'a non-canonical line decodes to the same tick')
})

t.test('decodeTickRecord: one decode per value buffer, shared by the readers of that record', async (t) => {
  const value = encodeTickEnvelope({ seq: 1, tape: 'x', tick })
  const a = decodeTickRecord({ partition: 0, offset: 5, value })
  t.equal(decodeTickRecord({ partition: 0, offset: 5, value }), a, 'the same record buffer gives the same object')
  const copy = Buffer.from(value)
  const b = decodeTickRecord({ partition: 0, offset: 5, value: copy })
  t.not(b, a, 'another buffer at the same position (another log, a disk read) is decoded afresh')
  t.same(b, a)
  const other = encodeTickEnvelope({ seq: 2, tape: 'x', tick: { ...tick, price: 1 } })
  t.equal((decodeTickRecord({ partition: 1, offset: 5, value: other }).tick as { price: number }).price, 1, 'partitions do not share a slot')
  t.equal(decodeTickRecord({ partition: 0, offset: 5, value: copy }), b)
  const bad = Buffer.from('{"seq":1,"tape":"x","tick":{"v":1}}')
  t.throws(() => decodeTickRecord({ partition: 0, offset: 9, value: bad }), { name: 'TickValidationError' })
  t.throws(() => decodeTickRecord({ partition: 0, offset: 9, value: bad }), { name: 'TickValidationError' }, 'a failed decode is not remembered')
})
