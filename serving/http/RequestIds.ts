/**
 * Request ids without a random draw per request: a random per-process prefix and a counter, shaped as a v4 UUID
 * (8-4-4-4-12 hex, version nibble 4, variant 8..b) so clients that parse the id as a UUID keep working.
 *
 * Uniqueness (docs/decisions.md): 74 random prefix bits per process (a restart draws a new prefix, so an id never
 * repeats across restarts in practice) and a 48-bit counter within it; the prefix is redrawn if the counter wraps.
 * Ids are identifiers, not secrets: they are sequential within a process.
 */
import { randomBytes } from 'node:crypto'

const COUNTER_LIMIT = 2 ** 48

export class RequestIds {
  private prefix = ''
  private counter = 0

  constructor() {
    this.redraw()
  }

  next(): string {
    if (this.counter >= COUNTER_LIMIT) this.redraw()
    const n = this.counter++
    // 12 hex digits: pad from a fixed-width string instead of padStart on a variable one.
    const hex = n.toString(16)
    return this.prefix + '000000000000'.slice(hex.length) + hex
  }

  private redraw(): void {
    const h = randomBytes(10).toString('hex')
    const variant = ((parseInt(h[15] as string, 16) & 0x3) | 0x8).toString(16)
    this.prefix = `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(12, 15)}-${variant}${h.slice(16, 19)}-`
    this.counter = 0
  }
}
