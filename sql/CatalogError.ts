import { CodedError } from '../common/CodedError.ts'

/** Errors raised by the DuckDB catalog; `code` is one of a closed set so callers can branch on it. */
export const CATALOG_ERROR_CODES = [
  'CATALOG_MISSING', // a read-only open found no catalog file: the owning process has not applied the DDL yet
  'CATALOG_LOCKED', // DuckDB refused the file: a writer holds it (or readers hold it while a writer tries)
  'CATALOG_SQL', // a .sql file failed to apply, or a query failed
] as const

export type CatalogErrorCode = (typeof CATALOG_ERROR_CODES)[number]

export class CatalogError extends CodedError<CatalogErrorCode> {}
