import t from 'tap'
import { LogError } from '../../../pipeline/log/LogError.ts'
import { RetryPolicy } from '../../../pipeline/work/RetryPolicy.ts'
import { RetryingWorker, type AttemptVerdict } from '../../../pipeline/work/RetryingWorker.ts'

interface Job { id: string; plan: AttemptVerdict[] }

function worker(options: { attempts?: number; concurrency?: number; baseMs?: number } = {}) {
  const log: string[] = []
  const errors: string[] = []
  let inflight = 0
  let peak = 0
  const w = new RetryingWorker<Job>({
    policy: new RetryPolicy({ attempts: options.attempts ?? 3, baseMs: options.baseMs ?? 5, jitter: 0 }),
    concurrency: options.concurrency ?? 2,
    key: (job) => job.id,
    attempt: async (job, n, last) => {
      inflight++
      peak = Math.max(peak, inflight)
      await new Promise((r) => setTimeout(r, 2))
      inflight--
      log.push(`${job.id}#${n}${last ? '!' : ''}`)
      const v = job.plan[n - 1] ?? 'done'
      if (v === ('throw' as AttemptVerdict)) throw new LogError('LOG_LOCKED', 'busy')
      return v
    },
    onError: (err, job, n) => errors.push(`${job.id}#${n}: ${(err as Error).message}`),
  })
  return { w, log, errors, peak: () => peak }
}

t.test('jobs run at most `concurrency` at a time; retries wait and are bounded; a key is held until done', async (t) => {
  const { w, log, peak } = worker({ attempts: 3, concurrency: 2 })
  t.ok(w.submit({ id: 'a', plan: ['retry', 'done'] }))
  t.ok(w.submit({ id: 'b', plan: ['retry', 'retry', 'retry'] }))
  t.ok(w.submit({ id: 'c', plan: ['done'] }))
  t.ok(w.submit({ id: 'd', plan: ['done'] }))
  t.notOk(w.submit({ id: 'a', plan: [] }), 'the same job is not queued twice')
  t.ok(w.has('b'))
  await w.idle()
  t.same([...log].sort(), ['a#1', 'a#2', 'b#1', 'b#2', 'b#3!', 'c#1', 'd#1'], 'every attempt once; b stops at the bound')
  t.ok(peak() <= 2, `at most 2 in flight (saw ${peak()})`)
  t.notOk(w.has('b'), 'keys are released once done')
  t.ok(w.submit({ id: 'a', plan: [] }), 'a done job may be submitted again')
  await w.idle()
})

t.test('a thrown retryable error is retried; the last one goes to onError', async (t) => {
  const { w, log, errors } = worker({ attempts: 2 })
  w.submit({ id: 'x', plan: ['throw' as AttemptVerdict, 'throw' as AttemptVerdict] })
  await w.idle()
  t.same(log, ['x#1', 'x#2!'])
  t.same(errors, ['x#2: busy'])
})

t.test('a job resumed at a later attempt waits first, then makes only the attempts left', async (t) => {
  const { w, log } = worker({ attempts: 2, baseMs: 30 })
  const started = Date.now()
  w.submit({ id: 'r', plan: ['retry', 'retry'] }, 2)
  await w.idle()
  t.same(log, ['r#2!'])
  t.ok(Date.now() - started >= 25, 'it waited as before its attempt')
})

t.test('close aborts the waits, drops queued jobs and waits for the attempts in flight', async (t) => {
  // The attempt in flight is held on a gate the test opens, so close() meets it in flight however loaded the
  // machine is (a sleep of a few milliseconds let a CI run finish it, free the slot and start the queued job first).
  const log: string[] = []
  let open!: () => void
  const gate = new Promise<void>((r) => (open = r))
  let entered!: () => void
  const inFlight = new Promise<void>((r) => (entered = r))
  const w = new RetryingWorker<Job>({
    policy: new RetryPolicy({ attempts: 3, baseMs: 60_000, jitter: 0 }),
    concurrency: 1,
    key: (job) => job.id,
    attempt: async (job, n) => {
      entered()
      await gate
      log.push(`${job.id}#${n}`)
      return job.plan[n - 1] ?? 'done'
    },
  })
  w.submit({ id: 'a', plan: ['retry'] })
  w.submit({ id: 'b', plan: ['done'] })
  await inFlight
  const started = Date.now()
  const closing = w.close()
  let closed = false
  void closing.then(() => (closed = true))
  await new Promise((r) => setImmediate(r))
  t.notOk(closed, 'close waits for the attempt in flight')
  open()
  await closing
  t.ok(Date.now() - started < 5_000, 'the minute-long retry wait did not hold close')
  t.same(log, ['a#1'], 'the attempt in flight finished; the queued job never started')
  t.notOk(w.has('a') || w.has('b'))
  t.notOk(w.submit({ id: 'c', plan: [] }), 'a closed worker takes nothing')
})
