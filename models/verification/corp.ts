/**
 * CORP reliability: PAV-recalibrated forecasts and the exact score decomposition
 * (Dimitriadis, Gneiting & Jordan 2021, PNAS 118(8); reference implementation aijordan/reliabilitydiag).
 *
 * forecast-verification.md §4:
 *  1. "Sort pairs by p ascending, ties by y descending (reliabilitydiag: order(x, -y))."
 *  2. "Pool-adjacent-violators on y in that order → non-decreasing step function; each block's mean = CEP."
 *  3–4. "MCB = S̄ − S_rc, DSC = S_mg − S_rc, UNC = S_mg; then S̄ = MCB − DSC + UNC exactly."
 *  "Use non-strict pooling (merge only when the previous block mean is greater than the next)."
 *  "Log score with CEP 0 or 1: use 0·log 0 = 0."
 */
import { Prng } from '../../ingest/Prng.ts'
import { quantileSorted } from './bootstrap.ts'
import { assertPairs, baseRate, tieGroups, type ForecastPair } from './pairs.ts'

export type CorpRule = 'brier' | 'log'
export type TieOrder = 'y_desc' | 'y_asc'

export interface PavBlock {
  readonly x_min: number
  readonly x_max: number
  readonly n: number
  /** Conditional event probability: the block's mean outcome, the recalibrated forecast for its members. */
  readonly cep: number
}

export interface CorpResult {
  readonly rule: CorpRule
  readonly n: number
  /** Miscalibration S̄ − S_rc; null when S̄ is infinite (log score of a certain forecast that failed). */
  readonly mcb: number | null
  readonly dsc: number
  readonly unc: number
  /** Mean score S̄ of the original forecasts; null when infinite. */
  readonly score: number | null
  readonly blocks: readonly PavBlock[]
}

interface Block {
  xMin: number
  xMax: number
  n: number
  hits: number
  start: number
}

/**
 * PAV over pairs in the given tie order. Only `y_desc` is correct; `y_asc` exists so a test can show that it splits a
 * tie group across blocks (vector D) — never use it for published figures.
 * Returns blocks plus, for each input index, its recalibrated forecast.
 */
export function pavBlocksWithTieOrder(
  pairs: readonly ForecastPair[],
  tieOrder: TieOrder,
): { blocks: PavBlock[]; recalibrated: number[] } {
  assertPairs(pairs)
  const order = pairs.map((_, i) => i)
  const tieSign = tieOrder === 'y_desc' ? -1 : 1
  order.sort((i, j) => {
    const a = pairs[i]!
    const b = pairs[j]!
    return a.p - b.p || tieSign * (a.y - b.y) || i - j
  })
  const stack: Block[] = []
  for (let r = 0; r < order.length; r++) {
    const { p, y } = pairs[order[r]!]!
    stack.push({ xMin: p, xMax: p, n: 1, hits: y, start: r })
    // Non-strict pooling: merge while the previous mean is strictly greater. hits/n compared by cross-multiplication,
    // which is exact for integer counts.
    while (stack.length >= 2) {
      const last = stack[stack.length - 1]!
      const prev = stack[stack.length - 2]!
      if (prev.hits * last.n <= last.hits * prev.n) break
      prev.xMax = last.xMax
      prev.n += last.n
      prev.hits += last.hits
      stack.pop()
    }
  }
  const recalibrated = new Array<number>(pairs.length)
  const blocks: PavBlock[] = []
  for (const b of stack) {
    const cep = b.hits / b.n
    for (let r = b.start; r < b.start + b.n; r++) recalibrated[order[r]!] = cep
    blocks.push({ x_min: b.xMin, x_max: b.xMax, n: b.n, cep })
  }
  return { blocks: mergeSameForecastBlocks(blocks), recalibrated }
}

/**
 * With y descending, a mixed tie group is always pooled; a tie group of equal outcomes can still sit in adjacent
 * blocks with the same CEP (non-strict pooling does not merge equal means). Those blocks describe one forecast value,
 * so they are reported as one; the recalibrated values are unchanged because equal adjacent observations always get
 * equal isotonic fits.
 */
function mergeSameForecastBlocks(blocks: PavBlock[]): PavBlock[] {
  const out: PavBlock[] = []
  for (const b of blocks) {
    const prev = out[out.length - 1]
    if (prev && prev.x_max === b.x_min && prev.cep === b.cep) {
      out[out.length - 1] = { x_min: prev.x_min, x_max: b.x_max, n: prev.n + b.n, cep: prev.cep }
    } else {
      out.push(b)
    }
  }
  return out
}

export function pavBlocks(pairs: readonly ForecastPair[]): { blocks: PavBlock[]; recalibrated: number[] } {
  return pavBlocksWithTieOrder(pairs, 'y_desc')
}

/** Score of one forecast; log score uses 0·log 0 = 0, so p = y ∈ {0,1} scores 0 and a failed certainty scores +∞. */
export function pointScore(rule: CorpRule, p: number, y: number): number {
  if (rule === 'brier') return (p - y) * (p - y)
  return y === 1 ? (p === 1 ? 0 : -Math.log(p)) : p === 0 ? 0 : -Math.log1p(-p)
}

function meanScore(rule: CorpRule, ps: readonly number[], pairs: readonly ForecastPair[]): number {
  let sum = 0
  for (let i = 0; i < pairs.length; i++) sum += pointScore(rule, ps[i]!, pairs[i]!.y)
  return sum / pairs.length
}

/** CORP decomposition S̄ = MCB − DSC + UNC; null for no pairs. */
export function corpDecomposition(pairs: readonly ForecastPair[], rule: CorpRule = 'brier'): CorpResult | null {
  if (rule !== 'brier' && rule !== 'log') throw new RangeError('rule must be brier or log')
  return corpFrom(pairs, rule, pavBlocks(pairs))
}

/** Internal: the decomposition from a given PAV fit (lets tests show what a wrong tie order does to the figures). */
export function corpFrom(
  pairs: readonly ForecastPair[],
  rule: CorpRule,
  pav: { blocks: PavBlock[]; recalibrated: number[] },
): CorpResult | null {
  assertPairs(pairs)
  const n = pairs.length
  if (n === 0) return null
  const ybar = baseRate(pairs)
  const sBar = meanScore(rule, pairs.map((x) => x.p), pairs)
  const sRc = meanScore(rule, pav.recalibrated, pairs)
  const sMg = meanScore(rule, pairs.map(() => ybar), pairs)
  const finite = Number.isFinite(sBar)
  return {
    rule,
    n,
    mcb: finite ? sBar - sRc : null,
    dsc: sMg - sRc,
    unc: sMg,
    score: finite ? sBar : null,
    blocks: pav.blocks,
  }
}

/** One point of the CORP reliability diagram, at a distinct forecast value. */
export interface CorpDiagramPoint {
  readonly p: number
  readonly n: number
  /** The PAV-recalibrated forecast (conditional event probability) at p. */
  readonly cep: number
  /** The consistency band at p: where the CEP of a calibrated forecaster with these forecasts falls (pointwise). */
  readonly lower: number
  readonly upper: number
}

export interface CorpDiagram {
  readonly points: readonly CorpDiagramPoint[]
  readonly level: number
  readonly resamples: number
  readonly seed: number | string
  /** True when the forecasts have more distinct values than `maxPoints` and the diagram keeps an even subset of them. */
  readonly thinned: boolean
}

/** PAV over groups of tied forecasts (ascending), weighted by size: a tie group is always pooled as a whole. */
function pavGroups(ns: readonly number[], hits: ArrayLike<number>): Float64Array {
  const bn: number[] = []
  const bh: number[] = []
  const bStart: number[] = []
  for (let g = 0; g < ns.length; g++) {
    bn.push(ns[g]!)
    bh.push(hits[g]!)
    bStart.push(g)
    while (bn.length >= 2) {
      const k = bn.length - 1
      if (bh[k - 1]! * bn[k]! <= bh[k]! * bn[k - 1]!) break
      bn[k - 1]! += bn[k]!
      bh[k - 1]! += bh[k]!
      bn.pop()
      bh.pop()
      bStart.pop()
    }
  }
  const cep = new Float64Array(ns.length)
  for (let b = 0; b < bn.length; b++) {
    const end = b + 1 < bStart.length ? bStart[b + 1]! : ns.length
    for (let g = bStart[b]!; g < end; g++) cep[g] = bh[b]! / bn[b]!
  }
  return cep
}

/**
 * The CORP reliability diagram with its consistency band (Dimitriadis, Gneiting & Jordan 2021, §3; reliabilitydiag's
 * resampling band): the PAV-recalibrated curve of the real outcomes, and, at each forecast value, the central `level`
 * range of the curves obtained when the outcomes are redrawn as y* ~ Bernoulli(p) — what a calibrated forecaster with
 * the same forecasts would show. A curve outside its band is miscalibration that sampling noise does not explain.
 * Seeded (ingest/Prng.ts); null for no pairs.
 */
export function corpDiagram(
  pairs: readonly ForecastPair[],
  options: { resamples?: number; level?: number; seed?: number | string; maxPoints?: number } = {},
): CorpDiagram | null {
  assertPairs(pairs)
  if (pairs.length === 0) return null
  const { resamples = 200, level = 0.9, seed = 1, maxPoints = 200 } = options
  if (!Number.isInteger(resamples) || resamples < 1) throw new RangeError('resamples must be a positive integer')
  if (!(level > 0 && level < 1)) throw new RangeError('level must be in (0, 1)')
  const groups = tieGroups(pairs)
  const values = groups.map((g) => g.p)
  const ns = groups.map((g) => g.n)
  const cep = pavGroups(ns, groups.map((g) => g.hits))
  const rng = new Prng(seed)
  const sims = values.map(() => new Float64Array(resamples))
  const hits = new Float64Array(values.length)
  for (let r = 0; r < resamples; r++) {
    for (let g = 0; g < values.length; g++) {
      let h = 0
      for (let i = 0; i < ns[g]!; i++) if (rng.float() < values[g]!) h++
      hits[g] = h
    }
    const simulated = pavGroups(ns, hits)
    for (let g = 0; g < values.length; g++) sims[g]![r] = simulated[g]!
  }
  const keep = values.length <= maxPoints ? values.map((_, g) => g) : Array.from({ length: maxPoints }, (_, j) => Math.round((j * (values.length - 1)) / (maxPoints - 1)))
  const alpha = 1 - level
  const points = keep.map((g) => {
    const sorted = sims[g]!.sort()
    return { p: values[g]!, n: ns[g]!, cep: cep[g]!, lower: quantileSorted(sorted, alpha / 2), upper: quantileSorted(sorted, 1 - alpha / 2) }
  })
  return { points, level, resamples, seed, thinned: keep.length < values.length }
}

