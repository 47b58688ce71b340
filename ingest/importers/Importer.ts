/** The shape every source-format importer has; ingest/importers/index.ts holds the one list of them. */
import type { Tick } from '../Tick.ts'

/** A source file as read from disk: whole text (BOM stripped) plus what detection looks at. */
export interface SourceFile {
  /** The path as the user gave it; used in error messages. */
  path: string
  /** Base name, e.g. 'BTCUSDT_1m.csv'. */
  name: string
  text: string
  /** First line without its line ending (the CSV header, or the start of a JSON document). */
  firstLine: string
}

/** One produced record and the 1-based source line it came from (for error messages and stable ordering). */
export interface SourceTick {
  tick: Tick
  line: number
}

export interface Importer {
  /** Also the `provenance.provider` of every record it produces. */
  readonly id: string
  /** The `provenance.source` it writes: the true venue and market type. */
  readonly source: string
  /** One line for `svc tape import --help`. */
  readonly summary: string
  /** True when this importer reads `file` (by file name and header). */
  detect(file: SourceFile): boolean
  /** Records in source order; throws ImportError naming the line of a malformed row. */
  parse(file: SourceFile): SourceTick[]
}
