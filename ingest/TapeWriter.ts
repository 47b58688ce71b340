/**
 * Writes a tape to stdout or to a file. A file is written under a temporary name and renamed when complete,
 * so a reader never sees half a tape; a name ending in .gz is gzip-compressed (level 6 unless told otherwise, no
 * timestamp in the header, so the same records give the same bytes).
 */
import { createWriteStream, type WriteStream } from 'node:fs'
import { rename, rm } from 'node:fs/promises'
import { createGzip, type Gzip } from 'node:zlib'
import { once } from 'node:events'
import type { Writable } from 'node:stream'
import { tickLine, tickTime, type Tick } from './Tick.ts'

export class TapeWriter {
  readonly #sink: Writable
  readonly #file: WriteStream | null
  readonly #gzip: Gzip | null
  readonly #target: string | null
  readonly #temp: string | null
  #count = 0
  #lastTime = -Infinity
  // Lines are gathered into ~64 KiB chunks: one write (and one gzip call) per record is several times slower.
  #pending: string[] = []
  #pendingBytes = 0

  private constructor(sink: Writable, file: WriteStream | null, gzip: Gzip | null, target: string | null, temp: string | null) {
    this.#sink = sink
    this.#file = file
    this.#gzip = gzip
    this.#target = target
    this.#temp = temp
  }

  /**
   * `out` undefined or '-' writes to stdout. `gzipLevel` (1..9, default 6) applies to a `.gz` target; 1 compresses
   * several times faster for a somewhat larger file.
   */
  static open(out?: string, options: { gzipLevel?: number } = {}): TapeWriter {
    if (!out || out === '-') return new TapeWriter(process.stdout, null, null, null, null)
    const temp = `${out}.${process.pid}.partial`
    const file = createWriteStream(temp)
    if (out.endsWith('.gz')) {
      const gzip = createGzip({ level: options.gzipLevel ?? 6 })
      gzip.pipe(file)
      return new TapeWriter(gzip, file, gzip, out, temp)
    }
    return new TapeWriter(file, file, null, out, temp)
  }

  get count(): number {
    return this.#count
  }

  /** Appends one record; refuses a record earlier than the previous one. */
  async write(tick: Tick): Promise<void> {
    const time = tickTime(tick)
    if (time < this.#lastTime) {
      throw new Error(`tape order violated at record ${this.#count + 1}: ${tick.provenance.timestamp} is earlier than the previous record`)
    }
    this.#lastTime = time
    this.#count++
    const line = tickLine(tick) + '\n'
    this.#pending.push(line)
    this.#pendingBytes += line.length
    if (this.#pendingBytes >= 65536) await this.#flush()
  }

  async #flush(): Promise<void> {
    if (this.#pending.length === 0) return
    const chunk = this.#pending.join('')
    this.#pending = []
    this.#pendingBytes = 0
    if (!this.#sink.write(chunk)) await once(this.#sink, 'drain')
  }

  async close(): Promise<void> {
    await this.#flush()
    if (!this.#file) return
    const finished = once(this.#file, 'close')
    ;(this.#gzip ?? this.#file).end()
    await finished
    await rename(this.#temp!, this.#target!)
  }

  /** Abandons a file tape: removes the partial file. */
  async abort(): Promise<void> {
    if (!this.#file) return
    this.#file.destroy()
    await rm(this.#temp!, { force: true })
  }
}
