/**
 * HTTP client of an x402 facilitator (x402-v2.md §9): `POST {base}/verify` and `POST {base}/settle` with
 * `{ x402Version: 2, paymentPayload, paymentRequirements }`, `GET {base}/supported`.
 *
 * Spec (Authentication 2.5): "Settlement goes through a facilitator at {facilitator_url} (a default is built in and
 * can be overridden by deployment configuration). A testnet-only facilitator cannot settle this network."
 * Reference client behaviour kept here: "a non-2xx whose JSON has isValid / success is treated as a verify/settle
 * error; 429 is retried honouring Retry-After" (once). Anything else that is not a documented answer is a typed
 * FacilitatorError, never a guess.
 */
import type { PaymentRequirements } from '../x402.ts'
import { FacilitatorError } from './FacilitatorError.ts'
import type { PaymentPayload, SettleResponse, VerifyResponse } from './types.ts'

/**
 * Built-in default: the PayAI facilitator settles Base mainnet (eip155:8453) without an API key up to its free tier
 * (docs/decisions.md). x402.org/facilitator is testnet-only; the CDP facilitator needs a per-request JWT (authHeaders).
 */
export const DEFAULT_FACILITATOR_URL = 'https://facilitator.payai.network'
export const CDP_FACILITATOR_URL = 'https://api.cdp.coinbase.com/platform/v2/x402'

export interface FacilitatorClientOptions {
  url?: string
  /** Per-call timeouts; settle waits for the transaction receipt, so it gets longer. */
  verifyTimeoutMs?: number
  settleTimeoutMs?: number
  /** Longest Retry-After honoured before the single retry of a 429. */
  maxRetryAfterMs?: number
  /** Extra headers per request (e.g. a CDP bearer JWT, which is short-lived and per request). */
  authHeaders?: (req: { method: string; url: URL }) => Promise<Record<string, string>> | Record<string, string>
}

export interface Supported {
  kinds: Array<{ x402Version: number; scheme: string; network: string; extra?: Record<string, unknown> }>
  extensions?: unknown[]
  signers?: Record<string, string[]>
}

export class FacilitatorClient {
  readonly url: string
  private readonly verifyTimeoutMs: number
  private readonly settleTimeoutMs: number
  private readonly maxRetryAfterMs: number
  private readonly authHeaders: FacilitatorClientOptions['authHeaders']

  constructor(opts: FacilitatorClientOptions = {}) {
    const url = (opts.url ?? DEFAULT_FACILITATOR_URL).replace(/\/+$/, '')
    if (!/^https?:\/\/[^/]+/.test(url)) throw new Error(`facilitator url must be http(s): ${url}`)
    this.url = url
    this.verifyTimeoutMs = opts.verifyTimeoutMs ?? 10_000
    this.settleTimeoutMs = opts.settleTimeoutMs ?? 30_000
    this.maxRetryAfterMs = opts.maxRetryAfterMs ?? 5_000
    this.authHeaders = opts.authHeaders
  }

  async verify(paymentPayload: PaymentPayload, paymentRequirements: PaymentRequirements): Promise<VerifyResponse> {
    const body = await this.call('verify', 'POST', { x402Version: 2, paymentPayload, paymentRequirements }, this.verifyTimeoutMs, 'isValid')
    if (typeof body.isValid !== 'boolean') throw new FacilitatorError('protocol', 'verify', 'verify answer has no boolean isValid')
    return pick(body, ['isValid', 'invalidReason', 'invalidMessage', 'payer']) as unknown as VerifyResponse
  }

  async settle(paymentPayload: PaymentPayload, paymentRequirements: PaymentRequirements): Promise<SettleResponse> {
    const body = await this.call('settle', 'POST', { x402Version: 2, paymentPayload, paymentRequirements }, this.settleTimeoutMs, 'success')
    if (typeof body.success !== 'boolean') throw new FacilitatorError('protocol', 'settle', 'settle answer has no boolean success')
    if (body.success && (typeof body.transaction !== 'string' || body.transaction === '' || typeof body.network !== 'string')) {
      throw new FacilitatorError('protocol', 'settle', 'successful settle answer lacks transaction or network')
    }
    const out = pick(body, ['success', 'transaction', 'network', 'payer', 'errorReason', 'errorMessage'])
    out.transaction ??= ''
    out.network ??= paymentRequirements.network
    return out as unknown as SettleResponse
  }

  async supported(): Promise<Supported> {
    const body = await this.call('supported', 'GET', null, this.verifyTimeoutMs, null)
    if (!Array.isArray(body.kinds)) throw new FacilitatorError('protocol', 'supported', 'supported answer has no kinds array')
    return body as unknown as Supported
  }

  private async call(
    op: 'verify' | 'settle' | 'supported',
    method: 'GET' | 'POST',
    body: unknown,
    timeoutMs: number,
    answerKey: 'isValid' | 'success' | null,
  ): Promise<Record<string, unknown>> {
    const url = new URL(`${this.url}/${op}`)
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = { accept: 'application/json', ...(await this.authHeaders?.({ method, url })) }
      if (body !== null) headers['content-type'] = 'application/json'
      let res: Response
      let text: string
      try {
        res = await fetch(url, {
          method,
          headers,
          ...(body !== null ? { body: JSON.stringify(body) } : {}),
          signal: AbortSignal.timeout(timeoutMs),
        })
        text = await res.text()
      } catch (err) {
        const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')
        throw new FacilitatorError(
          timedOut ? 'timeout' : 'unreachable',
          op,
          timedOut ? `facilitator ${op} timed out after ${timeoutMs} ms` : `facilitator ${op} unreachable`,
          null,
          null,
          { cause: err },
        )
      }
      if (res.status === 429) {
        const wait = retryAfterMs(res.headers.get('retry-after'))
        if (attempt === 0 && wait <= this.maxRetryAfterMs) {
          await new Promise((r) => setTimeout(r, wait))
          continue
        }
        throw new FacilitatorError('rate_limited', op, `facilitator ${op} rate limited`, 429, wait)
      }
      const json = parseObject(text)
      if (res.ok) {
        if (!json) throw new FacilitatorError('protocol', op, `facilitator ${op} answered ${res.status} without a JSON object`, res.status)
        return json
      }
      // A non-2xx carrying the documented answer is the facilitator's verdict (reference client behaviour).
      if (json && answerKey && typeof json[answerKey] === 'boolean') return json
      throw new FacilitatorError('http', op, `facilitator ${op} answered HTTP ${res.status}`, res.status)
    }
  }
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const v = JSON.parse(text) as unknown
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null
  } catch {
    return null
  }
}

/** Retry-After is delay-seconds or an HTTP date; absent or unreadable → 1 s. */
function retryAfterMs(value: string | null): number {
  if (value === null) return 1000
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000
  const at = Date.parse(value)
  return Number.isNaN(at) ? 1000 : Math.max(0, at - Date.now())
}

function pick(o: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k]
  return out
}
