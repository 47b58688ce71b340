/**
 * Equal-width probability bins, with the edge convention stated in every output.
 *
 * forecast-verification.md §2: "Compute the bin index by comparing p with edges j/K held in the same representation
 * (double vs double: p > j/K for (a,b], p >= j/K for [a,b)) … Do not use floor(p·K)": 0.29·100 = 28.999999999999996.
 * `j / K` is a correctly rounded division, so it equals the parsed decimal literal of the edge (3/10 === 0.3) and
 * decimal inputs on an edge land on the documented side. p = 0 and p = 1 always fall inside the first / last bin.
 */
import { assertBinCount, assertPairs, type ForecastPair } from './pairs.ts'

/** `(a,b]`: interior edge values go to the lower bin, first bin is `[0,b]` (scikit-learn, SpecsVerification).
 *  `[a,b)`: interior edge values go to the upper bin, last bin is `[a,1]` (s2dv). */
export type BinConvention = '(a,b]' | '[a,b)'
export const BIN_CONVENTIONS: readonly BinConvention[] = ['(a,b]', '[a,b)'] as const
export const DEFAULT_CONVENTION: BinConvention = '(a,b]'

export interface BinSpec {
  readonly k: number
  readonly edges: readonly number[]
  readonly convention: BinConvention
}

export function assertConvention(convention: string): asserts convention is BinConvention {
  if (!BIN_CONVENTIONS.includes(convention as BinConvention)) {
    throw new RangeError(`convention must be one of ${BIN_CONVENTIONS.join(', ')}`)
  }
}

/** Edges 0, 1/K, …, 1 as correctly rounded doubles. */
export function uniformEdges(k: number): number[] {
  assertBinCount(k)
  const edges: number[] = []
  for (let j = 0; j <= k; j++) edges.push(j / k)
  return edges
}

/**
 * Index (0-based) of the bin holding `p` given all K+1 edges (only the interior ones are compared, so any p in [0,1]
 * lands in a bin). Binary search over the interior edges; equivalent to numpy `searchsorted(edges[1:-1], p, side)`
 * with side 'left' for `(a,b]` and 'right' for `[a,b)`.
 */
export function binIndexByEdges(p: number, edges: readonly number[], convention: BinConvention): number {
  let lo = 1
  let hi = edges.length - 1 // interior edges are edges[1 .. length-2]
  // count interior edges e with p > e ((a,b]) or p >= e ([a,b)); edges are sorted ascending
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    const e = edges[mid]!
    const above = convention === '(a,b]' ? p > e : p >= e
    if (above) lo = mid + 1
    else hi = mid
  }
  return lo - 1
}

export function binIndex(p: number, k: number, convention: BinConvention = DEFAULT_CONVENTION): number {
  if (typeof p !== 'number' || !(p >= 0 && p <= 1)) throw new RangeError('p must be a finite number in [0, 1]')
  assertConvention(convention)
  return binIndexByEdges(p, uniformEdges(k), convention)
}

/** Per-bin sums; `wbv`/`wbc` need the members, so the member indices are kept. */
export interface BinGroup {
  readonly bin: number
  readonly lo: number
  readonly hi: number
  readonly n: number
  readonly hits: number
  readonly meanP: number
  readonly freq: number
  readonly members: readonly number[]
}

/** Groups pairs by bin; empty bins are dropped ("the returned arrays may have less than n_bins values", scikit-learn). */
export function groupByEdges(pairs: readonly ForecastPair[], edges: readonly number[], convention: BinConvention): BinGroup[] {
  const k = edges.length - 1
  const members: number[][] = Array.from({ length: k }, () => [])
  for (let i = 0; i < pairs.length; i++) members[binIndexByEdges(pairs[i]!.p, edges, convention)]!.push(i)
  const groups: BinGroup[] = []
  for (let b = 0; b < k; b++) {
    const idx = members[b]!
    if (idx.length === 0) continue
    let sumP = 0
    let hits = 0
    for (const i of idx) {
      sumP += pairs[i]!.p
      hits += pairs[i]!.y
    }
    groups.push({
      bin: b,
      lo: edges[b]!,
      hi: edges[b + 1]!,
      n: idx.length,
      hits,
      meanP: sumP / idx.length,
      freq: hits / idx.length,
      members: idx,
    })
  }
  return groups
}

export function groupByBins(pairs: readonly ForecastPair[], k: number, convention: BinConvention = DEFAULT_CONVENTION): BinGroup[] {
  assertPairs(pairs)
  assertConvention(convention)
  return groupByEdges(pairs, uniformEdges(k), convention)
}
