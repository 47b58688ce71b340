/**
 * The engine's tick-derived state as a checkpointed store (issue 31; pipeline/state/): what EngineRunner builds from
 * `venue.ticks` and nothing else, so a start loads it from its snapshot and reads only the tail of the topic.
 *
 * Rows, in this order (deterministic: equal states give equal rows; every list sorted by asset):
 *   ['meta', { ticks, eventTime }]                the ticks folded in so far and the live features' event time
 *   ['cadence', asset, { cut, serving, nextGrid, last }]   per asset: training cut, cut passed, next grid instant,
 *                                                 newest tick time (EngineRunner's AssetState)
 *   ['features', FeatureAssetDump]                per asset: the live features (FeatureState)
 *   ['resolution', { history, watermarks, observedSincePrune }]   the ResolutionEngine's tick history and event times
 * Non-finite numbers and −0 are kept exactly (pipeline/state/jsonNumbers.ts).
 *
 * Not in it, by design: what comes from the ledger (open clocks, the live cadence's newest decided instants, the
 * ledger itself: rebuilt or restored by the ledger's own start), and the per-process counters of rows staged (a
 * rebuild stages nothing new, so they measure this process, not the state). The log positions the rows reflect are
 * the snapshot's header, not a row.
 *
 * Schema 1. Bump SCHEMA when a row's shape or meaning changes (an older snapshot is then rebuilt from the log).
 */
import type { FeatureState } from '../pipeline/features/FeatureState.ts'
import { decodeNumbers, encodeNumbers } from '../pipeline/state/jsonNumbers.ts'
import type { StateStore } from '../pipeline/state/StateStore.ts'
import type { LiveFeatures } from './LiveFeatures.ts'
import type { ResolutionEngine } from './ResolutionEngine.ts'

export const ENGINE_TICK_STATE_SCHEMA = 1

/** EngineRunner's per-asset cadence state. */
export interface CadenceState {
  /** The training cut (epoch ms). */
  cut: number
  /** The asset's ticks have passed the cut: cadence decisions run (and the atCut hook has run). */
  serving: boolean
  /** The next grid instant to decide. */
  nextGrid: number
  /** The newest tick time of the asset folded in (−Infinity before any). */
  last: number
}

export interface EngineTickParts {
  live: LiveFeatures
  features: FeatureState
  resolver: ResolutionEngine
  cadence: Map<string, CadenceState>
  /** The ticks folded in so far (EngineRunner's counter). */
  ticks: { value: number }
}

export class EngineTickState implements StateStore {
  readonly schema = ENGINE_TICK_STATE_SCHEMA

  constructor(
    /** One store per engine consumer group (`${groupId}.ticks`), so two engines on one data folder never share a file. */
    readonly name: string,
    private readonly parts: EngineTickParts,
  ) {}

  *rows(): Iterable<unknown> {
    const p = this.parts
    yield encodeNumbers(['meta', { ticks: p.ticks.value, eventTime: p.live.eventTime }])
    for (const asset of [...p.cadence.keys()].sort()) {
      const s = p.cadence.get(asset)!
      yield encodeNumbers(['cadence', asset, { cut: s.cut, serving: s.serving, nextGrid: s.nextGrid, last: s.last }])
    }
    for (const f of p.features.dump()) yield encodeNumbers(['features', f])
    yield encodeNumbers(['resolution', p.resolver.dumpTicks()])
  }

  /** All or nothing: every row is validated and staged before any part is replaced. */
  load(rows: readonly unknown[]): void {
    let meta: { ticks: number; eventTime: number } | null = null
    const cadence = new Map<string, CadenceState>()
    const features: unknown[] = []
    let resolution: unknown = undefined
    for (const raw of rows) {
      const row = decodeNumbers(raw)
      if (!Array.isArray(row) || typeof row[0] !== 'string') throw new Error('an engine state row is not [kind, ...]')
      switch (row[0]) {
        case 'meta': {
          const m = row[1] as { ticks?: unknown; eventTime?: unknown }
          if (meta !== null || typeof m?.ticks !== 'number' || typeof m.eventTime !== 'number') throw new Error('meta row')
          meta = { ticks: m.ticks, eventTime: m.eventTime }
          break
        }
        case 'cadence': {
          const [, asset, s] = row as [string, unknown, Partial<CadenceState> | undefined]
          if (typeof asset !== 'string' || cadence.has(asset) || typeof s?.cut !== 'number' || typeof s.serving !== 'boolean' || typeof s.nextGrid !== 'number' || typeof s.last !== 'number') throw new Error('cadence row')
          cadence.set(asset, { cut: s.cut, serving: s.serving, nextGrid: s.nextGrid, last: s.last })
          break
        }
        case 'features':
          features.push(row[1])
          break
        case 'resolution':
          if (resolution !== undefined) throw new Error('a second resolution row')
          resolution = row[1]
          break
        default:
          throw new Error(`unknown engine state row kind ${JSON.stringify(row[0])}`)
      }
    }
    if (meta === null || resolution === undefined) throw new Error('the meta or resolution row is missing')
    const loadFeatures = this.parts.features.prepareLoad(features)
    const loadResolution = this.parts.resolver.prepareLoadTicks(resolution)
    // Nothing has changed up to here; from here on nothing can throw.
    loadFeatures()
    loadResolution()
    this.parts.cadence.clear()
    for (const [k, v] of cadence) this.parts.cadence.set(k, v)
    this.parts.live.restoreEventTime(meta.eventTime)
    this.parts.ticks.value = meta.ticks
  }
}
