/**
 * Topic names and partition counts. Every name is configurable (app/config.ts: SVC_TOPIC_<NAME>, SVC_PARTITIONS);
 * library code takes the names it is given, or these defaults.
 */
import type { TopicSpec } from './log/EventLog.ts'

export interface TopicNames {
  ticks: string
  decisions: string
  outcomes: string
  draws: string
  /** The duel's locked player calls (product/duel/). */
  calls: string
  /** The duel's opt-in consent records. */
  callOptIns: string
  /** The operator funnel's snapshots (pipeline/records/funnelRecord.ts). */
  funnel: string
}

export const DEFAULT_TOPIC_NAMES: Readonly<TopicNames> = Object.freeze({
  ticks: 'venue.ticks',
  decisions: 'decisions',
  outcomes: 'outcomes',
  draws: 'billing.draws',
  calls: 'duel.calls',
  callOptIns: 'duel.opt_ins',
  funnel: 'ops.funnel',
})

/** Partitions per topic when the service creates one. */
export const DEFAULT_PARTITIONS = 3

/** The default names, with any given ones in their place. */
export function topicNames(overrides: Partial<TopicNames> = {}): TopicNames {
  return { ...DEFAULT_TOPIC_NAMES, ...overrides }
}

/**
 * `ticksRetentionMs`: how long Kafka keeps a tick after appending it (TopicSpec.retentionMs), set on the ticks topic
 * only; every journal stays whole (docs/decisions.md).
 */
export function topicSpecs(names: TopicNames = topicNames(), partitions = DEFAULT_PARTITIONS, options: { ticksRetentionMs?: number } = {}): TopicSpec[] {
  return Object.values(names).map((name) =>
    name === names.ticks && options.ticksRetentionMs !== undefined ? { name, partitions, retentionMs: options.ticksRetentionMs } : { name, partitions },
  )
}
