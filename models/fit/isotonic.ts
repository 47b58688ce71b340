/**
 * Isotonic calibration: pool-adjacent-violators on (raw forecast, outcome) pairs of a calibration slice, then blocks
 * below a minimum size are merged into their closer neighbour (by block mean), so every calibrated value rests on at
 * least `minBlock` outcomes. Merging two adjacent blocks of a non-decreasing fit gives a mean between theirs, so the
 * map stays monotone. Block values are Laplace-smoothed, (hits + 1) / (n + 2), so no calibrated forecast is exactly
 * 0 or 1 from a finite sample.
 *
 * PAV itself is models/verification/corp.ts (pavBlocks: ties by y descending, non-strict pooling).
 */
import { pavBlocks } from '../verification/corp.ts'
import type { ForecastPair } from '../verification/pairs.ts'

export interface CalibrationBlock {
  /** Raw-forecast range the block covers. */
  x_min: number
  x_max: number
  n: number
  hits: number
  /** Calibrated probability: (hits + 1) / (n + 2). */
  p: number
}

export function fitIsotonic(pairs: readonly ForecastPair[], minBlock: number): CalibrationBlock[] {
  if (pairs.length === 0) return []
  const blocks = pavBlocks(pairs).blocks.map((b) => ({ x_min: b.x_min, x_max: b.x_max, n: b.n, hits: Math.round(b.cep * b.n) }))
  for (;;) {
    if (blocks.length <= 1) break
    let smallest = -1
    for (let i = 0; i < blocks.length; i++) if (blocks[i]!.n < minBlock && (smallest < 0 || blocks[i]!.n < blocks[smallest]!.n)) smallest = i
    if (smallest < 0) break
    const b = blocks[smallest]!
    const mean = b.hits / b.n
    const left = blocks[smallest - 1]
    const right = blocks[smallest + 1]
    const useLeft = left !== undefined && (right === undefined || Math.abs(left.hits / left.n - mean) <= Math.abs(right.hits / right.n - mean))
    const other = useLeft ? smallest - 1 : smallest + 1
    const lo = Math.min(smallest, other)
    const a = blocks[lo]!
    const c = blocks[lo + 1]!
    blocks.splice(lo, 2, { x_min: a.x_min, x_max: c.x_max, n: a.n + c.n, hits: a.hits + c.hits })
  }
  return blocks.map((b) => ({ ...b, p: (b.hits + 1) / (b.n + 2) }))
}

/** The block a raw forecast falls in: the one containing it, else the nearest by raw-forecast distance. */
export function calibrationBlock(blocks: readonly CalibrationBlock[], raw: number): CalibrationBlock | null {
  if (blocks.length === 0) return null
  let best = blocks[0]!
  let bestDist = Infinity
  for (const b of blocks) {
    const dist = raw < b.x_min ? b.x_min - raw : raw > b.x_max ? raw - b.x_max : 0
    if (dist < bestDist) {
      best = b
      bestDist = dist
    }
  }
  return best
}
