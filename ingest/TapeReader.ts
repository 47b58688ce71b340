/**
 * Reads a tape: NDJSON tick records, optionally gzip (detected by magic bytes, not by name), in event-time order.
 * A bad record stops the read with its line number; nothing is skipped silently.
 */
import { createReadStream } from 'node:fs'
import { open } from 'node:fs/promises'
import { createGunzip } from 'node:zlib'
import { createInterface } from 'node:readline'
import type { Readable } from 'node:stream'
import { codedError } from '../common/CodedError.ts'
import { TickValidationError, tickTime, validateTick, type Tick } from './Tick.ts'

/** A tape line that is not a valid record; `line` is 1-based, `path` a JSON pointer into the record ('' = the line). */
export class TapeFormatError extends codedError({
  TAPE_BAD_RECORD: { retryable: false, meaning: 'a tape line is not JSON, is empty, fails the tick schema or is earlier than the line before' },
}) {
  readonly line: number
  readonly path: string
  constructor(file: string, line: number, path: string, message: string) {
    super('TAPE_BAD_RECORD', `${file}:${line}: ${path ? path + ': ' : ''}${message}`)
    this.line = line
    this.path = path
  }
}

export interface TapeEntry {
  /** 1-based line number in the tape; also the record's sequence number for resumable replay. */
  line: number
  tick: Tick
  /** The exact line text, so a replay can forward bytes without re-serializing. */
  raw: string
  /** Event time, epoch ms. */
  time: number
}

async function isGzip(file: string): Promise<boolean> {
  const fh = await open(file, 'r')
  try {
    const buf = Buffer.alloc(2)
    const { bytesRead } = await fh.read(buf, 0, 2, 0)
    return bytesRead === 2 && buf[0] === 0x1f && buf[1] === 0x8b
  } finally {
    await fh.close()
  }
}

export async function openTapeStream(file: string): Promise<Readable> {
  const raw = createReadStream(file)
  return (await isGzip(file)) ? raw.pipe(createGunzip()) : raw
}

/** Parses one line; throws TapeFormatError with the line number. */
export function parseTapeLine(file: string, lineNo: number, text: string): Tick {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (err) {
    throw new TapeFormatError(file, lineNo, '', `not JSON (${(err as Error).message})`)
  }
  try {
    return validateTick(parsed)
  } catch (err) {
    if (err instanceof TickValidationError) throw new TapeFormatError(file, lineNo, err.path, err.reason)
    throw err
  }
}

/**
 * Iterates a tape. Blank lines are a format error (a tape has none), and so is a record whose event time is
 * earlier than the one before it.
 */
export async function* readTape(file: string, input?: Readable): AsyncGenerator<TapeEntry> {
  const stream = input ?? (await openTapeStream(file))
  const rl = createInterface({ input: stream, crlfDelay: Infinity })
  let lineNo = 0
  let lastTime = -Infinity
  for await (const text of rl) {
    lineNo++
    if (text.length === 0) throw new TapeFormatError(file, lineNo, '', 'empty line')
    const tick = parseTapeLine(file, lineNo, text)
    const time = tickTime(tick)
    if (time < lastTime) {
      throw new TapeFormatError(file, lineNo, '/provenance/timestamp', 'record is earlier than the previous one (tapes are in event-time order)')
    }
    lastTime = time
    yield { line: lineNo, tick, raw: text, time }
  }
}
