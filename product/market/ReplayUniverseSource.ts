/**
 * The universe of a replay: the last universe record on the ticks topic (MarketState), observed in event time.
 *
 * A tape without universe records (the synthetic tape, imported bar/funding files) still defines which markets the
 * replay can serve: its universe is then derived from the assets the tape carries, each row built from that
 * asset's latest records (docs/decisions.md). Nothing consumed yet → 503 PROVIDER_DOWN.
 */
import { deepFreeze } from '../../common/deepFreeze.ts'
import type { MarketState } from '../../pipeline/MarketState.ts'
import type { UniverseAsset as TickUniverseAsset } from '../../ingest/Tick.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import type { UniverseSource, VenueUniverse } from './UniverseSource.ts'

/** 'hyperliquid:perp' → 'hyperliquid'; 'simulated' stays. */
export function venueOfSource(source: string): string {
  return source.split(':')[0] ?? source
}

export class ReplayUniverseSource implements UniverseSource {
  readonly mode = 'replay' as const
  /** The derived universe, kept until the state consumes another tick (readers get the same frozen rows meanwhile). */
  private kept: { consumed: number; universe: VenueUniverse | null } | null = null
  constructor(private readonly state: MarketState) {}

  async read(): Promise<VenueUniverse> {
    const u = this.peek()
    if (!u) {
      throw new ServiceError('PROVIDER_DOWN', {
        message: 'No universe yet: the replayed tape has not delivered any market record.',
        detail: { reason: 'PROVIDER_DOWN', provider: 'tick-feed', error_class: 'NO_TICKS_YET' },
      })
    }
    return u
  }

  peek(): VenueUniverse | null {
    const rec = this.state.universe()
    if (rec) {
      return {
        venue: venueOfSource(rec.provenance.source),
        asOf: rec.time,
        quality: rec.provenance.quality,
        assets: rec.value.assets,
      }
    }
    return this.derived()
  }

  now(): number {
    return this.state.now() ?? 0
  }

  /** One row per asset the tape carries, from its latest records. */
  private derived(): VenueUniverse | null {
    const consumed = this.state.consumedCount
    if (this.kept?.consumed !== consumed) this.kept = { consumed, universe: this.derive() }
    return this.kept.universe === null ? null : { ...this.kept.universe }
  }

  private derive(): VenueUniverse | null {
    const symbols = this.state.assets()
    if (symbols.length === 0) return null
    let asOf = -Infinity
    let source: string | null = null
    let degraded = false
    let simulated = false
    const assets: TickUniverseAsset[] = []
    for (const symbol of symbols) {
      const m = this.state.asset(symbol)!
      const obs = [m.mid, m.mark, m.index, m.bar, m.book, m.funding, m.predicted_funding, m.open_interest].filter((o) => o !== null)
      for (const o of obs) {
        asOf = Math.max(asOf, o.time)
        source ??= o.provenance.source
        if (o.provenance.quality === 'simulated') simulated = true
      }
      const price = m.mid?.value ?? m.bar?.value.close ?? null
      if (m.mid?.provenance.quality === 'degraded' || m.bar?.provenance.quality === 'degraded') degraded = true
      const oi = m.open_interest?.value
      const mark = m.mark?.value ?? null
      const hourly = m.predicted_funding
        ? m.predicted_funding.value.rate / m.predicted_funding.value.interval_hours
        : m.funding ? m.funding.value.rate / m.funding.value.interval_hours : null
      assets.push({
        symbol,
        mark,
        mid: price,
        oracle: m.index?.value ?? null,
        funding: hourly,
        // In base units like the venue's openInterest (MarketServices multiplies by mark for USD).
        open_interest: oi === undefined ? null : oi.unit === 'base' ? oi.value : oi.unit === 'usd' && mark ? oi.value / mark : null,
        day_volume_usd: m.bar?.value.volume_24h_usd ?? null,
        prev_day_price: null,
        max_leverage: null,
        delisted: false,
      })
    }
    return { venue: venueOfSource(source ?? 'unknown'), asOf, quality: degraded ? 'degraded' : simulated ? 'simulated' : 'real', assets: deepFreeze(assets) }
  }
}
