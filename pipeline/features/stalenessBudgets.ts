/**
 * Staleness budgets per input kind: how old an input may be (event time of the snapshot minus event time of the
 * input's last record) before a model must refuse with stale_input. Served in meta.freshness; published in
 * docs/decisions.md.
 *
 * Spec, Decision record: "stale_input = an input breached its staleness budget or arrived degraded".
 * Periodic inputs get a budget relative to their own cadence (one missed period plus slack); continuous inputs a
 * fixed budget.
 */

export const FEATURE_INPUTS = ['bars', 'funding', 'mark', 'index', 'mid', 'book', 'open_interest'] as const
export type FeatureInput = (typeof FEATURE_INPUTS)[number]

/** The published rules, as data (meta.freshness documentation and /v1 discovery can serve this object). */
export const STALENESS_BUDGET_RULES = {
  bars: { rule: '2 × bar interval + 60 s', multiple_of_interval: 2, slack_ms: 60_000 },
  funding: { rule: 'settlement interval + 15 min', multiple_of_interval: 1, slack_ms: 15 * 60_000 },
  mark: { rule: '2 min', fixed_ms: 120_000 },
  index: { rule: '2 min', fixed_ms: 120_000 },
  mid: { rule: '2 min', fixed_ms: 120_000 },
  book: { rule: '1 min', fixed_ms: 60_000 },
  open_interest: { rule: '10 min', fixed_ms: 600_000 },
} as const

/** Budget in ms for one input; `cadenceMs` is the bar interval (bars) or the settlement interval (funding). */
export function stalenessBudgetMs(input: FeatureInput, cadenceMs: number | null = null): number {
  const rule = STALENESS_BUDGET_RULES[input]
  if ('fixed_ms' in rule) return rule.fixed_ms
  if (cadenceMs === null || !(cadenceMs > 0)) throw new RangeError(`stalenessBudgetMs(${input}) needs the input's cadence`)
  return rule.multiple_of_interval * cadenceMs + rule.slack_ms
}
