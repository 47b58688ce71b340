/**
 * Walk-forward validation inside a training span: how a setting is chosen without ever looking at a test window
 * (issue 12: "choose features and settings by walk-forward validation inside the training span only").
 *
 * Rows are time-ordered decisions. After the first `minTrainShare` of them, the rest of the span is cut into `folds`
 * consecutive validation blocks; fold k trains on every row before its block whose window closed before the block's
 * first decision (an embargo of one horizon: decisions on several assets at one instant, or a window still open, never
 * straddle the cut), and validates on the block. Expanding windows, so the last fold trains on almost the whole span.
 */

export interface WalkForwardOptions {
  /** Consecutive validation blocks (default 3). */
  folds?: number
  /** Share of the rows only ever trained on, before the first validation block (default 0.5). */
  minTrainShare?: number
}

export interface Fold<T> {
  train: T[]
  validate: T[]
}

export function walkForwardFolds<T>(rows: readonly T[], timeOf: (row: T) => number, horizonMs: number, options: WalkForwardOptions = {}): Fold<T>[] {
  const { folds = 3, minTrainShare = 0.5 } = options
  if (!Number.isInteger(folds) || folds < 1) throw new RangeError('folds must be a positive integer')
  if (!(minTrainShare > 0 && minTrainShare < 1)) throw new RangeError('minTrainShare must be in (0, 1)')
  const start = Math.floor(rows.length * minTrainShare)
  const size = Math.floor((rows.length - start) / folds)
  if (start === 0 || size === 0) return []
  const out: Fold<T>[] = []
  for (let k = 0; k < folds; k++) {
    const from = start + k * size
    const to = k === folds - 1 ? rows.length : from + size
    const validate = rows.slice(from, to)
    const cut = timeOf(validate[0]!)
    const train = rows.slice(0, from).filter((r) => timeOf(r) + horizonMs <= cut)
    if (train.length > 0) out.push({ train, validate })
  }
  return out
}

/**
 * The candidate with the lowest mean validation loss over the folds (a fold where a candidate cannot be scored counts
 * against it: its mean is taken over the folds it could score, and a candidate scored on fewer folds never wins over
 * one scored on all). Ties go to the earlier candidate, so list the simpler (more regularised) settings first.
 */
export function selectByWalkForward<C, T>(
  candidates: readonly C[],
  folds: readonly Fold<T>[],
  loss: (candidate: C, fold: Fold<T>) => number | null,
): { best: C; losses: Array<{ candidate: C; mean: number | null; folds: number }> } {
  if (candidates.length === 0) throw new RangeError('no candidates')
  const losses = candidates.map((candidate) => {
    let sum = 0
    let n = 0
    for (const fold of folds) {
      const l = loss(candidate, fold)
      if (l !== null && Number.isFinite(l)) {
        sum += l
        n++
      }
    }
    return { candidate, mean: n > 0 ? sum / n : null, folds: n }
  })
  let best = 0
  for (let i = 1; i < losses.length; i++) {
    const a = losses[i]!
    const b = losses[best]!
    if (a.mean === null) continue
    if (b.mean === null || a.folds > b.folds || (a.folds === b.folds && a.mean < b.mean)) best = i
  }
  return { best: candidates[best]!, losses }
}
