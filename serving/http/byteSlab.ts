/**
 * Response bytes (envelope bodies, header blocks) are carved from 256 KiB slabs rather than Node's 8 KiB Buffer
 * pool, which a 1–2 KB envelope exhausts every few responses. Slices are never reused; a slab is freed once no
 * slice cut from it is referenced. Handing uWS bytes instead of strings spares it a UTF-8 conversion and a malloc
 * per string per response.
 */
const SLAB_BYTES = 256 * 1024
/** Larger requests get their own Buffer so a slab is not wasted on one big body. */
const SLAB_MAX_PIECE = SLAB_BYTES / 8

let slab = Buffer.allocUnsafeSlow(0)
let slabUsed = 0

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
 */
export function slabConcat(head: Uint8Array, middle: string, tail: Uint8Array): Buffer {
  const most = head.length + middle.length * 3 + tail.length
  if (most > SLAB_MAX_PIECE) return Buffer.concat([head, Buffer.from(middle, 'utf8'), tail])
  reserve(most)
  const start = slabUsed
  slab.set(head, start)
  const written = slab.write(middle, start + head.length, 'utf8')
  slab.set(tail, start + head.length + written)
  const size = head.length + written + tail.length
  slabUsed += (size + 7) & ~7
  return slab.subarray(start, start + size)
}
