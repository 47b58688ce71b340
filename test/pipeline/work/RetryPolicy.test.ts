import t from 'tap'
import { LogError } from '../../../pipeline/log/LogError.ts'
import { RetryPolicy } from '../../../pipeline/work/RetryPolicy.ts'

t.test('waits grow by the factor up to the cap; jitter only shortens them, within its fraction', async (t) => {
  const none = new RetryPolicy({ attempts: 10, baseMs: 100, factor: 2, capMs: 1000, jitter: 0 })
  t.same([2, 3, 4, 5, 6, 7].map((n) => none.waitBefore(n)), [100, 200, 400, 800, 1000, 1000])
  const constant = new RetryPolicy({ attempts: 3, baseMs: 50, factor: 1, jitter: 0 })
  t.same([2, 3].map((n) => constant.waitBefore(n)), [50, 50])
  let u = 0
  const draws = [0, 0.5, 0.999]
  const jittered = new RetryPolicy({ attempts: 5, baseMs: 1000, jitter: 0.5 }, () => draws[u++ % draws.length]!)
  t.same([2, 2, 2].map((n) => jittered.waitBefore(n)), [1000, 750, 500], 'equal jitter: d × (1 − 0.5 U)')
  t.throws(() => new RetryPolicy({ attempts: 0, baseMs: 1 }), RangeError)
})

t.test('the closed error union decides: retryable codes are retried, the others thrown at once', async (t) => {
  t.ok(RetryPolicy.retryable(new LogError('LOG_LOCKED', 'held')), 'LOG_LOCKED is retryable in its table')
  t.notOk(RetryPolicy.retryable(new LogError('LOG_FENCED', 'taken')), 'LOG_FENCED is not')
  t.ok(RetryPolicy.retryable(new LogError('LOG_IO', 'wait timed out', { retryable: true })), 'a per-error override is honoured')
  t.notOk(RetryPolicy.retryable(new Error('plain')), 'an error outside the union is not retried')

  const policy = new RetryPolicy({ attempts: 5, baseMs: 1, jitter: 0 })
  const seen: number[] = []
  const fenced = new LogError('LOG_FENCED', 'taken')
  await t.rejects(policy.run(async (n) => { seen.push(n); throw fenced }), fenced)
  t.same(seen, [1], 'a non-retryable error ends at the first attempt')

  seen.length = 0
  const retried: Array<[number, number]> = []
  const value = await policy.run(
    async (n) => {
      seen.push(n)
      if (n < 3) throw new LogError('LOG_LOCKED', 'held')
      return 'ok'
    },
    { onRetry: (_err, n, waitMs) => retried.push([n, waitMs]) },
  )
  t.equal(value, 'ok')
  t.same(seen, [1, 2, 3])
  t.same(retried, [[1, 1], [2, 2]], 'onRetry hears each failed attempt and its wait')
})

t.test('attempts are bounded: the last error is thrown', async (t) => {
  const policy = new RetryPolicy({ attempts: 3, baseMs: 1, jitter: 0 })
  let calls = 0
  await t.rejects(policy.run(async (n) => { calls++; throw new LogError('LOG_LOCKED', `attempt ${n}`) }), { message: 'attempt 3' })
  t.equal(calls, 3)
  calls = 0
  await t.rejects(policy.run(async () => { calls++; throw new Error('x') }, { retryable: () => true }), { message: 'x' })
  t.equal(calls, 3, 'a caller-given predicate replaces the flags')
})

t.test('an abort ends a wait at once and rejects with the reason; an aborted signal runs nothing', async (t) => {
  const policy = new RetryPolicy({ attempts: Infinity, baseMs: 60_000, jitter: 0 })
  const ac = new AbortController()
  let calls = 0
  const started = Date.now()
  const run = policy.run(async () => { calls++; throw new LogError('LOG_LOCKED', 'held') }, { signal: ac.signal })
  setTimeout(() => ac.abort(new Error('stopping')), 20)
  await t.rejects(run, { message: 'stopping' })
  t.ok(Date.now() - started < 5_000, 'the minute-long wait was cut short')
  t.equal(calls, 1)
  await t.rejects(policy.run(async () => { calls++ }, { signal: ac.signal }), { message: 'stopping' })
  t.equal(calls, 1, 'nothing ran under an aborted signal')
})
