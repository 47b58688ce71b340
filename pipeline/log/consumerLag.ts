/**
 * Consumer lag: how far each running consumer of this process is behind the end of the log, per consumer group and
 * topic, summed over partitions. Both event logs answer EventLog.consumerLag() through this one function, from the
 * positions their consumers report (LogConsumer.positions()) and their own end offsets, so the figure means the same
 * on the embedded log and on Kafka.
 */
import type { ConsumerLag, ConsumerPosition } from './EventLog.ts'

/** What lagOf needs of a consumer: its (logical) group and where it stands. */
export interface PositionedConsumer {
  readonly groupId: string
  positions(): ReadonlyArray<ConsumerPosition>
}

/**
 * lag = end offset − position (the offset of the next record the consumer hands over), never below 0, summed over the
 * partitions the consumer is positioned on. A consumer not yet positioned (run() in progress) is left out rather than
 * reported as behind by the whole topic.
 */
export async function lagOf(consumers: Iterable<PositionedConsumer>, endOffsets: (topic: string) => Promise<number[]>): Promise<ConsumerLag[]> {
  const ends = new Map<string, Promise<number[]>>()
  const sums = new Map<string, ConsumerLag>()
  for (const consumer of consumers) {
    for (const pos of consumer.positions()) {
      let end = ends.get(pos.topic)
      if (!end) ends.set(pos.topic, (end = endOffsets(pos.topic)))
      const behind = Math.max(0, ((await end)[pos.partition] ?? 0) - pos.next)
      const key = `${consumer.groupId}\u0000${pos.topic}`
      const row = sums.get(key)
      if (row) row.lag += behind
      else sums.set(key, { groupId: consumer.groupId, topic: pos.topic, lag: behind })
    }
  }
  return [...sums.values()]
}
