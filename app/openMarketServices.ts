/**
 * Builds the market part and the provider registry for `svc start`: the MarketState stream processor on the ticks
 * topic, the universe source (replay or live Hyperliquid), the optional CoinGecko market-cap source, and health
 * tracking of hyperliquid-info (live mode), the tick feed, coingecko and the event log (critical), and the paid
 * market surfaces (PaidMarketServices over the same state; the funding decisions need `decisions`, the engine).
 *
 * Configuration (app/config.ts): SVC_UNIVERSE=replay|hyperliquid (default: hyperliquid on the live venue, else replay),
 * SVC_HL_BASE_URL, SVC_COINGECKO_URL,
 * SVC_COINGECKO_KEY (and SVC_COINGECKO_KEY_HEADER to override the demo/pro header choice).
 */
import type { CheckpointSettings } from '../pipeline/state/StateStore.ts'
import { CoinGeckoClient } from '../ingest/coingecko/CoinGeckoClient.ts'
import { HyperliquidInfoClient } from '../ingest/hyperliquid/HyperliquidInfoClient.ts'
import { validateOptions } from '../common/validation.ts'
import type { AppConfig } from './config.ts'
import { isoMs } from '../ingest/Tick.ts'
import type { EventLog } from '../pipeline/log/EventLog.ts'
import { FEATURE_INPUTS } from '../pipeline/features/stalenessBudgets.ts'
import { MarketState, type MarketInput } from '../pipeline/MarketState.ts'
import { systemClock, type Clock } from '../common/Clock.ts'
import { type DecisionService } from '../engine/DecisionService.ts'
import { CoinGeckoMarketCapSource, MARKETCAP_CACHE_MS } from '../product/market/CoinGeckoMarketCapSource.ts'
import { HyperliquidUniverseSource, UNIVERSE_CACHE_MS } from '../product/market/HyperliquidUniverseSource.ts'
import { MarketServices, type PaidMarketData } from '../product/market/MarketServices.ts'
import { PaidMarketServices } from '../product/market/PaidMarketServices.ts'
import { EVENT_LOG_PROVIDER, EventLogHealth } from '../product/platform/EventLogHealth.ts'
import { ProviderHealth, type ComputedHealth } from '../product/platform/ProviderHealth.ts'
import { ReplayUniverseSource } from '../product/market/ReplayUniverseSource.ts'
import type { UniverseSource } from '../product/market/UniverseSource.ts'
import type { LiveVenue } from '../pipeline/venue/VenueStatus.ts'

export interface MarketWiringOptions {
  universe: 'replay' | 'hyperliquid'
  hlBaseUrl?: string
  coingeckoUrl?: string
  coingeckoKey?: string
  coingeckoKeyHeader?: string
}

const OPTIONS_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['universe'],
  properties: {
    universe: { enum: ['replay', 'hyperliquid'] },
    hlBaseUrl: { type: 'string', pattern: '^https?://[^\\s]+$' },
    coingeckoUrl: { type: 'string', pattern: '^https?://[^\\s]+$' },
    coingeckoKey: { type: 'string', minLength: 1 },
    coingeckoKeyHeader: { type: 'string', pattern: '^[A-Za-z0-9-]+$' },
  },
} as const

/** The market part of the configuration (SVC_UNIVERSE, SVC_HL_BASE_URL, SVC_COINGECKO_*; app/config.ts validated it). */
export function marketWiringOf(
  c: Pick<AppConfig, 'SVC_UNIVERSE' | 'SVC_HL_BASE_URL' | 'SVC_COINGECKO_URL' | 'SVC_COINGECKO_KEY' | 'SVC_COINGECKO_KEY_HEADER'> & Partial<Pick<AppConfig, 'SVC_VENUE'>>,
): MarketWiringOptions {
  return {
    universe: c.SVC_UNIVERSE ?? (c.SVC_VENUE === 'hyperliquid' ? 'hyperliquid' : 'replay'),
    ...(c.SVC_HL_BASE_URL ? { hlBaseUrl: c.SVC_HL_BASE_URL } : {}),
    ...(c.SVC_COINGECKO_URL ? { coingeckoUrl: c.SVC_COINGECKO_URL } : {}),
    ...(c.SVC_COINGECKO_KEY ? { coingeckoKey: c.SVC_COINGECKO_KEY } : {}),
    ...(c.SVC_COINGECKO_KEY_HEADER ? { coingeckoKeyHeader: c.SVC_COINGECKO_KEY_HEADER } : {}),
  }
}

/** Tick-feed health: down when the consumer failed; degraded before the first tick or when an input is stale. */
export function tickFeedHealth(state: MarketState): () => ComputedHealth {
  const inputs = FEATURE_INPUTS as readonly MarketInput[]
  return () => {
    const h = state.health()
    const last = h.eventTime === null ? null : isoMs(h.eventTime)
    if (h.error) return { status: 'down', last_success_at: last, latency_ms: null, error_class: 'CONSUMER_FAILED' }
    if (h.eventTime === null) return { status: 'degraded', last_success_at: null, latency_ms: null, error_class: 'NO_TICKS_YET' }
    const stale = state.assets().some((a) => state.freshness(a, inputs).some((f) => !f.ok))
    return { status: stale ? 'degraded' : 'ok', last_success_at: last, latency_ms: null, error_class: stale ? 'STALE_INPUT' : null }
  }
}

/**
 * The live venue as a provider row: ok while streaming, degraded while the websocket reconnects (data still within
 * budget) or the history is being fetched, down when the venue is unreachable or its data is stale.
 */
export function venueHealth(venue: LiveVenue): () => ComputedHealth {
  return () => {
    const { stage, last_message_at } = venue.status()
    const status = stage === 'streaming' ? 'ok' : stage === 'reconnecting' || stage === 'backfilling' || stage === 'starting' ? 'degraded' : 'down'
    return { status, last_success_at: last_message_at, latency_ms: null, error_class: stage === 'streaming' ? null : `VENUE_${stage.toUpperCase()}` }
  }
}

export interface MarketWiring {
  state: MarketState
  market: MarketServices
  providers: ProviderHealth
  /** The `event-log` row's prober (its own cadence; see EventLogHealth). */
  eventLog: EventLogHealth
  /** Wires the engine into the default paid surfaces (funding decisions); a no-op when `paid` was given. */
  attachDecisions(engine: DecisionService): void
  close(): Promise<void>
}

export async function openMarketServices(opts: {
  log: EventLog
  ticksTopic: string
  options: MarketWiringOptions
  /** Paid market surfaces; default: PaidMarketServices over this wiring's state and `decisions`. */
  paid?: PaidMarketData | null
  /** The decision engine the funding surfaces record S06/S07 through; without it they answer 503 SERVICE_UNWIRED. */
  decisions?: DecisionService | null
  /** Wall clock for caches and health (default system). */
  clock?: Clock
  /** Start periodic probes (default true). */
  probes?: boolean
  /** Judge freshness against `clock` (the present: a stalled feed shows as stale) even on the replay universe. */
  wallFreshness?: boolean
  /** True while the market state catches up after a (re)start: market reads answer 503 STALE_DATA (WARMING_UP). */
  warmingUp?: () => boolean
  /** The live venue's connector (SVC_VENUE=hyperliquid): gates market reads and is the critical provider `hyperliquid-ws`. */
  liveVenue?: LiveVenue | null
  /** The Hyperliquid REST client the live universe reads through (sharing the process's REST weight budget). */
  hlClient?: HyperliquidInfoClient
  /** State snapshots of the market state (issue 31): a restart reads only the ticks after them. */
  checkpoints?: CheckpointSettings | null
}): Promise<MarketWiring> {
  const o = validateOptions<MarketWiringOptions>('openMarketServices options', OPTIONS_SCHEMA, opts.options)
  const clock = opts.clock ?? systemClock
  const providers = new ProviderHealth({ clock })
  const live = o.universe === 'hyperliquid'
  // Live (the venue, or the simulated venue in the present): freshness against the wall clock, so a stalled stream
  // shows as stale; a dated tape: against its event time.
  const state = await MarketState.start({ log: opts.log, topic: opts.ticksTopic, checkpoints: opts.checkpoints ?? null, ...(live || opts.wallFreshness ? { clock } : {}) })

  // The event log: probed every 2 s with a bounded wait, down at once on a failure or a crashed consumer (see
  // EventLogHealth for why it is not a call-tracked entry).
  const eventLog = new EventLogHealth({ log: opts.log, topic: opts.ticksTopic, clock })
  providers.computed(EVENT_LOG_PROVIDER, 'log', eventLog.compute, { critical: true })
  providers.computed('tick-feed', 'stream', tickFeedHealth(state))
  const liveVenue = opts.liveVenue ?? null
  if (liveVenue) providers.computed('hyperliquid-ws', 'venue', venueHealth(liveVenue), { critical: true })

  let universe: UniverseSource
  if (live) {
    const hl = opts.hlClient ?? new HyperliquidInfoClient({ ...(o.hlBaseUrl ? { baseUrl: o.hlBaseUrl } : {}), timeoutMs: 5_000 })
    let source: HyperliquidUniverseSource | null = null
    const recorder = providers.track('hyperliquid-info', 'venue', {
      probeIntervalMs: UNIVERSE_CACHE_MS,
      probe: () => source!.refresh(),
    })
    source = new HyperliquidUniverseSource({ client: hl, clock, recorder })
    universe = source
  } else {
    universe = new ReplayUniverseSource(state)
  }

  let marketcap: CoinGeckoMarketCapSource | null = null
  if (o.coingeckoUrl) {
    const client = new CoinGeckoClient({
      baseUrl: o.coingeckoUrl,
      ...(o.coingeckoKey ? { apiKey: o.coingeckoKey } : {}),
      ...(o.coingeckoKeyHeader ? { keyHeader: o.coingeckoKeyHeader } : {}),
      timeoutMs: 5_000,
    })
    const recorder = providers.track('coingecko', 'marketcap', { probeIntervalMs: MARKETCAP_CACHE_MS, probe: () => marketcap!.refresh() })
    marketcap = new CoinGeckoMarketCapSource({ client, clock, recorder })
  }

  if (opts.probes ?? true) await Promise.all([providers.start(), eventLog.start()])
  else await Promise.all([providers.probeAll(), eventLog.probe()])
  const defaultPaid = opts.paid === undefined ? new PaidMarketServices({ state, decisions: opts.decisions ?? null }) : null
  const market = new MarketServices({ state, universe, marketcap, paid: defaultPaid ?? opts.paid ?? null, liveVenue, ...(opts.warmingUp ? { warmingUp: opts.warmingUp } : {}) })
  return {
    state,
    market,
    providers,
    eventLog,
    attachDecisions(engine) {
      defaultPaid?.attachDecisions(engine)
    },
    async close() {
      providers.close()
      eventLog.close()
      await state.close()
    },
  }
}
