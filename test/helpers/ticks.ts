/** Hand-made ticks for feature and model tests: small, explicit, every number visible in the test. */
import { TICK_SCHEMA_VERSION, isoMs, type BarTick, type FundingTick, type LiquidationTick, type PriceTick, type Tick } from '../../ingest/Tick.ts'

export const H = 3_600_000
export const T0 = Date.UTC(2025, 0, 1)

type Quality = 'real' | 'degraded' | 'simulated'

function prov(source: string, at: number, quality: Quality = 'real') {
  return { source, provider: 'test', timestamp: isoMs(at), received_at: isoMs(at), quality }
}

/** An hourly (or `intervalMs`) bar closing at `close_at`. */
export function bar(asset: string, closeAt: number, o: number, h: number, l: number, c: number, opts: { intervalMs?: number; quality?: Quality; source?: string } = {}): BarTick {
  const iv = opts.intervalMs ?? H
  const label = iv % H === 0 ? `${iv / H}h` : `${iv / 60_000}m`
  return {
    v: TICK_SCHEMA_VERSION,
    kind: 'bar',
    asset,
    instrument: `${asset}-USDT-SWAP`,
    provenance: prov(opts.source ?? 'okx:swap', closeAt, opts.quality),
    interval: label,
    open_time: isoMs(closeAt - iv),
    open: o,
    high: h,
    low: l,
    close: c,
    volume: 1,
    volume_unit: 'contracts',
  }
}

export function funding(asset: string, at: number, rate: number, intervalHours = 8, source = 'okx:swap'): FundingTick {
  return { v: TICK_SCHEMA_VERSION, kind: 'funding', asset, instrument: asset, provenance: prov(source, at), rate, interval_hours: intervalHours, premium: null }
}

export function price(kind: 'mark' | 'index' | 'mid', asset: string, at: number, p: number): PriceTick<typeof kind> {
  return { v: TICK_SCHEMA_VERSION, kind, asset, instrument: asset, provenance: prov('hyperliquid:perp', at), price: p } as PriceTick<typeof kind>
}

export function liquidation(asset: string, at: number, notional: number): LiquidationTick {
  return { v: TICK_SCHEMA_VERSION, kind: 'liquidation', asset, instrument: asset, provenance: prov('hyperliquid:perp', at), side: 'long', price: 1, size: notional, notional_usd: notional }
}

/**
 * A seeded-free deterministic bar path: a sine-modulated walk with a volatility that changes by regime, so fitted
 * questions see both outcomes. `hours` hourly bars from T0.
 */
export function syntheticBars(asset: string, hours: number, seed = 1): Tick[] {
  const out: Tick[] = []
  let p = 100
  let s = seed >>> 0
  const rnd = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return s / 2 ** 32
  }
  for (let i = 1; i <= hours; i++) {
    const regimeVol = Math.floor(i / 97) % 3 === 0 ? 0.02 : 0.005
    const z = (rnd() + rnd() + rnd() - 1.5) * 2
    const o = p
    p = p * Math.exp(regimeVol * z)
    const hi = Math.max(o, p) * (1 + regimeVol * rnd())
    const lo = Math.min(o, p) * (1 - regimeVol * rnd())
    out.push(bar(asset, T0 + i * H, o, hi, lo, p))
  }
  return out
}

/**
 * Hourly funding settlements (Hyperliquid style, interval 1 h) from T0: a slowly drifting rate with occasional
 * spikes, deterministic, so funding questions see both outcomes and both sides of neutral.
 */
export function syntheticFunding(asset: string, hours: number, seed = 7): Tick[] {
  const out: Tick[] = []
  let s = seed >>> 0
  const rnd = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return s / 2 ** 32
  }
  let level = 1.25e-5
  for (let i = 1; i <= hours; i++) {
    level = 1.25e-5 + 0.9 * (level - 1.25e-5) + (rnd() - 0.5) * 1e-5
    const spike = rnd() < 0.05 ? (rnd() - 0.5) * 2e-4 : 0
    out.push(funding(asset, T0 + i * H, level + spike, 1, 'hyperliquid:perp'))
  }
  return out
}

/** Merges tick lists into one event-time-ordered list (stable). */
export function mergeTicks(...lists: Tick[][]): Tick[] {
  const all = lists.flat().map((tick, i) => ({ tick, i, t: Date.parse(tick.provenance.timestamp) }))
  all.sort((a, b) => a.t - b.t || a.i - b.i)
  return all.map((x) => x.tick)
}

/** A simulated mid at `ms` (source 'simulated'), as the replay and tape-producer tests write to their tapes. */
export function simulatedMid(asset: string, ms: number, p: number): Tick {
  const ts = isoMs(ms)
  return {
    v: TICK_SCHEMA_VERSION,
    kind: 'mid',
    asset,
    instrument: asset,
    provenance: { source: 'simulated', provider: 'test', timestamp: ts, received_at: ts, quality: 'simulated' },
    price: p,
  }
}
