/**
 * The synthetic market generator: determinism (through the real CLI and in-process), schema validity, order,
 * and the statistical properties the model promises (docs/generator.md), measured on the generated ticks
 * rather than read back from the model's parameters.
 */
import t from 'tap'
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { SyntheticMarket, liquidationTriggerReturn, SYNTHETIC_MODEL, type Regime } from '../../ingest/SyntheticMarket.ts'
import { TapeWriter } from '../../ingest/TapeWriter.ts'
import { readTape } from '../../ingest/TapeReader.ts'
import { TICK_KINDS, tickLine, tickTime, validateTick, type Tick } from '../../ingest/Tick.ts'
import { Prng } from '../../ingest/Prng.ts'
import { makeTempDir } from '../helpers/tmp.ts'

const REPO = fileURLToPath(new URL('../../', import.meta.url))
const run = promisify(execFile)
const MIN = 60_000
const HOUR = 60 * MIN
const ASSETS = ['BTC', 'ETH', 'SOL'] as const
const BASELINE = 1.25e-5

async function sha256(file: string): Promise<string> {
  return createHash('sha256').update(await readFile(file)).digest('hex')
}

async function cliGenerate(args: string[]): Promise<void> {
  await run(process.execPath, ['bin/svc.js', 'tape', 'generate', ...args], { cwd: REPO, maxBuffer: 1 << 26 })
}

t.test('Prng: same seed and stream → same sequence; streams and seeds differ', async (t) => {
  const draw = (seed: number, stream: string) => {
    const r = new Prng(seed, stream)
    return Array.from({ length: 8 }, () => r.nextUint32())
  }
  t.same(draw(1, 'a'), draw(1, 'a'))
  t.not(draw(1, 'a').join(), draw(2, 'a').join())
  t.not(draw(1, 'a').join(), draw(1, 'b').join())
  const r = new Prng(9)
  let sum = 0
  let sumSq = 0
  const n = 20_000
  for (let i = 0; i < n; i++) {
    const z = r.normal()
    sum += z
    sumSq += z * z
  }
  t.ok(Math.abs(sum / n) < 0.05, 'normal mean ≈ 0')
  t.ok(Math.abs(sumSq / n - 1) < 0.05, 'normal variance ≈ 1')
  t.throws(() => new Prng(-1), RangeError)
})

t.test('same seed → byte-identical tape through the CLI and in-process; different seed differs', async (t) => {
  const dir = await makeTempDir(t)
  const args = (seed: number, out: string) => ['--seed', String(seed), '--hours', '3', '--assets', 'BTC,ETH,SOL', '--out', join(dir, out)]
  await cliGenerate(args(42, 'a.ndjson'))
  await cliGenerate(args(42, 'b.ndjson'))
  await cliGenerate(args(43, 'c.ndjson'))
  await cliGenerate(args(42, 'a.ndjson.gz'))
  await cliGenerate(args(42, 'b.ndjson.gz'))

  const writer = TapeWriter.open(join(dir, 'inproc.ndjson'))
  await new SyntheticMarket({ seed: 42, hours: 3, assets: ['BTC', 'ETH', 'SOL'] }).writeTo(writer)
  await writer.close()

  const a = await sha256(join(dir, 'a.ndjson'))
  t.equal(await sha256(join(dir, 'b.ndjson')), a, 'two CLI runs, same seed: same sha256')
  t.equal(await sha256(join(dir, 'inproc.ndjson')), a, 'in-process run matches the CLI')
  t.not(await sha256(join(dir, 'c.ndjson')), a, 'another seed gives another tape')
  t.equal(await sha256(join(dir, 'a.ndjson.gz')), await sha256(join(dir, 'b.ndjson.gz')), 'gzip output is byte-identical too')

  // The gzip tape holds the same records.
  const lines: string[] = []
  for await (const e of readTape(join(dir, 'a.ndjson.gz'))) lines.push(e.raw)
  t.equal(lines.join('\n') + '\n', await readFile(join(dir, 'a.ndjson'), 'utf8'))
})

t.test('the CLI refuses bad options with exit code 2 and names the field', async (t) => {
  const err = await cliGenerate(['--seed', '1', '--hours', '1', '--assets', 'BTC,DOGE']).then(
    () => null,
    (e: { code: number; stderr: string }) => e,
  )
  t.equal(err?.code, 2)
  t.match(err?.stderr, /assets\/1/)
  t.throws(() => new SyntheticMarket({ seed: 1, hours: 1, assets: ['BTC'], start: '2026-01-01T00:00:30Z' }), /\/start: must fall on a whole minute/)
  t.throws(() => new SyntheticMarket({ seed: 1, hours: 0, assets: ['BTC'] }), /\/hours/)
})

t.test('an asset path does not depend on which other assets are generated', async (t) => {
  const btcOnly = [...new SyntheticMarket({ seed: 5, hours: 6, assets: ['BTC'] })].map(tickLine)
  const all = [...new SyntheticMarket({ seed: 5, hours: 6, assets: ['SOL', 'ETH', 'BTC'] })].filter((k) => k.asset === 'BTC').map(tickLine)
  t.equal(btcOnly.length, all.length)
  t.same(btcOnly, all)
})

t.test('a 7-day, 3-asset run', async (t) => {
  const market = new SyntheticMarket({ seed: 7, hours: 168, assets: ['BTC', 'ETH', 'SOL'] })
  const regimeAt = new Map<number, Regime>()
  const ticks: Tick[] = [...market.ticks((m) => regimeAt.set(m.time, m.regime))]
  const perAsset = (kind: Tick['kind'], asset: string) => ticks.filter((k) => k.kind === kind && k.asset === asset)

  t.test('every record validates, is simulated, and all assets and kinds are present', async (t) => {
    let bad = 0
    for (const tick of ticks) {
      try {
        validateTick(JSON.parse(tickLine(tick)))
      } catch {
        bad++
      }
      if (tick.provenance.source !== 'simulated' || tick.provenance.provider !== 'svc-generator' || tick.provenance.quality !== 'simulated') bad++
    }
    t.equal(bad, 0, `${ticks.length} records valid and labelled simulated`)
    for (const asset of ASSETS) {
      for (const kind of ['bar', 'mid', 'mark', 'index', 'funding', 'predicted_funding', 'open_interest', 'book_top', 'liquidation'] as const) {
        t.ok(perAsset(kind, asset).length > 0, `${asset} has ${kind} ticks`)
      }
      t.equal(perAsset('bar', asset).length, 168 * 60, `${asset}: one bar per minute`)
    }
  })

  t.test('records are in event-time order; within an instant by asset, then kind', async (t) => {
    let violations = 0
    for (let i = 1; i < ticks.length; i++) {
      const a = ticks[i - 1]!
      const b = ticks[i]!
      const ta = tickTime(a)
      const tb = tickTime(b)
      if (tb < ta) violations++
      else if (tb === ta) {
        const ai = ASSETS.indexOf(a.asset as never)
        const bi = ASSETS.indexOf(b.asset as never)
        if (bi < ai || (bi === ai && TICK_KINDS.indexOf(b.kind) < TICK_KINDS.indexOf(a.kind))) violations++
      }
    }
    t.equal(violations, 0)
  })

  t.test('bars and books are internally consistent', async (t) => {
    let bad = 0
    for (const k of ticks) {
      if (k.kind === 'bar' && !(k.low <= Math.min(k.open, k.close) && k.high >= Math.max(k.open, k.close) && k.volume > 0)) bad++
      if (k.kind === 'book_top' && !(k.bid < k.ask && k.bid_size > 0 && k.ask_size > 0)) bad++
      if (k.kind === 'open_interest' && !(k.value > 0)) bad++
    }
    t.equal(bad, 0)
    // Mark stays close to the index: a small basis.
    for (const asset of ASSETS) {
      const marks = perAsset('mark', asset)
      const index = perAsset('index', asset)
      const maxBasis = Math.max(...marks.map((m, i) => Math.abs((m as { price: number }).price / (index[i] as { price: number }).price - 1)))
      t.ok(maxBasis < 0.01, `${asset} |mark/index − 1| stays under 1% (max ${maxBasis.toFixed(5)})`)
    }
  })

  t.test('funding: settles exactly on the hour, 1.25e-05 is the modal (neutral) value, within the 4%/h cap', async (t) => {
    for (const asset of ASSETS) {
      const funding = perAsset('funding', asset) as Extract<Tick, { kind: 'funding' }>[]
      t.equal(funding.length, 168, `${asset}: one settlement per hour`)
      t.ok(funding.every((f) => tickTime(f) % HOUR === 0 && f.interval_hours === 1), 'every settlement on the hour')
      const counts = new Map<number, number>()
      for (const f of funding) counts.set(f.rate, (counts.get(f.rate) ?? 0) + 1)
      const [mode, modeCount] = [...counts].sort((a, b) => b[1] - a[1])[0]!
      t.equal(mode, BASELINE, `${asset}: modal rate is 1.25e-05`)
      t.ok(modeCount / funding.length >= 0.3, `${asset}: ${((100 * modeCount) / funding.length).toFixed(1)}% of hours exactly at the baseline`)
      t.ok(funding.some((f) => f.rate !== BASELINE), `${asset}: the premium moves the rate off the baseline sometimes`)
      t.ok(funding.every((f) => Math.abs(f.rate) <= 0.04))
      // Hyperliquid's rule: on the baseline exactly when |I − P̄| ≤ 0.0005 (8-hour basis).
      t.ok(
        funding.every((f) => (f.rate === BASELINE) === (Math.abs(1e-4 - f.premium!) <= 5e-4 + 1e-9)),
        `${asset}: rate is the baseline exactly when the hour's premium is inside the clamp band`,
      )
      const predicted = perAsset('predicted_funding', asset) as Extract<Tick, { kind: 'predicted_funding' }>[]
      t.ok(predicted.every((p) => Date.parse(p.next_funding_at) === (Math.floor(tickTime(p) / HOUR) + 1) * HOUR), 'predictions point at the next hour')
    }
  })

  t.test('regime switching produces different realized volatility per regime', async (t) => {
    const seen = new Set(regimeAt.values())
    t.same([...seen].sort(), ['calm', 'normal', 'turbulent'], 'all three regimes visited in 7 days')
    for (const asset of ASSETS) {
      const index = perAsset('index', asset) as Extract<Tick, { kind: 'index' }>[]
      const sq: Record<Regime, { sum: number; n: number }> = { calm: { sum: 0, n: 0 }, normal: { sum: 0, n: 0 }, turbulent: { sum: 0, n: 0 } }
      for (let i = 1; i < index.length; i++) {
        const r = Math.log(index[i]!.price / index[i - 1]!.price)
        const bucket = sq[regimeAt.get(tickTime(index[i]!))!]
        bucket.sum += r * r
        bucket.n++
      }
      const vol = (g: Regime) => Math.sqrt((sq[g].sum / sq[g].n) * SYNTHETIC_MODEL.minutesPerYear)
      t.ok(vol('calm') < vol('normal') && vol('normal') < vol('turbulent'), `${asset} annualized vol calm ${vol('calm').toFixed(2)} < normal ${vol('normal').toFixed(2)} < turbulent ${vol('turbulent').toFixed(2)}`)
      t.ok(vol('turbulent') > 1.8 * vol('normal'), `${asset}: turbulent is clearly wilder`)
    }
  })

  t.test('ETH and SOL move with BTC, and BTC leads', async (t) => {
    const returns = (asset: string) => {
      const px = (perAsset('index', asset) as Extract<Tick, { kind: 'index' }>[]).map((k) => k.price)
      return px.slice(1).map((p, i) => Math.log(p / px[i]!))
    }
    const corr = (x: number[], y: number[]) => {
      const n = Math.min(x.length, y.length)
      const mx = x.slice(0, n).reduce((a, b) => a + b, 0) / n
      const my = y.slice(0, n).reduce((a, b) => a + b, 0) / n
      let sxy = 0
      let sxx = 0
      let syy = 0
      for (let i = 0; i < n; i++) {
        sxy += (x[i]! - mx) * (y[i]! - my)
        sxx += (x[i]! - mx) ** 2
        syy += (y[i]! - my) ** 2
      }
      return sxy / Math.sqrt(sxx * syy)
    }
    const btc = returns('BTC')
    for (const asset of ['ETH', 'SOL']) {
      const alt = returns(asset)
      const same = corr(btc, alt)
      const btcLeads = corr(btc.slice(0, -1), alt.slice(1))
      const altLeads = corr(alt.slice(0, -1), btc.slice(1))
      t.ok(same > 0.5, `${asset}: same-minute correlation with BTC ${same.toFixed(2)}`)
      t.ok(btcLeads > altLeads + 0.05, `${asset}: BTC leads (${btcLeads.toFixed(3)} vs ${altLeads.toFixed(3)})`)
    }
  })

  t.test('liquidations come in bursts after large moves, on the side the move hurt, and drain open interest', async (t) => {
    for (const asset of ASSETS) {
      const liqs = perAsset('liquidation', asset) as Extract<Tick, { kind: 'liquidation' }>[]
      const index = perAsset('index', asset) as Extract<Tick, { kind: 'index' }>[]
      const moves = index.slice(1).map((k, i) => ({ time: tickTime(k), r: Math.log(k.price / index[i]!.price) }))
      // A cascade's own push can offset the trigger by up to maxPushSigmas; rounding adds a little more.
      const threshold = liquidationTriggerReturn(asset) * (1 - SYNTHETIC_MODEL.liquidation.maxPushSigmas / SYNTHETIC_MODEL.liquidation.triggerZ) * 0.95
      const windowMs = (SYNTHETIC_MODEL.liquidation.maxBurstMinutes + 1) * MIN
      let unexplained = 0
      for (const l of liqs) {
        const at = tickTime(l)
        const cause = moves.some((m) => m.time >= at - windowMs && m.time <= at + MIN && Math.abs(m.r) >= threshold && (m.r < 0) === (l.side === 'long'))
        if (!cause) unexplained++
        if (!(l.size > 0 && l.notional_usd > 0 && Math.abs(l.notional_usd - l.size * l.price) <= 0.01 + 1e-9 * l.notional_usd)) unexplained++
      }
      t.equal(unexplained, 0, `${asset}: all ${liqs.length} liquidations follow a large move in the matching direction`)

      // Bursts: liquidations separated by more than the burst window start a new burst.
      let bursts = 0
      let last = -Infinity
      for (const l of liqs) {
        if (tickTime(l) - last > windowMs) bursts++
        last = tickTime(l)
      }
      t.ok(bursts >= 1 && liqs.length >= 3 * bursts, `${asset}: ${liqs.length} liquidations in ${bursts} bursts`)

      // Open interest falls faster in minutes with liquidations than in minutes without.
      const oi = perAsset('open_interest', asset) as Extract<Tick, { kind: 'open_interest' }>[]
      const liqMinutes = new Set(liqs.map((l) => Math.ceil(tickTime(l) / MIN) * MIN))
      let withSum = 0
      let withN = 0
      let withoutSum = 0
      let withoutN = 0
      for (let i = 1; i < oi.length; i++) {
        const d = Math.log(oi[i]!.value / oi[i - 1]!.value)
        if (liqMinutes.has(tickTime(oi[i]!))) {
          withSum += d
          withN++
        } else {
          withoutSum += d
          withoutN++
        }
      }
      t.ok(withSum / withN < withoutSum / withoutN, `${asset}: OI drift with liquidations ${(withSum / withN).toExponential(2)} < without ${(withoutSum / withoutN).toExponential(2)}`)
    }
  })
})
