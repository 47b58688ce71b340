import { codedError, type CodeTable } from '../common/CodedError.ts'

/** Errors of the measured record's batch jobs and table reads. */
export const RECORD_ERRORS = {
  RECORD_LOCKED: { retryable: true, meaning: 'another process (a running service, or another `svc record build`) is writing this data dir\'s record tables' },
  RECORD_SQL: { retryable: false, meaning: 'a batch query or a sealed write of a record table failed' },
  RECORD_CHAIN: { retryable: false, meaning: 'the snapshot rows on disk do not follow from each other (a crash left an uncommitted run, or the files were edited)' },
} as const satisfies CodeTable<string>

export class RecordError extends codedError(RECORD_ERRORS) {}
