/** Topic names and partition counts; every name is configurable (SVC_TOPIC_<NAME>, SVC_PARTITIONS). */
import type { TopicSpec } from './log/EventLog.ts'

export interface TopicNames {
  ticks: string
  decisions: string
  outcomes: string
  draws: string
}

export function topicNames(env: NodeJS.ProcessEnv = process.env): TopicNames {
  return {
    ticks: env.SVC_TOPIC_TICKS ?? 'venue.ticks',
    decisions: env.SVC_TOPIC_DECISIONS ?? 'decisions',
    outcomes: env.SVC_TOPIC_OUTCOMES ?? 'outcomes',
    draws: env.SVC_TOPIC_DRAWS ?? 'billing.draws',
  }
}

export function topicSpecs(names: TopicNames = topicNames(), partitions = Number(process.env.SVC_PARTITIONS ?? 3)): TopicSpec[] {
  return Object.values(names).map((name) => ({ name, partitions }))
}
