/**
 * The public handle of a payer, one for every board that names players (spec, Authentication 6: "public handles are
 * derived and abbreviated"; Call and duel boards: "derived abbreviated handle"; the Arena's leaderboards, seasons and
 * cards). Derived from a keyed hash of the lower-cased address, so it is stable across restarts and the same on the
 * duel's public board and on the Arena's, and cannot be read back into the address or a prefix of it (the card route
 * "never discloses an address"). The Arena reaches it through the duel's public face (index.ts).
 */
import { createHash } from 'node:crypto'

const ADJECTIVES = ['amber', 'brisk', 'calm', 'deft', 'eager', 'fleet', 'grand', 'hardy', 'keen', 'lucid', 'merry', 'noble', 'prime', 'quick', 'sage', 'stark'] as const
const NOUNS = ['heron', 'otter', 'falcon', 'lynx', 'raven', 'badger', 'marten', 'osprey', 'ibex', 'kestrel', 'orca', 'puma', 'wren', 'bison', 'crane', 'gecko'] as const

/** e.g. "keen-otter-3f9a": two words and four hex characters (256 word pairs × 65,536). */
export function handleOf(payer: string): string {
  const d = createHash('sha256').update(`svc-arena-handle:${payer.toLowerCase()}`).digest()
  return `${ADJECTIVES[d[0]! & 15]}-${NOUNS[d[1]! & 15]}-${d.subarray(2, 4).toString('hex')}`
}
