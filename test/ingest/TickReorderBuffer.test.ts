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
  t.ok(buf.push(mid(5000, 5)))
  t.ok(buf.push(mid(3000, 3)))
  t.ok(buf.push(mid(4000, 4)))
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
  t.notOk(buf.push(mid(999, 0)), 'late')
  t.ok(buf.push(mid(1000, 2)), 'equal to the watermark is still in order')
  t.equal(buf.size, 1)
})

t.test('rejects a negative window', async (t) => {
  t.throws(() => new TickReorderBuffer(-1), RangeError)
})
