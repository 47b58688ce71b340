import { CodedError } from '../../common/CodedError.ts'

/** Errors raised by the Parquet sink; `code` is one of a closed set so callers can branch on it. */
export const SINK_ERROR_CODES = [
  'SINK_CONFIG', // ParquetSink options failed JSON Schema validation, or a TopicTable is malformed
  'SINK_UNKNOWN_TOPIC', // a batch arrived for a topic no TopicTable consumes
  'SINK_CLOSED', // the sink was closed, or an earlier flush failed and the sink refuses further work
  'SINK_IO', // writing, syncing or renaming a Parquet file failed
] as const

export type SinkErrorCode = (typeof SINK_ERROR_CODES)[number]

export class SinkError extends CodedError<SinkErrorCode> {}
