/**
 * Response bytes (envelope bodies, header blocks) are carved from 256 KiB slabs rather than Node's 8 KiB Buffer
 * pool, which a 1–2 KB envelope exhausts every few responses. Slices are never reused; a slab is freed once no
 * slice cut from it is referenced. Handing uWS bytes instead of strings spares it a UTF-8 conversion and a malloc
 * per string per response.
 */
const SLAB_BYTES = 256 * 1024
/** Larger pieces do not take slab room: slabUtf8 gives them a Buffer of their own, slabConcat the lent buffer. */
const SLAB_MAX_PIECE = SLAB_BYTES / 8
/** Envelopes up to this size are written into the one lent buffer (slabConcat); larger ones get a Buffer of their own. */
const LENT_MAX_BYTES = 4 * 1024 * 1024

let slab = Buffer.allocUnsafeSlow(0)
let slabUsed = 0
let lent = Buffer.allocUnsafeSlow(0)

function reserve(size: number): void {
  if (slabUsed + size > slab.length) {
    slab = Buffer.allocUnsafeSlow(SLAB_BYTES)
    slabUsed = 0
  }
}

/** text as UTF-8 bytes in a slab slice (written once, without measuring it first). */
export function slabUtf8(text: string): Buffer {
  // A UTF-16 code unit never takes more than 3 UTF-8 bytes.
  const most = text.length * 3
  if (most > SLAB_MAX_PIECE) return Buffer.from(text, 'utf8')
  reserve(most)
  const written = slab.write(text, slabUsed, 'utf8')
  const out = slab.subarray(slabUsed, slabUsed + written)
  slabUsed += (written + 7) & ~7
  return out
}

/**
 * head + UTF-8 of middle + tail in one slab slice: the envelope's cached opening, its per-response stamp and its
 * cached closing, with one string write (a Buffer write beats storing a string's bytes one at a time in JS).
 *
 * A body over SLAB_MAX_PIECE (a 200-row leaderboard is ~40 KB) is LENT instead: written into one buffer that the next
 * large body overwrites. A fresh Buffer per large response was a GC cost of its own: V8 counts Buffer memory as
 * external and runs a full collection for every few MB of it, which with a large heap (the Arena's 100k payers)
 * halved the read rate of such routes (bench/arena.ts). The caller must hand the body to its writer before anything
 * else runs (the Dispatcher serializes and sends in one synchronous step; uWS copies a body in end(), an MCP capture
 * decodes it in send()).
 */
export function slabConcat(head: Uint8Array, middle: string, tail: Uint8Array): Buffer {
  const most = head.length + middle.length * 3 + tail.length
  if (most > SLAB_MAX_PIECE) return lentConcat(head, middle, tail, most)
  reserve(most)
  const start = slabUsed
  slab.set(head, start)
  const written = slab.write(middle, start + head.length, 'utf8')
  slab.set(tail, start + head.length + written)
  const size = head.length + written + tail.length
  slabUsed += (size + 7) & ~7
  return slab.subarray(start, start + size)
}

function lentConcat(head: Uint8Array, middle: string, tail: Uint8Array, most: number): Buffer {
  if (most > LENT_MAX_BYTES) return Buffer.concat([head, Buffer.from(middle, 'utf8'), tail])
  if (lent.length < most) lent = Buffer.allocUnsafeSlow(Math.min(LENT_MAX_BYTES, Math.max(most, lent.length * 2)))
  lent.set(head, 0)
  const written = lent.write(middle, head.length, 'utf8')
  lent.set(tail, head.length + written)
  return lent.subarray(0, head.length + written + tail.length)
}
