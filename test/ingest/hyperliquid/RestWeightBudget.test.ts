/**
 * RestWeightBudget: the request weights of reference §1 (../shared/reference/hyperliquid-api.md, "Rate limits (per IP;
 * rate-limits-and-user-limits)"), the one-minute sliding window, arrival order, the 429 backoff, and the budget as the
 * HyperliquidInfoClient drives it against a real HTTP server on 127.0.0.1.
 *
 * The window is a fixed wall minute (no option shortens it). The tests that need it to move run on a controlled
 * wall clock (`Date.now` pinned by `withWallClock`, restored after the test); the budget still sleeps on real timers,
 * re-checking at least once a second, so each of them takes about a second of real time, not a minute.
 */
import t, { type Test } from 'tap'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { RestWeightBudget, requestWeight, responseExtraWeight } from '../../../ingest/hyperliquid/RestWeightBudget.ts'
import { HyperliquidInfoClient } from '../../../ingest/hyperliquid/HyperliquidInfoClient.ts'
import { HyperliquidError } from '../../../ingest/hyperliquid/HyperliquidError.ts'

const WINDOW_MS = 60_000

/** Pins `Date.now` to a value the test moves; restored when the test ends. */
function withWallClock(t: Test, start = 1_750_000_000_000): { now: number; set(ms: number): void } {
  const real = Date.now
  const clock = {
    now: start,
    set(ms: number) {
      clock.now = ms
    },
  }
  Date.now = () => clock.now
  t.teardown(() => {
    Date.now = real
  })
  return clock
}

/** Tracks whether a promise has settled, without awaiting it. */
function track<T>(p: Promise<T>): { settled: () => boolean; promise: Promise<T> } {
  let done = false
  const promise = p.then(
    (v) => {
      done = true
      return v
    },
    (err: unknown) => {
      done = true
      throw err
    },
  )
  return { settled: () => done, promise }
}

/** Awaits `p`, failing if it has not settled within `ms` real ms (the timer is cleared either way). */
async function within<T>(p: Promise<T>, ms: number): Promise<T> {
  const timer = new AbortController()
  try {
    return await Promise.race([
      p,
      sleep(ms, undefined, { signal: timer.signal }).then(() => Promise.reject(new Error(`not settled within ${ms} ms`))),
    ])
  } finally {
    timer.abort()
  }
}

t.test('requestWeight: base weights of reference §1 "Rate limits" table', async (t) => {
  // [request type, weight, table row of reference §1]
  const table: Array<[string, number, string]> = [
    ['l2Book', 2, 'l2Book, allMids, clearinghouseState, orderStatus, spotClearinghouseState, exchangeStatus | 2'],
    ['allMids', 2, 'same row'],
    ['clearinghouseState', 2, 'same row'],
    ['orderStatus', 2, 'same row'],
    ['spotClearinghouseState', 2, 'same row'],
    ['exchangeStatus', 2, 'same row'],
    ['userRole', 60, 'userRole | 60'],
    ['meta', 20, 'all other documented /info requests (meta, metaAndAssetCtxs, predictedFundings, …) | 20'],
    ['metaAndAssetCtxs', 20, 'same row'],
    ['predictedFundings', 20, 'same row'],
    ['candleSnapshot', 20, 'same row (its per-item extra is separate)'],
    ['fundingHistory', 20, 'same row (its per-item extra is separate)'],
    ['userFills', 20, 'same row'],
    ['userFunding', 20, 'same row'],
    ['userNonFundingLedgerUpdates', 20, 'same row'],
    ['recentTrades', 20, 'same row'],
  ]
  for (const [type, weight, row] of table) t.equal(requestWeight(type), weight, `${type} weighs ${weight} (§1: ${row})`)
})

t.test('responseExtraWeight: per-item extras of reference §1', async (t) => {
  // [type, items returned, extra, source]
  const table: Array<[string, number, number, string]> = [
    ['fundingHistory', 500, 25, '§1 example: "a full fundingHistory page (500 rows) costs 20 + 25 = 45 weight"'],
    ['fundingHistory', 20, 1, '§1: "extra, per 20 items returned … +1"'],
    ['fundingHistory', 40, 2, '§1: +1 per 20 items'],
    ['fundingHistory', 0, 0, 'no items, no extra'],
    ['candleSnapshot', 60, 1, '§1: "extra, per 60 items: candleSnapshot | +1"'],
    ['candleSnapshot', 120, 2, '§1: +1 per 60 items'],
    ['candleSnapshot', 20, 0, '§1: candleSnapshot is in the per-60 row, not the per-20 one'],
    ['candleSnapshot', 0, 0, 'no items, no extra'],
    ['l2Book', 500, 0, '§1: l2Book is in no extra row'],
    ['allMids', 500, 0, '§1: allMids is in no extra row'],
    ['metaAndAssetCtxs', 2, 0, '§1: metaAndAssetCtxs is in no extra row'],
    ['predictedFundings', 200, 0, '§1: predictedFundings is in no extra row'],
    ['userRole', 100, 0, '§1: userRole is in no extra row'],
  ]
  for (const [type, items, extra, source] of table) t.equal(responseExtraWeight(type, items), extra, `${type} × ${items} → +${extra} (${source})`)

  // §1 per-20 row, every type it lists: 20 items cost exactly +1.
  const per20 = ['recentTrades', 'historicalOrders', 'userFills', 'userFillsByTime', 'fundingHistory', 'userFunding', 'nonUserFundingUpdates', 'twapHistory', 'userTwapSliceFills', 'userTwapSliceFillsByTime', 'delegatorHistory', 'delegatorRewards', 'validatorStats']
  for (const type of per20) {
    t.equal(responseExtraWeight(type, 20), 1, `${type} × 20 → +1 (§1 per-20 row)`)
    t.equal(responseExtraWeight(type, 60), 3, `${type} × 60 → +3 (§1 per-20 row)`)
  }
})

t.test('responseExtraWeight: partial groups (the module reads "per N items" as completed groups of N)', async (t) => {
  // §1 does not say how a partial group counts; these pin the module's documented reading (floor), not the reference.
  t.equal(responseExtraWeight('fundingHistory', 19), 0)
  t.equal(responseExtraWeight('fundingHistory', 39), 1)
  t.equal(responseExtraWeight('candleSnapshot', 59), 0)
  t.equal(responseExtraWeight('candleSnapshot', 119), 1)
  t.equal(responseExtraWeight('candleSnapshot', 5000), 83, 'the 5000-candle maximum of §1')
})

t.test('constructor refuses a non-positive limit', async (t) => {
  t.throws(() => new RestWeightBudget({ weightPerMinute: 0 }), RangeError)
  t.throws(() => new RestWeightBudget({ weightPerMinute: -5 }), RangeError)
  t.throws(() => new RestWeightBudget({ weightPerMinute: Number.NaN }), RangeError)
  t.equal(new RestWeightBudget().weightPerMinute, 1200, 'default is §1 "REST aggregate | 1200 weight / minute"')
  t.equal(new RestWeightBudget().available, 1080, 'default share keeps 90 % of 1200')
})

t.test('a positive weightPerMinute whose share rounds to 0: either refused or still metering', async (t) => {
  // weightPerMinute 1 passes the constructor's "must be positive" check; share 0.9 makes the limit floor(0.9) = 0, and
  // acquire clamps each request to that limit, so every request takes 0 weight and none ever waits.
  let budget: RestWeightBudget
  try {
    budget = new RestWeightBudget({ weightPerMinute: 1 })
  } catch (err) {
    t.type(err, RangeError, 'refused at construction (also a fix)')
    return
  }
  const abort = new AbortController()
  const requests = Array.from({ length: 10 }, () => track(budget.acquire(20, abort.signal)))
  await sleep(200)
  const through = requests.filter((r) => r.settled()).length
  abort.abort()
  await Promise.allSettled(requests.map((r) => r.promise))
  t.ok(through <= 1, `at most one request of weight 20 goes through a 1-per-minute budget at once (went: ${through})`)
  t.ok(budget.stats.spent >= 20 || through === 0, `weight is spent for what went through (spent ${budget.stats.spent})`)
})

t.test('sliding window (real time): within the room at once, beyond it pending; available tracks spending and extras', async (t) => {
  // weightPerMinute 100, share 0.9 → 90 weight per minute.
  const budget = new RestWeightBudget({ weightPerMinute: 100 })
  t.equal(budget.available, 90)

  const started = Date.now()
  await budget.acquire(20)
  await budget.acquire(20)
  await budget.acquire(2)
  t.ok(Date.now() - started < 1000, 'requests within the room resolve at once (the window would hold them a minute)')
  t.equal(budget.available, 48)
  t.equal(budget.stats.spent, 42)

  budget.charge(25)
  t.equal(budget.available, 23, 'an extra charged after the answer takes room')
  budget.charge(0)
  budget.charge(-3)
  t.equal(budget.available, 23, 'zero and negative extras change nothing')
  t.equal(budget.stats.spent, 67)

  await budget.acquire(20)
  t.equal(budget.available, 3)

  const abort = new AbortController()
  const heavy = track(budget.acquire(20, abort.signal))
  const light = track(budget.acquire(2, abort.signal))
  await sleep(400)
  t.notOk(heavy.settled(), 'a request beyond the room is still pending after 400 ms')
  t.notOk(light.settled(), 'a request that would fit waits behind it (arrival order)')
  t.equal(budget.available, 3, 'a pending request has taken nothing')
  t.equal(budget.stats.spent, 87)

  abort.abort()
  await t.rejects(heavy.promise, { name: 'AbortError' }, 'abort rejects the waiting request')
  await t.rejects(light.promise, { name: 'AbortError' }, 'and the one queued behind it')
  t.equal(budget.available, 3, 'aborted requests take nothing')
  t.equal(budget.stats.spent, 87)
})

t.test('extras may overshoot: available goes negative and the next request waits', async (t) => {
  const budget = new RestWeightBudget({ weightPerMinute: 100 })
  await budget.acquire(requestWeight('userRole'))
  budget.charge(50)
  t.equal(budget.available, -20)
  const abort = new AbortController()
  const next = track(budget.acquire(2, abort.signal))
  await sleep(300)
  t.notOk(next.settled(), 'nothing goes while the window is over its limit')
  abort.abort()
  await t.rejects(next.promise, { name: 'AbortError' })
})

t.test('the wait ends exactly when enough of the oldest spending has aged out of the minute (controlled wall clock)', async (t) => {
  const clock = withWallClock(t)
  const T0 = clock.now
  const budget = new RestWeightBudget({ weightPerMinute: 100 }) // 90 per minute

  await budget.acquire(30) // at T0
  clock.set(T0 + 10_000)
  await budget.acquire(30) // at T0 + 10 s
  clock.set(T0 + 20_000)
  await budget.acquire(20) // at T0 + 20 s
  t.equal(budget.available, 10)

  // 80 + 45 − 90 = 35 over: the first 30 is not enough, the first two (60) are → room at T0 + 10 s + 60 s.
  const due = T0 + 10_000 + WINDOW_MS
  const p = track(budget.acquire(45))
  await sleep(1200)
  t.notOk(p.settled(), 'pending at T0 + 20 s')
  clock.set(T0 + WINDOW_MS)
  await sleep(1200)
  t.notOk(p.settled(), 'pending when only the first spending has aged out (T0 + 60 s)')
  t.equal(budget.available, 40, 'the first 30 left the window at exactly T0 + 60 s')
  clock.set(due - 1)
  await sleep(1200)
  t.notOk(p.settled(), 'pending 1 ms before the second spending ages out')
  clock.set(due)
  await within(p.promise, 5000)
  t.ok(p.settled(), 'resolves at the instant the second spending ages out')
  t.equal(budget.stats.waitedMs, due - (T0 + 20_000), 'waitedMs is the computed wait (clock time)')
  t.equal(budget.available, 90 - 20 - 45, 'the window now holds the 20 and the 45')
})

t.test('a request that needs only the oldest spending to age out waits just for that', async (t) => {
  const clock = withWallClock(t)
  const T0 = clock.now
  const budget = new RestWeightBudget({ weightPerMinute: 100 })
  await budget.acquire(30)
  clock.set(T0 + 30_000)
  await budget.acquire(50)
  t.equal(budget.available, 10)
  const p = track(budget.acquire(20)) // 10 over → the 30 at T0 must go
  clock.set(T0 + WINDOW_MS - 1)
  await sleep(1200)
  t.notOk(p.settled(), 'pending 1 ms before T0 + 60 s')
  clock.set(T0 + WINDOW_MS)
  await within(p.promise, 5000)
  t.equal(budget.available, 90 - 50 - 20)
})

t.test('requests are served in arrival order (FIFO), a light one never overtakes a heavy one', async (t) => {
  const clock = withWallClock(t)
  const T0 = clock.now
  const budget = new RestWeightBudget({ weightPerMinute: 100 })
  await budget.acquire(60)
  clock.set(T0 + 1000)
  await budget.acquire(20) // 80 spent, 10 room
  const order: string[] = []
  const all = [
    budget.acquire(45).then(() => order.push('heavy 45')),
    budget.acquire(2).then(() => order.push('light 2')),
    budget.acquire(5).then(() => order.push('light 5')),
    budget.acquire(2).then(() => order.push('light 2 again')),
  ]
  await sleep(1200)
  t.same(order, [], 'nothing overtakes the heavy request at the head, though the light ones would fit')
  clock.set(T0 + WINDOW_MS) // the 60 ages out: room for all four (20 + 45 + 2 + 5 + 2 = 74 ≤ 90)
  await Promise.all(all)
  t.same(order, ['heavy 45', 'light 2', 'light 5', 'light 2 again'], 'resolved in arrival order')
  t.equal(budget.available, 90 - 74)

  // Without any wait the order holds too.
  const order2: number[] = []
  await Promise.all([0, 1, 2, 3, 4].map((i) => budget.acquire(1).then(() => order2.push(i))))
  t.same(order2, [0, 1, 2, 3, 4])
})

t.test('throttled(): the pause grows on consecutive 429s with equal jitter, succeeded() resets it (controlled wall clock)', async (t) => {
  const clock = withWallClock(t)
  const budget = new RestWeightBudget({ backoffBaseMs: 1000, backoffCapMs: 8000 })
  t.equal(budget.pausedForMs, 0, 'not paused before any 429')
  // Equal jitter: the pause lies in [ceiling / 2, ceiling], ceiling = min(cap, base · 2^(n−1)) for the n-th 429 in a row.
  const ceilings = [1000, 2000, 4000, 8000, 8000]
  for (const [i, ceiling] of ceilings.entries()) {
    budget.throttled()
    const p = budget.pausedForMs
    t.ok(p >= ceiling / 2 && p <= ceiling, `429 #${i + 1}: pause ${p.toFixed(1)} ms in [${ceiling / 2}, ${ceiling}]`)
    clock.set(clock.now + 10_000)
    t.equal(budget.pausedForMs, 0, 'the pause ends')
  }
  t.equal(budget.stats.throttled, 5)

  budget.succeeded()
  budget.throttled()
  const afterReset = budget.pausedForMs
  t.ok(afterReset >= 500 && afterReset <= 1000, `after succeeded() the next 429 starts from the base again: ${afterReset.toFixed(1)} ms`)

  // A shorter new pause never cuts a longer running one.
  clock.set(clock.now + 10_000)
  budget.throttled() // ceiling 2000
  budget.throttled() // ceiling 4000
  const long = budget.pausedForMs
  budget.succeeded()
  budget.throttled() // ceiling 1000
  t.equal(budget.pausedForMs, long, 'the running (longer) pause is kept, not shortened')
})

t.test('equal jitter spreads the first pause over [base/2, base]', async (t) => {
  withWallClock(t) // held still: pausedForMs reads the pause itself
  const pauses: number[] = []
  for (let i = 0; i < 200; i++) {
    const b = new RestWeightBudget({ backoffBaseMs: 1000 })
    b.throttled()
    pauses.push(b.pausedForMs)
  }
  t.ok(Math.min(...pauses) >= 500, `min ${Math.min(...pauses).toFixed(1)} ≥ 500`)
  t.ok(Math.max(...pauses) <= 1000, `max ${Math.max(...pauses).toFixed(1)} ≤ 1000`)
  t.ok(pauses.some((p) => p < 750) && pauses.some((p) => p > 750), 'both halves of the range occur (jitter, not a constant)')
})

t.test('throttled() holds back every request for the pause (real time)', async (t) => {
  const budget = new RestWeightBudget({ backoffBaseMs: 300 })
  const t0 = Date.now()
  budget.throttled()
  const pause = budget.pausedForMs
  t.ok(pause >= 140 && pause <= 300, `pause ${pause.toFixed(1)} ms in [150, 300] (less the ms since)`)
  const resolvedAt: number[] = []
  const all = [2, 20, 2].map((w) => budget.acquire(w).then(() => resolvedAt.push(Date.now())))
  await Promise.all(all)
  for (const at of resolvedAt) t.ok(at - t0 >= pause, `resolved ${at - t0} ms after the 429, not before the ${pause.toFixed(1)} ms pause`)
  // waitedMs is measured from when each request's turn began (a few ms after the pause was read), so only bounds hold.
  const elapsed = Date.now() - t0
  t.ok(budget.stats.waitedMs >= pause - 20 && budget.stats.waitedMs <= elapsed + 3, `waitedMs ${budget.stats.waitedMs} counts the pause (${pause.toFixed(1)} ms), within the ${elapsed} ms elapsed`)
  t.equal(budget.stats.spent, 24)
})

// ---------------------------------------------------------------- through the client, over real HTTP

interface Received {
  body: Record<string, unknown>
  at: number
}

async function withPlannedServer(t: Test, plan: Array<'429' | 'ok'>): Promise<{ baseUrl: string; requests: Received[] }> {
  const requests: Received[] = []
  const HOUR = 3_600_000
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>
      requests.push({ body, at: Date.now() })
      const step = plan.shift() ?? 'ok'
      if (step === '429') {
        res.writeHead(429, { 'content-type': 'text/plain' }).end('Too Many Requests')
        return
      }
      let payload: unknown = []
      if (body.type === 'fundingHistory' && body.coin === 'ETH') {
        // 45 hourly rows → +2 (§1: +1 per 20 items)
        const start = Number(body.startTime)
        payload = Array.from({ length: 45 }, (_, i) => ({ coin: 'ETH', fundingRate: '0.0000125', premium: '-0.0001', time: start + i * HOUR }))
      } else if (body.type === 'candleSnapshot' && (body.req as { coin?: string }).coin === 'SOL') {
        // 130 one-minute candles → +2 (§1: +1 per 60 items)
        const start = Number((body.req as { startTime: number }).startTime)
        payload = Array.from({ length: 130 }, (_, i) => {
          const open = start + i * 60_000
          return { t: open, T: open + 59_999, s: 'SOL', i: '1m', o: '150.0', c: '150.5', h: '151.0', l: '149.5', v: '12.5', n: 7 }
        })
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(payload))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  const { port } = server.address() as AddressInfo
  return { baseUrl: `http://127.0.0.1:${port}`, requests }
}

t.test('HyperliquidInfoClient with a budget: a 429 pauses the next request; extras are charged', async (t) => {
  const server = await withPlannedServer(t, ['429'])
  const budget = new RestWeightBudget({ backoffBaseMs: 400 })
  const client = new HyperliquidInfoClient({ baseUrl: server.baseUrl, timeoutMs: 5000, budget })
  const START = 1_700_000_000_000

  let err: unknown
  try {
    await client.fundingHistory('BTC', { startTime: START })
  } catch (e) {
    err = e
  }
  t.ok(err instanceof HyperliquidError, 'the 429 surfaces as a HyperliquidError')
  const hlErr = err as HyperliquidError
  t.equal(hlErr.code, 'HL_HTTP_STATUS')
  t.equal(hlErr.status, 429)
  t.equal(hlErr.retryable, true, '429 is retryable')
  t.equal(budget.stats.throttled, 1, 'the client marked the budget throttled')
  t.equal(budget.stats.spent, 20, 'the refused request had taken its base weight before it was sent')

  const readAt = Date.now()
  const pause = budget.pausedForMs
  t.ok(pause > 150 && pause <= 400, `paused ${pause.toFixed(1)} ms (equal jitter over [200, 400])`)

  const again = await client.fundingHistory('BTC', { startTime: START })
  t.same(again.data, [], 'the retry gets the valid [] answer')
  t.equal(server.requests.length, 2)
  const sentAfter = server.requests[1]!.at - readAt
  t.ok(sentAfter >= pause, `the next request reached the server ${sentAfter} ms later, after the ${pause.toFixed(1)} ms pause`)
  t.ok(budget.stats.waitedMs >= pause - 20, `waitedMs ${budget.stats.waitedMs} includes the pause (measured from the request's turn, a few ms after the read)`)
  t.equal(budget.stats.spent, 40, 'base weight 20 again, no extra for []')

  const candles = await client.candleSnapshot('SOL', '1m', { startTime: START, endTime: START + 130 * 60_000 })
  t.equal(candles.data.length, 130)
  t.equal(budget.stats.spent, 40 + 20 + 2, 'candleSnapshot: 20 + floor(130 / 60)')

  const funding = await client.fundingHistory('ETH', { startTime: START })
  t.equal(funding.data.length, 45)
  t.equal(budget.stats.spent, 62 + 20 + 2, 'fundingHistory: 20 + floor(45 / 20)')
  t.equal(budget.available, 1080 - 84, 'the window holds every weight spent')

  const empty = await client.candleSnapshot('BTC', '1m', { startTime: START, endTime: START + 60_000 })
  t.same(empty.data, [])
  t.equal(budget.stats.spent, 104, 'an empty candleSnapshot costs its base weight only')
  t.equal(budget.stats.throttled, 1, 'successes are not counted as throttled')
})

t.test('HyperliquidInfoClient: consecutive 429s double the pause, a success resets it', async (t) => {
  const server = await withPlannedServer(t, ['429', '429', 'ok', '429'])
  const budget = new RestWeightBudget({ backoffBaseMs: 200 })
  const client = new HyperliquidInfoClient({ baseUrl: server.baseUrl, timeoutMs: 5000, budget })
  const range = { startTime: 1_700_000_000_000 }

  await t.rejects(client.fundingHistory('BTC', range), { code: 'HL_HTTP_STATUS', status: 429 })
  const first = budget.pausedForMs
  t.ok(first > 50 && first <= 200, `first pause ${first.toFixed(1)} ms ≤ 200`)
  await t.rejects(client.fundingHistory('BTC', range), { code: 'HL_HTTP_STATUS', status: 429 })
  const second = budget.pausedForMs
  t.ok(second > 150 && second <= 400, `second consecutive pause ${second.toFixed(1)} ms in [200, 400]`)
  const sentAt = server.requests[1]!.at - server.requests[0]!.at
  t.ok(sentAt >= 100, `the second request waited out the first pause (${sentAt} ms)`)

  await client.fundingHistory('BTC', range)
  await t.rejects(client.fundingHistory('BTC', range), { code: 'HL_HTTP_STATUS', status: 429 })
  const afterSuccess = budget.pausedForMs
  t.ok(afterSuccess <= 200, `after a success the pause starts from the base again: ${afterSuccess.toFixed(1)} ms ≤ 200`)
  t.equal(budget.stats.throttled, 3)
  t.equal(server.requests.length, 4)
})
