/**
 * The live connector's units on a tape (`svc tape record`): ticks to the tape in the order released, settled gap
 * episodes as NDJSON beside it (`<tape>.gaps.ndjson`, opened on the first one), so a recording carries the same
 * ticks, in the same order, as the service's log would from the same venue session, and says where it has holes.
 */
import { createWriteStream, type WriteStream } from 'node:fs'
import { once } from 'node:events'
import type { TapeWriter } from '../../ingest/TapeWriter.ts'
import type { VenueSink, VenueUnit } from './HyperliquidConnector.ts'

export class VenueTapeSink implements VenueSink {
  readonly #tape: TapeWriter
  readonly gapsPath: string | null
  #gaps: WriteStream | null = null
  gapsWritten = 0

  /** `gapsPath` null (a tape on stdout): gap episodes are not kept. */
  constructor(tape: TapeWriter, gapsPath: string | null) {
    this.#tape = tape
    this.gapsPath = gapsPath
  }

  async write(unit: VenueUnit): Promise<void> {
    for (const tick of unit.ticks) await this.#tape.write(tick)
    if (unit.gaps.length === 0 || this.gapsPath === null) return
    this.#gaps ??= createWriteStream(this.gapsPath, { flags: 'a' })
    for (const gap of unit.gaps) {
      this.gapsWritten++
      if (!this.#gaps.write(JSON.stringify(gap) + '\n')) await once(this.#gaps, 'drain')
    }
  }

  async close(): Promise<void> {
    if (!this.#gaps) return
    const closed = once(this.#gaps, 'close')
    this.#gaps.end()
    await closed
  }
}
