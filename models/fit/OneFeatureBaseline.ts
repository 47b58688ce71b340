/**
 * The one-feature baseline `svc eval` scores beside every model (issue 12): the deciles of ONE feature named per
 * question (docs/methodology.md, "Baselines"), fitted on the same training decisions as the model, each decile's
 * Laplace-smoothed event rate (binary: (k + 1) / (n + 2); S01: (count_c + 1) / (n + classes) per class). A model that
 * cannot beat it has not earned its extra features.
 *
 * Decile edges are the training values' 10 %…90 % quantiles (linear interpolation, type 7); a value equal to an edge
 * falls in the lower decile. A decision whose feature is missing (or a fit without any value) gets the training base
 * rate with the same smoothing.
 */
import type { FeatureSnapshot } from '../../pipeline/features/FeatureSnapshot.ts'
import { feature } from '../questions/common.ts'
import { quantileSorted } from '../verification/bootstrap.ts'

/** The feature of a question's baseline, named as in docs/methodology.md. */
export interface BaselineFeature {
  name: string
  value(snapshot: FeatureSnapshot): number | null
}

const logRatio = (num: string, den: string): BaselineFeature => ({
  name: `ln(${num}/${den})`,
  value: (s) => {
    const a = feature(s, num)
    const b = feature(s, den)
    return a !== null && b !== null && a > 0 && b > 0 ? Math.log(a / b) : null
  },
})

const absolute = (name: string): BaselineFeature => ({
  name: `|${name}|`,
  value: (s) => {
    const v = feature(s, name)
    return v === null ? null : Math.abs(v)
  },
})

/** Per question: the single most direct signal of its event, chosen from its definition, not from test results. */
export const BASELINE_FEATURES: Readonly<Record<string, BaselineFeature>> = {
  // Regime on the next hour: how active the last day was against the week.
  S01_market_regime: logRatio('pk_24h', 'pk_7d'),
  // Continuation beyond ±0.5σ√4 in the trailing move's direction: the size of that move.
  S03_trend_continuation: absolute('ret_4h'),
  // A low 1.5σ√4 below: how volatile the last day was against the week.
  S04_drawdown_risk: logRatio('pk_24h', 'pk_7d'),
  // Vol over the next 4 h above 1.5σ: the last 4 h against the week (the reference baseline).
  S05_volatility_expansion: logRatio('pk_4h', 'pk_7d'),
  // A settlement outside 2 sd of the 30-day distribution: how far out the current rate already is.
  S06_funding_anomaly: absolute('funding_z'),
  // The next settlement on the same side: how far from neutral the current one is.
  S07_funding_persistence: absolute('funding_z'),
}

export const BASELINE_DECILES = 10

export class OneFeatureBaseline {
  private constructor(
    readonly feature: BaselineFeature,
    /** The 9 inner decile edges (fewer distinct ones when values tie). */
    readonly edges: readonly number[],
    /** Per decile: the smoothed probability of each outcome (binary: [P(obtains)]; choice: one per class). */
    readonly rates: readonly (readonly number[])[],
    /** For a missing feature: the smoothed training base rate. */
    readonly fallback: readonly number[],
  ) {}

  /**
   * Fits on training rows: `outcome` is 1/0 for a binary question (classes = 1) or the realized class index for a
   * choice question (classes = K).
   */
  static fit(feature: BaselineFeature, rows: readonly { snapshot: FeatureSnapshot; outcome: number }[], classes = 1): OneFeatureBaseline {
    const k = classes === 1 ? 2 : classes
    const smoothed = (counts: readonly number[], n: number) =>
      classes === 1 ? [(counts[1]! + 1) / (n + 2)] : counts.map((c) => (c + 1) / (n + k))
    const valued: Array<{ x: number; outcome: number }> = []
    const all = new Array<number>(k).fill(0)
    for (const r of rows) {
      all[r.outcome]!++
      const x = feature.value(r.snapshot)
      if (x !== null) valued.push({ x, outcome: r.outcome })
    }
    const fallback = smoothed(all, rows.length)
    if (valued.length === 0) return new OneFeatureBaseline(feature, [], [fallback], fallback)
    const xs = valued.map((v) => v.x).sort((a, b) => a - b)
    const edges: number[] = []
    for (let d = 1; d < BASELINE_DECILES; d++) {
      const e = quantileSorted(xs, d / BASELINE_DECILES)
      if (edges.length === 0 || e > edges[edges.length - 1]!) edges.push(e)
    }
    const counts = Array.from({ length: edges.length + 1 }, () => new Array<number>(k).fill(0))
    const sizes = new Array<number>(edges.length + 1).fill(0)
    for (const v of valued) {
      const b = OneFeatureBaseline.bucket(edges, v.x)
      counts[b]![v.outcome]!++
      sizes[b]!++
    }
    return new OneFeatureBaseline(feature, edges, counts.map((c, b) => smoothed(c, sizes[b]!)), fallback)
  }

  private static bucket(edges: readonly number[], x: number): number {
    let lo = 0
    let hi = edges.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (x <= edges[mid]!) hi = mid
      else lo = mid + 1
    }
    return lo
  }

  /** The smoothed probabilities for one decision (binary: [P(obtains)]). */
  predict(snapshot: FeatureSnapshot): readonly number[] {
    const x = this.feature.value(snapshot)
    return x === null ? this.fallback : this.rates[OneFeatureBaseline.bucket(this.edges, x)]!
  }
}
