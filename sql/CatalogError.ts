import { codedError, type CodeTable } from '../common/CodedError.ts'

/** Errors raised by the DuckDB catalog; `code` is one of a closed set so callers can branch on it. */
export const CATALOG_ERRORS = {
  CATALOG_MISSING: { retryable: true, meaning: 'a read-only open found no catalog file: the owning process has not applied the DDL yet' },
  CATALOG_LOCKED: { retryable: true, meaning: 'DuckDB refused the file: a writer holds it (or readers hold it while a writer tries)' },
  CATALOG_SQL: { retryable: false, meaning: 'a .sql file failed to apply, or a query failed' },
} as const satisfies CodeTable<string>

export type CatalogErrorCode = keyof typeof CATALOG_ERRORS

export class CatalogError extends codedError(CATALOG_ERRORS) {}
