/**
 * The calibration report of one question.
 *
 * Spec, Calibration report: "{ buckets: [...], published: boolean, n: integer, n_floor: integer, note: string }.
 * Buckets are predicted decile bands against realized frequency. Below the per-question floor a bucket reports counts
 * with published: false; this is data, not an error."
 * Limits: "Question calibration floor | 30 realized outcomes; below it counts only with published false";
 * "Calibration band floor | 10 realized in the band".
 * Computation rule 1: the Brier decomposition uses "decile buckets shared with the calibration report" — both use
 * groupByBins(…, 10, '(a,b]').
 */
import { DEFAULT_CONVENTION, type BinConvention } from './bins.ts'
import { bandSumsOf, DECILE_BANDS } from './bucketSums.ts'
import { assertPairs, type ForecastPair } from './pairs.ts'

export const QUESTION_CALIBRATION_FLOOR = 30
export const CALIBRATION_BAND_FLOOR = 10
/** The decile bands, shared with the record's band sums and the Brier decomposition (rule 1). */
export const CALIBRATION_BANDS = DECILE_BANDS

export interface CalibrationBucket {
  /** [lo, hi] of the decile band; membership follows the report's `convention` ((a,b], first band [0, 0.1]). */
  readonly band: readonly [number, number]
  /** Realized outcomes whose forecast fell in the band (always shown). */
  readonly n: number
  /** Mean forecast in the band; null unless the bucket is published. */
  readonly mean_predicted: number | null
  /** Share of the band's realized outcomes that obtained; null unless the bucket is published. */
  readonly realized_frequency: number | null
  readonly published: boolean
}

export interface CalibrationReport {
  readonly buckets: readonly CalibrationBucket[]
  readonly published: boolean
  readonly n: number
  readonly n_floor: number
  readonly band_floor: number
  readonly convention: BinConvention
  readonly note: string
}

export interface CalibrationReportOptions {
  readonly questionFloor?: number
  readonly bandFloor?: number
}

/**
 * `pairs` are the question's realized outcomes (unresolvable ones excluded) with the forecast frozen at issue.
 * All ten bands are listed, empty ones with n = 0, so the shape never depends on the data.
 */
export function calibrationReport(pairs: readonly ForecastPair[], options: CalibrationReportOptions = {}): CalibrationReport {
  assertPairs(pairs)
  return calibrationReportFromBands(bandSumsOf(pairs), options)
}

/** Band counts and sums of one question's realized outcomes (any subset of the ten bands; missing bands are empty). */
export interface BandCounts {
  readonly bucket: number
  readonly n: number
  readonly sum_p: number
  readonly sum_y: number
}

/**
 * The report from band sums: the batch tables keep exactly these (record/RecordJob.ts), so the report served from them
 * and the report of the pairs are one computation.
 */
export function calibrationReportFromBands(bands: readonly BandCounts[], options: CalibrationReportOptions = {}): CalibrationReport {
  const { questionFloor = QUESTION_CALIBRATION_FLOOR, bandFloor = CALIBRATION_BAND_FLOOR } = options
  if (!Number.isInteger(questionFloor) || questionFloor < 1) throw new RangeError('questionFloor must be an integer >= 1')
  if (!Number.isInteger(bandFloor) || bandFloor < 1) throw new RangeError('bandFloor must be an integer >= 1')
  const convention = DEFAULT_CONVENTION
  const byBand = new Map<number, { n: number; sum_p: number; sum_y: number }>()
  for (const b of bands) {
    if (!Number.isInteger(b.bucket) || b.bucket < 0 || b.bucket >= CALIBRATION_BANDS) throw new RangeError(`bucket must be an integer in [0, ${CALIBRATION_BANDS - 1}]`)
    const acc = byBand.get(b.bucket) ?? { n: 0, sum_p: 0, sum_y: 0 }
    acc.n += b.n
    acc.sum_p += b.sum_p
    acc.sum_y += b.sum_y
    byBand.set(b.bucket, acc)
  }
  let n = 0
  for (const g of byBand.values()) n += g.n
  const published = n >= questionFloor
  const buckets: CalibrationBucket[] = []
  for (let b = 0; b < CALIBRATION_BANDS; b++) {
    const g = byBand.get(b)
    const count = g?.n ?? 0
    const bucketPublished = published && count >= bandFloor
    buckets.push({
      band: [b / CALIBRATION_BANDS, (b + 1) / CALIBRATION_BANDS],
      n: count,
      mean_predicted: bucketPublished && g ? g.sum_p / g.n : null,
      realized_frequency: bucketPublished && g ? g.sum_y / g.n : null,
      published: bucketPublished,
    })
  }
  const shown = buckets.filter((x) => x.published).length
  const bandsNote = `Bands are predicted deciles, ${convention} (a forecast on an edge counts in the lower band; the first band is [0, 0.1]).`
  const note = published
    ? `${n} realized outcomes. ${shown} of ${CALIBRATION_BANDS} bands have at least ${bandFloor} realized outcomes and show their realized frequency; the others report counts only. ${bandsNote}`
    : `${n} realized outcomes is below the floor of ${questionFloor}; every band reports counts only and nothing is published. ${bandsNote}`
  return { buckets, published, n, n_floor: questionFloor, band_floor: bandFloor, convention, note }
}
