/**
 * The payer's own notifications as a live stream (issue 33, streams): what GET /v1/arena/notifications lists, as each
 * enters the feed, for the payer only (the route proves the payer exactly as the REST route does).
 *
 * Position: the notification's id, the payer's own ordinal (1, 2, 3 …) that the one writer assigns in order and
 * stores (pipeline/records/notificationRecord.ts), so it only grows and is the same after a restart. The cursor names
 * the payer too: one payer's cursor given for another is INVALID_CURSOR. Kinds the payer switched off are left out,
 * as in the feed.
 */
import { decodeCursor, encodeCursor } from '../../common/Cursor.ts'
import type { EventStream, StreamEvent } from '../../common/EventStream.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import type { NotificationRow } from '../../pipeline/records/notificationRecord.ts'
import type { ArenaProjection } from './ArenaProjection.ts'
import type { ColdFeed } from './ColdFeed.ts'

/** Cold rows read per DuckDB statement while a stream catches up from a cursor older than the hot feed. */
const COLD_BATCH = 500

const SCOPE = 'notifications'

export class NotificationStreams {
  private readonly listeners = new Map<string, Set<(e: StreamEvent) => void>>()

  constructor(
    private readonly projection: ArenaProjection,
    private readonly cold: ColdFeed | null = null,
  ) {
    projection.onNotification = (row) => this.entered(row)
  }

  private event(payer: string, row: NotificationRow): StreamEvent {
    return {
      cursor: encodeCursor(SCOPE, [payer, row.id]),
      event: 'notification',
      data: { id: row.id, kind: row.kind, ref: row.ref, payload: row.payload, created_at: row.created_at, read_at: null },
    }
  }

  private entered(row: NotificationRow): void {
    const payer = row.payer.toLowerCase()
    const fns = this.listeners.get(payer)
    if (!fns || fns.size === 0 || !this.projection.shows(payer, row.kind)) return
    const e = this.event(payer, row)
    for (const fn of fns) fn(e)
  }

  /** The stream of one payer's notifications. */
  stream(payer: string): EventStream {
    const p = payer.toLowerCase()
    return {
      topic: `arena/notifications/${p}`,
      reader: (cursor, field) => {
        let after = 0
        if (cursor !== null) {
          const parts = decodeCursor(SCOPE, cursor, field)
          if (parts.length !== 2 || parts[0] !== p || typeof parts[1] !== 'number' || !Number.isSafeInteger(parts[1]) || parts[1] < 0) {
            throw new ServiceError('VALIDATION', { message: `${field}: not a position of this payer's notifications`, detail: { reason: 'INVALID_CURSOR', field } })
          }
          after = parts[1]
        } else after = this.projection.peek(p)?.seq ?? 0
        let pending: NotificationRow[] | null = null
        // A cursor below the newest row that left memory (issue 31) reads the cold rows first, a batch at a time, each
        // merged with the hot rows up to its last id; then the hot rest once, as before.
        const s = this.projection.peek(p)
        let coldDone = this.cold === null || s === undefined || after >= s.coldMax
        let reading: Promise<void> | null = null
        return {
          next: (max) => {
            if (pending === null || (pending.length === 0 && !coldDone)) {
              if (coldDone) pending = this.projection.notificationsAfter(p, after)
              else {
                const scope = this.projection.coldScope(s!)
                if (scope === null) {
                  coldDone = true
                  pending = this.projection.notificationsAfter(p, after)
                } else {
                  reading ??= this.cold!.rows(scope, { read: null, above: after, order: 'asc', limit: COLD_BATCH }).then((rows) => {
                    reading = null
                    const upTo = rows.length < COLD_BATCH ? Infinity : rows[rows.length - 1]!.id
                    if (upTo === Infinity) coldDone = true
                    pending = [...rows, ...this.projection.notificationsAfter(p, after, upTo)].sort((a, b) => a.id - b.id)
                    if (upTo !== Infinity) after = upTo
                  })
                  return { events: [], done: false, wait: reading }
                }
              }
            }
            const rows = pending.splice(0, max)
            if (rows.length > 0) after = Math.max(after, rows[rows.length - 1]!.id)
            return { events: rows.map((r) => this.event(p, r)), done: coldDone && pending.length === 0 }
          },
        }
      },
      listen: (fn) => {
        let fns = this.listeners.get(p)
        if (!fns) this.listeners.set(p, (fns = new Set()))
        fns.add(fn)
        return () => {
          fns.delete(fn)
          if (fns.size === 0) this.listeners.delete(p)
        }
      },
    }
  }
}
