/** Statistics the resolvers measure on a resolution window's bars (same estimators as the features). */
import type { ResolutionWindow } from '../../pipeline/features/ResolutionWindow.ts'
import { HOUR_MS } from '../../common/time.ts'
import { parkinsonVariance } from '../../pipeline/features/volatility.ts'

/** Parkinson realized volatility per hour over the window's bars; null without bars. */
export function windowParkinsonPerHour(window: ResolutionWindow): number | null {
  if (window.bars.length === 0) return null
  let v = 0
  let ms = 0
  for (const b of window.bars) {
    v += parkinsonVariance(b.high, b.low)
    ms += b.interval_ms
  }
  return Math.sqrt(v / (ms / HOUR_MS))
}

export function windowLastClose(window: ResolutionWindow): number | null {
  const last = window.bars[window.bars.length - 1]
  return last ? last.close : null
}

export function windowMinLow(window: ResolutionWindow): number | null {
  if (window.bars.length === 0) return null
  let m = Infinity
  for (const b of window.bars) m = Math.min(m, b.low)
  return m
}

export function numberCondition(conditions: Record<string, unknown>, key: string): number {
  const v = conditions[key]
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new RangeError(`conditions.${key} must be a finite number`)
  return v
}
