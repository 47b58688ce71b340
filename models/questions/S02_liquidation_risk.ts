/**
 * S02_liquidation_risk. Spec catalog: "wired but not sold on this deployment; resolves to decision suppress;
 * availability is per market (needs 24 hourly observations of that market's liquidation tape)."
 * Readiness N/24 = distinct clock hours of the last 24 with liquidation-tape records (feature liq_hours_24h).
 * Below 24 the reason names the readiness; at 24 it is still not sold here.
 */
import type { FeatureSnapshot } from '../../pipeline/features/FeatureSnapshot.ts'
import { UnsoldQuestion } from './UnsoldQuestion.ts'

export const S02_READINESS_HOURS = 24

export function liquidationReadiness(s: FeatureSnapshot): number {
  const v = s.features.liq_hours_24h
  return typeof v === 'number' ? v : 0
}

/** Whether the market has the liquidation history S02 needs (availability per market). */
export function s02Available(s: FeatureSnapshot): boolean {
  return liquidationReadiness(s) >= S02_READINESS_HOURS
}

export const S02_liquidation_risk = new UnsoldQuestion({
  id: 'S02_liquidation_risk',
  label: 'Liquidation risk',
  scope: 'market',
  horizonMs: 3_600_000,
  reason: (s) => (s02Available(s) ? 'not_sold_on_deployment' : 'liquidation_tape_hours_below_24'),
  conditions: (s) => ({ liquidation_tape_hours_24h: liquidationReadiness(s), readiness_required_hours: S02_READINESS_HOURS }),
})
