/**
 * A resolved binary forecast: probability `p` in [0,1] that the event obtains, outcome `y` (1 obtained, 0 not).
 * Every verification primitive takes these and validates them once on entry.
 */
export interface ForecastPair {
  readonly p: number
  readonly y: number
}

/** Throws a RangeError naming the offending path (`pairs[3].p`) so callers can map it to a 400 VALIDATION. */
export function assertPairs(pairs: readonly ForecastPair[], name = 'pairs'): void {
  if (!Array.isArray(pairs)) throw new RangeError(`${name} must be an array`)
  for (let i = 0; i < pairs.length; i++) {
    const pair = pairs[i]
    if (pair === null || typeof pair !== 'object') throw new RangeError(`${name}[${i}] must be an object { p, y }`)
    const { p, y } = pair
    if (typeof p !== 'number' || !Number.isFinite(p) || p < 0 || p > 1) {
      throw new RangeError(`${name}[${i}].p must be a finite number in [0, 1]`)
    }
    if (y !== 0 && y !== 1) throw new RangeError(`${name}[${i}].y must be 0 or 1`)
  }
}

export function assertBinCount(k: number, name = 'bins'): void {
  if (!Number.isInteger(k) || k < 1 || k > 10_000) throw new RangeError(`${name} must be an integer in [1, 10000]`)
}

/** Mean outcome; callers guarantee a non-empty input. */
export function baseRate(pairs: readonly ForecastPair[]): number {
  let hits = 0
  for (const { y } of pairs) hits += y
  return hits / pairs.length
}

/** The pairs grouped by distinct forecast value, ascending: each value with how often it was issued and obtained. */
export function tieGroups(pairs: readonly ForecastPair[]): Array<{ p: number; n: number; hits: number }> {
  const byValue = new Map<number, { p: number; n: number; hits: number }>()
  for (const { p, y } of pairs) {
    const g = byValue.get(p)
    if (g) {
      g.n++
      g.hits += y
    } else byValue.set(p, { p, n: 1, hits: y })
  }
  return [...byValue.values()].sort((a, b) => a.p - b.p)
}
