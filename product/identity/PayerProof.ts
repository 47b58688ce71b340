/**
 * Proof that the caller controls the payer it names (issue 29): a signed `sign-in-with-x` message (SIGN-IN-WITH-X
 * header, one use) or a bearer session opened with one (Authorization: Bearer <token>). The Dispatcher asks it
 * before any payer-scoped handler runs and before the credits rail reserves, so a name without a proof moves nothing.
 */
import { randomBytes } from 'node:crypto'
import { ProofRefusal } from './ProofRefusal.ts'
import { PayerSessions, type OpenedSession } from './PayerSessions.ts'
import { SIWX_HEADER, SignInWithX, type SiwxExtension } from './SignInWithX.ts'

export const DEFAULT_SESSION_TTL_S = 24 * 3600

export interface PayerProofOptions {
  /** The service's public origin (scheme://host[:port]): the domain and URI a sign-in must name. */
  origin: string
  sessions?: PayerSessions
  /** HMAC key of issued nonces; kept in the data folder so challenges outlive a restart. Default: random. */
  nonceKey?: Buffer
  sessionTtlS?: number
}

export class PayerProof {
  readonly siwx: SignInWithX

  private constructor(
    readonly origin: string,
    readonly sessions: PayerSessions,
    nonceKey: Buffer,
    readonly sessionTtlMs: number,
    /** Bench only (bench/payments.ts): every named payer counts as proven. No configuration reaches it. */
    readonly trusting: boolean,
  ) {
    this.siwx = new SignInWithX(origin, nonceKey, sessions)
  }

  static create(o: PayerProofOptions): PayerProof {
    return new PayerProof(o.origin, o.sessions ?? PayerSessions.inMemory(), o.nonceKey ?? randomBytes(32), (o.sessionTtlS ?? DEFAULT_SESSION_TTL_S) * 1000, false)
  }

  /**
   * The proof step switched off: a named payer is taken at its word, as before issue 29. Constructible only in code,
   * for the bench that measures what the proof costs; never wired by configuration.
   */
  static trustingNamedPayer(origin: string): PayerProof {
    return new PayerProof(origin, PayerSessions.inMemory(), randomBytes(32), DEFAULT_SESSION_TTL_S * 1000, true)
  }

  /** The address of a live bearer session in an Authorization header; null without one; 'invalid' for a dead one. */
  bearer(authorization: string | undefined, nowMs: number): string | null | 'invalid' {
    if (authorization === undefined) return null
    const token = bearerToken(authorization)
    if (token === null) return 'invalid'
    const s = this.sessions.lookup(token, nowMs)
    return s === null ? 'invalid' : s.address
  }

  /** The lowercase address the request proves (session first, else a sign-in, whose nonce it spends). */
  async prove(headers: Readonly<Record<string, string>>, nowMs: number): Promise<string> {
    const b = this.bearer(headers.authorization, nowMs)
    if (b === 'invalid') throw new ProofRefusal('SESSION_INVALID', 'The bearer token is unknown, revoked or expired; sign in again.')
    if (b !== null) return b
    const signed = headers[SIWX_HEADER]
    if (signed !== undefined) return this.siwx.verify(signed, nowMs)
    throw new ProofRefusal('SIGN_IN_REQUIRED', 'Prove control of the payer: sign the sign-in-with-x challenge and send it as SIGN-IN-WITH-X, or send Authorization: Bearer <token> from POST /v1/auth/session.')
  }

  /**
   * Refuses unless the request proves `payer`. `proven` is the address a bearer already proved for this request
   * (the dispatcher looked it up for the rate limit), so the token is hashed once.
   */
  async require(payer: string, headers: Readonly<Record<string, string>>, nowMs: number, proven: string | null = null): Promise<string> {
    const named = payer.toLowerCase()
    if (this.trusting) return named
    const address = proven ?? (await this.prove(headers, nowMs))
    if (address !== named) {
      throw new ProofRefusal('PROOF_FOR_OTHER_PAYER', `The proof is for ${address}, not for the payer named (${named}).`, { proven: address, named })
    }
    return address
  }

  challenge(resourceUri: string, nowMs: number): SiwxExtension {
    return this.siwx.challenge(resourceUri, nowMs)
  }

  /** POST /v1/auth/session: a verified sign-in (never a session) exchanged for a bearer token. */
  async openSession(headers: Readonly<Record<string, string>>, nowMs: number): Promise<OpenedSession> {
    const signed = headers[SIWX_HEADER]
    if (signed === undefined) throw new ProofRefusal('SIGN_IN_REQUIRED', 'Send the signed challenge in the SIGN-IN-WITH-X header to open a session.')
    const address = await this.siwx.verify(signed, nowMs)
    return this.sessions.open(address, this.sessionTtlMs, nowMs)
  }

  /** DELETE /v1/auth/session: the bearer's session ends now. */
  async revokeSession(headers: Readonly<Record<string, string>>, nowMs: number): Promise<{ address: string; revoked: true }> {
    const token = headers.authorization === undefined ? null : bearerToken(headers.authorization)
    const s = token === null ? null : await this.sessions.revoke(token, nowMs)
    if (s === null || s.expiresAtMs <= nowMs) throw new ProofRefusal('SESSION_INVALID', 'Send Authorization: Bearer <token> of a live session to revoke it.')
    return { address: s.address, revoked: true }
  }
}

function bearerToken(authorization: string): string | null {
  const m = /^Bearer ([A-Za-z0-9_-]{20,200})$/i.exec(authorization.trim())
  return m === null ? null : m[1]!
}
