/**
 * The periodic batch runner (common/PeriodicTask.ts): runs at each tick (and at start when asked), never two runs at
 * once, a failed run is retried at the next tick, stop() waits for the run in progress and no run starts after it.
 */
import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { PeriodicTask } from '../../common/PeriodicTask.ts'

t.test('ticks, never overlaps, retries after a failure, stop waits', async (t) => {
  let running = 0
  let maxRunning = 0
  let runs = 0
  let finished = 0
  const task = new PeriodicTask({
    name: 'periodic-task-test',
    intervalMs: 10,
    immediately: true,
    run: async () => {
      runs++
      running++
      maxRunning = Math.max(maxRunning, running)
      try {
        await sleep(35) // longer than the interval: the ticks in between must be skipped
        if (runs === 2) throw new Error('a failed run')
      } finally {
        running--
        finished++
      }
    },
  })
  task.start()
  t.equal(runs, 1, 'immediately: the first run starts at start()')
  await sleep(200)
  await task.stop()
  const atStop = runs
  t.ok(atStop >= 3, `kept running after the failed second run (${atStop} runs)`)
  t.equal(maxRunning, 1, 'never two runs at once')
  t.equal(finished, runs, 'stop() waited for the run in progress')
  await sleep(50)
  t.equal(runs, atStop, 'no run after stop()')
})

t.test('a non-positive interval never runs; without immediately the first run waits an interval', async (t) => {
  let runs = 0
  const never = new PeriodicTask({ name: 'periodic-task-test', intervalMs: 0, immediately: true, run: async () => void runs++ })
  never.start()
  await sleep(30)
  await never.stop()
  t.equal(runs, 0)
  const later = new PeriodicTask({ name: 'periodic-task-test', intervalMs: 40, run: async () => void runs++ })
  later.start()
  t.equal(runs, 0, 'nothing at start()')
  await sleep(100)
  await later.stop()
  t.ok(runs >= 1, `ran after an interval (${runs})`)
})
