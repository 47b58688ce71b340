/**
 * Conditional class frequencies over discrete cells: the fitting method of the account-scoped questions (S09, S10,
 * S11; docs/methodology.md "Account-scoped questions").
 *
 * Rows are time-ordered (decision time); the earlier FIT_SHARE (70 %) fit, the later rest calibrates. Each row's
 * cell comes from its inputs: a 'levels' dimension is a category index; a 'terciles' dimension is binned at the fit
 * slice's 1/3 and 2/3 quantiles. Per cell, class probabilities are Dirichlet-smoothed toward the fit slice's class
 * frequencies with α = ALPHA: (count_k + α prior_k) / (n + α). On the calibration slice the shrinkage weight
 * λ ∈ {0, 0.05, …, 1} toward the class frequencies that minimises the multi-class Brier score is chosen (ties → the
 * smaller λ). Fewer than TRAIN_FLOOR usable rows → status 'insufficient'; an answer from a cell with fewer than
 * CALIBRATION_BAND_FLOOR calibration outcomes is refused by the question. Deterministic; no constant probability.
 */
import { CALIBRATION_BAND_FLOOR } from '../verification/calibrationReport.ts'
import { quantileSorted } from '../verification/bootstrap.ts'
import { FIT_SHARE, TRAIN_FLOOR } from '../questions/common.ts'

export const CELL_METHOD = 'cell-dirichlet+shrink'
export const ALPHA = 8
const LAMBDA_GRID = Array.from({ length: 21 }, (_, i) => i / 20)

export type CellDim = { kind: 'levels'; n: number } | { kind: 'terciles' }

export interface CellRow {
  x: number[]
  y: number
}

export interface CellParams {
  status: 'ok' | 'insufficient'
  method: typeof CELL_METHOD
  classes: string[]
  dims: CellDim[]
  train_floor: number
  min_band: number
  usable: number
  n_fit: number
  n_cal: number
  alpha: number
  /** Per dimension: tercile edges, or null for a levels dimension. */
  edges: Array<number[] | null>
  prior: number[]
  cells: Array<{ counts: number[]; n: number; dist: number[] }>
  lambda: number
  cal_counts: number[]
  class_counts: number[]
}

function cellCount(dims: readonly CellDim[]): number {
  return dims.reduce((a, d) => a * (d.kind === 'levels' ? d.n : 3), 1)
}

export function cellOf(params: Pick<CellParams, 'dims' | 'edges'>, x: readonly number[]): number {
  let cell = 0
  params.dims.forEach((d, j) => {
    const v = x[j]!
    let level: number
    if (d.kind === 'levels') {
      if (!(Number.isInteger(v) && v >= 0 && v < d.n)) throw new RangeError(`dimension ${j}: level ${v} outside 0..${d.n - 1}`)
      level = v
    } else {
      const e = params.edges[j]!
      level = v <= e[0]! ? 0 : v <= e[1]! ? 1 : 2
    }
    cell = cell * (d.kind === 'levels' ? d.n : 3) + level
  })
  return cell
}

export function multiBrier(dist: readonly number[], realized: number): number {
  let s = 0
  for (let k = 0; k < dist.length; k++) s += (dist[k]! - (k === realized ? 1 : 0)) ** 2
  return s
}

export function mixDist(cell: readonly number[], prior: readonly number[], lambda: number): number[] {
  return cell.map((p, k) => (1 - lambda) * p + lambda * prior[k]!)
}

/** Fits on rows already in decision-time order. */
export function fitCells(classes: readonly string[], dims: readonly CellDim[], rows: readonly CellRow[]): CellParams {
  const K = classes.length
  const classCounts = new Array<number>(K).fill(0)
  for (const r of rows) classCounts[r.y]!++
  const params: CellParams = {
    status: 'insufficient',
    method: CELL_METHOD,
    classes: [...classes],
    dims: dims.map((d) => ({ ...d })),
    train_floor: TRAIN_FLOOR,
    min_band: CALIBRATION_BAND_FLOOR,
    usable: rows.length,
    n_fit: 0,
    n_cal: 0,
    alpha: ALPHA,
    edges: [],
    prior: [],
    cells: [],
    lambda: 0,
    cal_counts: [],
    class_counts: classCounts,
  }
  if (rows.length < TRAIN_FLOOR) return params
  const nFit = Math.floor(rows.length * FIT_SHARE)
  const fitRows = rows.slice(0, nFit)
  const calRows = rows.slice(nFit)
  params.edges = dims.map((d, j) => {
    if (d.kind === 'levels') return null
    const sorted = fitRows.map((r) => r.x[j]!).sort((a, b) => a - b)
    return [quantileSorted(sorted, 1 / 3), quantileSorted(sorted, 2 / 3)]
  })
  const prior = new Array<number>(K).fill(0)
  for (const r of fitRows) prior[r.y]! += 1 / fitRows.length
  const cells = Array.from({ length: cellCount(dims) }, () => ({ counts: new Array<number>(K).fill(0), n: 0, dist: [] as number[] }))
  for (const r of fitRows) {
    const c = cells[cellOf(params, r.x)]!
    c.counts[r.y]!++
    c.n++
  }
  for (const c of cells) c.dist = c.counts.map((k, i) => (k + ALPHA * prior[i]!) / (c.n + ALPHA))
  const calCounts = new Array<number>(cells.length).fill(0)
  for (const r of calRows) calCounts[cellOf(params, r.x)]!++
  let best = { lambda: 0, score: Infinity }
  for (const lambda of LAMBDA_GRID) {
    let score = 0
    for (const r of calRows) score += multiBrier(mixDist(cells[cellOf(params, r.x)]!.dist, prior, lambda), r.y)
    if (score < best.score - 1e-12) best = { lambda, score }
  }
  Object.assign(params, { status: 'ok', n_fit: fitRows.length, n_cal: calRows.length, prior, cells, lambda: best.lambda, cal_counts: calCounts })
  return params
}

/** The smoothed distribution of the cell `x` falls in, with the evidence behind it. */
export function predictCells(params: CellParams, x: readonly number[]): { cell: number; dist: number[]; fit_n: number; cal_n: number } {
  const cell = cellOf(params, x)
  return { cell, dist: mixDist(params.cells[cell]!.dist, params.prior, params.lambda), fit_n: params.cells[cell]!.n, cal_n: params.cal_counts[cell]! }
}
