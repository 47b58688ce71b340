/**
 * Public names of a payer, derived and abbreviated, never an address (spec, Authentication 6: "The Arena card route
 * never discloses an address; public handles are derived and abbreviated"). Both come from a keyed hash of the
 * lower-cased address, so they are stable across restarts and cannot be read back into the address or a prefix of it.
 */
import { createHash } from 'node:crypto'

const ADJECTIVES = ['amber', 'brisk', 'calm', 'deft', 'eager', 'fleet', 'grand', 'hardy', 'keen', 'lucid', 'merry', 'noble', 'prime', 'quick', 'sage', 'stark'] as const
const NOUNS = ['heron', 'otter', 'falcon', 'lynx', 'raven', 'badger', 'marten', 'osprey', 'ibex', 'kestrel', 'orca', 'puma', 'wren', 'bison', 'crane', 'gecko'] as const

function digest(domain: string, payer: string): Buffer {
  return createHash('sha256').update(`${domain}:${payer.toLowerCase()}`).digest()
}

/** The card id: 20 hex characters. */
export function publicIdOf(payer: string): string {
  return digest('svc-arena-card', payer).toString('hex').slice(0, 20)
}

/** e.g. "keen-otter-3f9a": two words and four hex characters. */
export function handleOf(payer: string): string {
  const d = digest('svc-arena-handle', payer)
  return `${ADJECTIVES[d[0]! & 15]}-${NOUNS[d[1]! & 15]}-${d.subarray(2, 4).toString('hex')}`
}
