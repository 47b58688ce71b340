/**
 * The importer registry: the one list of source formats `svc tape import` reads, format detection from the file
 * name and header, and the merge of one or more files into a single event-time-ordered record stream.
 */
import { readFile } from 'node:fs/promises'
import { basename } from 'node:path'
import { TickValidationError, tickTime, validateTick, type Tick } from '../Tick.ts'
import { ImportError } from './ImportError.ts'
import type { Importer, SourceFile } from './Importer.ts'
import { binanceKlineCsv } from './binanceKlineCsv.ts'
import { bybitKlineCsv } from './bybitKlineCsv.ts'
import { hyperliquidFundingJson } from './hyperliquidFundingJson.ts'
import { hyperliquidUniverseCsv } from './hyperliquidUniverseCsv.ts'
import { okxCandlesCsv } from './okxCandlesCsv.ts'
import { okxFundingCsv } from './okxFundingCsv.ts'

export { ImportError } from './ImportError.ts'
export type { Importer, SourceFile, SourceTick } from './Importer.ts'

/** Every supported source format. Detection, `--format` and the CLI usage text all read this list. */
export const IMPORTERS: readonly Importer[] = [
  binanceKlineCsv,
  bybitKlineCsv,
  okxCandlesCsv,
  okxFundingCsv,
  hyperliquidFundingJson,
  hyperliquidUniverseCsv,
]

export async function readSource(path: string): Promise<SourceFile> {
  let text = await readFile(path, 'utf8')
  if (text.startsWith('\uFEFF')) text = text.slice(1)
  const end = text.indexOf('\n')
  const firstLine = (end < 0 ? text : text.slice(0, end)).replace(/\r$/, '')
  return { path, name: basename(path), text, firstLine }
}

export function importerById(id: string): Importer | undefined {
  return IMPORTERS.find((i) => i.id === id)
}

/** The one importer that recognizes the file; none or several is an error (then pass the format explicitly). */
export function detectImporter(file: SourceFile): Importer {
  const matches = IMPORTERS.filter((i) => i.detect(file))
  if (matches.length === 1) return matches[0]!
  const known = IMPORTERS.map((i) => i.id).join(', ')
  if (matches.length === 0) throw new ImportError('IMPORT_FORMAT', file.path, 1, `unrecognized source format (header '${file.firstLine.slice(0, 80)}'); known formats: ${known}`)
  throw new ImportError('IMPORT_FORMAT', file.path, 1, `ambiguous source format (${matches.map((i) => i.id).join(', ')}); pass the format explicitly`)
}

export interface ImportOptions {
  /** An importer id; skips detection. */
  format?: string
}

export interface ImportedFile {
  path: string
  importer: Importer
  records: number
}

export interface ImportResult {
  files: ImportedFile[]
  /** All records in event-time order; ties keep file argument order, then source line order. */
  ticks: Tick[]
}

/**
 * Imports source files into tape records. Every record is checked against the tick schema; records are put in
 * event-time order (a stable sort, so equal times keep file order, then line order); two records for the same
 * series at the same instant are an error naming both lines. Nothing is returned unless every row is good.
 */
export async function importFiles(paths: readonly string[], options: ImportOptions = {}): Promise<ImportResult> {
  const forced = options.format === undefined ? undefined : importerById(options.format)
  if (options.format !== undefined && !forced) {
    throw new Error(`unknown format '${options.format}'; known: ${IMPORTERS.map((i) => i.id).join(', ')}`)
  }
  const files: ImportedFile[] = []
  const entries: { tick: Tick; time: number; path: string; line: number }[] = []
  for (const path of paths) {
    const source = await readSource(path)
    const importer = forced ?? detectImporter(source)
    const produced = importer.parse(source)
    for (const { tick, line } of produced) {
      try {
        validateTick(tick)
      } catch (err) {
        if (err instanceof TickValidationError) throw new ImportError('IMPORT_ROW', path, line, `row gives an invalid record: ${err.message}`)
        throw err
      }
      entries.push({ tick, time: tickTime(tick), path, line })
    }
    files.push({ path, importer, records: produced.length })
  }
  entries.sort((a, b) => a.time - b.time)

  const seen = new Map<string, { path: string; line: number }>()
  for (const e of entries) {
    const t = e.tick
    const key = `${t.provenance.source}|${t.kind}|${t.instrument}|${t.kind === 'bar' ? t.interval : ''}|${e.time}`
    const first = seen.get(key)
    if (first) {
      const where = first.path === e.path ? `line ${first.line}` : `${first.path}:${first.line}`
      throw new ImportError('IMPORT_DUPLICATE', e.path, e.line, `duplicate ${t.kind} for ${t.instrument} at ${t.provenance.timestamp} (also ${where})`)
    }
    seen.set(key, { path: e.path, line: e.line })
  }
  return { files, ticks: entries.map((e) => e.tick) }
}

/** Imports one file. */
export async function importFile(path: string, options: ImportOptions = {}): Promise<ImportResult> {
  return importFiles([path], options)
}
