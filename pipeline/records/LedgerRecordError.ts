/** A decision or outcome record that does not match its schema; `path` names the field (JSON pointer). */
export class LedgerRecordError extends Error {
  override name = 'LedgerRecordError'
  readonly code = 'LEDGER_RECORD_INVALID' as const
  constructor(
    readonly path: string,
    detail: string,
  ) {
    super(`${path || '/'}: ${detail}`)
  }
}
