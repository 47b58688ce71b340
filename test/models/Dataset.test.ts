import t from 'tap'
import { buildDataset, splitSamples, RESOLUTION_GRACE_MS } from '../../models/Dataset.ts'
import { S05_volatility_expansion } from '../../models/questions/S05_volatility_expansion.ts'
import { S01_market_regime } from '../../models/questions/S01_market_regime.ts'
import { S06_funding_anomaly } from '../../models/questions/S06_funding_anomaly.ts'
import type { LabelledSample } from '../../models/QuestionModel.ts'
import type { Tick } from '../../ingest/Tick.ts'
import { H, T0, mergeTicks, syntheticBars, syntheticFunding } from '../helpers/ticks.ts'

const DAYS = 60

t.test('decisions sit on the horizon grid, one per asset, with snapshots taken at the decision instant', async (t) => {
  const { samples, stats } = buildDataset(mergeTicks(syntheticBars('BTC', DAYS * 24), syntheticBars('ETH', DAYS * 24, 9)), [S05_volatility_expansion, S01_market_regime])
  const s05 = samples.get('S05_volatility_expansion')!
  t.ok(s05.every((s) => s.snapshot.at % (4 * H) === 0), 'S05 decisions every 4 h on the UTC grid')
  const times = s05.filter((s) => s.snapshot.asset === 'BTC').map((s) => s.snapshot.at)
  t.same(times, [...times].sort((a, b) => a - b))
  t.ok(new Set(times).size === times.length, 'non-overlapping: one decision per window per asset')
  t.ok(s05.every((s) => s.snapshot.freshness.every((f) => (f.age_ms ?? 0) >= 0)), 'no input is from after the decision')
  t.equal(samples.get('S01_market_regime')!.length + stats.pendingAtEnd.S01_market_regime!, stats.decisions.S01_market_regime)
  t.ok(stats.pendingAtEnd.S05_volatility_expansion! >= 2, 'windows open at tape end are dropped, not guessed')
  t.equal(RESOLUTION_GRACE_MS, 300_000)
})

t.test('markets without an input surface get no decision for it (availability, not refusal)', async (t) => {
  const { samples, stats } = buildDataset(syntheticBars('BTC', 5 * 24), [S06_funding_anomaly])
  t.equal(samples.get('S06_funding_anomaly')!.length, 0)
  t.ok(stats.unavailable.S06_funding_anomaly! > 0)
})

t.test('the time split never lets a training label see past the split', async (t) => {
  const horizon = S05_volatility_expansion.horizonMs
  const split = T0 + 100 * H
  const mk = (at: number): LabelledSample => ({ snapshot: { asset: 'BTC', at, features: {}, freshness: [], sources: [] }, resolution: { outcome: 'not', statistic: null, realized_choice: null, reason: null } })
  // Decided 2 h before the split with a 4 h horizon: a naive "decision time < split" rule would train on a label
  // measured on ticks up to 2 h after the split.
  const straddling = mk(split - 2 * H)
  const { train, test } = splitSamples([mk(split - 8 * H), mk(split - 4 * H), straddling, mk(split), mk(split + 4 * H)], horizon, split)
  t.same(train.map((s) => s.snapshot.at), [split - 8 * H], 'window ending exactly at the split is excluded too (strictly before)')
  t.notOk(train.includes(straddling), 'the straddling sample is not trained on')
  t.notOk(test.includes(straddling), 'nor scored')
  t.same(test.map((s) => s.snapshot.at), [split, split + 4 * H])

  // End to end: rewriting every tick after the split cannot change the fitted parameters.
  const bars = syntheticBars('BTC', DAYS * 24)
  const cut = T0 + 40 * 24 * H
  const altered: Tick[] = bars.map((b) => {
    if (b.kind !== 'bar' || Date.parse(b.provenance.timestamp) <= cut) return b
    return { ...b, high: b.high * 1.5, low: b.low * 0.5 }
  })
  const fitOn = (ticks: Tick[]) => {
    const s = buildDataset(ticks, [S05_volatility_expansion]).samples.get('S05_volatility_expansion')!
    return JSON.stringify(S05_volatility_expansion.fit(splitSamples(s, horizon, cut).train))
  }
  const original = fitOn(bars)
  t.equal(fitOn(altered), original, 'fitted params identical when everything after the split changes')
  t.match(JSON.parse(original), { params: { status: 'ok' } }, 'and the fit is a real one')
})

t.test('fitting is deterministic: same samples (in any order) give identical FittedParams JSON', async (t) => {
  const ticks = mergeTicks(syntheticBars('BTC', DAYS * 24), syntheticFunding('BTC', DAYS * 24))
  const { samples } = buildDataset(ticks, [S05_volatility_expansion, S01_market_regime, S06_funding_anomaly])
  for (const q of [S05_volatility_expansion, S01_market_regime, S06_funding_anomaly]) {
    const s = samples.get(q.id)!
    const a = JSON.stringify(q.fit(s))
    const b = JSON.stringify(q.fit([...s].reverse()))
    t.equal(a, JSON.stringify(q.fit(s)), `${q.id}: same samples, same JSON`)
    t.equal(b, a, `${q.id}: order of the input does not matter`)
    t.equal((JSON.parse(a) as { params: { status: string } }).params.status, 'ok', `${q.id}: fitted`)
  }
})

t.test('a gap: nothing decided inside it, no window resolved across it, deciding resumes after it', async (t) => {
  // Two ~20-day stretches of hourly bars with a 10-day hole between them (concatenated tapes, an outage). The first
  // stretch ends 2 h into a 4 h window, so that window is open when the gap begins.
  const before = syntheticBars('BTC', 20 * 24 - 2)
  const after = syntheticBars('BTC', 20 * 24, 3).map((b) => shiftTick(b, 30 * 24 * H))
  const lastBefore = T0 + (20 * 24 - 2) * H
  const firstAfter = T0 + 30 * 24 * H + H
  const { samples, stats } = buildDataset([...before, ...after], [S05_volatility_expansion])
  const s05 = samples.get('S05_volatility_expansion')!
  t.same(stats.gaps.length, 1, 'one gap met')
  t.ok(s05.every((s) => s.snapshot.at <= lastBefore || s.snapshot.at >= firstAfter), 'no decision inside the gap')
  const horizon = S05_volatility_expansion.horizonMs
  t.ok(s05.every((s) => !(s.snapshot.at < firstAfter && s.snapshot.at + horizon > lastBefore)), 'no window crosses it')
  t.ok(s05.some((s) => s.snapshot.at >= firstAfter), 'decisions resume after it')
  t.ok(s05.some((s) => s.snapshot.at + horizon === lastBefore - 2 * H), 'the last window closed before it is resolved')
  t.equal(stats.droppedAtGap.S05_volatility_expansion, 1, 'the window open when it began is dropped, not graded')
  t.equal(s05.length + stats.droppedAtGap.S05_volatility_expansion! + stats.pendingAtEnd.S05_volatility_expansion!, stats.decisions.S05_volatility_expansion, 'every decision is accounted for')

  const noGap = buildDataset([...before, ...after], [S05_volatility_expansion], undefined, { gapMs: 365 * 24 * H })
  t.same(noGap.stats.gaps, [], 'with a longer gap threshold the hole is not a gap')
  t.ok(noGap.stats.decisions.S05_volatility_expansion! > stats.decisions.S05_volatility_expansion!, 'and the old behaviour decides inside it')
})

function shiftTick(tick: Tick, ms: number): Tick {
  const iso = (s: string) => new Date(Date.parse(s) + ms).toISOString()
  const moved = { ...tick, provenance: { ...tick.provenance, timestamp: iso(tick.provenance.timestamp) } } as Tick
  if (moved.kind === 'bar') return { ...moved, open_time: iso(moved.open_time) }
  return moved
}
