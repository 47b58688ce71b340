/**
 * x402 v2 challenge construction (reference: ../shared/reference/x402-v2.md §1–3).
 *
 * "402 response: Content-Type: application/json, PAYMENT-REQUIRED, Cache-Control: no-store" and the header is
 * "Standard base64 (RFC 4648 §4) with = padding, over the UTF-8 bytes of the JSON".
 */
import type { Price } from '../../product/billing/pricing.ts'

export const X402_VERSION = 2
export const BASE_NETWORK = 'eip155:8453'
/** USDC on Base mainnet (x402-v2.md §7). */
export const USDC_BASE = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'
/** EIP-712 domain of USDC on Base mainnet: name 'USD Coin', version '2'. */
export const USDC_BASE_EXTRA = { name: 'USD Coin', version: '2' } as const
export const MAX_TIMEOUT_SECONDS = 60

export interface PaymentRequirements {
  scheme: 'exact'
  network: string
  amount: string
  asset: string
  payTo: string
  maxTimeoutSeconds: number
  extra: { name: string; version: string }
}

export interface PaymentRequired {
  x402Version: 2
  error?: string
  resource: { url: string; description: string; mimeType: string }
  accepts: PaymentRequirements[]
  extensions: Record<string, never>
}

export function requirementsFor(price: Price, payTo: string): PaymentRequirements {
  return {
    scheme: 'exact',
    network: BASE_NETWORK,
    amount: price.amount_atomic,
    asset: USDC_BASE,
    payTo,
    maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
    extra: { ...USDC_BASE_EXTRA },
  }
}

/** No recipient configured (SVC_PAY_TO unset): no x402 requirement can be offered, so none is advertised. */
export function acceptsFor(price: Price, payTo: string | null): PaymentRequirements[] {
  return payTo === null ? [] : [requirementsFor(price, payTo)]
}

export const NO_RECIPIENT_ERROR = 'No x402 payment recipient is configured on this deployment; pay with credits (x-svc-payer).'

export function buildPaymentRequired(
  price: Price,
  payTo: string | null,
  resource: { url: string; description: string },
  error = 'PAYMENT-SIGNATURE header is required',
): PaymentRequired {
  return {
    x402Version: X402_VERSION,
    error: payTo === null ? `${error}. ${NO_RECIPIENT_ERROR}` : error,
    resource: { url: resource.url, description: resource.description, mimeType: 'application/json' },
    accepts: acceptsFor(price, payTo),
    extensions: {},
  }
}

export function encodeHeader(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64')
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

export function decodeHeader<T>(value: string): T {
  if (!BASE64.test(value)) throw new Error('not standard base64')
  return JSON.parse(Buffer.from(value, 'base64').toString('utf8')) as T
}
