/**
 * The funnel service on a real EmbeddedLog: snapshots land on the ops.funnel journal, a read older than the interval
 * takes a fresh one first, the admin key is compared both ways, and a restart (reopen over the same data dir) keeps
 * the trend.
 */
import t from 'tap'
import { join } from 'node:path'
import type { Clock } from '../../../common/Clock.ts'
import { ServiceError } from '../../../common/ServiceError.ts'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { FunnelService } from '../../../product/funnel/FunnelService.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { DECISIONS, GRADES, LOCKS, RESOLVED, callSource, drawRows, ledgerSource } from './fixtures.ts'

class TestClock implements Clock {
  constructor(public t: number) {}
  now(): number {
    return this.t
  }
}

const KEY = 'admin-secret-key'
const T0 = Date.parse('2026-03-02T00:00:00.000Z')

async function open(dir: string, clock: Clock) {
  const log = await EmbeddedLog.open(join(dir, 'log'))
  const funnel = await FunnelService.open({
    log, clock, adminKey: KEY, intervalMs: 60_000, partitions: 1,
    sources: { ledger: ledgerSource(DECISIONS, RESOLVED).source, draws: { allRows: drawRows }, calls: callSource(LOCKS, GRADES) },
  })
  return { funnel, close: async () => { await funnel.close(); await log.close() } }
}

t.test('snapshots on demand, the trend newest first, and a restart keeps it', async (t) => {
  const dir = await makeTempDir(t, 'svc-funnel-')
  const clock = new TestClock(T0)
  const a = await open(dir, clock)
  const first = await a.funnel.report(10)
  t.equal(first.funnel!.at, new Date(T0).toISOString(), 'the first read takes a snapshot')
  t.equal(first.window.snapshots, 1)
  t.equal(first.funnel!.window_calls, 7)
  t.same(first.activation.first_lock_to_first_grade, { median_ms: 3_600_000, n: 2, window_calls: 4 })
  clock.t += 30_000
  t.equal((await a.funnel.report(10)).window.snapshots, 1, 'younger than the interval: the newest is served as is')
  clock.t += 30_000
  await a.funnel.report(10)
  clock.t += 60_000
  const third = await a.funnel.report(10)
  t.same(third.trend.map((s) => s.at), [T0 + 120_000, T0 + 60_000, T0].map((ms) => new Date(ms).toISOString()), 'newest first')
  t.same(third.window, { limit: 10, snapshots: 3, newest_at: new Date(T0 + 120_000).toISOString(), oldest_at: new Date(T0).toISOString() })
  t.equal((await a.funnel.report(2)).trend.length, 2, 'limit cuts the trend')
  await a.close()

  // Reopen over the same data dir, a moment later (inside the interval): the trend is read back from the journal.
  clock.t += 1_000
  const b = await open(dir, clock)
  t.teardown(b.close)
  const again = await b.funnel.report(10)
  t.same(again.trend.map((s) => s.at), third.trend.map((s) => s.at), 'the trend survives the restart')
  t.same(again.funnel, third.funnel, 'the newest snapshot is the one recorded')
})

t.test('the admin key: right passes, wrong or missing is ADMIN_KEY_REJECTED', async (t) => {
  const dir = await makeTempDir(t, 'svc-funnel-')
  const a = await open(dir, new TestClock(T0))
  t.teardown(a.close)
  t.doesNotThrow(() => a.funnel.requireAdmin(KEY))
  for (const key of [undefined, '', 'admin-secret-kez', `${KEY}x`]) {
    try {
      a.funnel.requireAdmin(key)
      t.fail(`key ${key} passed`)
    } catch (err) {
      t.ok(err instanceof ServiceError && err.code === 'OPS_FORBIDDEN' && err.detail.reason === 'ADMIN_KEY_REJECTED', `key ${JSON.stringify(key)} refused`)
    }
  }
})
