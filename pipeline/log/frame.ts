/**
 * On-disk record frame of the embedded log (all integers big-endian):
 *
 *   u32 bodyLength | u32 crc32(body) | body
 *   version 1 (a plain send):
 *     body = u8 1 | u32 offsetHigh | u32 offsetLow | f64 timestamp | u32 keyLength | key (utf8) | u32 valueLength | value
 *   version 2 (a record of an atomic unit, EmbeddedLog.sendAtomic):
 *     body = u8 2 | u32 offsetHigh | u32 offsetLow | f64 timestamp | u32 txHigh | u32 txLow | u32 txFrames
 *            | u32 keyLength | key (utf8) | u32 valueLength | value
 *
 * The length prefix lets a scan skip records; the CRC over the whole body (offset, timestamp and transaction fields
 * included) detects a torn or corrupt tail after a crash. The offset is stored so a scan can also detect frames out of
 * sequence. A version-2 frame names its transaction (txId > 0) and how many frames that transaction wrote across all
 * partitions of all topics (txFrames), so recovery can tell a transaction that reached the disk whole from one torn by
 * a crash: it counts the frames it finds per txId. Version 1 frames are still written by plain sends and read as
 * before, so logs written before version 2 existed open unchanged.
 */
import { crc32 } from './crc32.ts'

export const FRAME_HEADER_BYTES = 8
const V1 = 1
const V2 = 2
const V1_FIXED_BYTES = 1 + 8 + 8 + 4 + 4
const V2_FIXED_BYTES = V1_FIXED_BYTES + 8 + 4
/** Bytes of a version-1 frame besides its key and value (the in-memory size estimate of a record). */
export const FRAME_OVERHEAD_BYTES = FRAME_HEADER_BYTES + V1_FIXED_BYTES
/** Upper bound on a body; a length prefix beyond it is treated as corruption. */
export const MAX_BODY_BYTES = 64 * 1024 * 1024
/** Transaction ids are stored as u64 but kept below 2^53 so they stay exact JS numbers. */
export const MAX_TX_ID = Number.MAX_SAFE_INTEGER

/** The transaction a version-2 frame belongs to: its id and its frame count across every partition. */
export interface FrameTx {
  id: number
  frames: number
}

export interface DecodedFrame {
  offset: number
  timestamp: number
  key: string
  value: Buffer
  /** null for a version-1 frame. */
  tx: FrameTx | null
}

/** A version-1 frame, or a version-2 frame of transaction `tx`. */
export function encodeFrame(offset: number, key: string, value: Buffer, timestamp: number, tx: FrameTx | null = null): Buffer {
  const keyLength = Buffer.byteLength(key, 'utf8')
  const fixed = tx ? V2_FIXED_BYTES : V1_FIXED_BYTES
  const bodyLength = fixed + keyLength + value.length
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + bodyLength)
  let p = FRAME_HEADER_BYTES
  frame.writeUInt8(tx ? V2 : V1, p)
  p += 1
  frame.writeUInt32BE(Math.floor(offset / 0x100000000), p)
  frame.writeUInt32BE(offset >>> 0, p + 4)
  p += 8
  frame.writeDoubleBE(timestamp, p)
  p += 8
  if (tx) {
    frame.writeUInt32BE(Math.floor(tx.id / 0x100000000), p)
    frame.writeUInt32BE(tx.id >>> 0, p + 4)
    frame.writeUInt32BE(tx.frames, p + 8)
    p += 12
  }
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
 * Checks the frame starting at `at` in `buf`: complete, sane length, CRC matches, known version, offset as expected,
 * and (version 2) a transaction id and frame count that can belong to a transaction.
 * `ok: false` with reason 'incomplete' means more bytes are needed (or, at end of file, a torn tail).
 */
export function checkFrame(buf: Buffer, at: number, expectedOffset: number): FrameCheck {
  if (buf.length - at < FRAME_HEADER_BYTES) return { ok: false, reason: 'incomplete' }
  const bodyLength = buf.readUInt32BE(at)
  if (bodyLength < V1_FIXED_BYTES || bodyLength > MAX_BODY_BYTES) return { ok: false, reason: `bad length ${bodyLength}` }
  const frameBytes = FRAME_HEADER_BYTES + bodyLength
  if (buf.length - at < frameBytes) return { ok: false, reason: 'incomplete' }
  const body = buf.subarray(at + FRAME_HEADER_BYTES, at + frameBytes)
  if (crc32(body) !== buf.readUInt32BE(at + 4)) return { ok: false, reason: 'crc mismatch' }
  const version = body.readUInt8(0)
  if (version !== V1 && version !== V2) return { ok: false, reason: `unknown frame version ${version}` }
  const offset = body.readUInt32BE(1) * 0x100000000 + body.readUInt32BE(5)
  if (offset !== expectedOffset) return { ok: false, reason: `offset ${offset} where ${expectedOffset} was expected` }
  const fixed = version === V1 ? V1_FIXED_BYTES : V2_FIXED_BYTES
  if (bodyLength < fixed) return { ok: false, reason: `bad length ${bodyLength} for version ${version}` }
  if (version === V2) {
    const txId = body.readUInt32BE(17) * 0x100000000 + body.readUInt32BE(21)
    if (txId < 1 || txId > MAX_TX_ID || body.readUInt32BE(25) < 1) return { ok: false, reason: 'bad transaction fields' }
  }
  const keyLength = body.readUInt32BE(fixed - 8)
  if (fixed + keyLength > bodyLength || body.readUInt32BE(fixed - 4 + keyLength) !== bodyLength - fixed - keyLength) {
    return { ok: false, reason: 'inconsistent key/value lengths' }
  }
  return { ok: true, frameBytes }
}

/** The transaction of a frame already validated by checkFrame (null for version 1), without decoding key and value. */
export function frameTx(buf: Buffer, at: number): FrameTx | null {
  const p = at + FRAME_HEADER_BYTES
  if (buf.readUInt8(p) !== V2) return null
  return { id: buf.readUInt32BE(p + 17) * 0x100000000 + buf.readUInt32BE(p + 21), frames: buf.readUInt32BE(p + 25) }
}

/** Decodes a frame already validated by checkFrame. The value is a view into `buf` (a fresh buffer per read batch). */
export function decodeFrame(buf: Buffer, at: number): DecodedFrame {
  const p = at + FRAME_HEADER_BYTES
  const offset = buf.readUInt32BE(p + 1) * 0x100000000 + buf.readUInt32BE(p + 5)
  const timestamp = buf.readDoubleBE(p + 9)
  const tx = frameTx(buf, at)
  const k = p + (tx ? V2_FIXED_BYTES : V1_FIXED_BYTES) - 8 // the key length field
  const keyLength = buf.readUInt32BE(k)
  const key = buf.toString('utf8', k + 4, k + 4 + keyLength)
  const valueLength = buf.readUInt32BE(k + 4 + keyLength)
  const valueStart = k + 8 + keyLength
  const value = buf.subarray(valueStart, valueStart + valueLength)
  return { offset, timestamp, key, value, tx }
}
