/**
 * Reads a topic from the beginning up to the end offsets it had when called, one batch at a time, then stops: a
 * batch job's pass over what the log held (the bootstrap release's training window). Records appended after the call
 * are not delivered. The consumer's group is its own and commits nothing, so no other reader's position moves.
 */
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { ConsumedBatch, EventLog } from './EventLog.ts'

export async function readTopicToEnd(
  log: EventLog,
  topic: string,
  onBatch: (batch: ConsumedBatch) => Promise<void>,
  options: { groupId?: string; timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<{ records: number }> {
  const ends = await log.endOffsets(topic)
  const reached = ends.map(() => 0)
  const done = () => ends.every((e, p) => reached[p]! >= e)
  if (done()) return { records: 0 }
  const consumer = await log.createConsumer({ groupId: options.groupId ?? `svc.read-to-end-${randomUUID()}`, topics: [topic], fromBeginning: true })
  let records = 0
  let failed: Error | null = null
  const running = consumer
    .run(async (batch) => {
      const end = ends[batch.partition] ?? 0
      const wanted = batch.records.filter((r) => r.offset < end && r.offset >= reached[batch.partition]!)
      if (wanted.length > 0) await onBatch({ ...batch, records: wanted })
      records += wanted.length
      const last = batch.records[batch.records.length - 1]
      if (last) reached[batch.partition] = Math.max(reached[batch.partition]!, last.offset + 1)
    })
    .catch((err: unknown) => {
      failed = err instanceof Error ? err : new Error(String(err))
    })
  const deadline = Date.now() + (options.timeoutMs ?? 600_000)
  try {
    while (!done()) {
      if (failed) throw failed
      options.signal?.throwIfAborted()
      if (Date.now() > deadline) throw new Error(`reading ${topic} to its end did not finish within ${options.timeoutMs ?? 600_000} ms`)
      await sleep(20)
    }
  } finally {
    await consumer.stop()
    await running
  }
  if (failed) throw failed
  return { records }
}
