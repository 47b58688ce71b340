/**
 * On-disk record frame of the embedded log (all integers big-endian):
 *
 *   u32 bodyLength | u32 crc32(body) | body
 *   body = u8 version(1) | u32 offsetHigh | u32 offsetLow | f64 timestamp | u32 keyLength | key (utf8) | u32 valueLength | value
 *
 * The length prefix lets a scan skip records; the CRC over the whole body (offset and timestamp included) detects a
 * torn or corrupt tail after a crash. The offset is stored so a scan can also detect frames out of sequence.
 */
import { crc32 } from './crc32.ts'

export const FRAME_HEADER_BYTES = 8
const VERSION = 1
const BODY_FIXED_BYTES = 1 + 8 + 8 + 4 + 4
/** Bytes of a frame besides its key and value. */
export const FRAME_OVERHEAD_BYTES = FRAME_HEADER_BYTES + BODY_FIXED_BYTES
/** Upper bound on a body; a length prefix beyond it is treated as corruption. */
export const MAX_BODY_BYTES = 64 * 1024 * 1024

export interface DecodedFrame {
  offset: number
  timestamp: number
  key: string
  value: Buffer
}

export function encodeFrame(offset: number, key: string, value: Buffer, timestamp: number): Buffer {
  const keyLength = Buffer.byteLength(key, 'utf8')
  const bodyLength = BODY_FIXED_BYTES + keyLength + value.length
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + bodyLength)
  let p = FRAME_HEADER_BYTES
  frame.writeUInt8(VERSION, p)
  p += 1
  frame.writeUInt32BE(Math.floor(offset / 0x100000000), p)
  frame.writeUInt32BE(offset >>> 0, p + 4)
  p += 8
  frame.writeDoubleBE(timestamp, p)
  p += 8
  frame.writeUInt32BE(keyLength, p)
  p += 4
  frame.write(key, p, keyLength, 'utf8')
  p += keyLength
  frame.writeUInt32BE(value.length, p)
  p += 4
  value.copy(frame, p)
  frame.writeUInt32BE(bodyLength, 0)
  frame.writeUInt32BE(crc32(frame.subarray(FRAME_HEADER_BYTES)), 4)
  return frame
}

export type FrameCheck = { ok: true; frameBytes: number } | { ok: false; reason: string }

/**
 * Checks the frame starting at `at` in `buf`: complete, sane length, CRC matches, offset as expected.
 * `ok: false` with reason 'incomplete' means more bytes are needed (or, at end of file, a torn tail).
 */
export function checkFrame(buf: Buffer, at: number, expectedOffset: number): FrameCheck {
  if (buf.length - at < FRAME_HEADER_BYTES) return { ok: false, reason: 'incomplete' }
  const bodyLength = buf.readUInt32BE(at)
  if (bodyLength < BODY_FIXED_BYTES || bodyLength > MAX_BODY_BYTES) return { ok: false, reason: `bad length ${bodyLength}` }
  const frameBytes = FRAME_HEADER_BYTES + bodyLength
  if (buf.length - at < frameBytes) return { ok: false, reason: 'incomplete' }
  const body = buf.subarray(at + FRAME_HEADER_BYTES, at + frameBytes)
  if (crc32(body) !== buf.readUInt32BE(at + 4)) return { ok: false, reason: 'crc mismatch' }
  if (body.readUInt8(0) !== VERSION) return { ok: false, reason: `unknown frame version ${body.readUInt8(0)}` }
  const offset = body.readUInt32BE(1) * 0x100000000 + body.readUInt32BE(5)
  if (offset !== expectedOffset) return { ok: false, reason: `offset ${offset} where ${expectedOffset} was expected` }
  const keyLength = body.readUInt32BE(17)
  if (BODY_FIXED_BYTES + keyLength > bodyLength || body.readUInt32BE(21 + keyLength) !== bodyLength - BODY_FIXED_BYTES - keyLength) {
    return { ok: false, reason: 'inconsistent key/value lengths' }
  }
  return { ok: true, frameBytes }
}

/** Decodes a frame already validated by checkFrame. The value is a view into `buf` (a fresh buffer per read batch). */
export function decodeFrame(buf: Buffer, at: number): DecodedFrame {
  const p = at + FRAME_HEADER_BYTES
  const offset = buf.readUInt32BE(p + 1) * 0x100000000 + buf.readUInt32BE(p + 5)
  const timestamp = buf.readDoubleBE(p + 9)
  const keyLength = buf.readUInt32BE(p + 17)
  const key = buf.toString('utf8', p + 21, p + 21 + keyLength)
  const valueLength = buf.readUInt32BE(p + 21 + keyLength)
  const valueStart = p + 25 + keyLength
  const value = buf.subarray(valueStart, valueStart + valueLength)
  return { offset, timestamp, key, value }
}
