/**
 * Awards this instance computed for payers whose awards another instance of a cluster writes (issue 32; Arena.ts,
 * "Several instances"): every instance folds every call event and derives the same awards, but only the payer's owner
 * writes them. The others keep what they derived here, staged (so it is held, and a later event never derives it
 * again), until they read the owner's rows:
 * - a row read with the id (experience) or key (notification) of a deferred one settles that one;
 * - a notification read with id n settles every deferred group (one event's awards) whose notification ids are all
 *   ≤ n: the owner has written that far, so what it did not write as derived here (it folded the events in another
 *   order) is the owner's to decide, and is released;
 * - a group older than `ttlMs` is released (an owner that derived nothing for that event: its next notification,
 *   which would settle the group, may never come).
 * When this instance takes the payer over, the groups still deferred are what the previous owner never wrote: they are
 * taken (take()) and written, renumbered after the payer's last notification read.
 */
import type { ExperienceRow } from '../../pipeline/records/experienceRecord.ts'
import type { NotificationRow } from '../../pipeline/records/notificationRecord.ts'

/** One event's awards, as derived here for a payer another instance writes. */
export interface DeferredGroup {
  experience: ExperienceRow[]
  notifications: NotificationRow[]
  /** When it was deferred (wall clock, ms). */
  since: number
}

/** Rows no longer deferred that the owner did not write as derived here: their reservations end. */
export interface Released {
  experience: ExperienceRow[]
  notifications: NotificationRow[]
}

export class DeferredAwards {
  private readonly byPayer = new Map<string, DeferredGroup[]>()

  constructor(private readonly ttlMs: number) {}

  /** Payers with awards deferred. */
  get size(): number {
    return this.byPayer.size
  }

  add(payer: string, group: Omit<DeferredGroup, 'since'>, now: number): void {
    const g = { ...group, since: now }
    const list = this.byPayer.get(payer)
    if (list) list.push(g)
    else this.byPayer.set(payer, [g])
  }

  /** The owner's experience row read: the deferred one with its id, if any, is settled (returned). */
  settleExperience(row: ExperienceRow): ExperienceRow | null {
    const list = this.byPayer.get(row.payer)
    if (!list) return null
    for (const g of list) {
      const i = g.experience.findIndex((x) => x.id === row.id)
      if (i < 0) continue
      const [settled] = g.experience.splice(i, 1)
      this.prune(row.payer, list)
      return settled!
    }
    return null
  }

  /**
   * The owner's notification read: the deferred one with its key is settled (returned), and every group whose
   * notifications are all at or below its id is released with whatever else it still holds.
   */
  settleNotification(row: NotificationRow): { settled: NotificationRow | null; released: Released } {
    const released: Released = { experience: [], notifications: [] }
    const list = this.byPayer.get(row.payer)
    if (!list) return { settled: null, released }
    let settled: NotificationRow | null = null
    for (const g of list) {
      const i: number = settled ? -1 : g.notifications.findIndex((n) => n.key === row.key)
      if (i >= 0) settled = g.notifications.splice(i, 1)[0]!
    }
    const kept: DeferredGroup[] = []
    for (const g of list) {
      if (g.notifications.length > 0 && g.notifications.every((n) => n.id <= row.id)) release(g, released)
      else kept.push(g)
    }
    list.length = 0
    list.push(...kept)
    this.prune(row.payer, list)
    return { settled, released }
  }

  /** Groups deferred before `now - ttlMs`, released. */
  expire(now: number): Released {
    const out: Released = { experience: [], notifications: [] }
    for (const [payer, list] of this.byPayer) {
      const kept = list.filter((g) => (g.since < now - this.ttlMs ? (release(g, out), false) : true))
      list.length = 0
      list.push(...kept)
      this.prune(payer, list)
    }
    return out
  }

  /** The groups still deferred for the payers `owned` selects, in the order derived, removed from here. */
  take(owned: (payer: string) => boolean): Array<{ payer: string; groups: DeferredGroup[] }> {
    const out: Array<{ payer: string; groups: DeferredGroup[] }> = []
    for (const [payer, groups] of this.byPayer) {
      if (!owned(payer)) continue
      this.byPayer.delete(payer)
      out.push({ payer, groups })
    }
    return out
  }

  private prune(payer: string, list: DeferredGroup[]): void {
    for (let i = list.length - 1; i >= 0; i--) if (list[i]!.experience.length === 0 && list[i]!.notifications.length === 0) list.splice(i, 1)
    if (list.length === 0) this.byPayer.delete(payer)
  }
}

function release(g: DeferredGroup, out: Released): void {
  out.experience.push(...g.experience)
  out.notifications.push(...g.notifications)
  g.experience = []
  g.notifications = []
}
