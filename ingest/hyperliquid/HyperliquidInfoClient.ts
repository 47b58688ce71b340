/**
 * Hyperliquid `POST /info` client: market data (metaAndAssetCtxs, allMids, l2Book, candleSnapshot, fundingHistory,
 * predictedFundings) and wallet data (clearinghouseState, userFills, userFunding, userNonFundingLedgerUpdates).
 *
 * Every call returns the parsed payload with `receivedAt`, the local instant the body arrived, which becomes
 * `provenance.received_at` (and the event time of payloads that carry none). Failures are HyperliquidError with a
 * closed code and a `retryable` flag; this client does not retry by itself, the caller owns the schedule.
 */
import { HyperliquidError } from './HyperliquidError.ts'
import { RestWeightBudget, requestWeight, responseExtraWeight } from './RestWeightBudget.ts'
import { validateOptions } from '../../common/validation.ts'
import { systemClock, type Clock } from '../../common/Clock.ts'
import {
  parseAllMids,
  parseBook,
  parseCandles,
  parseClearinghouseState,
  parseFundingHistory,
  parseLedgerUpdates,
  parseMetaAndAssetCtxs,
  parsePredictedFundings,
  parseUserFills,
  parseUserFunding,
  type HlBook,
  type HlCandle,
  type HlClearinghouseState,
  type HlFill,
  type HlFundingRow,
  type HlLedgerUpdate,
  type HlMetaAndAssetCtxs,
  type HlMids,
  type HlPredictedFunding,
  type HlUserFunding,
} from './parseInfo.ts'

export const HL_DEFAULT_BASE_URL = 'https://api.hyperliquid.xyz'

export interface HyperliquidInfoClientOptions {
  /** Default https://api.hyperliquid.xyz; `/info` is appended. */
  baseUrl?: string
  /** Per request, covering connect, headers and body. Default 10 000. */
  timeoutMs?: number
  /**
   * Reference §1: "Time-range requests return at most 500 elements". A page this long means there may be more.
   * Default 500.
   */
  pageLimit?: number
  /** Guard against a server that never ends a range. Default 10 000. */
  maxPages?: number
  /**
   * The venue's REST weight budget shared by every caller of this process (reference §1: 1200 weight per minute per
   * IP). Each request waits for its weight; a 429 pauses the budget. Default: none (the caller meters its own calls).
   */
  budget?: RestWeightBudget
  /** Stamps `receivedAt` (default the system clock; a compressed session passes the venue's clock). */
  clock?: Clock
}

const OPTIONS_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    baseUrl: { type: 'string', pattern: '^https?://[^\\s]+$' },
    timeoutMs: { type: 'integer', minimum: 1, maximum: 600000 },
    pageLimit: { type: 'integer', minimum: 1 },
    maxPages: { type: 'integer', minimum: 1 },
    budget: {},
    clock: {},
  },
} as const

export interface HlReceived<T> {
  data: T
  /** Local epoch ms when the (last) response body was complete. */
  receivedAt: number
}

export interface TimeRange {
  startTime: number
  endTime?: number
}

export class HyperliquidInfoClient {
  readonly baseUrl: string
  readonly #url: string
  readonly #timeoutMs: number
  readonly #pageLimit: number
  readonly #maxPages: number
  readonly budget: RestWeightBudget | null
  readonly #clock: Clock

  constructor(options: HyperliquidInfoClientOptions = {}) {
    const o = validateOptions<HyperliquidInfoClientOptions>('HyperliquidInfoClient options', OPTIONS_SCHEMA, options)
    this.baseUrl = (o.baseUrl ?? HL_DEFAULT_BASE_URL).replace(/\/+$/, '')
    this.#url = `${this.baseUrl}/info`
    this.#timeoutMs = o.timeoutMs ?? 10_000
    this.#pageLimit = o.pageLimit ?? 500
    this.#maxPages = o.maxPages ?? 10_000
    if (o.budget !== undefined && !(o.budget instanceof RestWeightBudget)) throw new TypeError('HyperliquidInfoClient options/budget: must be a RestWeightBudget')
    this.budget = o.budget ?? null
    this.#clock = o.clock ?? systemClock
  }

  // ---------- market data ----------

  metaAndAssetCtxs(): Promise<HlReceived<HlMetaAndAssetCtxs>> {
    return this.#call({ type: 'metaAndAssetCtxs' }, parseMetaAndAssetCtxs)
  }

  allMids(): Promise<HlReceived<HlMids>> {
    return this.#call({ type: 'allMids' }, parseAllMids)
  }

  l2Book(coin: string, opts: { nSigFigs?: 2 | 3 | 4 | 5; mantissa?: 1 | 2 | 5 } = {}): Promise<HlReceived<HlBook>> {
    return this.#call({ type: 'l2Book', coin, ...opts }, (v) => parseBook(v))
  }

  /** Only the latest 5000 candles per coin/interval are served by the venue. */
  candleSnapshot(coin: string, interval: string, range: { startTime: number; endTime: number }): Promise<HlReceived<HlCandle[]>> {
    return this.#call(
      { type: 'candleSnapshot', req: { coin, interval, startTime: range.startTime, endTime: range.endTime } },
      parseCandles,
    )
  }

  /** Settled funding rates in [startTime, endTime], every page fetched, boundary repeats removed, ascending. */
  fundingHistory(coin: string, range: TimeRange): Promise<HlReceived<HlFundingRow[]>> {
    return this.#paginate(
      (startTime) => ({ type: 'fundingHistory', coin, startTime, ...(range.endTime === undefined ? {} : { endTime: range.endTime }) }),
      parseFundingHistory,
      (r) => `${r.time}|${r.coin}`,
      (r) => r.time,
      range,
    )
  }

  predictedFundings(): Promise<HlReceived<HlPredictedFunding[]>> {
    return this.#call({ type: 'predictedFundings' }, parsePredictedFundings)
  }

  // ---------- wallet data ----------

  clearinghouseState(user: string): Promise<HlReceived<HlClearinghouseState>> {
    return this.#call({ type: 'clearinghouseState', user }, parseClearinghouseState)
  }

  /** The venue returns at most the 2000 most recent fills. */
  userFills(user: string, aggregateByTime = false): Promise<HlReceived<HlFill[]>> {
    return this.#call({ type: 'userFills', user, aggregateByTime }, parseUserFills)
  }

  userFunding(user: string, range: TimeRange): Promise<HlReceived<HlUserFunding[]>> {
    return this.#paginate(
      (startTime) => ({ type: 'userFunding', user, startTime, ...(range.endTime === undefined ? {} : { endTime: range.endTime }) }),
      parseUserFunding,
      (r) => `${r.time}|${r.coin}`,
      (r) => r.time,
      range,
    )
  }

  userNonFundingLedgerUpdates(user: string, range: TimeRange): Promise<HlReceived<HlLedgerUpdate[]>> {
    return this.#paginate(
      (startTime) => ({
        type: 'userNonFundingLedgerUpdates',
        user,
        startTime,
        ...(range.endTime === undefined ? {} : { endTime: range.endTime }),
      }),
      parseLedgerUpdates,
      (r) => `${r.time}|${r.hash ?? ''}|${r.type}`,
      (r) => r.time,
      range,
    )
  }

  // ---------- transport ----------

  /**
   * Reference §1: "Paginate with next startTime = last returned time; the boundary row can repeat, so dedupe on
   * time (plus coin)." A page shorter than the limit, or one that adds nothing new, ends the range.
   */
  async #paginate<T>(
    body: (startTime: number) => Record<string, unknown>,
    parse: (v: unknown) => T[],
    key: (row: T) => string,
    time: (row: T) => number,
    range: TimeRange,
  ): Promise<HlReceived<T[]>> {
    const seen = new Set<string>()
    const rows: T[] = []
    let startTime = range.startTime
    let receivedAt = 0
    for (let page = 0; ; page++) {
      if (page >= this.#maxPages) {
        throw new HyperliquidError('HL_BAD_RESPONSE', `pagination did not end after ${this.#maxPages} pages`, {
          request: String(body(startTime).type),
        })
      }
      const res = await this.#call(body(startTime), parse)
      receivedAt = res.receivedAt
      let added = 0
      for (const row of res.data) {
        const k = key(row)
        if (seen.has(k)) continue
        seen.add(k)
        rows.push(row)
        added++
      }
      const last = res.data.at(-1)
      if (res.data.length < this.#pageLimit || added === 0 || last === undefined) break
      // A full page whose rows all share startTime cannot advance by "last time"; step past it.
      const next = Math.max(time(last), startTime + 1)
      if (range.endTime !== undefined && next > range.endTime) break
      startTime = next
    }
    rows.sort((a, b) => time(a) - time(b))
    return { data: rows, receivedAt }
  }

  async #call<T>(body: Record<string, unknown>, parse: (v: unknown) => T): Promise<HlReceived<T>> {
    const request = String(body.type)
    const { json, receivedAt } = await this.#post(request, body)
    if (this.budget && Array.isArray(json)) this.budget.charge(responseExtraWeight(request, json.length))
    try {
      return { data: parse(json), receivedAt }
    } catch (err) {
      if (err instanceof HyperliquidError) {
        throw new HyperliquidError(err.code, `${request}: ${err.message}`, { request, path: err.path ?? undefined, cause: err })
      }
      throw err
    }
  }

  async #post(request: string, body: Record<string, unknown>): Promise<{ json: unknown; receivedAt: number }> {
    await this.budget?.acquire(requestWeight(request))
    const signal = AbortSignal.timeout(this.#timeoutMs)
    let text: string
    let status: number
    try {
      const res = await fetch(this.#url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal,
      })
      status = res.status
      text = await res.text()
    } catch (err) {
      throw this.#transportError(request, err, signal)
    }
    const receivedAt = this.#clock.now()
    if (status === 429) this.budget?.throttled()
    else if (status >= 200 && status <= 299) this.budget?.succeeded()
    if (status < 200 || status > 299) {
      throw new HyperliquidError('HL_HTTP_STATUS', `${request}: HTTP ${status}${text ? ` ${snippet(text)}` : ''}`, { status, request })
    }
    try {
      return { json: JSON.parse(text), receivedAt }
    } catch (err) {
      throw new HyperliquidError('HL_BAD_RESPONSE', `${request}: body is not JSON: ${snippet(text)}`, { request, cause: err })
    }
  }

  #transportError(request: string, err: unknown, signal: AbortSignal): HyperliquidError {
    if (signal.aborted || (err as Error)?.name === 'TimeoutError') {
      return new HyperliquidError('HL_TIMEOUT', `${request}: no complete response within ${this.#timeoutMs} ms`, { request, cause: err })
    }
    const cause = (err as { cause?: { code?: string; message?: string } }).cause
    const why = cause?.code ?? cause?.message ?? (err as Error)?.message ?? String(err)
    return new HyperliquidError('HL_UNREACHABLE', `${request}: ${this.#url} unreachable (${why})`, { request, cause: err })
  }
}

function snippet(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length > 120 ? `${flat.slice(0, 120)}…` : flat
}
