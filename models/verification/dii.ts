/**
 * The Decision Intelligence Index.
 *
 * Spec, Computation rule 3: "DII = 100 * (0.60 * clamp01(BSS) + 0.25 * clamp01(1 - ECE/0.20) + 0.15 * resolution_rate),
 * index_version '1.0.0'. resolution_rate = realized / (realized + unresolvable). Weights change only with a new
 * index_version; series never mix versions." Rule 4: "A null composite is not zero".
 * 1.1.0 (issue 30): same weights and scales; the BSS and ECE it is fed score a distribution question (S01) by its whole
 * distribution (multi-class Brier against the realized class frequencies, classwise ECE) where 1.0.0 scored its modal
 * class only (models/verification/bucketSums.ts, distributionScoresFromBands).
 * Limits: "Index composite floor | 100 realized outcomes; below it composite null".
 */
export const INDEX_VERSION = '1.1.0'
/** The versions published before INDEX_VERSION (still readable: their snapshots and curve points stay served). */
export const PREVIOUS_INDEX_VERSIONS = ['1.0.0'] as const
export const INDEX_COMPOSITE_FLOOR = 100
export const DII_WEIGHTS = { skill: 0.6, calibration: 0.25, resolution: 0.15 } as const
/** ECE at or above this scores zero on the calibration term. */
export const DII_ECE_SCALE = 0.2

export interface DiiInputs {
  /** Brier skill vs the base-rate forecaster (may be negative; null when undefined, e.g. UNC = 0). */
  readonly bss: number | null
  /** ECE ℓ1 over the decile bands. */
  readonly ece: number | null
  readonly n_realized: number
  readonly n_unresolvable: number
}

export interface DiiResult {
  readonly index_version: typeof INDEX_VERSION
  /** 0..100, or null below the floor or when an input is undefined. */
  readonly composite: number | null
  readonly insufficient_note: string | null
  readonly resolution_rate: number | null
  readonly terms: { readonly skill: number; readonly calibration: number; readonly resolution: number } | null
}

export function clamp01(x: number): number {
  return x < 0 ? 0 : x > 1 ? 1 : x
}

export function decisionIntelligenceIndex(inputs: DiiInputs): DiiResult {
  const { bss, ece, n_realized, n_unresolvable } = inputs
  if (!Number.isInteger(n_realized) || n_realized < 0) throw new RangeError('n_realized must be an integer >= 0')
  if (!Number.isInteger(n_unresolvable) || n_unresolvable < 0) throw new RangeError('n_unresolvable must be an integer >= 0')
  if (bss !== null && !Number.isFinite(bss)) throw new RangeError('bss must be a finite number or null')
  if (ece !== null && (!Number.isFinite(ece) || ece < 0)) throw new RangeError('ece must be a finite number >= 0 or null')
  const total = n_realized + n_unresolvable
  const resolution_rate = total === 0 ? null : n_realized / total
  const empty = { index_version: INDEX_VERSION, composite: null, resolution_rate, terms: null } as const
  if (n_realized < INDEX_COMPOSITE_FLOOR) {
    return {
      ...empty,
      insufficient_note: `${n_realized} realized outcomes is below the floor of ${INDEX_COMPOSITE_FLOOR}; the sample is insufficient for an index claim.`,
    }
  }
  if (bss === null || ece === null || resolution_rate === null) {
    return { ...empty, insufficient_note: 'Skill or calibration is undefined on this sample (every outcome was the same); no index claim is made.' }
  }
  const skill = clamp01(bss)
  const calibration = clamp01(1 - ece / DII_ECE_SCALE)
  const composite =
    100 * (DII_WEIGHTS.skill * skill + DII_WEIGHTS.calibration * calibration + DII_WEIGHTS.resolution * resolution_rate)
  return {
    index_version: INDEX_VERSION,
    composite,
    insufficient_note: null,
    resolution_rate,
    terms: { skill, calibration, resolution: resolution_rate },
  }
}
