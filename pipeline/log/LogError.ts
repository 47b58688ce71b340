import { codedError, type CodeTable } from '../../common/CodedError.ts'
import type { ToError } from '../../common/validation.ts'

/** Errors raised by the event log layer; `code` is one of a closed set so callers can branch on it. */
export const LOG_ERRORS = {
  LOG_CONFIG: { retryable: false, meaning: 'openEventLog / EmbeddedLog / KafkaLog options failed JSON Schema validation' },
  LOG_LOCKED: { retryable: true, meaning: 'another live process (or an open log in this one) holds the embedded log directory' },
  LOG_CLOSED: { retryable: false, meaning: 'the log, producer or consumer was already closed' },
  LOG_UNKNOWN_TOPIC: { retryable: false, meaning: 'topic not created with ensureTopics' },
  LOG_TOPIC_MISMATCH: { retryable: false, meaning: 'topic exists with a different partition count' },
  LOG_INVALID_ARGUMENT: { retryable: false, meaning: 'bad topic name, record, partition or offset' },
  LOG_GROUP_BUSY: { retryable: true, meaning: 'embedded: a running consumer of the same group already owns the topic' },
  LOG_CORRUPT: { retryable: false, meaning: 'unreadable metadata or group file (never silently rewritten)' },
  LOG_IO: { retryable: false, meaning: 'a write or fsync failed and the embedded log refuses further writes; a Kafka wait timed out (retryable)' },
  LOG_REBALANCED: { retryable: true, meaning: 'kafka: the consumer lost its group membership (its session timed out or the group rebalanced) before an offset commit; nothing was committed, and the records after the last commit are delivered again once it rejoins' },
  LOG_UNAVAILABLE: { retryable: true, meaning: 'kafka: the broker could not be reached within the write deadline; the atomic unit was not written (nothing of it becomes visible), so it may be sent again' },
  LOG_FENCED: { retryable: false, meaning: 'kafka: another live instance with the same instanceId took over the transactional id' },
} as const satisfies CodeTable<string>

export type LogErrorCode = keyof typeof LOG_ERRORS

export class LogError extends codedError(LOG_ERRORS) {
  /** LOG_CONFIG from a failed options schema (the toError of common/validation.ts). */
  static readonly config: ToError = (message) => new LogError('LOG_CONFIG', message)
}
