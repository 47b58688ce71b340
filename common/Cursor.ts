/**
 * The one cursor of the service: an opaque token a list page or a stream hands out, and takes back to continue after
 * the last item the client saw. Stable under appends: it names a position in an order that new items only extend (a
 * journal's log position, an append sequence, a (time, id) key), never an offset into a page that moves.
 *
 * Wire form: base64url of `c1.<scope>.<JSON array of the position's parts>`. The scope (which list or stream issued
 * it) is inside, so a cursor from one list given to another is refused as INVALID_CURSOR rather than misread; the
 * version prefix lets the format change without misreading old tokens. Clients must treat it as opaque.
 */
import { ServiceError } from './ServiceError.ts'

export type CursorPart = string | number

const VERSION = 'c1'
const MAX_LENGTH = 1024

/** The token for the position `parts` in the list or stream `scope` (scope: a short stable name, no dots). */
export function encodeCursor(scope: string, parts: readonly CursorPart[]): string {
  if (!/^[a-z0-9_-]+$/.test(scope)) throw new Error(`cursor scope ${JSON.stringify(scope)}: lowercase letters, digits, '_' and '-' only`)
  return Buffer.from(`${VERSION}.${scope}.${JSON.stringify(parts)}`, 'utf8').toString('base64url')
}

/**
 * The position a token names, if `scope` issued it; a token that is not one (malformed, another scope, another
 * version) is a 400 VALIDATION / INVALID_CURSOR naming `field` (the query parameter or header that carried it).
 */
export function decodeCursor(scope: string, token: string, field = 'cursor'): CursorPart[] {
  const refuse = (why: string) => new ServiceError('VALIDATION', { message: `${field}: ${why}`, detail: { reason: 'INVALID_CURSOR', field } })
  if (token.length === 0 || token.length > MAX_LENGTH || !/^[A-Za-z0-9_-]+$/.test(token)) throw refuse('not a cursor this service issued')
  const text = Buffer.from(token, 'base64url').toString('utf8')
  const prefix = `${VERSION}.${scope}.`
  if (!text.startsWith(prefix)) throw refuse(text.startsWith(`${VERSION}.`) ? 'a cursor of another list or stream' : 'not a cursor this service issued')
  let parts: unknown
  try {
    parts = JSON.parse(text.slice(prefix.length))
  } catch {
    throw refuse('not a cursor this service issued')
  }
  if (!Array.isArray(parts) || !parts.every((p) => typeof p === 'string' || (typeof p === 'number' && Number.isFinite(p)))) throw refuse('not a cursor this service issued')
  return parts as CursorPart[]
}
