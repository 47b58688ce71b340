/**
 * Confidence, basis 'jev': how much evidence stands behind one answer, in [0, 1). It is not a probability of being
 * right; it grows with the data the answer rests on and is 0 for a refusal.
 *
 *   confidence = n_fit / (n_fit + K_FIT) × n_band / (n_band + K_BAND)
 *
 * n_fit: labelled samples the model was fitted on (decisions on non-overlapping windows, so n_eff = n).
 * n_band: calibration-slice outcomes in the calibration block (binary) or feature cell (S01) the answer came from —
 * the evidence behind this particular number. K_FIT = 200 and K_BAND = 30 are the sample sizes at which each factor
 * reaches one half. The policy refuses answers below its minimum confidence (models/policy/ruleset.ts).
 * Documented in docs/methodology.md.
 */

export const CONFIDENCE_BASIS = 'jev' as const
export const K_FIT = 200
export const K_BAND = 30

export function evidenceConfidence(nFit: number, nBand: number): number {
  if (!(nFit >= 0) || !(nBand >= 0)) throw new RangeError('evidenceConfidence needs non-negative counts')
  return (nFit / (nFit + K_FIT)) * (nBand / (nBand + K_BAND))
}
