/**
 * Proof of payer control for tests (issue 29), in one place: a viem account signs in over real HTTP with the official
 * x402 client (@x402/extensions/sign-in-with-x), so a test adds a proof with one line:
 *
 *   const alice = await signIn(server.url, privateKeyToAccount(generatePrivateKey()))
 *   await fetch(url, { headers: alice.headers })            // authorization + x-svc-payer
 *
 * Fixtures whose payers are bare addresses (no key: '0x' + 'a'.repeat(40)) get a session opened inside the server
 * (`sessionFor`), which the dispatcher checks exactly like one opened over HTTP; only the signature step is skipped.
 */
import type { LocalAccount } from 'viem'
import { fetchChallenge, signChallenge } from '../../../peers/signIn.ts'
import type { Server } from '../../../serving/Server.ts'

export { fetchChallenge, signChallenge, type Challenge } from '../../../peers/signIn.ts'

export interface SignedIn {
  address: string
  token: string
  expires_at: string
  /** authorization: Bearer <token> and x-svc-payer: <address>. */
  headers: Record<string, string>
}

/** A fresh signed sign-in for `account` (one use). */
export async function signInHeader(url: string, account: LocalAccount): Promise<string> {
  return signChallenge(await fetchChallenge(url), account, `${url}/v1/auth/session`)
}

/** Signs in over real HTTP and opens a bearer session: POST /v1/auth/session. */
export async function signIn(url: string, account: LocalAccount): Promise<SignedIn> {
  const res = await fetch(`${url}/v1/auth/session`, { method: 'POST', headers: { 'sign-in-with-x': await signInHeader(url, account) } })
  const body = (await res.json()) as { data: { token: string; address: string; expires_at: string } }
  if (res.status !== 201) throw new Error(`sign-in refused: ${res.status} ${JSON.stringify(body)}`)
  const { token, address, expires_at } = body.data
  return { token, address, expires_at, headers: { authorization: `Bearer ${token}`, 'x-svc-payer': address } }
}

/** A session for a keyless fixture address, opened inside the server: { authorization: 'Bearer …' }. */
export async function sessionFor(server: Server, address: string): Promise<Record<string, string>> {
  // Fixtures move their clocks by days and years: the session outlives any of them.
  const s = await server.services.payerProof.sessions.open(address.toLowerCase(), 100 * 365 * 86_400_000, server.services.clock.now())
  return { authorization: `Bearer ${s.token}` }
}

const sessionCache = new WeakMap<Server, Map<string, Record<string, string>>>()

/**
 * The one line existing tests add: `headers` plus the proof for the payer the request names (x-svc-payer, payer, the
 * query or body field payer), a session opened once per server and address. A request that already carries a proof,
 * or names no payer, is left as it is.
 */
export async function withProof(server: Server, path: string, headers: Record<string, string> = {}, body?: unknown): Promise<Record<string, string>> {
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]))
  if (lower.authorization !== undefined || lower['sign-in-with-x'] !== undefined) return headers
  const fromBody = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).payer : typeof body === 'string' ? safePayer(body) : undefined
  const payer = lower['x-svc-payer'] ?? lower.payer ?? new URL(path, 'http://x').searchParams.get('payer') ?? (typeof fromBody === 'string' ? fromBody : undefined)
  if (payer === undefined || !/^0x[0-9a-fA-F]{40}$/.test(payer)) return headers
  let cache = sessionCache.get(server)
  if (!cache) sessionCache.set(server, (cache = new Map()))
  const key = payer.toLowerCase()
  let proof = cache.get(key)
  if (!proof) cache.set(key, (proof = await sessionFor(server, key)))
  return { ...headers, ...proof }
}

function safePayer(body: string): unknown {
  try {
    return (JSON.parse(body) as Record<string, unknown>).payer
  } catch {
    return undefined
  }
}
