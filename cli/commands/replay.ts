/**
 * `svc replay`: prints a tape's records to stdout as NDJSON, paced by the virtual clock (ingest/Replay.ts).
 * Useful for piping a tape into another process at market speed, and for seeing the pacing.
 */
import { parseArgs } from 'node:util'
import { once } from 'node:events'
import { UsageError, type Command } from '../Command.ts'
import { startProgress } from '../../common/progress.ts'
import { progressSettings } from '../environment.ts'
import { openTapeStream } from '../../ingest/TapeReader.ts'
import { Replay } from '../../ingest/Replay.ts'

const usage = `Usage: svc replay --tape FILE [--speed S] [--from-line N]

Prints the tape's records (byte for byte) as NDJSON lines on stdout, paced by event time.

Options:
  --tape FILE       tape to replay (NDJSON or gzip)
  --speed S         event time per wall time: 1 = real time, 60 = one event-minute per second,
                    0 = as fast as possible (default 1)
  --from-line N     resume: skip records on lines 1..N
`

/** Counts records (newlines) so progress can show a total; cheap next to a paced replay. */
async function countLines(file: string): Promise<number> {
  let lines = 0
  let last = 0x0a
  for await (const chunk of await openTapeStream(file)) {
    const buf = chunk as Buffer
    for (let i = buf.indexOf(0x0a); i !== -1; i = buf.indexOf(0x0a, i + 1)) lines++
    if (buf.length > 0) last = buf[buf.length - 1]!
  }
  return last === 0x0a ? lines : lines + 1
}

export const command: Command = {
  name: 'replay',
  summary: 'Print a tape as NDJSON on stdout, paced by event time (--speed)',
  usage,
  async run(argv) {
    const { values } = parseArgs({
      args: argv,
      options: {
        tape: { type: 'string' },
        speed: { type: 'string', default: '1' },
        'from-line': { type: 'string', default: '0' },
      },
      strict: true,
      allowPositionals: false,
    })
    if (!values.tape) throw new UsageError('--tape is required')
    if (!/^\d+(\.\d+)?$/.test(values.speed)) throw new UsageError(`--speed must be a non-negative number, got '${values.speed}'`)
    if (!/^\d+$/.test(values['from-line'])) throw new UsageError(`--from-line must be a non-negative integer, got '${values['from-line']}'`)

    const controller = new AbortController()
    const stop = () => controller.abort()
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
    // A closed pipe (`| head`) ends the replay quietly.
    const onStdoutError = (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') controller.abort()
      else throw err
    }
    process.stdout.on('error', onStdoutError)

    const total = await countLines(values.tape)
    const progress = startProgress('replay', total, 'records', progressSettings())
    const replay = new Replay({
      tape: values.tape,
      speed: Number(values.speed),
      fromLine: Number(values['from-line']),
      signal: controller.signal,
      progressEvery: 1000,
      onProgress: (p) => progress.update(p.line),
    })
    try {
      await replay.run(async (entry) => {
        if (controller.signal.aborted) return
        if (!process.stdout.write(entry.raw + '\n')) {
          await Promise.race([once(process.stdout, 'drain'), once(controller.signal, 'abort')])
        }
      })
    } finally {
      progress.stop()
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
      process.stdout.off('error', onStdoutError)
    }
    return 0
  },
}
