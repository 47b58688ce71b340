/**
 * A seeded synthetic perpetuals market: BTC, ETH and SOL on one Hyperliquid-like venue, simulated on a 1-minute
 * grid and emitted as ticks (ingest/Tick.ts) in event-time order. The model and every parameter are documented in
 * docs/generator.md; the numbers live in SYNTHETIC_MODEL below and nowhere else.
 *
 * Determinism: the same options give the same ticks, bit for bit. All randomness comes from ingest/Prng.ts with one
 * named stream for the market factor and one per asset, so the BTC path does not change when ETH is added.
 *
 * Spec (../shared/reference/hyperliquid-api.md §5): "Paid hourly. F = P̄ + clamp(I − P̄, −0.0005, 0.0005) on the
 * 8-hour basis, paid at 1/8 per hour … Interest component I = 0.01 % per 8 h = 1.25e-05/h … Cap: 4 % per hour."
 */
import { OptionsError, validateOptions } from '../common/validation.ts'
import { Prng, type PrngWords } from './Prng.ts'
import {
  CANONICAL_ASSETS,
  TICK_KINDS,
  TICK_SCHEMA_VERSION,
  isoMs,
  type CanonicalAsset,
  type LiquidationTick,
  type Provenance,
  type Tick,
} from './Tick.ts'
import type { TapeWriter } from './TapeWriter.ts'
import { MINUTE_MS, HOUR_MS } from '../common/time.ts'

export const REGIMES = ['calm', 'normal', 'turbulent'] as const
export type Regime = (typeof REGIMES)[number]

export interface AssetProfile {
  /** Starting oracle price, USD. */
  startPrice: number
  /** Loading on the BTC market factor (BTC itself: 1). */
  beta: number
  /** Idiosyncratic diffusion σ as a multiple of BTC's σ in the current regime. */
  idioVolRatio: number
  /** σ of idiosyncratic jumps (log return); their rate is idioJumpShare × the market jump rate. */
  idioJumpSigma: number
  /** Hyperliquid szDecimals: sizes carry this many decimals, prices at most 6 − szDecimals. */
  szDecimals: number
  /** Median quoted spread in the normal regime, basis points (never below one price tick). */
  spreadBps: number
  /** Median size at the best bid/ask in the normal regime, base units. */
  topSize: number
  /** Median 1-minute bar volume in the normal regime, base units. */
  barVolume: number
  /** Long-run open interest, base units. */
  openInterest: number
  /** Median notional of one liquidation, USD (scaled to the asset's open-interest notional). */
  liquidationMedianUsd: number
}

/** Every parameter of the model. Documented, with its reasoning, in docs/generator.md. */
export const SYNTHETIC_MODEL = {
  minutesPerYear: 525_600,
  initialRegime: 'normal' as Regime,
  /** BTC annualized diffusion volatility per regime. */
  btcAnnualVol: { calm: 0.25, normal: 0.5, turbulent: 1.2 } as Record<Regime, number>,
  /** Expected regime duration in minutes; the per-minute exit probability is its reciprocal. */
  regimeMinutes: { calm: 720, normal: 720, turbulent: 120 } as Record<Regime, number>,
  /** Where a regime goes when it exits (each row sums to 1). */
  regimeExit: {
    calm: { calm: 0, normal: 0.9, turbulent: 0.1 },
    normal: { calm: 0.6, normal: 0, turbulent: 0.4 },
    turbulent: { calm: 0.15, normal: 0.85, turbulent: 0 },
  } as Record<Regime, Record<Regime, number>>,
  /** Market (BTC) jump arrivals per hour, compound Poisson with N(0, btcJumpSigma) log sizes. */
  jumpsPerHour: { calm: 0.02, normal: 0.05, turbulent: 0.5 } as Record<Regime, number>,
  btcJumpSigma: 0.006,
  /** Alt idiosyncratic jump rate as a share of the market jump rate. */
  idioJumpShare: 0.5,
  /** Share of a BTC minute-return that alts follow in the same minute; the rest arrives one minute later. */
  leadShare: 0.8,
  premium: {
    /** Per-minute pull of the perp premium (mid/oracle − 1) toward its mean. */
    meanReversion: 1 / 45,
    mean: 0,
    /** Premium change per unit of the asset's own log return in the minute (chasing). */
    returnLoading: 0.15,
    /** Per-minute premium noise σ per regime. */
    noise: { calm: 0.6e-4, normal: 1.0e-4, turbulent: 2.5e-4 } as Record<Regime, number>,
    /** Mark = oracle × (1 + EMA of the premium); EMA time constant in minutes (Hyperliquid: 150 s). */
    markEmaMinutes: 2.5,
  },
  funding: {
    intervalHours: 1,
    /** I: interest component on the 8-hour basis. */
    interest8h: 1e-4,
    /** Clamp on I − P̄, 8-hour basis. */
    clamp8h: 5e-4,
    /** I / 8: the neutral hourly rate. */
    baselineHourly: 1.25e-5,
    capHourly: 0.04,
    decimals: 10,
  },
  liquidation: {
    /** A minute whose oracle log return exceeds triggerZ × the asset's normal-regime 1-minute σ starts a burst. */
    triggerZ: 4.5,
    /** Intensity (expected liquidations per minute) added per unit of z above triggerZ − 1. */
    excitationPerZ: 3,
    /** Ceiling on burst intensity, liquidations per minute. */
    maxIntensity: 40,
    /** Per-minute decay of burst intensity. */
    decayPerMinute: 0.7,
    /** A burst ends below this intensity or this many minutes after its last trigger. */
    minIntensity: 0.2,
    maxBurstMinutes: 20,
    notionalSigma: 1.3,
    maxPerMinute: 120,
    /** Next-minute price push per unit of (liquidated notional / open-interest notional), against the victims. */
    pricePush: 0.1,
    /** The push is capped at this many normal-regime 1-minute σ; it never triggers a burst by itself. */
    maxPushSigmas: 1,
  },
  openInterest: {
    /** Per-minute mean reversion of log OI toward its long-run level (≈ 3-day time constant). */
    meanReversion: 1 / 4320,
    sigmaPerMinute: 2e-4,
    floorFraction: 0.2,
  },
  book: { spreadSigma: 0.25, sizeSigma: 0.5, depthMultipleMedian: 8, depthSigma: 0.3 },
  volumeSigma: 0.4,
  assets: {
    BTC: { startPrice: 95_000, beta: 1, idioVolRatio: 0, idioJumpSigma: 0, szDecimals: 5, spreadBps: 0.12, topSize: 3, barVolume: 25, openInterest: 28_000, liquidationMedianUsd: 150_000 },
    ETH: { startPrice: 3_300, beta: 1.1, idioVolRatio: 0.7, idioJumpSigma: 0.008, szDecimals: 4, spreadBps: 0.25, topSize: 60, barVolume: 500, openInterest: 550_000, liquidationMedianUsd: 100_000 },
    SOL: { startPrice: 190, beta: 1.3, idioVolRatio: 1.0, idioJumpSigma: 0.012, szDecimals: 2, spreadBps: 0.4, topSize: 1_500, barVolume: 12_000, openInterest: 3_500_000, liquidationMedianUsd: 40_000 },
  } as Record<CanonicalAsset, AssetProfile>,
} as const

export const SIMULATED_SOURCE = 'simulated'
export const GENERATOR_PROVIDER = 'svc-generator'
export const DEFAULT_START = '2026-01-01T00:00:00.000Z'

export interface SyntheticMarketOptions {
  /** Non-negative safe integer. */
  seed: number
  /** Length of the run; hours × 60 must be a whole number of minutes. */
  hours: number
  /** Subset of BTC, ETH, SOL; emitted in this order within a timestamp. */
  assets: string[]
  /** ISO-8601 UTC instant on a whole minute; default 2026-01-01T00:00:00Z. */
  start?: string
}

const OPTIONS_SCHEMA = {
  type: 'object',
  required: ['seed', 'hours', 'assets'],
  additionalProperties: false,
  properties: {
    seed: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    hours: { type: 'number', exclusiveMinimum: 0, maximum: 24 * 366 * 5 },
    assets: { type: 'array', minItems: 1, uniqueItems: true, items: { enum: [...CANONICAL_ASSETS] } },
    start: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,3})?)?Z$' },
  },
} as const
const ROOT = 'SyntheticMarket options'

/** Validates once; returns start and minute count. Errors name the field path (`SyntheticMarket options/hours: …`). */
function checkOptions(options: SyntheticMarketOptions): { startMs: number; minutes: number } {
  validateOptions(ROOT, OPTIONS_SCHEMA, options)
  const startMs = Date.parse(options.start ?? DEFAULT_START)
  if (Number.isNaN(startMs)) throw OptionsError.at(ROOT, '/start', 'not a valid instant')
  if (startMs % MINUTE_MS !== 0) throw OptionsError.at(ROOT, '/start', 'must fall on a whole minute')
  const minutes = options.hours * 60
  if (!Number.isInteger(minutes)) throw OptionsError.at(ROOT, '/hours', 'must be a whole number of minutes')
  return { startMs, minutes }
}

/** Per-minute σ of an asset's oracle log return in a regime (diffusion only, steady regime). */
export function minuteSigma(asset: CanonicalAsset, regime: Regime): number {
  const p = SYNTHETIC_MODEL.assets[asset]
  const btc = SYNTHETIC_MODEL.btcAnnualVol[regime] / Math.sqrt(SYNTHETIC_MODEL.minutesPerYear)
  if (asset === 'BTC') return btc
  const lead = SYNTHETIC_MODEL.leadShare
  const factorShare = p.beta * p.beta * (lead * lead + (1 - lead) * (1 - lead))
  return btc * Math.sqrt(factorShare + p.idioVolRatio * p.idioVolRatio)
}

/** The liquidation trigger threshold of an asset, as an absolute 1-minute oracle log return. */
export function liquidationTriggerReturn(asset: CanonicalAsset): number {
  return SYNTHETIC_MODEL.liquidation.triggerZ * minuteSigma(asset, 'normal')
}

/** Hyperliquid settlement from the hour's average premium: F8 = P̄ + clamp(I − P̄, ±0.0005), paid F8/8 per hour, capped. */
export function hourlyFundingRate(avgPremium: number): number {
  const f = SYNTHETIC_MODEL.funding
  const gap = f.interest8h - avgPremium
  // Inside the clamp band F8 is exactly I: return the literal so the neutral value is bit-exact.
  if (Math.abs(gap) <= f.clamp8h) return f.baselineHourly
  const f8 = avgPremium + Math.sign(gap) * f.clamp8h
  const hourly = Math.min(f.capHourly, Math.max(-f.capHourly, f8 / 8))
  return round(hourly, f.decimals)
}

function round(x: number, decimals: number): number {
  const r = Number(x.toFixed(decimals))
  return r === 0 ? 0 : r // no negative zero in tapes
}

/** Price decimals as on Hyperliquid perps: at most 5 significant figures and at most 6 − szDecimals decimals. */
function priceDecimals(price: number, szDecimals: number): number {
  const sig = 4 - Math.floor(Math.log10(price))
  return Math.max(0, Math.min(6 - szDecimals, sig))
}

const KIND_ORDER = new Map<string, number>(TICK_KINDS.map((k, i) => [k, i]))

interface AssetState {
  asset: CanonicalAsset
  index: number
  profile: AssetProfile
  rng: Prng
  sigmaNormal: number
  logOracle: number
  premium: number
  markBasis: number
  hourPremiumSum: number
  hourPremiumCount: number
  lastMid: number
  lastMark: number
  logOpenInterest: number
  openInterest: number
  burstIntensity: number
  burstSide: 'long' | 'short'
  burstLastTriggerMinute: number
  pendingPush: number
  /** Number (1-based, over the whole run) of this asset's newest tick; 0 before its first. */
  lastTick: number
}

/** The fields of AssetState that change as the run goes (the rest follows from the asset and the model). */
const ASSET_STATE_FIELDS = [
  'logOracle',
  'premium',
  'markBasis',
  'hourPremiumSum',
  'hourPremiumCount',
  'lastMid',
  'lastMark',
  'logOpenInterest',
  'openInterest',
  'burstIntensity',
  'burstLastTriggerMinute',
  'pendingPush',
  'lastTick',
] as const

/** Version of MarketCheckpoint's shape and meaning: bump it when the generator's state changes, so old ones are refused. */
export const MARKET_CHECKPOINT_SCHEMA = 1

/** One asset's generator state at a minute boundary. */
export type AssetCheckpoint = { asset: CanonicalAsset; rng: PrngWords; burstSide: 'long' | 'short' } & Record<(typeof ASSET_STATE_FIELDS)[number], number>

/**
 * The whole state of a run after `minute` minutes: every Prng's words, the regime, the lagged market return, each
 * asset's state, and `ticks` (how many ticks the run has yielded, so the next is number ticks + 1). ticks(from) goes on
 * from it with exactly the ticks a run from the start yields after that minute. Numbers are kept exactly, including
 * -Infinity ("no burst yet") and -0: a serializer must keep them (JSON alone does not).
 */
export interface MarketCheckpoint {
  schema: number
  minute: number
  ticks: number
  regime: Regime
  previousMarketReturn: number
  market: PrngWords
  assets: AssetCheckpoint[]
}

/** Continuing a run: `from` a checkpoint, and `onCheckpoint` sees each minute's checkpoint before its ticks are yielded. */
export interface TickRun {
  from?: MarketCheckpoint
  onCheckpoint?: (checkpoint: MarketCheckpoint) => void
}

function isWords(v: unknown): v is PrngWords {
  return Array.isArray(v) && v.length === 4 && v.every((w) => Number.isInteger(w) && w >= 0 && w <= 0xffffffff) && v.some((w) => w !== 0)
}

/**
 * Why `value` is not a checkpoint of a run over `assets` within `minutes`, or null when it is (a structural check: a
 * hand-edited or foreign file is refused with a reason rather than generating garbage).
 */
export function checkpointProblem(value: unknown, assets: readonly CanonicalAsset[], minutes: number): string | null {
  if (value === null || typeof value !== 'object') return 'not an object'
  const c = value as Partial<MarketCheckpoint>
  if (c.schema !== MARKET_CHECKPOINT_SCHEMA) return `schema ${String(c.schema)}, this generator reads ${MARKET_CHECKPOINT_SCHEMA}`
  if (!Number.isSafeInteger(c.minute) || c.minute! < 0 || c.minute! > minutes) return `/minute: ${String(c.minute)} is not a minute of the run (0..${minutes})`
  if (!Number.isSafeInteger(c.ticks) || c.ticks! < 0) return `/ticks: ${String(c.ticks)} is not a count`
  if (!REGIMES.includes(c.regime as Regime)) return `/regime: ${String(c.regime)}`
  if (typeof c.previousMarketReturn !== 'number' || Number.isNaN(c.previousMarketReturn)) return '/previousMarketReturn: not a number'
  if (!isWords(c.market)) return '/market: not four unsigned 32-bit words'
  if (!Array.isArray(c.assets) || c.assets.map((a) => a?.asset).join() !== assets.join()) return `/assets: ${Array.isArray(c.assets) ? c.assets.map((a) => a?.asset).join() : 'none'}, the run has ${assets.join()}`
  for (const [i, a] of c.assets.entries()) {
    if (!isWords(a.rng)) return `/assets/${i}/rng: not four unsigned 32-bit words`
    if (a.burstSide !== 'long' && a.burstSide !== 'short') return `/assets/${i}/burstSide: ${String(a.burstSide)}`
    for (const field of ASSET_STATE_FIELDS) if (typeof a[field] !== 'number' || Number.isNaN(a[field])) return `/assets/${i}/${field}: not a number`
  }
  return null
}

/** The hidden state of one simulated minute (ending at `time`, epoch ms). */
export interface MinuteState {
  time: number
  regime: Regime
}

interface Pending {
  time: number
  asset: number
  kind: number
  seq: number
  tick: Tick
}

export class SyntheticMarket implements Iterable<Tick>, AsyncIterable<Tick> {
  readonly seed: number
  readonly assets: readonly CanonicalAsset[]
  readonly startMs: number
  /** Number of 1-minute steps; records run from start + 1 min to start + minutes. */
  readonly minutes: number
  #minutesDone = 0

  constructor(options: SyntheticMarketOptions) {
    const { startMs, minutes } = checkOptions(options)
    this.seed = options.seed
    this.assets = options.assets as CanonicalAsset[]
    this.startMs = startMs
    this.minutes = minutes
  }

  /** Minutes simulated so far by the running iterator (for progress). */
  get minutesDone(): number {
    return this.#minutesDone
  }

  get endMs(): number {
    return this.startMs + this.minutes * MINUTE_MS
  }

  [Symbol.iterator](): Iterator<Tick> {
    return this.ticks()
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Tick> {
    yield* this.ticks()
  }

  /** Writes the whole run to a tape; `onMinute` sees the minutes done after each simulated minute. */
  async writeTo(writer: TapeWriter, onMinute?: (minutesDone: number) => void): Promise<number> {
    let lastMinute = -1
    for (const tick of this.ticks()) {
      await writer.write(tick)
      if (onMinute && this.#minutesDone !== lastMinute) {
        lastMinute = this.#minutesDone
        onMinute(lastMinute)
      }
    }
    onMinute?.(this.#minutesDone)
    return writer.count
  }

  /**
   * The ticks, in event-time order; within one instant by asset order, then tick-kind order. `observe` sees the
   * hidden state (the regime) of each minute before its ticks are yielded, for diagnostics and tests.
   */
  *ticks(observe?: (minute: MinuteState) => void, run: TickRun = {}): Generator<Tick> {
    const m = SYNTHETIC_MODEL
    const { from, onCheckpoint } = run
    if (from) {
      const problem = checkpointProblem(from, this.assets, this.minutes)
      if (problem !== null) throw new RangeError(`SyntheticMarket checkpoint: ${problem}`)
    }
    const market = from ? Prng.fromWords(from.market) : new Prng(this.seed, 'market')
    const states: AssetState[] = this.assets.map((asset, index) => {
      const profile = m.assets[asset]
      const mid = profile.startPrice
      return {
        asset,
        index,
        profile,
        rng: new Prng(this.seed, `asset:${asset}`),
        sigmaNormal: minuteSigma(asset, 'normal'),
        logOracle: Math.log(profile.startPrice),
        premium: m.premium.mean,
        markBasis: m.premium.mean,
        hourPremiumSum: 0,
        hourPremiumCount: 0,
        lastMid: mid,
        lastMark: mid,
        logOpenInterest: Math.log(profile.openInterest),
        openInterest: profile.openInterest,
        burstIntensity: 0,
        burstSide: 'long',
        burstLastTriggerMinute: -Infinity,
        pendingPush: 0,
        lastTick: 0,
      }
    })
    const markAlpha = 1 - Math.exp(-1 / m.premium.markEmaMinutes)
    let regime: Regime = m.initialRegime
    let previousMarketReturn = 0
    let ticks = 0
    if (from) {
      for (const [i, s] of states.entries()) {
        const saved = from.assets[i]!
        s.rng = Prng.fromWords(saved.rng)
        s.burstSide = saved.burstSide
        for (const field of ASSET_STATE_FIELDS) s[field] = saved[field]
      }
      regime = from.regime
      previousMarketReturn = from.previousMarketReturn
      ticks = from.ticks
    }
    const checkpointAt = (minute: number): MarketCheckpoint => ({
      schema: MARKET_CHECKPOINT_SCHEMA,
      minute,
      ticks,
      regime,
      previousMarketReturn,
      market: market.words(),
      assets: states.map((s) => {
        const saved = { asset: s.asset, rng: s.rng.words(), burstSide: s.burstSide } as AssetCheckpoint
        for (const field of ASSET_STATE_FIELDS) saved[field] = s[field]
        return saved
      }),
    })
    this.#minutesDone = from?.minute ?? 0

    for (let minute = (from?.minute ?? 0) + 1; minute <= this.minutes; minute++) {
      const t = this.startMs + minute * MINUTE_MS
      const ts = isoMs(t)

      // Market stream: regime step, BTC diffusion, market jumps. Drawn in this fixed order every minute.
      const exitDraw = market.float()
      if (exitDraw < 1 / m.regimeMinutes[regime]) {
        const target = market.float()
        const from = regime
        let acc = 0
        for (const r of REGIMES) {
          const p = m.regimeExit[from][r]
          if (p === 0) continue
          regime = r // the last reachable regime also absorbs rounding in the row sum
          acc += p
          if (target < acc) break
        }
      }
      observe?.({ time: t, regime })
      const btcSigma = m.btcAnnualVol[regime] / Math.sqrt(m.minutesPerYear)
      let marketReturn = btcSigma * market.normal()
      const jumpRate = m.jumpsPerHour[regime] / 60
      const jumps = market.poisson(jumpRate)
      for (let j = 0; j < jumps; j++) marketReturn += m.btcJumpSigma * market.normal()

      const pending: Pending[] = []
      let seq = 0
      const provenance = (time: string): Provenance => ({
        source: SIMULATED_SOURCE,
        provider: GENERATOR_PROVIDER,
        timestamp: time,
        received_at: time,
        quality: 'simulated',
      })
      const push = (s: AssetState, time: number, tick: Tick) => {
        pending.push({ time, asset: s.index, kind: KIND_ORDER.get(tick.kind)!, seq: seq++, tick })
      }

      for (const s of states) {
        const p = s.profile
        const rng = s.rng
        const sigmaNow = minuteSigma(s.asset, regime)

        // Oracle (index) return: factor (with lag for alts) + idiosyncratic diffusion and jumps + liquidation push.
        let r: number
        if (s.asset === 'BTC') {
          r = marketReturn
        } else {
          r = p.beta * (m.leadShare * marketReturn + (1 - m.leadShare) * previousMarketReturn)
          r += p.idioVolRatio * btcSigma * rng.normal()
          const idioJumps = rng.poisson(jumpRate * m.idioJumpShare)
          for (let j = 0; j < idioJumps; j++) r += p.idioJumpSigma * rng.normal()
        }
        // The trigger sees the exogenous move only, so a cascade's own push cannot sustain it forever.
        const exogenous = r
        r += s.pendingPush
        s.pendingPush = 0
        s.logOracle += r
        const oracle = Math.exp(s.logOracle)

        // Premium of the perp over the oracle: mean-reverting, chasing the minute's return.
        s.premium += m.premium.meanReversion * (m.premium.mean - s.premium) + m.premium.returnLoading * r + m.premium.noise[regime] * rng.normal()
        s.markBasis += markAlpha * (s.premium - s.markBasis)
        s.hourPremiumSum += s.premium
        s.hourPremiumCount++

        const decimals = priceDecimals(oracle, p.szDecimals)
        const tickSize = 10 ** -decimals
        const trueMid = oracle * (1 + s.premium)
        const markPx = round(oracle * (1 + s.markBasis), decimals)
        const indexPx = round(oracle, decimals)

        // Liquidation bursts: a large move starts or re-excites a burst on the side it hurts.
        const z = exogenous / s.sigmaNormal
        const lq = m.liquidation
        if (Math.abs(z) >= lq.triggerZ) {
          const side = exogenous < 0 ? 'long' : 'short'
          const excitation = lq.excitationPerZ * (Math.abs(z) - lq.triggerZ + 1)
          if (s.burstIntensity > 0 && side === s.burstSide) s.burstIntensity = Math.min(lq.maxIntensity, s.burstIntensity + excitation)
          else {
            s.burstIntensity = Math.min(lq.maxIntensity, excitation)
            s.burstSide = side
          }
          s.burstLastTriggerMinute = minute
        }
        if (s.burstIntensity > 0 && (s.burstIntensity < lq.minIntensity || minute - s.burstLastTriggerMinute > lq.maxBurstMinutes)) {
          s.burstIntensity = 0
        }
        let liquidatedSize = 0
        let liquidatedNotional = 0
        if (s.burstIntensity > 0) {
          const count = Math.min(lq.maxPerMinute, rng.poisson(s.burstIntensity))
          for (let i = 0; i < count; i++) {
            const at = t - MINUTE_MS + rng.int(1, MINUTE_MS - 1)
            const px = round(s.lastMark + rng.float() * (markPx - s.lastMark), decimals)
            const size = Math.max(10 ** -p.szDecimals, round(rng.logNormal(p.liquidationMedianUsd, lq.notionalSigma) / px, p.szDecimals))
            const notional = round(size * px, 2)
            liquidatedSize += size
            liquidatedNotional += notional
            const when = isoMs(at)
            const tick: LiquidationTick = {
              v: TICK_SCHEMA_VERSION,
              kind: 'liquidation',
              asset: s.asset,
              instrument: s.asset,
              provenance: provenance(when),
              side: s.burstSide,
              price: px,
              size,
              notional_usd: notional,
            }
            push(s, at, tick)
          }
          const pushSize = Math.min(lq.maxPushSigmas * s.sigmaNormal, lq.pricePush * (liquidatedNotional / (s.openInterest * oracle)))
          s.pendingPush = (s.burstSide === 'long' ? -1 : 1) * pushSize
          s.burstIntensity *= lq.decayPerMinute
        }

        // Open interest: mean-reverting log random walk, minus what was liquidated.
        const oi = m.openInterest
        s.logOpenInterest += oi.meanReversion * (Math.log(p.openInterest) - s.logOpenInterest) + oi.sigmaPerMinute * rng.normal()
        let openInterest = Math.exp(s.logOpenInterest) - liquidatedSize
        openInterest = Math.max(openInterest, oi.floorFraction * p.openInterest)
        s.logOpenInterest = Math.log(openInterest)
        s.openInterest = openInterest

        // Book top: spread widens and top size thins with volatility.
        const volRatio = sigmaNow / s.sigmaNormal
        const spreadPx = trueMid * (p.spreadBps / 1e4) * volRatio * Math.exp(m.book.spreadSigma * rng.normal())
        const spreadTicks = Math.max(1, Math.round(spreadPx / tickSize))
        const bidTicks = Math.round(trueMid / tickSize - spreadTicks / 2)
        const bid = round(bidTicks * tickSize, decimals)
        const ask = round((bidTicks + spreadTicks) * tickSize, decimals)
        const mid = round((bid + ask) / 2, decimals + 1)
        const bidSize = Math.max(10 ** -p.szDecimals, round(rng.logNormal(p.topSize / volRatio, m.book.sizeSigma), p.szDecimals))
        const askSize = Math.max(10 ** -p.szDecimals, round(rng.logNormal(p.topSize / volRatio, m.book.sizeSigma), p.szDecimals))
        const bidDepth = round(bid * bidSize * Math.max(1, rng.logNormal(m.book.depthMultipleMedian, m.book.depthSigma)), 2)
        const askDepth = round(ask * askSize * Math.max(1, rng.logNormal(m.book.depthMultipleMedian, m.book.depthSigma)), 2)

        // 1-minute bar on the mid: high/low from the Brownian-bridge extremes between open and close.
        const open = s.lastMid
        const x0 = Math.log(open)
        const d = Math.log(mid) - x0
        const v = sigmaNow * sigmaNow
        const hiLog = x0 + (d + Math.sqrt(d * d - 2 * v * Math.log(rng.floatOpenZero()))) / 2
        const loLog = x0 + (d - Math.sqrt(d * d - 2 * v * Math.log(rng.floatOpenZero()))) / 2
        const high = Math.max(open, mid, round(Math.exp(hiLog), decimals + 1))
        const low = Math.min(open, mid, round(Math.exp(loLog), decimals + 1))
        const volume = round(p.barVolume * volRatio * (1 + Math.abs(r) / s.sigmaNormal) * Math.exp(m.volumeSigma * rng.normal()), p.szDecimals)

        const prov = provenance(ts)
        push(s, t, {
          v: TICK_SCHEMA_VERSION,
          kind: 'bar',
          asset: s.asset,
          instrument: s.asset,
          provenance: prov,
          interval: '1m',
          open_time: isoMs(t - MINUTE_MS),
          open,
          high,
          low,
          close: mid,
          volume,
          volume_unit: 'base',
        })
        push(s, t, { v: TICK_SCHEMA_VERSION, kind: 'mid', asset: s.asset, instrument: s.asset, provenance: prov, price: mid })
        push(s, t, { v: TICK_SCHEMA_VERSION, kind: 'mark', asset: s.asset, instrument: s.asset, provenance: prov, price: markPx })
        push(s, t, { v: TICK_SCHEMA_VERSION, kind: 'index', asset: s.asset, instrument: s.asset, provenance: prov, price: indexPx })

        // Funding settles on the hour from the hour's average premium; the prediction is the rate accruing now.
        const onHour = t % HOUR_MS === 0
        const avgPremium = s.hourPremiumSum / s.hourPremiumCount
        if (onHour) {
          push(s, t, {
            v: TICK_SCHEMA_VERSION,
            kind: 'funding',
            asset: s.asset,
            instrument: s.asset,
            provenance: prov,
            rate: hourlyFundingRate(avgPremium),
            interval_hours: m.funding.intervalHours,
            premium: round(avgPremium, m.funding.decimals),
          })
          s.hourPremiumSum = 0
          s.hourPremiumCount = 0
        }
        const nextFunding = (Math.floor(t / HOUR_MS) + 1) * HOUR_MS
        push(s, t, {
          v: TICK_SCHEMA_VERSION,
          kind: 'predicted_funding',
          asset: s.asset,
          instrument: s.asset,
          provenance: prov,
          rate: hourlyFundingRate(onHour ? s.premium : avgPremium),
          interval_hours: m.funding.intervalHours,
          next_funding_at: isoMs(nextFunding),
        })
        push(s, t, {
          v: TICK_SCHEMA_VERSION,
          kind: 'open_interest',
          asset: s.asset,
          instrument: s.asset,
          provenance: prov,
          value: round(openInterest, p.szDecimals),
          unit: 'base',
        })
        push(s, t, {
          v: TICK_SCHEMA_VERSION,
          kind: 'book_top',
          asset: s.asset,
          instrument: s.asset,
          provenance: prov,
          bid,
          ask,
          bid_size: bidSize,
          ask_size: askSize,
          bid_depth_usd: bidDepth,
          ask_depth_usd: askDepth,
        })
        s.lastMid = mid
        s.lastMark = markPx
      }
      previousMarketReturn = marketReturn

      pending.sort((a, b) => a.time - b.time || a.asset - b.asset || a.kind - b.kind || a.seq - b.seq)
      for (const p of pending) states[p.asset]!.lastTick = ++ticks
      this.#minutesDone = minute
      // The state after this minute is complete before its ticks go out: whoever keeps it decides when it is durable.
      onCheckpoint?.(checkpointAt(minute))
      for (const p of pending) yield p.tick
    }
  }
}
