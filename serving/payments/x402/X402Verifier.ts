/**
 * Local verification of an x402 v2 `exact` payment on Base (EIP-3009 USDC). Proves intent, not payment: funds move
 * only at settlement (x402-v2.md §8, "Local verification proves intent, not payment").
 *
 * Spec (Authentication 2.4): "a bad payload gives 402 PAYMENT_INVALID". The checks follow x402-v2.md §8 in order:
 *   1. decode — standard base64 (`^[A-Za-z0-9+/]*={0,2}$`), JSON, x402Version 2, accepted.scheme "exact", signature
 *      and all six authorization fields present as strings;
 *   2. accepted matches OUR requirement for this route at the current rung on scheme, network, amount, asset, payTo,
 *      maxTimeoutSeconds, and accepted.extra is a superset of ours ("Never use amounts or addresses taken from
 *      accepted");
 *   3. network eip155:8453; the EIP-712 domain is built from our config, never from accepted.extra;
 *   4. EOA signature (65 bytes) whose typed-data recovery equals authorization.from;
 *   5. checksum(to) === checksum(payTo);
 *   6. validBefore >= now + 6 s (block-time buffer) and validAfter <= now;
 *   7. BigInt(value) === BigInt(amount) — "Equality, not >=".
 * Each refusal names the reference reason string (§9) in `reason`.
 */
// viem/utils, not the viem index (which loads every client, action and chain): svc start-up time, bench/startup.ts.
import { getAddress, recoverTypedDataAddress } from 'viem/utils'
import { ADDRESS_PATTERN } from '../../../common/schema.ts'
import { BASE_NETWORK, USDC_BASE, USDC_BASE_EXTRA, X402_VERSION, type PaymentRequirements } from '../x402.ts'
import type { Eip3009Authorization, Hex, PaymentPayload, X402Reason } from './types.ts'

/** EIP-712 domain of USDC on Base mainnet (x402-v2.md §7), from our config. */
export const BASE_USDC_DOMAIN = {
  name: USDC_BASE_EXTRA.name,
  version: USDC_BASE_EXTRA.version,
  chainId: 8453,
  verifyingContract: USDC_BASE as Hex,
} as const

export const TRANSFER_WITH_AUTHORIZATION_TYPES = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const

/** "validBefore >= now + 6 (6 s block-time buffer)". */
export const VALID_BEFORE_BUFFER_S = 6n

export interface Eip712Domain {
  name: string
  version: string
  chainId: number
  verifyingContract: Hex
}

export type VerifyResult =
  | { ok: true; payment: VerifiedPayment }
  | { ok: false; reason: X402Reason; message: string; field?: string; payer?: string }

export interface VerifiedPayment {
  /** The payload as received (forwarded to the facilitator unchanged). */
  payload: PaymentPayload
  /** Our requirement the payload matched (sent to the facilitator, never the client's copy). */
  requirements: PaymentRequirements
  /** Checksummed payer address, recovered from the signature. */
  payer: Hex
  /** Lowercase 0x + 64 hex. */
  nonce: Hex
  validBefore: bigint
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/
const NONCE = /^0x[0-9a-fA-F]{64}$/
const UINT = /^(0|[1-9][0-9]{0,77})$/
const HEX = /^0x[0-9a-fA-F]*$/
const AUTH_FIELDS = ['from', 'to', 'value', 'validAfter', 'validBefore', 'nonce'] as const
const MATCHED_FIELDS = ['scheme', 'network', 'amount', 'asset', 'payTo', 'maxTimeoutSeconds'] as const
const ADDRESS_FIELDS = new Set<string>(['asset', 'payTo'])
const UINT256_MAX = 2n ** 256n - 1n

export interface X402VerifierOptions {
  /** Epoch milliseconds; injected so time-window checks are testable. */
  now: () => number
  /** EIP-712 domain; defaults to USDC on Base mainnet. Tests pass others only to prove a foreign domain fails. */
  domain?: Eip712Domain
}

export class X402Verifier {
  private readonly now: () => number
  private readonly domain: Eip712Domain

  constructor(opts: X402VerifierOptions) {
    this.now = opts.now
    this.domain = opts.domain ?? BASE_USDC_DOMAIN
  }

  /** Verifies a PAYMENT-SIGNATURE header value against our requirement for the route at the current rung. */
  async verify(header: string, ours: PaymentRequirements): Promise<VerifyResult> {
    const decoded = decodePayload(header)
    if (!decoded.ok) return decoded
    const payload = decoded.payload
    const auth = payload.payload.authorization

    // 2–3. accepted must be our requirement; the network gets its own reason.
    if (payload.accepted.network !== BASE_NETWORK || ours.network !== BASE_NETWORK) {
      return fail('invalid_network', `network must be ${BASE_NETWORK}`, '/accepted/network')
    }
    for (const f of MATCHED_FIELDS) {
      const theirs = payload.accepted[f] as unknown
      const mine = ours[f] as unknown
      const same = ADDRESS_FIELDS.has(f) ? sameAddress(theirs, mine) : theirs === mine
      if (!same) {
        return fail('invalid_payment_requirements', `accepted.${f} does not match this route's requirement`, `/accepted/${f}`)
      }
    }
    for (const [k, v] of Object.entries(ours.extra)) {
      if (payload.accepted.extra[k] !== v) {
        return fail('invalid_payment_requirements', `accepted.extra.${k} does not match this route's requirement`, `/accepted/extra/${k}`)
      }
    }

    // 4. EOA signature recovered with OUR domain.
    const signature = payload.payload.signature
    if (!HEX.test(signature) || signature.length % 2 !== 0) {
      return fail('invalid_exact_evm_payload_signature', 'signature is not 0x-prefixed hex', '/payload/signature')
    }
    const bytes = (signature.length - 2) / 2
    if (bytes !== 65) {
      return fail(
        'invalid_exact_evm_payload_signature',
        bytes > 65
          ? `signature is ${bytes} bytes: smart-wallet (ERC-1271/ERC-6492) signatures need an on-chain check and are not accepted; sign with an EOA (65 bytes)`
          : `signature is ${bytes} bytes; an EOA signature is 65 bytes`,
        '/payload/signature',
      )
    }
    const from = getAddress(auth.from)
    let recovered: Hex
    try {
      recovered = await recoverTypedDataAddress({
        domain: this.domain,
        types: TRANSFER_WITH_AUTHORIZATION_TYPES,
        primaryType: 'TransferWithAuthorization',
        message: typedMessage(auth),
        signature: signature as Hex,
      })
    } catch {
      return fail('invalid_exact_evm_payload_signature', 'signature does not recover an address', '/payload/signature', from)
    }
    if (getAddress(recovered) !== from) {
      return fail('invalid_exact_evm_payload_signature', 'signature does not recover authorization.from', '/payload/signature', from)
    }

    // 5. Recipient.
    if (getAddress(auth.to) !== getAddress(ours.payTo)) {
      return fail('invalid_exact_evm_recipient_mismatch', 'authorization.to is not this service\'s payTo', '/payload/authorization/to', from)
    }

    // 6. Time window, in whole seconds.
    const nowS = BigInt(Math.floor(this.now() / 1000))
    const validBefore = BigInt(auth.validBefore)
    if (validBefore < nowS + VALID_BEFORE_BUFFER_S) {
      return fail(
        'invalid_exact_evm_payload_authorization_valid_before',
        `authorization expires before now + ${VALID_BEFORE_BUFFER_S} s`,
        '/payload/authorization/validBefore',
        from,
      )
    }
    if (BigInt(auth.validAfter) > nowS) {
      return fail('invalid_exact_evm_payload_authorization_valid_after', 'authorization is not valid yet', '/payload/authorization/validAfter', from)
    }

    // 7. Exact amount.
    if (BigInt(auth.value) !== BigInt(ours.amount)) {
      return fail(
        'invalid_exact_evm_payload_authorization_value_mismatch',
        `authorization.value must equal the price ${ours.amount} exactly`,
        '/payload/authorization/value',
        from,
      )
    }

    return {
      ok: true,
      payment: { payload, requirements: ours, payer: from, nonce: auth.nonce.toLowerCase() as Hex, validBefore },
    }
  }
}

/** The EIP-712 message of an authorization (numbers as bigint). */
export function typedMessage(auth: Eip3009Authorization) {
  return {
    from: getAddress(auth.from),
    to: getAddress(auth.to),
    value: BigInt(auth.value),
    validAfter: BigInt(auth.validAfter),
    validBefore: BigInt(auth.validBefore),
    nonce: auth.nonce as Hex,
  }
}

type Decoded = { ok: true; payload: PaymentPayload } | Extract<VerifyResult, { ok: false }>

/** Step 1: header → PaymentPayload with every field the later steps read present and well-formed. */
export function decodePayload(header: string): Decoded {
  const value = header.trim()
  if (value.length === 0 || !BASE64.test(value)) return fail('invalid_payload', 'PAYMENT-SIGNATURE is not standard base64')
  let json: unknown
  try {
    json = JSON.parse(Buffer.from(value, 'base64').toString('utf8'))
  } catch {
    return fail('invalid_payload', 'PAYMENT-SIGNATURE does not decode to JSON')
  }
  if (!isObject(json)) return fail('invalid_payload', 'PAYMENT-SIGNATURE is not a JSON object')
  if (json.x402Version !== X402_VERSION) return fail('invalid_x402_version', `x402Version must be ${X402_VERSION}`, '/x402Version')
  const accepted = json.accepted
  if (!isObject(accepted)) return fail('invalid_payload', 'accepted is missing', '/accepted')
  if (accepted.scheme !== 'exact') return fail('invalid_scheme', 'accepted.scheme must be "exact"', '/accepted/scheme')
  for (const f of ['network', 'amount', 'asset', 'payTo'] as const) {
    if (typeof accepted[f] !== 'string') return fail('invalid_payload', `accepted.${f} must be a string`, `/accepted/${f}`)
  }
  if (typeof accepted.maxTimeoutSeconds !== 'number') {
    return fail('invalid_payload', 'accepted.maxTimeoutSeconds must be a number', '/accepted/maxTimeoutSeconds')
  }
  if (accepted.extra !== undefined && !isObject(accepted.extra)) return fail('invalid_payload', 'accepted.extra must be an object', '/accepted/extra')
  const inner = json.payload
  if (!isObject(inner)) return fail('invalid_payload', 'payload is missing', '/payload')
  if (typeof inner.signature !== 'string') return fail('invalid_payload', 'payload.signature must be a string', '/payload/signature')
  const auth = inner.authorization
  if (!isObject(auth)) return fail('invalid_payload', 'payload.authorization is missing', '/payload/authorization')
  for (const f of AUTH_FIELDS) {
    if (typeof auth[f] !== 'string') return fail('invalid_payload', `authorization.${f} must be a string`, `/payload/authorization/${f}`)
  }
  const a = auth as unknown as Eip3009Authorization
  for (const f of ['from', 'to'] as const) {
    if (!ADDRESS_PATTERN.test(a[f])) return fail('invalid_payload', `authorization.${f} is not an address`, `/payload/authorization/${f}`)
  }
  for (const f of ['value', 'validAfter', 'validBefore'] as const) {
    if (!UINT.test(a[f]) || BigInt(a[f]) > UINT256_MAX) {
      return fail('invalid_payload', `authorization.${f} is not a uint256 decimal string`, `/payload/authorization/${f}`)
    }
  }
  if (!NONCE.test(a.nonce)) return fail('invalid_payload', 'authorization.nonce is not 0x + 32 bytes hex', '/payload/authorization/nonce')
  const payload = json as unknown as PaymentPayload
  if (payload.accepted.extra === undefined) (payload.accepted as { extra: Record<string, unknown> }).extra = {}
  return { ok: true, payload }
}

function fail(reason: X402Reason, message: string, field?: string, payer?: string): Extract<VerifyResult, { ok: false }> {
  return { ok: false, reason, message, ...(field ? { field } : {}), ...(payer ? { payer } : {}) }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function sameAddress(a: unknown, b: unknown): boolean {
  return typeof a === 'string' && typeof b === 'string' && ADDRESS_PATTERN.test(a) && ADDRESS_PATTERN.test(b) && a.toLowerCase() === b.toLowerCase()
}
