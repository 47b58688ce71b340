/**
 * List pages over the one cursor (./Cursor.ts): a page is its items plus `next_cursor`, the position of its last item
 * (null when nothing follows). Each list names its position's shape, so a token of the right scope whose parts are not
 * that shape (hand-edited, or from an older position format) is the same 400 VALIDATION / INVALID_CURSOR as any other
 * token the list did not issue, never a 500 or a misread.
 */
import { decodeCursor, encodeCursor, type CursorPart } from './Cursor.ts'
import { ServiceError } from './ServiceError.ts'

/** The query parameter every paged list takes, as the validation errors name it (JSON pointer of the request part). */
export const CURSOR_FIELD = '/query/cursor'

type PartKind = 'string' | 'number'
type PartsOf<K extends readonly PartKind[]> = { [I in keyof K]: K[I] extends 'number' ? number : string }

/** The position `token` names in list `scope`, checked against the list's position shape `kinds`. */
export function decodePosition<const K extends readonly PartKind[]>(scope: string, token: string, kinds: K, field = CURSOR_FIELD): PartsOf<K> {
  const parts = decodeCursor(scope, token, field)
  if (parts.length !== kinds.length || parts.some((p, i) => typeof p !== kinds[i])) {
    throw new ServiceError('VALIDATION', { message: `${field}: not a cursor this service issued`, detail: { reason: 'INVALID_CURSOR', field } })
  }
  return parts as PartsOf<K>
}

/**
 * One page of `ordered` (already in the list's order, every item strictly after the cursor's position): the first
 * `limit` items and the cursor of the last one when more follow.
 */
export function pageOf<T>(scope: string, ordered: readonly T[], limit: number, positionOf: (item: T) => readonly CursorPart[]): { items: T[]; next_cursor: string | null } {
  const items = ordered.slice(0, limit)
  const more = ordered.length > limit
  return { items, next_cursor: more && items.length > 0 ? encodeCursor(scope, positionOf(items[items.length - 1]!)) : null }
}
