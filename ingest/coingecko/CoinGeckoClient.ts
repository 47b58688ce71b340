/**
 * CoinGecko `/coins/markets` client (reference hyperliquid-api.md §6): the largest coins by market cap.
 *
 * "GET https://api.coingecko.com/api/v3/coins/markets (Demo key header x-cg-demo-api-key) or
 * https://pro-api.coingecko.com/api/v3/coins/markets (x-cg-pro-api-key)." "Numbers are JSON numbers (not strings).
 * Nullable: market_cap_rank, fully_diluted_valuation, max_supply, total_supply, roi." "Key on id; symbols are not
 * unique." Unknown fields are ignored; a row missing a required field fails the whole response with its path.
 */
import { codedError, isRetryableStatus, type CodeTable } from '../../common/CodedError.ts'
import { validateOptions } from '../../common/validation.ts'

export const CG_DEFAULT_BASE_URL = 'https://api.coingecko.com/api/v3'

export const CG_ERRORS = {
  CG_HTTP_STATUS: { retryable: false, meaning: 'CoinGecko answered a non-2xx status; retryable for 429 and 5xx' },
  CG_TIMEOUT: { retryable: true, meaning: 'no complete response within the timeout' },
  CG_BAD_RESPONSE: { retryable: false, meaning: 'the body is not JSON or not the documented shape; the message names the field' },
  CG_UNREACHABLE: { retryable: true, meaning: 'connection refused, reset or DNS failure' },
} as const satisfies CodeTable<string>
export type CgErrorCode = keyof typeof CG_ERRORS

export class CoinGeckoError extends codedError(CG_ERRORS) {
  readonly status: number | null
  constructor(code: CgErrorCode, message: string, opts: { status?: number; cause?: unknown } = {}) {
    const status = opts.status ?? null
    super(code, message, { cause: opts.cause, retryable: code === 'CG_HTTP_STATUS' ? isRetryableStatus(status) : CG_ERRORS[code].retryable })
    this.status = status
  }
}

export interface CoinGeckoClientOptions {
  /** Default https://api.coingecko.com/api/v3 (no trailing /coins/markets). */
  baseUrl?: string
  /** API key; sent in keyHeader when set. */
  apiKey?: string
  /** Default: x-cg-pro-api-key for a pro-api host, else x-cg-demo-api-key. */
  keyHeader?: string
  /** Per request. Default 10 000. */
  timeoutMs?: number
}

const OPTIONS_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    baseUrl: { type: 'string', pattern: '^https?://[^\\s]+$' },
    apiKey: { type: 'string', minLength: 1 },
    keyHeader: { type: 'string', pattern: '^[A-Za-z0-9-]+$' },
    timeoutMs: { type: 'integer', minimum: 1, maximum: 600000 },
  },
} as const

export interface CgMarket {
  id: string
  symbol: string
  name: string
  market_cap: number | null
  market_cap_rank: number | null
  current_price: number | null
  last_updated: string | null
}

export class CoinGeckoClient {
  readonly baseUrl: string
  readonly #apiKey: string | null
  readonly #keyHeader: string
  readonly #timeoutMs: number

  constructor(options: CoinGeckoClientOptions = {}) {
    const o = validateOptions<CoinGeckoClientOptions>('CoinGeckoClient options', OPTIONS_SCHEMA, options)
    this.baseUrl = (o.baseUrl ?? CG_DEFAULT_BASE_URL).replace(/\/+$/, '')
    this.#apiKey = o.apiKey ?? null
    this.#keyHeader = o.keyHeader ?? (/^https?:\/\/pro-api\./.test(this.baseUrl) ? 'x-cg-pro-api-key' : 'x-cg-demo-api-key')
    this.#timeoutMs = o.timeoutMs ?? 10_000
  }

  /** One page of /coins/markets in USD ordered by market cap descending. */
  async markets(opts: { perPage?: number; page?: number } = {}): Promise<{ data: CgMarket[]; receivedAt: number }> {
    const q = new URLSearchParams({
      vs_currency: 'usd',
      order: 'market_cap_desc',
      per_page: String(opts.perPage ?? 100),
      page: String(opts.page ?? 1),
    })
    const url = `${this.baseUrl}/coins/markets?${q}`
    const signal = AbortSignal.timeout(this.#timeoutMs)
    let status: number
    let text: string
    try {
      const res = await fetch(url, {
        headers: { accept: 'application/json', ...(this.#apiKey ? { [this.#keyHeader]: this.#apiKey } : {}) },
        signal,
      })
      status = res.status
      text = await res.text()
    } catch (err) {
      if (signal.aborted || (err as Error)?.name === 'TimeoutError') {
        throw new CoinGeckoError('CG_TIMEOUT', `coins/markets: no complete response within ${this.#timeoutMs} ms`, { cause: err })
      }
      const cause = (err as { cause?: { code?: string } }).cause
      throw new CoinGeckoError('CG_UNREACHABLE', `coins/markets: ${this.baseUrl} unreachable (${cause?.code ?? (err as Error)?.message})`, { cause: err })
    }
    const receivedAt = Date.now()
    if (status < 200 || status > 299) {
      throw new CoinGeckoError('CG_HTTP_STATUS', `coins/markets: HTTP ${status}`, { status })
    }
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch (err) {
      throw new CoinGeckoError('CG_BAD_RESPONSE', 'coins/markets: body is not JSON', { cause: err })
    }
    return { data: parseMarkets(json), receivedAt }
  }
}

export function parseMarkets(json: unknown): CgMarket[] {
  if (!Array.isArray(json)) throw new CoinGeckoError('CG_BAD_RESPONSE', 'coins/markets: expected an array at /')
  return json.map((row: unknown, i) => {
    const bad = (field: string, want: string) => new CoinGeckoError('CG_BAD_RESPONSE', `coins/markets: /${i}/${field} must be ${want}`)
    if (typeof row !== 'object' || row === null) throw bad('', 'an object')
    const r = row as Record<string, unknown>
    const str = (k: string) => {
      if (typeof r[k] !== 'string' || r[k] === '') throw bad(k, 'a non-empty string')
      return r[k] as string
    }
    const numOrNull = (k: string) => {
      const v = r[k]
      if (v === undefined || v === null) return null
      if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(k, 'a number or null')
      return v
    }
    const lu = r.last_updated
    return {
      id: str('id'),
      symbol: str('symbol'),
      name: str('name'),
      market_cap: numOrNull('market_cap'),
      market_cap_rank: numOrNull('market_cap_rank'),
      current_price: numOrNull('current_price'),
      last_updated: typeof lu === 'string' ? lu : null,
    }
  })
}
