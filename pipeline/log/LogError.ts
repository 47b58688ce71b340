import { CodedError } from '../../common/CodedError.ts'

/** Errors raised by the event log layer; `code` is one of a closed set so callers can branch on it. */
export const LOG_ERROR_CODES = [
  'LOG_CONFIG', // openEventLog / EmbeddedLog options failed JSON Schema validation
  'LOG_LOCKED', // another live process holds the embedded log directory
  'LOG_CLOSED', // the log, producer or consumer was already closed
  'LOG_UNKNOWN_TOPIC', // topic not created with ensureTopics
  'LOG_TOPIC_MISMATCH', // topic exists with a different partition count
  'LOG_INVALID_ARGUMENT', // bad topic name, record, partition or offset
  'LOG_GROUP_BUSY', // embedded: a running consumer of the same group already owns the topic
  'LOG_CORRUPT', // unreadable metadata or group file (never silently rewritten)
  'LOG_IO', // a write or fsync failed; the embedded log refuses further writes
  'LOG_FENCED', // kafka: another live instance with the same instanceId took over the transactional id
] as const

export type LogErrorCode = (typeof LOG_ERROR_CODES)[number]

export class LogError extends CodedError<LogErrorCode> {}
