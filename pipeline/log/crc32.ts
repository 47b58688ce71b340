/**
 * CRC-32 (IEEE 802.3, reflected, poly 0xEDB88320) — the checksum framing every EmbeddedLog record.
 * node:zlib's native crc32 exists only from Node 20.15 / 22.2; older Node 20 builds get the table version.
 * Both agree with the check value CRC32("123456789") = 0xCBF43926 (test/pipeline/log/crc32.test.ts).
 */
import * as zlib from 'node:zlib'

const TABLE = (() => {
  const table = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c >>> 0
  }
  return table
})()

export function crc32Table(data: Uint8Array): number {
  let crc = 0xffffffff
  for (let i = 0; i < data.length; i++) crc = TABLE[(crc ^ data[i]!) & 0xff]! ^ (crc >>> 8)
  return (crc ^ 0xffffffff) >>> 0
}

const native = (zlib as unknown as { crc32?: (data: Uint8Array) => number }).crc32

/** Unsigned 32-bit CRC of `data`. */
export const crc32: (data: Uint8Array) => number = native ? (data) => native(data) >>> 0 : crc32Table
