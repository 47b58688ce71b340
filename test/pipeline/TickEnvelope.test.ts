import t from 'tap'
import { decodeTickValue, encodeTick, encodeTickEnvelope } from '../../pipeline/TickEnvelope.ts'
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
