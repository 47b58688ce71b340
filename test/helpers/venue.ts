/**
 * Live-venue sessions for tests: the local Hyperliquid stand-in (ingest/hyperliquid/local/LocalVenue.ts) on a scaled
 * clock shared with whatever consumes it, the connector's timings scaled to match, and the checks every session makes
 * against the venue's own lists (every bar and settlement it served, exactly once, with its values).
 */
import type { Test } from 'tap'
import { ScaledClock } from '../../common/ScaledClock.ts'
import { tickTime, type BarTick, type FundingTick, type Tick } from '../../ingest/Tick.ts'
import { LocalVenue, type LocalVenueOptions } from '../../ingest/hyperliquid/local/LocalVenue.ts'
import { HyperliquidInfoClient } from '../../ingest/hyperliquid/HyperliquidInfoClient.ts'
import { RestWeightBudget } from '../../ingest/hyperliquid/RestWeightBudget.ts'
import { HyperliquidConnector, type HyperliquidConnectorOptions, type VenueUnit } from '../../pipeline/venue/HyperliquidConnector.ts'
import type { VenueGapRecord } from '../../pipeline/records/venueGapRecord.ts'
import { compressedRestBudget, compressedTimings } from '../../pipeline/venue/compressedTimings.ts'

export { compressedRestBudget, compressedTimings }

const HOUR = 3_600_000

/** A venue on a clock `speed` times the wall clock, anchored at `anchorIso` (venue and consumers share it). */
export async function withLocalVenue(
  t: { teardown(fn: () => unknown): void },
  options: { speed: number; anchorIso?: string } & Omit<LocalVenueOptions, 'clock'>,
): Promise<{ venue: LocalVenue; clock: ScaledClock }> {
  const { speed, anchorIso, ...rest } = options
  const clock = new ScaledClock({ anchorMs: Date.parse(anchorIso ?? '2026-03-01T10:30:00Z'), speed })
  const venue = await LocalVenue.start({ frameMs: 50, ...rest, clock })
  t.teardown(() => venue.close())
  return { venue, clock }
}

/** A sink that keeps every unit in memory (optionally failing the first `failFirst` writes). */
export function memorySink(failFirst = 0): { write(unit: VenueUnit): Promise<void>; units: VenueUnit[]; ticks(): Tick[]; gaps(): VenueGapRecord[]; attempts: number } {
  const units: VenueUnit[] = []
  const sink = {
    units,
    attempts: 0,
    async write(unit: VenueUnit) {
      sink.attempts++
      if (sink.attempts <= failFirst) throw new Error('sink down (test)')
      units.push(unit)
    },
    ticks: () => units.flatMap((u) => u.ticks),
    gaps: () => units.flatMap((u) => u.gaps),
  }
  return sink
}

export function connectorOn(
  venue: LocalVenue,
  clock: ScaledClock,
  options: Partial<HyperliquidConnectorOptions> & Pick<HyperliquidConnectorOptions, 'sink'>,
): HyperliquidConnector {
  const client = new HyperliquidInfoClient({ baseUrl: venue.baseUrl, timeoutMs: 2000, budget: new RestWeightBudget(compressedRestBudget()), clock })
  return HyperliquidConnector.create({
    coins: ['BTC', 'ETH', 'SOL'],
    historyMs: 2 * 86_400_000,
    client,
    wsUrl: venue.wsUrl,
    clock,
    ...compressedTimings(clock.speed),
    ...options,
  })
}

export { until } from './until.ts'

/** Event times never go backwards. */
export function outOfOrder(ticks: readonly Tick[]): number {
  let prev = -Infinity
  let bad = 0
  for (const tick of ticks) {
    const at = tickTime(tick)
    if (at < prev) bad++
    prev = at
  }
  return bad
}

/** Ticks that share the venue's identity of a record (the connector must never write one twice). */
export function repeatedKeys(ticks: readonly Tick[]): string[] {
  const seen = new Set<string>()
  const repeated: string[] = []
  for (const tick of ticks) {
    const id = tick.kind === 'trade'
      ? `trade|${tick.asset}|${tick.trade_id}|${tick.provenance.timestamp}`
      : tick.kind === 'bar'
        ? `bar|${tick.asset}|${tick.interval}|${tick.provenance.timestamp}`
        : tick.kind === 'funding'
          ? `funding|${tick.asset}|${tick.provenance.timestamp}`
          : tick.kind === 'book_top'
            ? `book|${tick.asset}|${tick.provenance.timestamp}`
            : null
    if (id === null) continue
    if (seen.has(id)) repeated.push(id)
    seen.add(id)
  }
  return repeated
}

/**
 * Compares the 1h bars of `coin` written with the venue's own list over closes in (from, to]: every bar the venue
 * served there is written exactly once with the values first served (a correction never rewrites), and purged ones
 * (never served) are absent. Returns the problems found, empty when none.
 */
export function compareBars(ticks: readonly Tick[], venue: LocalVenue, coin: string, from: number, to: number): string[] {
  const ours = ticks.filter((x): x is BarTick => x.kind === 'bar' && x.asset === coin && x.interval === '1h')
  const byClose = new Map<number, BarTick[]>()
  for (const bar of ours) byClose.set(tickTime(bar), [...(byClose.get(tickTime(bar)) ?? []), bar])
  const problems: string[] = []
  for (const v of venue.bars(coin, '1h')) {
    if (v.closeTime <= from || v.closeTime > to) continue
    const got = byClose.get(v.closeTime) ?? []
    const iso = new Date(v.closeTime).toISOString()
    if (v.purged) {
      if (got.length > 0) problems.push(`${coin} ${iso}: purged by the venue but written`)
      continue
    }
    if (got.length !== 1) {
      problems.push(`${coin} ${iso}: written ${got.length} times`)
      continue
    }
    const want = v.original ?? v
    const b = got[0]!
    if (b.open !== want.open || b.high !== want.high || b.low !== want.low || b.close !== want.close || Math.abs(b.volume - want.volume) > 1e-9 * Math.max(1, want.volume)) {
      problems.push(`${coin} ${iso}: values differ from the venue's (${JSON.stringify({ o: b.open, h: b.high, l: b.low, c: b.close, v: b.volume })} vs ${JSON.stringify({ o: want.open, h: want.high, l: want.low, c: want.close, v: want.volume })})`)
    }
  }
  return problems
}

/** The same for funding settlements with hour in (from, to]. */
export function compareFunding(ticks: readonly Tick[], venue: LocalVenue, coin: string, from: number, to: number): string[] {
  const ours = ticks.filter((x): x is FundingTick => x.kind === 'funding' && x.asset === coin)
  const byTime = new Map<number, FundingTick[]>()
  for (const f of ours) byTime.set(tickTime(f), [...(byTime.get(tickTime(f)) ?? []), f])
  const problems: string[] = []
  for (const row of venue.fundingRows(coin)) {
    if (row.hour <= from || row.hour > to) continue
    const got = byTime.get(row.time) ?? []
    if (got.length !== 1) problems.push(`${coin} funding ${new Date(row.hour).toISOString()}: written ${got.length} times`)
    else if (got[0]!.rate !== row.fundingRate) problems.push(`${coin} funding ${new Date(row.hour).toISOString()}: rate ${got[0]!.rate} vs ${row.fundingRate}`)
  }
  return problems
}

/** The top of the hour at or before `ms`. */
export const hourOf = (ms: number) => Math.floor(ms / HOUR) * HOUR

export type { Test }
