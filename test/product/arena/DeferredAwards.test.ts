/**
 * Awards derived for another instance's payer (product/arena/DeferredAwards.ts): settled by the owner's rows with the
 * same id or key; released when the owner's notifications pass a group's ids (it derived them otherwise) or the group
 * outlives its ttl; taken, in the order derived, by a new owner.
 */
import t from 'tap'
import type { ExperienceRow } from '../../../pipeline/records/experienceRecord.ts'
import type { NotificationRow } from '../../../pipeline/records/notificationRecord.ts'
import { DeferredAwards } from '../../../product/arena/DeferredAwards.ts'

const P = '0x' + '1'.repeat(40)
const Q = '0x' + '2'.repeat(40)
const AT = '2026-03-02T09:00:00.000Z'

const xp = (id: string, payer = P): ExperienceRow => ({ id, payer, kind: 'correct_call', xp: 20, ref: id, level: 1, created_at: AT })
const note = (key: string, id: number, payer = P): NotificationRow => ({ key, payer, id, kind: key.split('|')[0]!, ref: key.split('|')[1]!, payload: {}, created_at: AT })

t.test('the owner writing what was derived here settles it row by row', async (t) => {
  const d = new DeferredAwards(60_000)
  d.add(P, { experience: [xp('call:c1')], notifications: [note(`call_resolved|c1|${P}`, 5), note(`streak_extended|c1|${P}`, 6)] }, 0)
  t.equal(d.size, 1)
  t.equal(d.settleExperience(xp('call:c1'))?.id, 'call:c1', 'the experience row with its id')
  t.equal(d.settleExperience(xp('call:c1')), null, 'once')
  const first = d.settleNotification(note(`call_resolved|c1|${P}`, 5))
  t.equal(first.settled?.key, `call_resolved|c1|${P}`)
  t.same(first.released, { experience: [], notifications: [] }, 'the group still waits for its id 6')
  const second = d.settleNotification(note(`streak_extended|c1|${P}`, 6))
  t.equal(second.settled?.id, 6)
  t.equal(d.size, 0, 'nothing left')
})

t.test("the owner's notifications passing a group's ids release what it did not write as derived here", async (t) => {
  const d = new DeferredAwards(60_000)
  d.add(P, { experience: [], notifications: [note(`call_resolved|c1|${P}`, 5)] }, 0)
  d.add(P, { experience: [xp('badge:streak_3')], notifications: [note(`badge_earned|streak_3|${P}`, 6)] }, 0)
  d.add(P, { experience: [], notifications: [note(`call_resolved|c2|${P}`, 7)] }, 0)
  // The owner folded c2 before the badge: its 6 is c2's resolution.
  const r = d.settleNotification(note(`call_resolved|c2|${P}`, 6))
  t.equal(r.settled?.id, 7, "the deferred row with the owner's key is settled, whatever its id")
  t.same(r.released.notifications.map((n) => n.key), [`call_resolved|c1|${P}`, `badge_earned|streak_3|${P}`], 'the groups at or below id 6 are released')
  t.same(r.released.experience.map((x) => x.id), ['badge:streak_3'], 'with their experience rows')
  t.equal(d.size, 0)
  t.same(d.settleNotification(note(`call_resolved|c3|${Q}`, 1)), { settled: null, released: { experience: [], notifications: [] } }, "another payer's row touches nothing")
})

t.test('a group past its ttl is released; a new owner takes the rest in the order derived', async (t) => {
  const d = new DeferredAwards(1_000)
  d.add(P, { experience: [xp('quest:daily_correct_1:2026-03-02')], notifications: [] }, 0)
  d.add(P, { experience: [], notifications: [note(`call_resolved|c1|${P}`, 3)] }, 1_500)
  d.add(Q, { experience: [], notifications: [note(`call_resolved|c9|${Q}`, 1)] }, 1_600)
  const expired = d.expire(2_000)
  t.same(expired.experience.map((x) => x.id), ['quest:daily_correct_1:2026-03-02'], 'the group older than 1 s')
  t.same(expired.notifications, [])
  const taken = d.take((payer) => payer === P)
  t.same(taken.map((x) => [x.payer, x.groups.map((g) => g.notifications.map((n) => n.id))]), [[P, [[3]]]], "P's groups")
  t.equal(d.size, 1, "Q's stay")
  t.same(d.take(() => true).map((x) => x.payer), [Q])
})
