/**
 * Seeded percentile bootstrap intervals.
 *
 * Spec: "active_release { …, delta_brier, delta_brier_ci: [low, high] }"; promotion gate "improvement (holdout delta
 * Brier below zero with its 95% interval strictly below zero …)"; "b is the learning velocity with a 95% bootstrap
 * interval". forecast-verification.md §1: "attach standard errors or bootstrap intervals".
 *
 * Method: resample the n pairs with replacement (pairs, not outcomes and forecasts separately, so the pairing is kept),
 * recompute the statistic, take the (α/2, 1−α/2) quantiles of the resampled statistics with linear interpolation
 * (numpy's default, "type 7"). Deterministic for a given seed, data order and resample count: the generator is the
 * shared seeded xoshiro128** of ingest/Prng.ts.
 *
 * Dependent rows (decisions on BTC, ETH and SOL at the same instant answer to one market) are resampled in blocks
 * (blockBootstrapCi): whole blocks with replacement, so the interval does not treat correlated rows as independent
 * evidence (Künsch 1989; here the blocks are fixed calendar units, e.g. UTC days with every asset together).
 */
import { Prng } from '../../ingest/Prng.ts'
import { assertPairs, type ForecastPair } from './pairs.ts'

export const DEFAULT_RESAMPLES = 2000
export const DEFAULT_LEVEL = 0.95
export const DEFAULT_SEED = 1

export interface BootstrapOptions {
  /** Seed of the shared xoshiro128** generator (ingest/Prng.ts): a non-negative safe integer or a string. */
  readonly seed?: number | string
  readonly resamples?: number
  readonly level?: number
}

export interface BootstrapInterval {
  /** The statistic on the full sample. */
  readonly estimate: number
  readonly lower: number
  readonly upper: number
  readonly level: number
  readonly resamples: number
  /** Resamples on which the statistic was defined (e.g. skill is undefined when a resample has one outcome class). */
  readonly valid_resamples: number
  readonly seed: number | string
  readonly method: 'percentile'
  /** Block bootstrap only: how many blocks were resampled (rows were drawn as whole blocks). */
  readonly blocks?: number
}

interface Resolved {
  seed: number | string
  resamples: number
  level: number
}

function resolveOptions(options: BootstrapOptions): Resolved {
  const { seed = DEFAULT_SEED, resamples = DEFAULT_RESAMPLES, level = DEFAULT_LEVEL } = options
  if (!Number.isInteger(resamples) || resamples < 1 || resamples > 1_000_000) {
    throw new RangeError('resamples must be an integer in [1, 1000000]')
  }
  if (!(level > 0 && level < 1)) throw new RangeError('level must be in (0, 1)')
  new Prng(seed) // validates the seed
  return { seed, resamples, level }
}

/** Linear-interpolation quantile of an ascending array (numpy `percentile`, method 'linear'). */
export function quantileSorted(sorted: ArrayLike<number>, q: number): number {
  const last = sorted.length - 1
  const h = last * q
  const lo = Math.floor(h)
  const frac = h - lo
  const a = sorted[lo]!
  return frac === 0 || lo >= last ? a : a + frac * (sorted[lo + 1]! - a)
}

function percentileInterval(
  estimate: number,
  stats: Float64Array,
  valid: number,
  o: Resolved,
): BootstrapInterval | null {
  if (valid === 0) return null
  const sorted = stats.subarray(0, valid).sort()
  const alpha = 1 - o.level
  return {
    estimate,
    lower: quantileSorted(sorted, alpha / 2),
    upper: quantileSorted(sorted, 1 - alpha / 2),
    level: o.level,
    resamples: o.resamples,
    valid_resamples: valid,
    seed: o.seed,
    method: 'percentile',
  }
}

function resampleIndices(rng: Prng, n: number, into: Uint32Array): void {
  for (let i = 0; i < n; i++) into[i] = rng.int(0, n - 1)
}

/**
 * Percentile bootstrap CI of any statistic of a sample of rows (pairs are resampled as units).
 * The statistic returns null (or a non-finite number) where it is undefined; such resamples are skipped and counted.
 * Null when the sample is empty, the statistic is undefined on it, or no resample was valid.
 */
export function bootstrapCi<T>(
  data: readonly T[],
  statistic: (sample: readonly T[]) => number | null,
  options: BootstrapOptions = {},
): BootstrapInterval | null {
  const o = resolveOptions(options)
  const n = data.length
  if (n === 0) return null
  const estimate = statistic(data)
  if (estimate === null || !Number.isFinite(estimate)) return null
  const rng = new Prng(o.seed)
  const idx = new Uint32Array(n)
  const sample = new Array<T>(n)
  const stats = new Float64Array(o.resamples)
  let valid = 0
  for (let r = 0; r < o.resamples; r++) {
    resampleIndices(rng, n, idx)
    for (let i = 0; i < n; i++) sample[i] = data[idx[i]!]!
    const s = statistic(sample)
    if (s !== null && Number.isFinite(s)) stats[valid++] = s
  }
  return percentileInterval(estimate, stats, valid, o)
}

/**
 * Percentile bootstrap CI of a statistic of rows resampled as whole blocks: the rows sharing `blockOf` form one block
 * (blocks ordered by key, rows within a block in data order), and each resample draws as many blocks as there are,
 * with replacement, and concatenates them. With one row per block it is bootstrapCi on the same seed.
 */
export function blockBootstrapCi<T>(
  data: readonly T[],
  blockOf: (row: T) => number | string,
  statistic: (sample: readonly T[]) => number | null,
  options: BootstrapOptions = {},
): BootstrapInterval | null {
  const o = resolveOptions(options)
  if (data.length === 0) return null
  const estimate = statistic(data)
  if (estimate === null || !Number.isFinite(estimate)) return null
  const byKey = new Map<number | string, T[]>()
  for (const row of data) {
    const key = blockOf(row)
    const block = byKey.get(key)
    if (block) block.push(row)
    else byKey.set(key, [row])
  }
  const keys = [...byKey.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  const blocks = keys.map((k) => byKey.get(k)!)
  const rng = new Prng(o.seed)
  const idx = new Uint32Array(blocks.length)
  const stats = new Float64Array(o.resamples)
  let valid = 0
  const sample: T[] = []
  for (let r = 0; r < o.resamples; r++) {
    resampleIndices(rng, blocks.length, idx)
    sample.length = 0
    for (let i = 0; i < blocks.length; i++) for (const row of blocks[idx[i]!]!) sample.push(row)
    const s = statistic(sample)
    if (s !== null && Number.isFinite(s)) stats[valid++] = s
  }
  const interval = percentileInterval(estimate, stats, valid, o)
  return interval && { ...interval, blocks: blocks.length }
}

/** Fast path: percentile bootstrap CI of the mean of per-row values (e.g. per-decision score differences). */
export function bootstrapMeanCi(values: readonly number[], options: BootstrapOptions = {}): BootstrapInterval | null {
  const o = resolveOptions(options)
  const n = values.length
  if (n === 0) return null
  let total = 0
  for (let i = 0; i < n; i++) {
    const v = values[i]!
    if (!Number.isFinite(v)) throw new RangeError(`values[${i}] must be finite`)
    total += v
  }
  const rng = new Prng(o.seed)
  const stats = new Float64Array(o.resamples)
  for (let r = 0; r < o.resamples; r++) {
    let sum = 0
    for (let i = 0; i < n; i++) sum += values[rng.int(0, n - 1)]!
    stats[r] = sum / n
  }
  return percentileInterval(total / n, stats, o.resamples, o)
}

export interface PairedForecasts {
  /** Outcomes, 0 or 1. */
  readonly y: readonly number[]
  /** The challenger's forecasts on the same outcomes. */
  readonly candidate: readonly number[]
  /** The incumbent's forecasts on the same outcomes. */
  readonly incumbent: readonly number[]
}

/**
 * Paired bootstrap of ΔBS = BS(candidate) − BS(incumbent) on the same outcomes (negative = candidate better).
 * Rows are resampled jointly, so the interval reflects the paired difference, not two independent scores.
 */
export function pairedDeltaBrier(forecasts: PairedForecasts, options: BootstrapOptions = {}): BootstrapInterval | null {
  const { y, candidate, incumbent } = forecasts
  if (candidate.length !== y.length || incumbent.length !== y.length) {
    throw new RangeError('y, candidate and incumbent must have the same length')
  }
  const cand: ForecastPair[] = y.map((yi, i) => ({ p: candidate[i]!, y: yi }))
  const inc: ForecastPair[] = y.map((yi, i) => ({ p: incumbent[i]!, y: yi }))
  assertPairs(cand, 'candidate')
  assertPairs(inc, 'incumbent')
  const diffs = cand.map((c, i) => (c.p - c.y) ** 2 - (inc[i]!.p - c.y) ** 2)
  return bootstrapMeanCi(diffs, options)
}

/**
 * Fast path of blockBootstrapCi for a skill score, 1 − Σ model / Σ reference (BSS from per-decision Brier scores):
 * the statistic only needs each block's two sums, so a resample adds block sums instead of re-walking every row. Same
 * blocks, same generator draws and the same interval as blockBootstrapCi with that statistic, up to the rounding of
 * the summation order. A resample whose reference sum is 0 (skill undefined) is skipped.
 */
export function blockBootstrapSkillCi<T extends { model: number; reference: number }>(
  data: readonly T[],
  blockOf: (row: T) => number | string,
  options: BootstrapOptions = {},
): BootstrapInterval | null {
  const o = resolveOptions(options)
  if (data.length === 0) return null
  let model = 0
  let reference = 0
  const sums = new Map<number | string, { model: number; reference: number }>()
  for (const row of data) {
    model += row.model
    reference += row.reference
    const key = blockOf(row)
    const s = sums.get(key)
    if (s) {
      s.model += row.model
      s.reference += row.reference
    } else sums.set(key, { model: row.model, reference: row.reference })
  }
  if (!(reference > 0)) return null
  const estimate = 1 - model / reference
  const keys = [...sums.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  const blockModel = Float64Array.from(keys, (k) => sums.get(k)!.model)
  const blockReference = Float64Array.from(keys, (k) => sums.get(k)!.reference)
  const rng = new Prng(o.seed)
  const idx = new Uint32Array(keys.length)
  const stats = new Float64Array(o.resamples)
  let valid = 0
  for (let r = 0; r < o.resamples; r++) {
    resampleIndices(rng, keys.length, idx)
    let m = 0
    let ref = 0
    for (let i = 0; i < keys.length; i++) {
      m += blockModel[idx[i]!]!
      ref += blockReference[idx[i]!]!
    }
    if (ref > 0) stats[valid++] = 1 - m / ref
  }
  const interval = percentileInterval(estimate, stats, valid, o)
  return interval && { ...interval, blocks: keys.length }
}
