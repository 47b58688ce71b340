/**
 * The Arena card's public id (spec, Authentication 6: "The Arena card route never discloses an address"): a keyed hash
 * of the lower-cased address, stable across restarts, not readable back into the address. The handle shown beside it
 * is the duel's (one handle per player on every board).
 */
import { createHash } from 'node:crypto'

/** The card id: 20 hex characters. */
export function publicIdOf(payer: string): string {
  return createHash('sha256').update(`svc-arena-card:${payer.toLowerCase()}`).digest('hex').slice(0, 20)
}
