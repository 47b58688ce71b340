import t from 'tap'
import { TickReorderBuffer } from '../../ingest/TickReorderBuffer.ts'
import { isoMs, type Tick } from '../../ingest/Tick.ts'

function mid(ms: number, price: number): Tick {
  const at = isoMs(ms)
  return {
    v: 1,
    kind: 'mid',
    asset: 'BTC',
    instrument: 'BTC',
    provenance: { source: 'hyperliquid:perp', provider: 'hyperliquid-ws', timestamp: at, received_at: at, quality: 'real' },
    price,
  }
}

const prices = (ticks: Tick[]) => ticks.map((x) => (x.kind === 'mid' ? x.price : NaN))

t.test('holds ticks for the window, then releases them in event-time order', async (t) => {
  const buf = new TickReorderBuffer(1000)
  t.equal(buf.push(mid(5000, 5)), 'held')
  t.equal(buf.push(mid(3000, 3)), 'held')
  t.equal(buf.push(mid(4000, 4)), 'held')
  t.same(prices(buf.release(4500)), [3], 'only what is a full window old')
  t.same(prices(buf.release(6000)), [4, 5])
  t.equal(buf.size, 0)
  t.equal(buf.watermark, 5000)
})

t.test('equal times keep arrival order', async (t) => {
  const buf = new TickReorderBuffer(0)
  buf.push(mid(1000, 1))
  buf.push(mid(1000, 2))
  buf.push(mid(999, 0))
  t.same(prices(buf.releaseAll()), [0, 1, 2])
})

t.test('a tick older than what was released is refused, not reordered', async (t) => {
  const buf = new TickReorderBuffer(100)
  buf.push(mid(1000, 1))
  buf.release(2000)
  t.equal(buf.push(mid(999, 0)), 'late')
  t.equal(buf.push(mid(1000, 2)), 'held', 'equal to the watermark is still in order')
  t.equal(buf.size, 1)
})

t.test('a held key is a duplicate; once released, the same tick is late instead', async (t) => {
  const buf = new TickReorderBuffer(100)
  t.equal(buf.push(mid(1000, 1), 'BTC|trade|7'), 'held')
  t.equal(buf.push(mid(1000, 1), 'BTC|trade|7'), 'duplicate')
  t.equal(buf.push(mid(1000, 1)), 'held', 'without a key nothing is deduplicated')
  t.equal(buf.release(5000).length, 2)
  t.equal(buf.push(mid(999, 1), 'BTC|trade|7'), 'late')
  t.equal(buf.push(mid(1001, 1), 'BTC|trade|7'), 'held', 'a released key may be used again by a later record')
})

t.test('a repeat of a released tick at the last released instant is a duplicate, not written twice', async (t) => {
  const buf = new TickReorderBuffer(100)
  buf.push(mid(1000, 1), 'BTC|trade|7')
  buf.push(mid(1000, 2), 'BTC|trade|8')
  t.equal(buf.release(5000).length, 2)
  t.equal(buf.push(mid(1000, 1), 'BTC|trade|7'), 'duplicate', 'the venue re-sent a frame whose ticks were already released')
  t.equal(buf.push(mid(1000, 3), 'BTC|trade|9'), 'held', 'a new record of that instant is still in order')
  t.equal(buf.release(5000).length, 1)
  t.equal(buf.push(mid(1000, 2), 'BTC|trade|8'), 'duplicate', 'the keys of earlier releases at the same instant are kept')
  buf.push(mid(2000, 4), 'BTC|trade|10')
  buf.release(5000)
  t.equal(buf.push(mid(2000, 1), 'BTC|trade|7'), 'held', 'at a later instant the key is free again')
})

t.test('a barrier holds everything at and after it until it is lifted; resumeAfter makes earlier ticks late', async (t) => {
  const buf = new TickReorderBuffer(0)
  buf.resumeAfter(500)
  t.equal(buf.push(mid(499, 0)), 'late', 'before the resume point')
  buf.setBarrier('bar:BTC', 3000)
  for (const ms of [1000, 2999, 3000, 4000]) buf.push(mid(ms, ms))
  t.equal(buf.barrier, 3000)
  t.same(prices(buf.release(10_000)), [1000, 2999], 'released up to just before the barrier')
  t.equal(buf.heldBehindBarrierSince(), 3000, 'since when the barrier holds ticks back (their arrival)')
  t.same(prices(buf.releaseAll()), [], 'a shutdown drain respects the barrier too')
  buf.setBarrier('funding:BTC', 3500)
  buf.clearBarrier('bar:BTC')
  t.equal(buf.barrier, 3500)
  t.same(prices(buf.release(10_000)), [3000])
  buf.clearBarrier('funding:BTC')
  t.equal(buf.barrier, Infinity)
  t.same(prices(buf.release(10_000)), [4000])
  t.equal(buf.heldBehindBarrierSince(), null)
})

t.test('rejects a negative window', async (t) => {
  t.throws(() => new TickReorderBuffer(-1), RangeError)
})
