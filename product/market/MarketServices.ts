/**
 * The free market reads of the MarketData part: snapshot, universe, market-cap list and liquidation-hour readiness.
 * The paid market surfaces (liquidation surface, funding) come from another adapter passed as `paid`; without one
 * they answer 503 PROVIDER_DOWN naming what is missing.
 *
 * Spec (Shared conventions, asset): "The free market snapshot accepts any symbol listed by the universe route and
 * not delisted." Universe rules: "delisted names are dropped, so every row has delisted false; an asset is legal
 * exactly when it is listed and not delisted". Canonical assets (BTC, ETH, SOL) are legal unless the known universe
 * lists them as delisted.
 */
import { deepFreeze } from '../../common/deepFreeze.ts'
import { CANONICAL_ASSETS, isoMs, type UniverseAsset as TickUniverseAsset } from '../../ingest/Tick.ts'
import { LIQ_HOURS_REQUIRED, type MarketInput, type MarketState, type Observed } from '../../pipeline/MarketState.ts'
import { stalenessBudgetMs } from '../../pipeline/features/stalenessBudgets.ts'
import type { Freshness } from '../../pipeline/features/FeatureSnapshot.ts'
import type { PaidCall } from '../../pipeline/journal/PaidCall.ts'
import type { UnitOfWork } from '../../pipeline/journal/UnitOfWork.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import type { CanonicalAsset } from '../../common/schema.ts'
import type { LiqHours, MarketCapList, MarketSnapshot, Universe, UniverseAsset } from './schemas.ts'
import type { MarketData, MarketRead, SnapshotRead } from './MarketData.ts'
import type { MaybePromise } from '../../common/MaybePromise.ts'
import type { MarketCapSource } from './CoinGeckoMarketCapSource.ts'
import type { UniverseSource, VenueUniverse } from './UniverseSource.ts'
import type { LiveVenue } from '../../pipeline/venue/VenueStatus.ts'

/** The paid market surfaces, implemented elsewhere. */
export type PaidMarketData = Pick<MarketData, 'liquidationSurface' | 'fundingSnapshot' | 'fundingAsset' | 'fundingOpportunities'>

/** The inputs a quote is built from; their freshness is the snapshot's freshness. */
export const QUOTE_INPUTS: readonly MarketInput[] = ['mid', 'book', 'mark', 'index', 'bars']

export interface MarketServicesOptions {
  state: MarketState
  universe: UniverseSource
  /** Null: no market-cap provider configured (GET /v1/marketcap answers 503, docs/decisions.md). */
  marketcap?: MarketCapSource | null
  paid?: PaidMarketData | null
  /** True while the service (re)starts and its market state has not caught up with the venue: reads answer 503. */
  warmingUp?: () => boolean
  /**
   * The live venue's connector, when the market is the live venue: an unreachable venue makes market reads 503
   * PROVIDER_DOWN, and a price past its staleness budget 503 STALE_DATA, never an old price served as current.
   */
  liveVenue?: Pick<LiveVenue, 'stage' | 'lastError'> | null
}

/** The quote's price inputs: one of them within its budget makes a live quote current. */
const PRICE_INPUTS: readonly MarketInput[] = ['mid', 'mark']

type Legal = { legal: true; row: TickUniverseAsset | null; universe: VenueUniverse | null } | { legal: false }

/** What a kept snapshot answer was built from; the answer is reused only while all of it is unchanged. */
interface KeptAnswer {
  consumed: number
  now: number | null
  assets: readonly TickUniverseAsset[]
  asOf: number
  quality: string
  venue: string
  universeNow: number | null
  answer: SnapshotRead | null
}

/** Symbols whose last answer is kept; past this (a caller walking unknown symbols) the memory starts over. */
const ANSWERS_KEPT = 4096

/** A catch-up after a restart takes seconds (a day's gap of simulated minutes replays in about one). */
const WARMING_RETRY_MS = 2_000

export class MarketServices implements MarketData {
  readonly #state: MarketState
  readonly #universe: UniverseSource
  readonly #marketcap: MarketCapSource | null
  readonly #paid: PaidMarketData | null
  readonly #warmingUp: () => boolean
  readonly #liveVenue: MarketServicesOptions['liveVenue']
  /**
   * The last snapshot answer per symbol. Between ticks (and universe updates) every request would build the same
   * answer, so it is built once and frozen (the envelope then serializes it once too).
   */
  readonly #answers = new Map<string, KeptAnswer>()

  constructor(options: MarketServicesOptions) {
    this.#state = options.state
    this.#universe = options.universe
    this.#marketcap = options.marketcap ?? null
    this.#paid = options.paid ?? null
    this.#warmingUp = options.warmingUp ?? (() => false)
    this.#liveVenue = options.liveVenue ?? null
  }

  /**
   * Issue 14: "Until the first ticks after a (re)start, market routes answer the spec's typed 503, not old prices."
   * Spec: STALE_DATA 503, retryable. Thrown before any payment settles, so a paid read is not charged.
   */
  #refuseWhileWarming(): void {
    this.#refuseUnreachable()
    if (!this.#warmingUp()) return
    throw new ServiceError('STALE_DATA', {
      message: 'The service has just (re)started and is catching up with the venue; market data is not current yet.',
      detail: { reason: 'WARMING_UP' },
      retryAfterMs: WARMING_RETRY_MS,
    })
  }

  /**
   * Issue 28: "an unreachable venue at start is PROVIDER_DOWN on /readyz and the market routes, never old prices as
   * fresh". Prices the log holds from before the start are not current while the venue does not answer.
   */
  #refuseUnreachable(): void {
    const venue = this.#liveVenue
    if (!venue || venue.stage() !== 'unreachable') return
    throw new ServiceError('PROVIDER_DOWN', {
      message: 'The live venue has not answered since the service started; no price is current.',
      detail: { reason: 'VENUE_UNREACHABLE', provider: 'hyperliquid', stage: 'unreachable', last_error: venue.lastError() },
      retryAfterMs: WARMING_RETRY_MS,
    })
  }

  /** Live venue: a quote whose price inputs are all past their staleness budget is refused (STALE_DATA), not served. */
  #refuseStalePrice(sym: string): void {
    if (!this.#liveVenue) return
    const prices = this.#state.freshness(sym, PRICE_INPUTS)
    if (prices.length === 0 || prices.some((f) => f.ok)) return
    const newest = prices.reduce((a, b) => (a.age_ms <= b.age_ms ? a : b))
    throw new ServiceError('STALE_DATA', {
      message: `The venue's newest ${newest.input} price for ${sym} is ${Math.round(newest.age_ms / 1000)} s old, past its ${newest.staleness_budget_ms / 1000} s budget.`,
      detail: { reason: 'VENUE_STALE', asset: sym, input: newest.input, age_ms: newest.age_ms, staleness_budget_ms: newest.staleness_budget_ms, last_success_at: newest.last_success_at, stage: this.#liveVenue.stage() },
      retryAfterMs: WARMING_RETRY_MS,
    })
  }

  /** The known universe: the last one without I/O when there is one, else a read; null when none can be had. */
  async #knownUniverse(): Promise<VenueUniverse | null> {
    const peeked = this.#universe.peek()
    if (peeked) return peeked
    try {
      return await this.#universe.read()
    } catch (err) {
      if (err instanceof ServiceError && err.code === 'PROVIDER_DOWN') return null
      throw err
    }
  }

  /** Legal = canonical or listed, and not delisted in the known universe. Unknown universe + other symbol → 503. */
  async #legal(symbol: string): Promise<Legal> {
    return this.#legalIn(symbol, await this.#knownUniverse())
  }

  #legalIn(symbol: string, universe: VenueUniverse | null): Legal {
    const row = universe?.assets.find((a) => a.symbol.toUpperCase() === symbol) ?? null
    if (row?.delisted) return { legal: false }
    if ((CANONICAL_ASSETS as readonly string[]).includes(symbol)) return { legal: true, row, universe }
    if (!universe) {
      throw new ServiceError('PROVIDER_DOWN', {
        message: 'The venue universe is unknown, so this symbol cannot be checked.',
        detail: { reason: 'PROVIDER_DOWN', provider: this.#universe.mode === 'hyperliquid' ? 'hyperliquid-info' : 'tick-feed' },
      })
    }
    return row ? { legal: true, row, universe } : { legal: false }
  }

  /**
   * Spec (Market snapshot): "quote { price, bid, ask, mark, index, volume_24h }; derived { mid, spread_bps };
   * provenance { source, provider, timestamp, received_at, age_ms, quality }"; "no probability claim".
   * price = last mid (else bar close, else mark); bid/ask from the book top; derived mid = book midpoint (else mid);
   * provenance describes the price input; quality 'degraded' when any quote input breached its budget or arrived
   * degraded, else the input's own quality ('real' or 'simulated').
   */
  snapshot(symbol: string): MaybePromise<SnapshotRead | null> {
    this.#refuseWhileWarming()
    const sym = symbol.toUpperCase()
    this.#refuseStalePrice(sym)
    const universe = this.#universe.peek()
    if (universe === null) return this.#legal(sym).then((legal) => this.#answer(sym, legal))
    const consumed = this.#state.consumedCount
    const now = this.#state.now()
    const hit = this.#answers.get(sym)
    if (
      hit !== undefined && hit.consumed === consumed && hit.now === now && hit.assets === universe.assets &&
      hit.asOf === universe.asOf && hit.quality === universe.quality && hit.venue === universe.venue &&
      (hit.universeNow === null || hit.universeNow === this.#universe.now())
    ) return hit.answer
    const answer = deepFreeze(this.#answer(sym, this.#legalIn(sym, universe)))
    if (this.#answers.size >= ANSWERS_KEPT) this.#answers.clear()
    this.#answers.set(sym, {
      consumed, now, assets: universe.assets, asOf: universe.asOf, quality: universe.quality, venue: universe.venue,
      // Only an answer built from the universe row ages with the universe's own clock.
      universeNow: answer !== null && answer.freshness[0]?.input === 'universe' ? this.#universe.now() : null,
      answer,
    })
    return answer
  }

  #answer(sym: string, legal: Legal): SnapshotRead | null {
    if (!legal.legal) return null
    const m = this.#state.asset(sym)
    if (m) {
      const primary: Observed<unknown> | null = m.mid ?? m.bar ?? m.mark
      if (primary) {
        const price = m.mid?.value ?? m.bar?.value.close ?? m.mark!.value
        const freshness = this.#state.freshness(sym, QUOTE_INPUTS).map(({ quality: _q, ...f }) => f)
        const book = m.book?.value ?? null
        const bookMid = book && book.bid > 0 && book.ask >= book.bid ? (book.bid + book.ask) / 2 : null
        const now = this.#state.now() ?? primary.time
        const degraded = freshness.some((f) => !f.ok)
        return {
          snapshot: {
            asset: sym,
            quote: {
              price,
              bid: book?.bid ?? null,
              ask: book?.ask ?? null,
              mark: m.mark?.value ?? null,
              index: m.index?.value ?? null,
              volume_24h: m.bar?.value.volume_24h_usd ?? legal.row?.day_volume_usd ?? null,
            },
            derived: {
              mid: bookMid ?? m.mid?.value ?? null,
              spread_bps: bookMid !== null ? ((book!.ask - book!.bid) / bookMid) * 1e4 : null,
            },
            provenance: {
              source: primary.provenance.source,
              provider: primary.provenance.provider,
              timestamp: isoMs(primary.time),
              received_at: primary.provenance.received_at,
              age_ms: Math.max(0, now - primary.time),
              quality: degraded ? 'degraded' : primary.provenance.quality,
            },
          },
          freshness,
        }
      }
    }
    if (legal.row && legal.universe) return this.#fromUniverseRow(sym, legal.row, legal.universe)
    throw new ServiceError('STALE_DATA', {
      message: `No market data for ${sym} has arrived yet.`,
      detail: { reason: 'NO_MARKET_DATA', asset: sym },
    })
  }

  /** A listed symbol the tick stream does not carry: its universe row (no book, so no bid/ask/spread). */
  #fromUniverseRow(sym: string, row: TickUniverseAsset, u: VenueUniverse): SnapshotRead | null {
    const price = row.mid ?? row.mark
    if (price === null) return null
    const age = Math.max(0, this.#universe.now() - u.asOf)
    const budget = stalenessBudgetMs('mid')
    const ok = age <= budget && u.quality !== 'degraded'
    return {
      snapshot: {
        asset: sym,
        quote: { price, bid: null, ask: null, mark: row.mark, index: row.oracle, volume_24h: row.day_volume_usd },
        derived: { mid: row.mid, spread_bps: null },
        provenance: {
          source: u.venue === 'hyperliquid' ? 'hyperliquid:perp' : u.venue,
          provider: this.#universe.mode === 'hyperliquid' ? 'hyperliquid-info' : 'tick-feed',
          timestamp: isoMs(u.asOf),
          received_at: isoMs(u.asOf),
          age_ms: age,
          quality: ok ? u.quality : 'degraded',
        },
      },
      freshness: [{ input: 'universe', ok, staleness_budget_ms: budget, age_ms: age, last_success_at: isoMs(u.asOf) }],
    }
  }

  /**
   * Spec (Universe): "assets: [{ symbol, mid, mark, change_24h, volume_24h, oi_usd, funding, max_leverage, delisted }]
   * sorted by volume_24h descending, count, total_live, truncated". change_24h is a fraction of the previous-day
   * price; oi_usd = open interest (base) × mark; funding is the hourly rate accruing now.
   */
  async universe(q: { limit: number; q: string | null }): Promise<Universe> {
    this.#refuseWhileWarming()
    const u = await this.#universe.read()
    const live = u.assets.filter((a) => !a.delisted)
    const needle = q.q?.toUpperCase() ?? null
    const matching = needle ? live.filter((a) => a.symbol.toUpperCase().includes(needle)) : live
    const rows = matching.map(universeRow).sort(
      (a, b) => (b.volume_24h ?? -Infinity) - (a.volume_24h ?? -Infinity) || a.symbol.localeCompare(b.symbol),
    )
    const limit = Number.isInteger(q.limit) && q.limit > 0 ? q.limit : 50
    const assets = rows.slice(0, limit)
    return {
      venue: u.venue,
      as_of: isoMs(u.asOf),
      quality: u.quality,
      assets,
      count: assets.length,
      total_live: live.length,
      truncated: rows.length > assets.length,
    }
  }

  /**
   * Spec: "each row has askable true, false or null (true only when the coin is also live and not delisted in the
   * universe)": false when listed-but-delisted or absent from a known universe, null when the universe is unknown.
   */
  async marketcap(): Promise<MarketCapList> {
    if (!this.#marketcap) {
      throw new ServiceError('PROVIDER_DOWN', {
        message: 'No market-cap provider is configured on this deployment (SVC_COINGECKO_URL).',
        detail: { reason: 'SERVICE_UNWIRED', missing: 'coingecko' },
      })
    }
    const list = await this.#marketcap.read()
    const universe = await this.#knownUniverse()
    const bySymbol = new Map<string, boolean>()
    for (const a of universe?.assets ?? []) {
      const k = a.symbol.toUpperCase()
      bySymbol.set(k, (bySymbol.get(k) ?? false) || !a.delisted)
    }
    return {
      as_of: isoMs(list.asOf),
      source: list.source,
      coins: list.coins.map((c) => ({ ...c, askable: universe === null ? null : (bySymbol.get(c.symbol) ?? false) })),
    }
  }

  /** Spec (/v1/liq/hours): "reports that market's N/24 hourly-observation figure". Illegal symbol → null (404). */
  async liqHours(asset: string): Promise<LiqHours | null> {
    this.#refuseWhileWarming()
    const sym = asset.toUpperCase()
    const legal = await this.#legal(sym)
    if (!legal.legal) return null
    const n = Math.min(this.#state.liqHours(sym) ?? 0, LIQ_HOURS_REQUIRED)
    return { asset: sym, hours_observed: n, hours_required: LIQ_HOURS_REQUIRED, figure: `${n}/${LIQ_HOURS_REQUIRED}`, ready: n >= LIQ_HOURS_REQUIRED }
  }

  #needPaid(): PaidMarketData {
    this.#refuseWhileWarming()
    if (this.#liveVenue?.stage() === 'stale') {
      throw new ServiceError('STALE_DATA', {
        message: "The venue's data is older than its staleness budget (the connector is reconnecting or the venue is silent).",
        detail: { reason: 'VENUE_STALE', stage: 'stale' },
        retryAfterMs: WARMING_RETRY_MS,
      })
    }
    if (this.#paid) return this.#paid
    throw new ServiceError('PROVIDER_DOWN', {
      message: 'The paid market surfaces are not wired on this deployment.',
      detail: { reason: 'SERVICE_UNWIRED', missing: 'market.paid' },
    })
  }

  liquidationSurface(asset: CanonicalAsset, payment: PaidCall): Promise<MarketRead> {
    return this.#needPaid().liquidationSurface(asset, payment)
  }

  fundingSnapshot(payment: PaidCall): Promise<MarketRead> {
    return this.#needPaid().fundingSnapshot(payment)
  }

  fundingAsset(asset: CanonicalAsset, payment: PaidCall, unit: UnitOfWork): Promise<MarketRead> {
    return this.#needPaid().fundingAsset(asset, payment, unit)
  }

  fundingOpportunities(payment: PaidCall, unit: UnitOfWork): Promise<MarketRead> {
    return this.#needPaid().fundingOpportunities(payment, unit)
  }
}

/** Spec (Shared conventions): "asset | upper-case ticker string" — the venue's kPEPE is listed as KPEPE (as in ticks). */
function universeRow(a: TickUniverseAsset): UniverseAsset {
  const last = a.mid ?? a.mark
  return {
    symbol: a.symbol.toUpperCase(),
    mid: a.mid,
    mark: a.mark,
    change_24h: last !== null && a.prev_day_price !== null && a.prev_day_price > 0 ? last / a.prev_day_price - 1 : null,
    volume_24h: a.day_volume_usd,
    oi_usd: a.open_interest !== null && a.mark !== null ? a.open_interest * a.mark : null,
    funding: a.funding,
    max_leverage: a.max_leverage,
    delisted: false,
  }
}
