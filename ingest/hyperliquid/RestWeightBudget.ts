/**
 * The venue's REST budget, kept on our side so the venue never has to refuse us.
 *
 * Reference §1 (rate-limits-and-user-limits): "REST aggregate | 1200 weight / minute" per IP; l2Book and allMids weigh
 * 2, the other documented /info requests 20, and the time-range types add "+1 per 20 items returned" (fundingHistory)
 * or "+1 per 60 items" (candleSnapshot). So: a sliding window of the weight spent in the last minute, kept under
 * `share` (default 90 %) of the limit. A token bucket would not do: a full bucket plus a minute of refill lets twice the
 * limit through in the first minute. A request takes its base weight before it is sent (waiting until the window has
 * room) and its per-item extra after the answer. A 429 means our view was wrong (another client behind the same IP, a
 * restart that forgot a burst): nothing is sent for a backoff that doubles on each consecutive 429 (with jitter),
 * reset by the next success.
 *
 * Every REST caller of one process shares one budget (the connector, the universe source), as the venue counts per IP.
 * Times here are wall time: the venue meters the real minute.
 */
import { setTimeout as sleep } from 'node:timers/promises'

/** Reference §1: the documented weight of a request, before per-item extras. */
export function requestWeight(type: string): number {
  if (type === 'l2Book' || type === 'allMids' || type === 'clearinghouseState' || type === 'orderStatus' || type === 'spotClearinghouseState' || type === 'exchangeStatus') return 2
  if (type === 'userRole') return 60
  return 20
}

/** Reference §1: the extra weight of a response of `items` elements. */
export function responseExtraWeight(type: string, items: number): number {
  if (type === 'candleSnapshot') return Math.floor(items / 60)
  if (['recentTrades', 'historicalOrders', 'userFills', 'userFillsByTime', 'fundingHistory', 'userFunding', 'nonUserFundingUpdates', 'twapHistory', 'userTwapSliceFills', 'userTwapSliceFillsByTime', 'delegatorHistory', 'delegatorRewards', 'validatorStats'].includes(type)) {
    return Math.floor(items / 20)
  }
  return 0
}

export interface RestWeightBudgetOptions {
  /** Default 1200 (reference §1). */
  weightPerMinute?: number
  /** Share of the limit this process keeps to (headroom for clocks and other clients). Default 0.9. */
  share?: number
  /** First pause after a 429. Default 1000 ms. */
  backoffBaseMs?: number
  /** Longest pause after consecutive 429s. Default 60 000 ms. */
  backoffCapMs?: number
}

export interface RestWeightBudgetStats {
  /** Weight taken (base + extras). */
  spent: number
  /** Wall ms requests waited for tokens or a 429 pause. */
  waitedMs: number
  /** 429 answers seen. */
  throttled: number
}

const WINDOW_MS = 60_000
const HEAVIEST_REQUEST = 60

export class RestWeightBudget {
  readonly weightPerMinute: number
  readonly stats: RestWeightBudgetStats = { spent: 0, waitedMs: 0, throttled: 0 }
  readonly #limit: number
  readonly #backoffBaseMs: number
  readonly #backoffCapMs: number
  /** Weight spent, by wall instant, within the last minute (oldest first). */
  #spent: Array<{ at: number; weight: number }> = []
  #inWindow = 0
  #pausedUntil = 0
  #consecutive429 = 0
  /** Requests wait in arrival order: each takes its tokens only after the one before it has. */
  #queue: Promise<void> = Promise.resolve()

  constructor(options: RestWeightBudgetOptions = {}) {
    this.weightPerMinute = options.weightPerMinute ?? 1200
    const share = options.share ?? 0.9
    if (!(share > 0 && share <= 1)) throw new RangeError(`RestWeightBudget share must be in (0, 1], got ${share}`)
    this.#limit = Math.floor(this.weightPerMinute * share)
    // The heaviest documented request (userRole) weighs 60: a smaller window could never admit it honestly.
    if (!(this.#limit >= HEAVIEST_REQUEST)) {
      throw new RangeError(`RestWeightBudget: weightPerMinute × share must be at least ${HEAVIEST_REQUEST} (the heaviest request), got ${this.weightPerMinute} × ${share}`)
    }
    this.#backoffBaseMs = options.backoffBaseMs ?? 1000
    this.#backoffCapMs = Math.max(options.backoffCapMs ?? 60_000, this.#backoffBaseMs)
  }

  /** Weight that may still be spent in the current minute (negative after extras overshot it). */
  get available(): number {
    this.#prune(Date.now())
    return this.#limit - this.#inWindow
  }

  /** Wall ms until requests may go again after a 429 (0 when not paused). */
  get pausedForMs(): number {
    return Math.max(0, this.#pausedUntil - Date.now())
  }

  /** Resolves when `weight` tokens were taken (in arrival order); rejects only if `signal` aborts while waiting. */
  acquire(weight: number, signal?: AbortSignal): Promise<void> {
    const turn = this.#queue.then(() => this.#take(Math.min(weight, this.#limit), signal))
    this.#queue = turn.catch(() => undefined)
    return turn
  }

  /** The per-item extra of an answer, charged after the fact. */
  charge(weight: number): void {
    if (weight <= 0) return
    this.#record(Date.now(), weight)
  }

  /** The venue answered 429: pause, longer on each consecutive one. */
  throttled(): void {
    this.stats.throttled++
    const ceiling = Math.min(this.#backoffCapMs, this.#backoffBaseMs * 2 ** this.#consecutive429)
    this.#consecutive429++
    // Equal jitter: half fixed, half random, as the websocket reconnects do.
    const pause = ceiling / 2 + Math.random() * (ceiling / 2)
    this.#pausedUntil = Math.max(this.#pausedUntil, Date.now() + pause)
  }

  /** A request succeeded: the next 429 starts from the base pause again. */
  succeeded(): void {
    this.#consecutive429 = 0
  }

  #record(at: number, weight: number): void {
    this.#spent.push({ at, weight })
    this.#inWindow += weight
    this.stats.spent += weight
  }

  #prune(now: number): void {
    while (this.#spent.length > 0 && now - this.#spent[0]!.at >= WINDOW_MS) this.#inWindow -= this.#spent.shift()!.weight
  }

  /** Wall ms until `weight` fits in the window: until enough of the oldest spending has aged out. */
  #waitFor(weight: number, now: number): number {
    let excess = this.#inWindow + weight - this.#limit
    if (excess <= 0) return 0
    for (const e of this.#spent) {
      excess -= e.weight
      if (excess <= 0) return e.at + WINDOW_MS - now
    }
    return WINDOW_MS
  }

  async #take(weight: number, signal?: AbortSignal): Promise<void> {
    const started = Date.now()
    for (;;) {
      signal?.throwIfAborted()
      const now = Date.now()
      this.#prune(now)
      const wait = Math.max(this.#pausedUntil - now, this.#waitFor(weight, now))
      if (wait <= 0) break
      await sleep(Math.ceil(Math.min(wait, 1000)), undefined, signal ? { signal } : undefined)
    }
    this.#record(Date.now(), weight)
    this.stats.waitedMs += Date.now() - started
  }
}
