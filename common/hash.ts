/**
 * SHA-256 digests as plain lowercase hex (64 characters, no `sha256:` prefix): the one hash text format for input and
 * state hashes, seals, checksums and claim ids.
 */
import { createHash } from 'node:crypto'
import { canonicalJson } from './jcs.ts'

/** SHA-256 of the bytes, or of the UTF-8 encoding of a string. */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex')
}

/** SHA-256 of the RFC 8785 canonical JSON of a value, UTF-8 encoded. */
export function jcsSha256(value: unknown): string {
  return sha256Hex(canonicalJson(value))
}
