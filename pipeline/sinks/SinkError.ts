import { codedError, type CodeTable } from '../../common/CodedError.ts'

/** Errors raised by the Parquet sink; `code` is one of a closed set so callers can branch on it. */
export const SINK_ERRORS = {
  SINK_CONFIG: { retryable: false, meaning: 'ParquetSink options failed JSON Schema validation, or a TopicTable is malformed' },
  SINK_UNKNOWN_TOPIC: { retryable: false, meaning: 'a batch arrived for a topic no TopicTable consumes' },
  SINK_CLOSED: { retryable: false, meaning: 'the sink was closed, or an earlier flush failed and the sink refuses further work' },
  SINK_LOCKED: { retryable: true, meaning: 'another process (a running service, or another `svc compact`) is compacting this data dir' },
  SINK_IO: { retryable: false, meaning: 'writing, syncing or renaming a Parquet file failed (the sink then refuses further work)' },
} as const satisfies CodeTable<string>

export type SinkErrorCode = keyof typeof SINK_ERRORS

export class SinkError extends codedError(SINK_ERRORS) {}
