import t from 'tap'
import { TickHistory } from '../../../pipeline/features/TickHistory.ts'
import { H, T0, bar, funding } from '../../helpers/ticks.ts'

t.test('window holds bars and settlements in (start, end], the start price, and coverage flags', async (t) => {
  const h = new TickHistory()
  for (let i = 1; i <= 6; i++) h.ingest(bar('BTC', T0 + i * H, 100 + i, 102 + i, 99 + i, 101 + i))
  h.ingest(funding('BTC', T0, 0.0001))
  h.ingest(funding('BTC', T0 + 8 * H, 0.0003))
  const w = h.window('BTC', T0 + 2 * H, T0 + 4 * H)
  t.same(w.bars.map((b) => b.close_time), [T0 + 3 * H, T0 + 4 * H])
  t.equal(w.startPrice, 103, 'close of the bar at the window start')
  t.equal(w.complete, true)
  t.same(w.funding, [], 'no settlement in (T0+2h, T0+4h]')
  t.equal(w.fundingComplete, true, 'the 8 h series covers the window, it just has no settlement in it')

  const f = h.window('BTC', T0, T0 + 8 * H)
  t.same(f.funding, [{ time: T0 + 8 * H, rate_per_hour: 0.0003 / 8, interval_hours: 8 }], 'settlement at the window end is in (start, end]')
  t.equal(f.complete, false, 'bars stop at T0+6h: the window is not covered')

  const after = h.window('BTC', T0 + 8 * H, T0 + 24 * H)
  t.equal(after.fundingComplete, false, 'funding known only to T0+8h: 16 h later is not covered')
  t.equal(h.window('ETH', T0, T0 + H).complete, false, 'unknown asset: nothing covered')
})

t.test('prune bounds memory', async (t) => {
  const h = new TickHistory()
  for (let i = 1; i <= 5000; i++) h.ingest(bar('BTC', T0 + i * H, 1, 1, 1, 1))
  h.prune(T0 + 4900 * H)
  t.equal(h.size(), 101)
})
