/**
 * BarAssembler: closed bars from the websocket `candle` channel. Reference §3 (../shared/reference/hyperliquid-api.md,
 * "WebSocket"): the `candle` subscription pushes "Candle objects, keys as candleSnapshot", and §2 `candleSnapshot`:
 * "`t` open time, `T` close time (inclusive, `t + interval − 1`)". The candles here are parsed from wire-shaped frames
 * with parseCandle (ingest/hyperliquid/parseInfo.ts), so they have exactly the HlCandle shape the stream delivers.
 *
 * Rule under test (BarAssembler.ts): a candle is final only when the connection that delivered its last update pushes
 * the next candle; if the next candle comes on another connection the held one is unconfirmed (fetch over REST) and
 * reported with its close instant T + 1.
 */
import t from 'tap'
import { BarAssembler } from '../../../ingest/hyperliquid/BarAssembler.ts'
import { parseCandle, type HlCandle } from '../../../ingest/hyperliquid/parseInfo.ts'

const MINUTE = 60_000
const T0 = Date.parse('2025-06-02T10:00:00Z')

/** A `candle` frame's data as the venue sends it (decimal strings), parsed. */
function candle(coin: string, openTime: number, close: string, opts: { interval?: string; high?: string; low?: string; volume?: string; n?: number } = {}): HlCandle {
  const interval = opts.interval ?? '1m'
  const span = interval === '5m' ? 5 * MINUTE : interval === '1h' ? 60 * MINUTE : MINUTE
  return parseCandle({
    t: openTime,
    T: openTime + span - 1,
    s: coin,
    i: interval,
    o: '100.0',
    c: close,
    h: opts.high ?? '105.0',
    l: opts.low ?? '95.0',
    v: opts.volume ?? '1.5',
    n: opts.n ?? 3,
  })
}

type Event = { final: HlCandle } | { unconfirmed: { coin: string; closeTime: number } }

function assembler(interval = '1m'): { asm: BarAssembler; events: Event[]; finals: () => HlCandle[] } {
  const events: Event[] = []
  const asm = new BarAssembler(interval, {
    final: (c) => events.push({ final: c }),
    unconfirmed: (coin, closeTime) => events.push({ unconfirmed: { coin, closeTime } }),
  })
  const finals = () => events.flatMap((e) => ('final' in e ? [e.final] : []))
  return { asm, events, finals }
}

t.test('the candle shape: parseCandle of a wire frame gives T inclusive (t + interval − 1)', async (t) => {
  const c = candle('BTC', T0, '101.0')
  t.same(c, { coin: 'BTC', interval: '1m', openTime: T0, closeTime: T0 + MINUTE - 1, open: 100, high: 105, low: 95, close: 101, volume: 1.5, trades: 3 })
})

t.test('a candle is final when the same connection delivers the next candle', async (t) => {
  const { asm, events, finals } = assembler()
  asm.update(candle('BTC', T0, '101.0'), 1)
  t.same(events, [], 'the forming candle is not final')
  asm.update(candle('BTC', T0 + MINUTE, '102.0'), 1)
  t.equal(events.length, 1)
  t.same(finals(), [candle('BTC', T0, '101.0')], 'the previous candle, final, as last delivered')
  asm.update(candle('BTC', T0 + 2 * MINUTE, '103.0'), 1)
  t.same(
    finals().map((c) => c.openTime),
    [T0, T0 + MINUTE],
    'each next candle finalises the one before',
  )
})

t.test('updates of the same candle replace the held one: the final carries the last update', async (t) => {
  const { asm, events, finals } = assembler()
  asm.update(candle('BTC', T0, '100.5', { high: '101.0', low: '99.0', volume: '1.0', n: 1 }), 7)
  asm.update(candle('BTC', T0, '103.0', { high: '104.0', low: '99.0', volume: '2.0', n: 2 }), 7)
  asm.update(candle('BTC', T0, '98.0', { high: '104.0', low: '97.5', volume: '3.25', n: 4 }), 7)
  t.same(events, [], 'no event for updates of the same candle')
  asm.update(candle('BTC', T0 + MINUTE, '98.5'), 7)
  t.same(finals(), [candle('BTC', T0, '98.0', { high: '104.0', low: '97.5', volume: '3.25', n: 4 })], 'the last update is the final bar')
})

t.test('an older update is ignored', async (t) => {
  const { asm, events, finals } = assembler()
  asm.update(candle('BTC', T0, '101.0'), 1)
  asm.update(candle('BTC', T0 + MINUTE, '102.0'), 1)
  t.equal(finals().length, 1)
  // A late update of the candle already final: ignored, not a second final nor a replacement of the held one.
  asm.update(candle('BTC', T0, '120.0', { high: '121.0' }), 1)
  t.equal(events.length, 1, 'no event for the late update')
  asm.update(candle('BTC', T0 + 2 * MINUTE, '103.0'), 1)
  t.same(
    finals().map((c) => [c.openTime, c.close]),
    [
      [T0, 101],
      [T0 + MINUTE, 102],
    ],
    'the held candle stayed the newer one',
  )
  // Older still, on another connection: ignored too (it proves nothing and is not held).
  asm.update(candle('BTC', T0 - MINUTE, '90.0'), 2)
  t.equal(events.length, 2, 'no event for an older update on another connection')
  asm.update(candle('BTC', T0 + 3 * MINUTE, '104.0'), 1)
  t.same(finals().at(-1)!.openTime, T0 + 2 * MINUTE, 'the same-connection rule still holds for the held candle')
})

t.test('a candle of another interval is ignored', async (t) => {
  const { asm, events, finals } = assembler('1m')
  asm.update(candle('BTC', T0, '101.0'), 1)
  asm.update(candle('BTC', T0 + 5 * MINUTE, '150.0', { interval: '5m' }), 1)
  asm.update(candle('BTC', T0 + 60 * MINUTE, '150.0', { interval: '1h' }), 2)
  t.same(events, [], 'a later candle of another interval finalises nothing and reports nothing')
  asm.update(candle('BTC', T0 + MINUTE, '102.0'), 1)
  t.same(finals(), [candle('BTC', T0, '101.0')], 'the held 1m candle was untouched')
  t.equal(asm.interval, '1m')
})

t.test('the next candle on a different connection: the held one is unconfirmed with its close instant, never final', async (t) => {
  const { asm, events, finals } = assembler()
  const held = candle('BTC', T0, '101.0')
  asm.update(held, 1)
  asm.update(candle('BTC', T0 + MINUTE, '102.0'), 2)
  t.same(events, [{ unconfirmed: { coin: 'BTC', closeTime: held.closeTime + 1 } }], 'unconfirmed, at T + 1')
  t.equal(held.closeTime + 1, T0 + MINUTE, 'T + 1 is the close instant (t + interval)')
  // The new connection carries on; the unconfirmed candle never becomes final later.
  asm.update(candle('BTC', T0, '101.0'), 1) // a straggler of the old connection
  asm.update(candle('BTC', T0 + 2 * MINUTE, '103.0'), 2)
  t.same(
    finals().map((c) => c.openTime),
    [T0 + MINUTE],
    'only the candle whose last update came on connection 2 is final',
  )
  t.notOk(
    finals().some((c) => c.openTime === T0),
    'the unconfirmed candle is never final',
  )
})

t.test('a reconnect that re-delivers the forming candle: its last update is on the new connection, so it can be final', async (t) => {
  const { asm, events, finals } = assembler()
  asm.update(candle('BTC', T0, '101.0'), 1)
  asm.update(candle('BTC', T0, '101.5'), 2) // the new connection's first frame: the whole forming candle
  asm.update(candle('BTC', T0 + MINUTE, '102.0'), 2)
  t.same(finals(), [candle('BTC', T0, '101.5')])
  t.equal(events.length, 1, 'no unconfirmed report')
})

t.test('coins are held separately', async (t) => {
  const { asm, events } = assembler()
  asm.update(candle('BTC', T0, '101.0'), 1)
  asm.update(candle('ETH', T0, '2001.0'), 2)
  asm.update(candle('ETH', T0 + MINUTE, '2002.0'), 2)
  asm.update(candle('BTC', T0 + MINUTE, '102.0'), 3)
  t.same(events, [{ final: candle('ETH', T0, '2001.0') }, { unconfirmed: { coin: 'BTC', closeTime: T0 + MINUTE } }])
})

t.test('each candle is final at most once, and never both final and unconfirmed', async (t) => {
  // A deterministic shuffle of updates (current, late, duplicate, next) over two connections that alternate.
  let seed = 12345
  const rand = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31
    return seed / 2 ** 31
  }
  const { asm, events } = assembler()
  let open = T0
  let conn = 1
  let updates = 0
  for (let step = 0; step < 2000; step++) {
    const r = rand()
    if (r < 0.05) conn = conn === 1 ? 2 : 1 // reconnect
    const which = rand()
    const at = which < 0.6 ? open : which < 0.8 ? open - MINUTE * Math.floor(1 + rand() * 3) : (open += MINUTE)
    asm.update(candle(rand() < 0.5 ? 'BTC' : 'ETH', at, (100 + rand()).toFixed(3)), conn)
    updates++
  }
  const finalKeys = events.flatMap((e) => ('final' in e ? [`${e.final.coin}|${e.final.openTime}`] : []))
  const unconfirmedKeys = events.flatMap((e) => ('unconfirmed' in e ? [`${e.unconfirmed.coin}|${e.unconfirmed.closeTime - MINUTE}`] : []))
  t.ok(finalKeys.length > 50, `${finalKeys.length} finals over ${updates} updates`)
  t.ok(unconfirmedKeys.length > 5, `${unconfirmedKeys.length} unconfirmed over ${updates} updates`)
  t.equal(new Set(finalKeys).size, finalKeys.length, 'no candle is final twice')
  t.equal(new Set(unconfirmedKeys).size, unconfirmedKeys.length, 'no candle is reported unconfirmed twice')
  t.same(
    finalKeys.filter((k) => unconfirmedKeys.includes(k)),
    [],
    'no candle is both final and unconfirmed',
  )
  for (const coin of ['BTC', 'ETH']) {
    const opens = events.flatMap((e) => ('final' in e && e.final.coin === coin ? [e.final.openTime] : []))
    t.ok(
      opens.every((o, i) => i === 0 || o > opens[i - 1]!),
      `${coin} finals come in increasing open time`,
    )
  }
})
