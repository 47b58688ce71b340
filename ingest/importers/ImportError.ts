import { codedError, type CodeTable } from '../../common/CodedError.ts'

export const IMPORT_ERRORS = {
  IMPORT_FORMAT: { retryable: false, meaning: 'the file is not a known source format: unrecognized or ambiguous header, unreadable name, not JSON, no rows' },
  IMPORT_ROW: { retryable: false, meaning: 'a row cannot be read, or gives an impossible or invalid record' },
  IMPORT_DUPLICATE: { retryable: false, meaning: 'two rows give the same record (the message names both places)' },
} as const satisfies CodeTable<string>

export type ImportErrorCode = keyof typeof IMPORT_ERRORS

/**
 * A source file that cannot be imported. Names the file and the 1-based line of the offending row, so a bad row
 * is reported where it is and never skipped.
 */
export class ImportError extends codedError(IMPORT_ERRORS) {
  readonly file: string
  readonly line: number
  constructor(code: ImportErrorCode, file: string, line: number, message: string) {
    super(code, `${file}:${line}: ${message}`)
    this.file = file
    this.line = line
  }
}
