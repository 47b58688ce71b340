/**
 * `svc tape import FILE... [--out TAPE] [--format ID]`: converts recorded venue files into a tape (NDJSON ticks in
 * event-time order; gzip when TAPE ends in .gz; stdout by default). Nothing is written unless every row parses;
 * a malformed row is reported as FILE:LINE and the exit code is 1.
 */
import { parseArgs } from 'node:util'
import { basename } from 'node:path'
import { UsageError, type Command } from '../Command.ts'
import { IMPORTERS, ImportError, importerById, importFiles } from '../../ingest/importers/index.ts'
import { TapeWriter } from '../../ingest/TapeWriter.ts'
import { startProgress } from '../../common/progress.ts'
import { progressSettings } from '../environment.ts'
import { childLogger } from '../../common/logger.ts'

const log = childLogger('tape-import')

const usage = `Usage: svc tape import FILE... [--out TAPE] [--format ID]

Imports recorded venue files into one tape in event-time order.

Options:
  -o, --out TAPE     write the tape to TAPE instead of stdout ('.gz' → gzip); written atomically
  -f, --format ID    skip detection and read every FILE as format ID

Formats (detected from file name and header):
${IMPORTERS.map((i) => `  ${i.id.padEnd(26)} ${i.source.padEnd(18)} ${i.summary}`).join('\n')}
`

function isClosedPipe(err: unknown): boolean {
  const code = (err as { code?: string }).code
  return code === 'EPIPE' || code === 'ERR_STREAM_DESTROYED'
}

export const command: Command = {
  name: 'tape import',
  summary: 'Import recorded venue files (Binance, Bybit, OKX, Hyperliquid) into a tape',
  usage,
  async run(argv) {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { out: { type: 'string', short: 'o' }, format: { type: 'string', short: 'f' } },
    })
    if (positionals.length === 0) throw new UsageError('missing FILE')
    if (values.format !== undefined && !importerById(values.format)) {
      throw new UsageError(`unknown --format '${values.format}'; known: ${IMPORTERS.map((i) => i.id).join(', ')}`)
    }

    let result
    try {
      result = await importFiles(positionals, values.format === undefined ? {} : { format: values.format })
    } catch (err) {
      if (err instanceof ImportError || (err as { code?: string }).code === 'ENOENT') {
        process.stderr.write(`svc tape import: ${(err as Error).message}\n`)
        return 1
      }
      throw err
    }

    const toStdout = values.out === undefined || values.out === '-'
    let pipeClosed = false
    const onStdoutError = (err: Error) => {
      if (isClosedPipe(err)) pipeClosed = true
    }
    if (toStdout) process.stdout.on('error', onStdoutError)

    const label = `tape import ${positionals.length === 1 ? basename(positionals[0]!) : `${positionals.length} files`}`
    const progress = startProgress(label, result.ticks.length, 'records', progressSettings())
    const writer = TapeWriter.open(values.out)
    try {
      for (const [i, tick] of result.ticks.entries()) {
        if (pipeClosed) break
        await writer.write(tick)
        if ((i & 1023) === 0) progress.update(i + 1)
      }
      progress.update(writer.count)
      await writer.close()
    } catch (err) {
      // A reader that stops early (`| head`) is not a failure of the import.
      if (toStdout && isClosedPipe(err)) return 0
      await writer.abort()
      throw err
    } finally {
      progress.stop()
      if (toStdout) process.stdout.off('error', onStdoutError)
    }
    if (pipeClosed) return 0
    log.info(
      { files: result.files.map((f) => ({ path: f.path, format: f.importer.id, records: f.records })), records: writer.count, out: values.out ?? 'stdout' },
      'tape imported',
    )
    return 0
  },
}
