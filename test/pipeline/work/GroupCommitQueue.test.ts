import t from 'tap'
import { GroupCommitQueue } from '../../../pipeline/work/GroupCommitQueue.ts'

/** A flush that records its groups and waits for the test to release each one. */
function recorder<T>() {
  const groups: T[][] = []
  const gates: Array<{ release: () => void; fail: (err: unknown) => void }> = []
  const flush = (items: T[]) =>
    new Promise<void>((release, fail) => {
      groups.push(items)
      gates.push({ release, fail })
    })
  return { groups, gates, flush }
}

const tick = () => new Promise<void>((r) => setImmediate(r))

t.test('items of one tick share a flush; items enqueued during it share the next, in order', async (t) => {
  const r = recorder<number>()
  const q = new GroupCommitQueue<number>({ flush: r.flush, maxBytes: 1000 })
  const settled: number[] = []
  const first = [1, 2, 3].map((n) => q.enqueue(n, 1).then(() => settled.push(n)))
  await tick()
  t.same(r.groups, [[1, 2, 3]], 'one flush for the items of one tick')
  const second = [4, 5].map((n) => q.enqueue(n, 1).then(() => settled.push(n)))
  const third = q.enqueue(6, 1).then(() => settled.push(6))
  await tick()
  t.equal(r.groups.length, 1, 'a single flush in flight at a time')
  r.gates[0]!.release()
  await Promise.all(first)
  await tick()
  t.same(r.groups, [[1, 2, 3], [4, 5, 6]], 'everything queued during a flush goes in the next one')
  t.same(settled, [1, 2, 3], 'items settle with their own flush, not before')
  r.gates[1]!.release()
  await Promise.all([...second, third])
  t.same(settled, [1, 2, 3, 4, 5, 6], 'every item settled once, in order')
  t.notOk(q.busy)
})

t.test('a flush takes items up to the byte and count bounds; a first item over the bound goes alone', async (t) => {
  const groups: string[][] = []
  const q = new GroupCommitQueue<string>({ flush: async (items) => void groups.push(items), maxBytes: 10, maxItems: 3 })
  await Promise.all([
    q.enqueue('big', 50), // over the bound alone
    q.enqueue('a', 4),
    q.enqueue('b', 4),
    q.enqueue('c', 4), // 12 > 10: next flush
    q.enqueue('d', 1),
    q.enqueue('e', 1),
    q.enqueue('f', 1), // maxItems 3
    q.enqueue('g', 1),
  ])
  t.same(groups, [['big'], ['a', 'b'], ['c', 'd', 'e'], ['f', 'g']])
})

t.test('a failed flush rejects exactly its items; the queue goes on with the rest', async (t) => {
  const r = recorder<number>()
  const q = new GroupCommitQueue<number>({ flush: r.flush, maxBytes: 2 })
  const outcomes = new Map<number, string>()
  const all = [1, 2, 3, 4, 5].map((n) =>
    q.enqueue(n, 1).then(
      () => outcomes.set(n, 'ok'),
      (err: Error) => outcomes.set(n, err.message),
    ),
  )
  await tick()
  r.gates[0]!.release()
  await tick()
  r.gates[1]!.fail(new Error('disk full'))
  await tick()
  r.gates[2]!.release()
  await Promise.all(all)
  t.same(r.groups, [[1, 2], [3, 4], [5]], 'no item flushed twice or skipped')
  t.same(Object.fromEntries(outcomes), { 1: 'ok', 2: 'ok', 3: 'disk full', 4: 'disk full', 5: 'ok' })
})

t.test('a chain stops at its first failed part: later parts are not flushed and reject with the same error', async (t) => {
  const r = recorder<string>()
  const q = new GroupCommitQueue<string>({ flush: r.flush, maxBytes: 1 })
  const chain = q.enqueueChain(['p1', 'p2', 'p3'].map((item) => ({ item, bytes: 1 })))
  const other = q.enqueue('other', 1)
  const outcomes = chain.map((p) => p.then(() => 'ok', (err: Error) => err.message))
  await tick()
  r.gates[0]!.release()
  await tick()
  r.gates[1]!.fail(new Error('broker gone'))
  await tick()
  t.same(r.groups, [['p1'], ['p2'], ['other']], 'p3 was never flushed; the next writer was')
  r.gates[2]!.release()
  t.same(await Promise.all(outcomes), ['ok', 'broker gone', 'broker gone'])
  await other
  t.pass('an item outside the chain is not affected')
})

t.test('a pipelined flush lets the next one start; its items settle with what it handed back', async (t) => {
  const syncs: Array<{ release: () => void; fail: (err: unknown) => void }> = []
  const groups: number[][] = []
  const q = new GroupCommitQueue<number>({
    maxBytes: 1,
    flush: async (items) => {
      groups.push(items)
      return { settled: new Promise<void>((release, fail) => syncs.push({ release, fail })) }
    },
  })
  const outcomes = [1, 2, 3].map((n) => q.enqueue(n, 1).then(() => 'ok', (err: Error) => err.message))
  await q.drained()
  t.same(groups, [[1], [2], [3]], 'each flush started before the previous one settled')
  syncs[1]!.fail(new Error('fsync failed'))
  syncs[0]!.release()
  syncs[2]!.release()
  t.same(await Promise.all(outcomes), ['ok', 'fsync failed', 'ok'])
})

t.test('no item lost or doubled under many concurrent writers with random failures', async (t) => {
  const flushed: number[] = []
  let round = 0
  const q = new GroupCommitQueue<number>({
    maxBytes: 7,
    flush: async (items) => {
      await new Promise((r) => setTimeout(r, Math.random() * 2))
      flushed.push(...items)
      if (++round % 5 === 0) throw new Error('failed round')
    },
  })
  const n = 500
  const results = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      if (i % 3 === 0) await tick()
      return q.enqueue(i, 1 + (i % 3)).then(() => true, () => false)
    }),
  )
  t.same([...flushed].sort((a, b) => a - b), Array.from({ length: n }, (_, i) => i), 'each item flushed exactly once')
  t.ok(results.includes(false) && results.includes(true), 'some flushes failed, others succeeded')
  t.notOk(q.busy)
})

t.test('drained waits for the flush in flight and what queued behind it', async (t) => {
  const r = recorder<number>()
  const q = new GroupCommitQueue<number>({ flush: r.flush, maxBytes: 10 })
  const a = q.enqueue(1, 1)
  await tick()
  const b = q.enqueue(2, 1)
  let drained = false
  const d = q.drained().then(() => (drained = true))
  r.gates[0]!.release()
  await a
  await tick()
  t.notOk(drained, 'the second flush still runs')
  r.gates[1]!.release()
  await Promise.all([b, d])
  t.ok(drained)
})
