/**
 * The book frame scanner can change speed, never an outcome: on every frame it either returns exactly what the general
 * path (JSON.parse → parseBook → bookTopOf) gives, the same doubles, or null (the frame then goes the general way).
 * Frames: the recorded DYDX book (keys in the recorded order n, px, sz), a day of the local venue's books (its wire
 * shape), and thousands of seeded mutations of both (whitespace, escapes, exponents, numbers for strings, duplicate,
 * unknown or missing keys, empty sides, truncation, NaN, leading zeros).
 */
import t from 'tap'
import { LocalVenueMarket } from '../../../ingest/hyperliquid/local/LocalVenueMarket.ts'
import { wireBook } from '../../../ingest/hyperliquid/local/wire.ts'
import { bookTopOf, parseBook, type HlBookTop } from '../../../ingest/hyperliquid/parseInfo.ts'
import { scanBookFrame } from '../../../ingest/hyperliquid/scanBookFrame.ts'
import { seeded } from '../../helpers/checkpoint.ts'
import { loadCassettes } from '../../helpers/HyperliquidReplayServer.ts'

const HOUR = 3_600_000
const ORIGIN = Date.parse('2026-03-01T00:00:00Z')

/** The general path's answer: the top, null (a side is empty), or 'refused' (not JSON, or a field parseBook rejects). */
function general(text: string): HlBookTop | null | 'refused' {
  try {
    const msg = JSON.parse(text) as { channel?: unknown; data?: unknown }
    if (msg?.channel !== 'l2Book') return 'refused'
    return bookTopOf(parseBook(msg.data, '/data'))
  } catch {
    return 'refused'
  }
}

function frames(): string[] {
  const out: string[] = []
  const recorded = loadCassettes().interactions.find((i) => i.request.type === 'l2Book')
  if (recorded) out.push(`{"channel":"l2Book","data":${recorded.body}}`)
  const market = new LocalVenueMarket({ originMs: ORIGIN, clock: { now: () => ORIGIN + 24 * HOUR }, coins: ['BTC', 'ETH', 'SOL'] })
  for (let at = ORIGIN + 60_000; at <= ORIGIN + 24 * HOUR; at += 97_000) {
    for (const coin of ['BTC', 'ETH', 'SOL']) {
      const book = market.book(coin, at)
      if (book) out.push(JSON.stringify({ channel: 'l2Book', data: wireBook(book) }))
    }
  }
  return out
}

const MUTATIONS: Array<(s: string, rnd: () => number) => string> = [
  (s, r) => spliceAt(s, r, ' '),
  (s, r) => spliceAt(s, r, '\\n'),
  (s, r) => { const i = Math.floor(r() * s.length); return s.slice(0, i) + s.slice(i + 1) },
  (s) => s.slice(0, Math.max(1, s.length - 3)),
  (s, r) => nth(s, r, /"px":"([0-9.]+)"/g, (m, v) => `"px":${v}`),
  (s, r) => nth(s, r, /"sz":"([0-9.]+)"/g, (m, v) => `"sz":"${v}e0"`),
  (s, r) => nth(s, r, /"px":"([0-9.]+)"/g, () => '"px":"NaN"'),
  (s, r) => nth(s, r, /"sz":"([0-9.]+)"/g, (m, v) => `"sz":"-${v}"`),
  (s, r) => nth(s, r, /"px":"([0-9.]+)"/g, (m, v) => `"px":"0${v}"`),
  (s, r) => nth(s, r, /"px":"([0-9.]+)"/g, (m, v) => `"px":"${v}123456789012345"`),
  (s, r) => nth(s, r, /"px":"([0-9.]+)"/g, (m, v) => `"px":".${v.replace('.', '')}"`),
  (s, r) => nth(s, r, /"sz":"([0-9.]+)"/g, (m, v) => `"sz":"${v}",` + `"sz":"1"`),
  (s, r) => nth(s, r, /"n":(\d+)/g, () => '"n":null'),
  (s, r) => nth(s, r, /"n":(\d+)/g, () => '"n":1.5'),
  (s, r) => nth(s, r, /"n":(\d+)/g, () => '"n":01'),
  (s, r) => nth(s, r, /"n":(\d+)/g, () => '"n":"3"'),
  (s, r) => nth(s, r, /"n":(\d+),?/g, () => ''),
  (s, r) => nth(s, r, /\{"(px|n)"/g, (m) => `{"extra":true,${m.slice(1)}`),
  (s) => s.replace(/"coin":"([A-Za-z]+)"/, '"coin":"B\\u0054C"'),
  (s) => s.replace(/"coin":"([A-Za-z]+)"/, '"coin":""'),
  (s) => s.replace(/"time":(\d+)/, '"time":$1.0'),
  (s) => s.replace(/"time":(\d+)/, '"time":"$1"'),
  (s) => s.replace(/"time":(\d+)/, '"time":1e12'),
  (s) => s.replace(/"time":(\d+)/, '"time":-$1'),
  (s) => s.replace('"levels":[[', '"levels":[[],[').replace(/\]\]\}\}$/, ']]}}'),
  (s) => s.replace(/"levels":\[\[.*?\],\[/, '"levels":[[],['),
  (s) => s.replace(/,\[[^\]]*\]\]\}\}$/, ']}}'),
  (s) => s.replace(/\]\]\}\}$/, '],[]]}}'),
  (s) => s.replace('"data":{', '"data":{"extra":1,'),
  (s) => s.replace('"data":{', '"data":{"time":1,'),
  (s) => s.replace(/\}\}$/, '},"x":1}'),
  (s) => `${s} `,
  (s) => s.replace('{"channel":"l2Book","data":', '{"data":').replace(/\}$/, ',"channel":"l2Book"}'),
]

function spliceAt(s: string, r: () => number, insert: string): string {
  const i = Math.floor(r() * s.length)
  return s.slice(0, i) + insert + s.slice(i)
}

function nth(s: string, r: () => number, re: RegExp, replace: (m: string, v: string) => string): string {
  const hits = [...s.matchAll(re)]
  if (hits.length === 0) return s
  const h = hits[Math.floor(r() * hits.length)]!
  return s.slice(0, h.index) + replace(h[0], h[1] ?? '') + s.slice(h.index! + h[0].length)
}

t.test('well-formed frames: the scanner reads every one, the same doubles as the general path', async (t) => {
  const all = frames()
  t.ok(all.length > 2000, `${all.length} frames`)
  let same = 0
  for (const f of all) {
    const g = general(f)
    const s = scanBookFrame(f)
    if (s === null || g === 'refused' || g === null || !Object.is(s.bidDepthUsd, g.bidDepthUsd) || !Object.is(s.askDepthUsd, g.askDepthUsd)) {
      t.fail(`differs on ${f.slice(0, 120)}: ${JSON.stringify(s)} vs ${JSON.stringify(g)}`)
      continue
    }
    if (JSON.stringify(s) === JSON.stringify(g)) same++
  }
  t.equal(same, all.length, 'every frame taken by the fast path, with the general path\'s answer')
  t.match(scanBookFrame(all[0]!), { coin: 'DYDX', bidPx: 2.111, bidSz: 134.4, askPx: 2.1124, askSz: 352.3 }, 'the recorded book (keys n, px, sz) is read')
})

t.test('mutated frames: the scanner gives the general answer or steps aside, never another', async (t) => {
  const rnd = seeded(28)
  const base = frames()
  let taken = 0
  let aside = 0
  let refusedByGeneral = 0
  for (let k = 0; k < 20_000; k++) {
    const f = base[Math.floor(rnd() * base.length)]!
    const m = MUTATIONS[k % MUTATIONS.length]!(f, rnd)
    const g = general(m)
    const s = scanBookFrame(m)
    if (g === 'refused') refusedByGeneral++
    if (s === null) {
      aside++
      continue
    }
    taken++
    if (g === 'refused' || g === null || JSON.stringify(s) !== JSON.stringify(g) || !Object.is(s.bidDepthUsd, g.bidDepthUsd)) {
      t.fail(`mutation ${k % MUTATIONS.length} read differently: ${m.slice(0, 160)}\n scan ${JSON.stringify(s)}\n general ${JSON.stringify(g)}`)
      return
    }
  }
  t.ok(taken > 0 && aside > 0 && refusedByGeneral > 0, `20,000 mutated frames: ${taken} read by the scanner as the general path reads them, ${aside} left to it (${refusedByGeneral} of all refused by it)`)
})
