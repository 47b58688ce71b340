/**
 * The x402 `sign-in-with-x` extension, server side (CAIP-122 / EIP-4361 text, EIP-191 signatures of EOAs), verified
 * with viem only. Wire format as @x402/extensions@2.27.0 (reference: ../shared/reference/x402-sign-in-with-x.md):
 * the challenge is `extensions["sign-in-with-x"] = { info, supportedChains, schema }`, the client answers with the
 * request header `SIGN-IN-WITH-X: base64(JSON payload)`.
 *
 * A nonce is issued without storing anything: 12 random bytes and its expiry, authenticated by an HMAC under the
 * deployment's key, so "issued by this service" is checked from the nonce itself (also after a restart when the key
 * is kept in the data folder); single use is the journal's (PayerSessions.useNonce).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
// viem/utils, not the viem index (which loads every client, action and chain): svc start-up time, bench/startup.ts.
import { getAddress, isAddress, isHex, recoverMessageAddress } from 'viem/utils'
import { createSiweMessage } from 'viem/siwe'
import { ProofRefusal } from './ProofRefusal.ts'
import type { PayerSessions } from './PayerSessions.ts'

export const SIWX_HEADER = 'sign-in-with-x'
export const SIWX_EXTENSION = 'sign-in-with-x'
/** Base mainnet, the chain the credits and x402 payments live on. */
export const SIWX_CHAIN_ID = 'eip155:8453'
const SIWX_CHAIN_NUMBER = 8453
export const SIWX_STATEMENT = 'Sign in to prove you control this address: it lets the service spend its credits and read or change what it owns.'
/** A challenge is valid this long, and a signed message is refused when issued longer ago (issue 29: 5 minutes). */
export const CHALLENGE_TTL_MS = 5 * 60 * 1000

const NONCE_RANDOM = 12
const NONCE_MAC = 16

/** The JSON Schema of a payload, as the official extension declares it (buildSIWxSchema). */
const PAYLOAD_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    domain: { type: 'string' }, address: { type: 'string' }, statement: { type: 'string' },
    uri: { type: 'string', format: 'uri' }, version: { type: 'string' }, chainId: { type: 'string' }, type: { type: 'string' },
    nonce: { type: 'string' }, issuedAt: { type: 'string', format: 'date-time' }, expirationTime: { type: 'string', format: 'date-time' },
    notBefore: { type: 'string', format: 'date-time' }, requestId: { type: 'string' },
    resources: { type: 'array', items: { type: 'string', format: 'uri' } }, signature: { type: 'string' },
  },
  required: ['domain', 'address', 'uri', 'version', 'chainId', 'type', 'nonce', 'issuedAt', 'signature'],
} as const

export interface SiwxInfo {
  domain: string
  uri: string
  version: '1'
  nonce: string
  issuedAt: string
  expirationTime: string
  statement: string
  resources: string[]
}

export interface SiwxExtension {
  info: SiwxInfo
  supportedChains: Array<{ chainId: string; type: 'eip191' }>
  schema: typeof PAYLOAD_SCHEMA
}

/** What a client sends (the official createSIWxPayload output). */
export interface SiwxPayload {
  domain: string
  address: string
  statement?: string
  uri: string
  version: string
  chainId: string
  type: string
  nonce: string
  issuedAt: string
  expirationTime?: string
  notBefore?: string
  requestId?: string
  resources?: string[]
  signatureScheme?: string
  signature: string
}

export class SignInWithX {
  private readonly origin: URL

  constructor(
    origin: string,
    private readonly key: Buffer,
    private readonly sessions: PayerSessions,
  ) {
    this.origin = new URL(origin)
  }

  /** A fresh challenge for a resource of this service (its URI is the resource; the domain is this host). */
  challenge(resourceUri: string, nowMs: number): SiwxExtension {
    const expiresAtMs = nowMs + CHALLENGE_TTL_MS
    return {
      info: {
        domain: this.origin.host,
        uri: resourceUri,
        version: '1',
        nonce: this.nonce(expiresAtMs),
        issuedAt: new Date(nowMs).toISOString(),
        expirationTime: new Date(expiresAtMs).toISOString(),
        statement: SIWX_STATEMENT,
        resources: [resourceUri],
      },
      supportedChains: [{ chainId: SIWX_CHAIN_ID, type: 'eip191' }],
      schema: PAYLOAD_SCHEMA,
    }
  }

  /**
   * The lowercase address a SIGN-IN-WITH-X header proves, its nonce now used; or a ProofRefusal naming the first
   * check that failed. The nonce is spent only by a message whose signature verified (a forged one cannot burn it).
   */
  async verify(header: string, nowMs: number): Promise<string> {
    const p = decode(header)
    if (p.domain !== this.origin.host) throw new ProofRefusal('SIGN_IN_DOMAIN', `The signed domain must be ${this.origin.host}.`, { expected: this.origin.host, got: p.domain })
    let uriOrigin: string
    try {
      uriOrigin = new URL(p.uri).origin
    } catch {
      throw new ProofRefusal('SIGN_IN_URI', 'The signed URI is not a URL.', { got: p.uri })
    }
    if (uriOrigin !== this.origin.origin) throw new ProofRefusal('SIGN_IN_URI', `The signed URI must be on ${this.origin.origin}.`, { expected: this.origin.origin, got: p.uri })
    if (p.chainId !== SIWX_CHAIN_ID || p.type !== 'eip191') {
      throw new ProofRefusal('SIGN_IN_CHAIN', `Sign on ${SIWX_CHAIN_ID} with an eip191 signature.`, { expected: SIWX_CHAIN_ID, got: p.chainId, type: p.type })
    }
    if (p.signatureScheme !== undefined && p.signatureScheme !== 'eip191') {
      throw new ProofRefusal('SIGN_IN_SIGNATURE', 'Only EOA (EIP-191) signatures are accepted; smart-wallet schemes (EIP-1271, EIP-6492) are not.', { got: p.signatureScheme })
    }
    const issued = Date.parse(p.issuedAt)
    const expires = p.expirationTime === undefined ? issued + CHALLENGE_TTL_MS : Date.parse(p.expirationTime)
    const notBefore = p.notBefore === undefined ? issued : Date.parse(p.notBefore)
    if (!Number.isFinite(issued) || !Number.isFinite(expires) || !Number.isFinite(notBefore)) {
      throw new ProofRefusal('SIGN_IN_MALFORMED', 'issuedAt, expirationTime and notBefore must be ISO 8601 instants.')
    }
    if (issued > nowMs || notBefore > nowMs || nowMs - issued > CHALLENGE_TTL_MS || expires <= nowMs) {
      throw new ProofRefusal('SIGN_IN_EXPIRED', 'The signed message is expired or not yet valid; sign a fresh challenge.', { issued_at: p.issuedAt, expiration_time: p.expirationTime ?? null })
    }
    const nonceExpiry = this.nonceExpiry(p.nonce)
    if (nonceExpiry === null || nonceExpiry <= nowMs) {
      throw new ProofRefusal('SIGN_IN_NONCE_UNKNOWN', 'The nonce was not issued by this service or its challenge expired; fetch a fresh challenge.')
    }
    let message: string
    try {
      message = siweMessageOf(p)
    } catch (err) {
      throw new ProofRefusal('SIGN_IN_MALFORMED', `The payload is not a valid sign-in message: ${(err as Error).message.split('\n')[0]}`)
    }
    let recovered: string
    try {
      recovered = await recoverMessageAddress({ message, signature: p.signature as `0x${string}` })
    } catch {
      throw new ProofRefusal('SIGN_IN_SIGNATURE', 'The signature is not a valid EIP-191 signature.')
    }
    const address = p.address.toLowerCase()
    if (recovered.toLowerCase() !== address) throw new ProofRefusal('SIGN_IN_SIGNATURE', 'The signature does not recover the address in the message.')
    if (!(await this.sessions.useNonce(p.nonce, address, nonceExpiry, nowMs))) {
      throw new ProofRefusal('SIGN_IN_NONCE_REPLAYED', 'This signed challenge was already used; fetch a fresh challenge.')
    }
    return address
  }

  private nonce(expiresAtMs: number): string {
    const body = Buffer.alloc(NONCE_RANDOM + 6)
    randomBytes(NONCE_RANDOM).copy(body)
    body.writeUIntBE(Math.floor(expiresAtMs / 1000), NONCE_RANDOM, 6)
    return Buffer.concat([body, this.mac(body)]).toString('hex')
  }

  /** The expiry an authentic nonce carries (epoch ms), or null when this service did not issue it. */
  private nonceExpiry(nonce: string): number | null {
    if (nonce.length !== (NONCE_RANDOM + 6 + NONCE_MAC) * 2 || !/^[0-9a-f]+$/.test(nonce)) return null
    const bytes = Buffer.from(nonce, 'hex')
    const body = bytes.subarray(0, NONCE_RANDOM + 6)
    if (!timingSafeEqual(bytes.subarray(NONCE_RANDOM + 6), this.mac(body))) return null
    return body.readUIntBE(NONCE_RANDOM, 6) * 1000
  }

  private mac(body: Buffer): Buffer {
    return createHmac('sha256', this.key).update('siwx-nonce').update(body).digest().subarray(0, NONCE_MAC)
  }
}

/**
 * The EIP-4361 text of a payload: the exact message the official client signs (formatSIWEMessage over SiweMessage;
 * test/product/identity/SignInWithX.test.ts checks the two agree). Times are passed as the client sent them.
 */
export function siweMessageOf(p: SiwxPayload): string {
  if (!isAddress(p.address, { strict: false })) throw new Error('address is not a 20-byte hex address')
  return createSiweMessage({
    domain: p.domain,
    address: getAddress(p.address),
    ...(p.statement !== undefined ? { statement: p.statement } : {}),
    uri: p.uri,
    version: '1',
    chainId: SIWX_CHAIN_NUMBER,
    nonce: p.nonce,
    issuedAt: new Date(p.issuedAt),
    ...(p.expirationTime !== undefined ? { expirationTime: new Date(p.expirationTime) } : {}),
    ...(p.notBefore !== undefined ? { notBefore: new Date(p.notBefore) } : {}),
    ...(p.requestId !== undefined ? { requestId: p.requestId } : {}),
    ...(p.resources !== undefined ? { resources: p.resources } : {}),
  })
}

const REQUIRED_STRINGS = ['domain', 'address', 'uri', 'version', 'chainId', 'type', 'nonce', 'issuedAt', 'signature'] as const
const OPTIONAL_STRINGS = ['statement', 'expirationTime', 'notBefore', 'requestId', 'signatureScheme'] as const

/**
 * The address a SIGN-IN-WITH-X header claims, before any check (null when it does not decode): which instance of a
 * cluster serves the sign-in (the payer's owner, issue 32). Whether the claim is true is verify()'s, at that owner.
 */
export function claimedAddress(header: string): string | null {
  try {
    return decode(header).address
  } catch {
    return null
  }
}

function decode(header: string): SiwxPayload {
  let raw: unknown
  try {
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(header)) throw new Error('not base64')
    raw = JSON.parse(Buffer.from(header, 'base64').toString('utf8'))
  } catch {
    throw new ProofRefusal('SIGN_IN_MALFORMED', 'SIGN-IN-WITH-X must be standard base64 of the JSON payload.', { field: '/headers/sign-in-with-x' })
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ProofRefusal('SIGN_IN_MALFORMED', 'The payload must be a JSON object.')
  const o = raw as Record<string, unknown>
  for (const f of REQUIRED_STRINGS) {
    if (typeof o[f] !== 'string' || (o[f] as string).length === 0 || (o[f] as string).length > 2048) {
      throw new ProofRefusal('SIGN_IN_MALFORMED', `The payload field ${f} must be a non-empty string.`, { field: `/${f}` })
    }
  }
  for (const f of OPTIONAL_STRINGS) {
    if (o[f] !== undefined && typeof o[f] !== 'string') throw new ProofRefusal('SIGN_IN_MALFORMED', `The payload field ${f} must be a string.`, { field: `/${f}` })
  }
  if (o.resources !== undefined && (!Array.isArray(o.resources) || o.resources.length > 16 || !o.resources.every((r) => typeof r === 'string'))) {
    throw new ProofRefusal('SIGN_IN_MALFORMED', 'The payload field resources must be an array of URIs.', { field: '/resources' })
  }
  if (o.version !== '1') throw new ProofRefusal('SIGN_IN_MALFORMED', 'version must be "1".', { field: '/version' })
  if (!isHex(o.signature)) throw new ProofRefusal('SIGN_IN_SIGNATURE', 'The signature must be 0x-prefixed hex.')
  return o as unknown as SiwxPayload
}
