/** Argument checks shared by both logs, so EmbeddedLog and KafkaLog refuse the same inputs with the same codes. */
import type { LogRecord, TopicRecords, TopicSpec } from './EventLog.ts'
import { LogError } from './LogError.ts'

/** Kafka's legal topic names (Topic.java: [a-zA-Z0-9._-], at most 249 chars, not "." or ".."); also safe as dir names. */
const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/
/** Largest record value either log accepts (Kafka's default message.max.bytes is ~1 MiB; the embedded log allows more). */
export const MAX_VALUE_BYTES = 16 * 1024 * 1024
export const MAX_PARTITIONS = 1024

export function assertTopicName(topic: unknown): asserts topic is string {
  if (typeof topic !== 'string' || !TOPIC_NAME.test(topic) || topic === '.' || topic === '..') {
    throw new LogError('LOG_INVALID_ARGUMENT', `topic: ${JSON.stringify(topic)} is not a legal topic name ([a-zA-Z0-9._-]{1,249})`)
  }
}

export function assertTopicSpecs(specs: TopicSpec[]): void {
  if (!Array.isArray(specs)) throw new LogError('LOG_INVALID_ARGUMENT', 'specs: must be an array')
  specs.forEach((spec, i) => {
    assertTopicName(spec?.name)
    if (!Number.isInteger(spec.partitions) || spec.partitions < 1 || spec.partitions > MAX_PARTITIONS) {
      throw new LogError('LOG_INVALID_ARGUMENT', `specs[${i}].partitions: must be an integer in 1..${MAX_PARTITIONS}`)
    }
    if (spec.retentionMs !== undefined && !(Number.isSafeInteger(spec.retentionMs) && spec.retentionMs > 0)) {
      throw new LogError('LOG_INVALID_ARGUMENT', `specs[${i}].retentionMs: must be a positive integer (ms)`)
    }
  })
}

/** `path` names the array in error messages (sendAtomic passes `batches[i].records`). */
export function assertRecords(records: LogRecord[], path = 'records'): void {
  if (!Array.isArray(records)) throw new LogError('LOG_INVALID_ARGUMENT', `${path}: must be an array`)
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!
    if (typeof r?.key !== 'string') throw new LogError('LOG_INVALID_ARGUMENT', `${path}[${i}].key: must be a string`)
    if (!Buffer.isBuffer(r.value)) throw new LogError('LOG_INVALID_ARGUMENT', `${path}[${i}].value: must be a Buffer`)
    if (r.value.length > MAX_VALUE_BYTES) {
      throw new LogError('LOG_INVALID_ARGUMENT', `${path}[${i}].value: ${r.value.length} bytes exceeds ${MAX_VALUE_BYTES}`)
    }
    if (!Number.isSafeInteger(r.timestamp) || r.timestamp < 0) {
      throw new LogError('LOG_INVALID_ARGUMENT', `${path}[${i}].timestamp: must be a non-negative integer (epoch ms)`)
    }
  }
}

/**
 * The argument of sendAtomic: an array of {topic, records} with legal topic names and valid records. Checked whole
 * before anything is written, so a bad unit writes nothing. (Whether each topic exists is the log's own check.)
 */
export function assertTopicBatches(batches: ReadonlyArray<TopicRecords>): void {
  if (!Array.isArray(batches)) throw new LogError('LOG_INVALID_ARGUMENT', 'batches: must be an array')
  for (let i = 0; i < batches.length; i++) {
    const b = batches[i]
    if (typeof b !== 'object' || b === null) throw new LogError('LOG_INVALID_ARGUMENT', `batches[${i}]: must be an object {topic, records}`)
    try {
      assertTopicName(b.topic)
    } catch {
      throw new LogError('LOG_INVALID_ARGUMENT', `batches[${i}].topic: ${JSON.stringify(b.topic)} is not a legal topic name ([a-zA-Z0-9._-]{1,249})`)
    }
    assertRecords(b.records, `batches[${i}].records`)
  }
}

export function assertPartitionOffset(partitions: number, partition: number, nextOffset: number): void {
  if (!Number.isInteger(partition) || partition < 0 || partition >= partitions) {
    throw new LogError('LOG_INVALID_ARGUMENT', `partition: ${partition} is not in 0..${partitions - 1}`)
  }
  if (!Number.isSafeInteger(nextOffset) || nextOffset < 0) {
    throw new LogError('LOG_INVALID_ARGUMENT', `nextOffset: ${nextOffset} must be a non-negative integer`)
  }
}
