/**
 * The durable state behind proof of payer control: used sign-in nonces and bearer sessions (issue 29).
 *
 * A bearer token is 32 random bytes (base64url) handed out once; only its SHA-256 is kept, in memory and on the
 * `auth.proofs` journal, so neither a log reader nor a memory dump can replay a session. Revocation is a new record.
 * A nonce is claimed in memory synchronously (of two concurrent sign-ins with one nonce exactly one wins) and then
 * journaled, so a signed challenge proves control once, also across a restart within its validity.
 *
 * Without a journal (tests, a bench) the state lives in memory only.
 *
 * Checkpointed (issue 31; pipeline/state/OwnWritesCheckpoint.ts): the state is the held nonces and sessions, snapshotted
 * with positions that may lag behind the writes already applied here; every record sets or deletes one subject's entry
 * from the record alone (the last one wins), so reading such records again from a snapshot changes nothing. A start
 * drops entries expired at its `nowMs` whether they come from a snapshot or from the log (the same state either way).
 * A nonce is claimed before its record is durable: a snapshot may hold a claim whose write then failed (refused again
 * after a restart, as it is in the running process).
 */
import { createHash, randomBytes } from 'node:crypto'
import type { Logger } from 'pino'
import { childLogger } from '../../common/logger.ts'
import type { Journal, JournalFollower } from '../../pipeline/journal/Journal.ts'
import { PAYER_PROOFS, type PayerProofRow } from '../../pipeline/records/payerProofRecord.ts'
import { OwnWritesCheckpoint, tailOf } from '../../pipeline/state/OwnWritesCheckpoint.ts'
import type { CheckpointSettings, StateStore } from '../../pipeline/state/StateStore.ts'

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

/** The snapshot rows' schema: ['n', nonce, expiresAtMs] and ['s', token hash, address, expiresAtMs], sorted. */
export const SESSION_STATE_SCHEMA = 1

export class PayerSessions implements StateStore {
  readonly name = 'auth.sessions'
  readonly schema = SESSION_STATE_SCHEMA
  private readonly sessions = new Map<string, Session>()
  private readonly nonces = new Map<string, number>()
  /** The state's snapshots: how it was restored at start, a snapshot on demand; null in memory only. */
  checkpoints: OwnWritesCheckpoint | null = null
  /** The follower of the other instances' records (followCluster); null on one instance. */
  private follower: JournalFollower | null = null

  private constructor(
    private readonly journal: Journal<typeof PAYER_PROOFS.schema> | null,
    /** The start's instant: entries expired then are not restored (from a snapshot or from the log). */
    private readonly startMs = 0,
  ) {}

  /** In memory only: state is lost at exit (tests, bench, a deployment without a data folder). */
  static inMemory(): PayerSessions {
    return new PayerSessions(null)
  }

  /**
   * Restores every nonce and session still valid at `nowMs` from the journal (its state snapshot + the tail with
   * `checkpoints`, else the whole journal), then journals what follows.
   */
  static async restore(
    journal: Journal<typeof PAYER_PROOFS.schema>,
    nowMs: number,
    options: { checkpoints?: CheckpointSettings | null; logger?: Logger } = {},
  ): Promise<PayerSessions> {
    const s = new PayerSessions(journal, nowMs)
    s.checkpoints = await OwnWritesCheckpoint.open({
      store: s,
      sources: [tailOf(journal, (r) => s.apply(r, nowMs))],
      checkpoints: options.checkpoints ?? null,
      logger: options.logger ?? childLogger('payer-sessions'),
    })
    return s
  }

  /**
   * Several instances (issue 32): also applies what the other instances journal (their sign-ins, used nonces and
   * revocations), read from the beginning and then live, so a session opened on one instance proves its payer on every
   * other within the follower's fetch wait. Every record sets or deletes one subject's entry from the record alone, so
   * reading this instance's own records again changes nothing. `now`: the service clock, the one every other call of
   * this class is given (an expiry is judged in it, not in the wall clock).
   */
  async followCluster(group: string, now: () => number): Promise<void> {
    if (!this.journal || this.follower) return
    this.follower = await this.journal.follow(group, (r) => this.apply(r, now()))
  }

  /** The final state snapshot; call before the journal closes. */
  async close(): Promise<void> {
    const f = this.follower
    this.follower = null
    await f?.stop()
    await this.checkpoints?.close()
  }

  *rows(): Iterable<unknown> {
    for (const k of [...this.nonces.keys()].sort()) yield ['n', k, this.nonces.get(k)!]
    for (const k of [...this.sessions.keys()].sort()) {
      const s = this.sessions.get(k)!
      yield ['s', k, s.address, s.expiresAtMs]
    }
  }

  load(rows: readonly unknown[]): void {
    const nonces: Array<[string, number]> = []
    const sessions: Array<[string, Session]> = []
    for (const [i, row] of rows.entries()) {
      if (!Array.isArray(row)) throw new Error(`row ${i} is not an array`)
      const [kind, subject] = row as unknown[]
      if (typeof subject !== 'string' || subject.length === 0) throw new Error(`row ${i}: no subject`)
      if (kind === 'n' && row.length === 3 && Number.isSafeInteger(row[2])) nonces.push([subject, row[2] as number])
      else if (kind === 's' && row.length === 4 && typeof row[2] === 'string' && Number.isSafeInteger(row[3])) sessions.push([subject, { address: row[2], expiresAtMs: row[3] as number }])
      else throw new Error(`row ${i} is neither a nonce nor a session`)
    }
    for (const [k, exp] of nonces) if (exp > this.startMs) this.nonces.set(k, exp)
    for (const [k, s] of sessions) if (s.expiresAtMs > this.startMs) this.sessions.set(k, s)
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
    await this.write({ id: `s:${hash}`, kind: 'session_opened', address, subject: hash, expires_at: iso(expiresAtMs), created_at: iso(nowMs) }, () => {
      this.sessions.set(hash, { address, expiresAtMs })
      this.prune(nowMs)
    })
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

  /** Appends one record, then `applied` (an effect that waits for durability); tracked as one write for the snapshots. */
  private write(row: PayerProofRow, applied?: () => void): Promise<void> {
    if (!this.journal) {
      applied?.()
      return Promise.resolve()
    }
    const write = this.journal.append([row]).then(() => applied?.())
    return this.checkpoints ? this.checkpoints.track(write) : write
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
