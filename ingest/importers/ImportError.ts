/**
 * A source file that cannot be imported. Names the file and the 1-based line of the offending row, so a bad row
 * is reported where it is and never skipped.
 */
export class ImportError extends Error {
  readonly file: string
  readonly line: number
  constructor(file: string, line: number, message: string) {
    super(`${file}:${line}: ${message}`)
    this.name = 'ImportError'
    this.file = file
    this.line = line
  }
}
