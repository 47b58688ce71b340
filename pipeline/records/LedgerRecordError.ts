import { codedError } from '../../common/CodedError.ts'

export const LEDGER_RECORD_ERRORS = {
  LEDGER_RECORD_INVALID: { retryable: false, meaning: 'a journal record does not match its schema (path names the field)' },
} as const

/** A journal record that does not match its schema; `path` names the field (JSON pointer). */
export class LedgerRecordError extends codedError(LEDGER_RECORD_ERRORS) {
  constructor(
    readonly path: string,
    detail: string,
  ) {
    super('LEDGER_RECORD_INVALID', `${path || '/'}: ${detail}`)
  }
}
