/**
 * The durable state behind proof of payer control: used sign-in nonces and bearer sessions (issue 29).
 *
 * A bearer token is 32 random bytes (base64url) handed out once; only its SHA-256 is kept, in memory and on the
 * `auth.proofs` journal, so neither a log reader nor a memory dump can replay a session. Revocation is a new record.
 * A nonce is claimed in memory synchronously (of two concurrent sign-ins with one nonce exactly one wins) and then
 * journaled, so a signed challenge proves control once, also across a restart within its validity.
 *
 * Without a journal (tests, a bench) the state lives in memory only.
 */
import { createHash, randomBytes } from 'node:crypto'
import type { Journal } from '../../pipeline/journal/Journal.ts'
import { PAYER_PROOFS, type PayerProofRow } from '../../pipeline/records/payerProofRecord.ts'

export interface Session {
  address: string
  expiresAtMs: number
}

export interface OpenedSession {
  token: string
  address: string
  expires_at: string
}

/** Above this many held entries, expired ones are dropped on the next write. */
const PRUNE_AT = 50_000

export function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

export class PayerSessions {
  private readonly sessions = new Map<string, Session>()
  private readonly nonces = new Map<string, number>()

  private constructor(private readonly journal: Journal<typeof PAYER_PROOFS.schema> | null) {}

  /** In memory only: state is lost at exit (tests, bench, a deployment without a data folder). */
  static inMemory(): PayerSessions {
    return new PayerSessions(null)
  }

  /** Restores every nonce and session still valid at `nowMs` from the journal, then journals what follows. */
  static async restore(journal: Journal<typeof PAYER_PROOFS.schema>, nowMs: number): Promise<PayerSessions> {
    const s = new PayerSessions(journal)
    for (const r of await journal.readAll()) s.apply(r, nowMs)
    return s
  }

  private apply(r: PayerProofRow, nowMs: number): void {
    const expires = Date.parse(r.expires_at)
    if (r.kind === 'session_revoked') {
      this.sessions.delete(r.subject)
      return
    }
    if (expires <= nowMs) return
    if (r.kind === 'nonce_used') this.nonces.set(r.subject, expires)
    else this.sessions.set(r.subject, { address: r.address, expiresAtMs: expires })
  }

  /** Claims a nonce; false when it was used before. Resolves once the use is durable. */
  async useNonce(nonce: string, address: string, expiresAtMs: number, nowMs: number): Promise<boolean> {
    if (this.nonces.has(nonce)) return false
    this.nonces.set(nonce, expiresAtMs)
    this.prune(nowMs)
    await this.write({ id: `n:${nonce}`, kind: 'nonce_used', address, subject: nonce, expires_at: iso(expiresAtMs), created_at: iso(nowMs) })
    return true
  }

  /** Opens a session for a proven address; the token is returned once and never stored. */
  async open(address: string, ttlMs: number, nowMs: number): Promise<OpenedSession> {
    const token = randomBytes(32).toString('base64url')
    const hash = tokenHash(token)
    const expiresAtMs = nowMs + ttlMs
    await this.write({ id: `s:${hash}`, kind: 'session_opened', address, subject: hash, expires_at: iso(expiresAtMs), created_at: iso(nowMs) })
    this.sessions.set(hash, { address, expiresAtMs })
    this.prune(nowMs)
    return { token, address, expires_at: iso(expiresAtMs) }
  }

  /** The live session of a token, or null (unknown, revoked or expired). Synchronous: one SHA-256 and a map read. */
  lookup(token: string, nowMs: number): Session | null {
    const s = this.sessions.get(tokenHash(token))
    return s !== undefined && s.expiresAtMs > nowMs ? s : null
  }

  /** Ends a session; resolves once the revocation is durable. */
  async revoke(token: string, nowMs: number): Promise<Session | null> {
    const hash = tokenHash(token)
    const s = this.sessions.get(hash)
    if (s === undefined) return null
    this.sessions.delete(hash)
    await this.write({ id: `r:${hash}`, kind: 'session_revoked', address: s.address, subject: hash, expires_at: iso(s.expiresAtMs), created_at: iso(nowMs) })
    return s
  }

  private async write(row: PayerProofRow): Promise<void> {
    if (this.journal) await this.journal.append([row])
  }

  private prune(nowMs: number): void {
    if (this.nonces.size + this.sessions.size < PRUNE_AT) return
    for (const [k, exp] of this.nonces) if (exp <= nowMs) this.nonces.delete(k)
    for (const [k, s] of this.sessions) if (s.expiresAtMs <= nowMs) this.sessions.delete(k)
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString()
}
