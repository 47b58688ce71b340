/**
 * Proof of payer control (issue 29): a fresh sign-in-with-x challenge, a verified sign-in exchanged for a bearer
 * session, and its revocation. Transport only; the rules are product/identity/PayerProof.ts.
 */
import { ServiceError } from '../../common/ServiceError.ts'
import { Address, Instant, Open, Type } from '../../common/schema.ts'
import { ProofRefusal } from '../../product/identity/ProofRefusal.ts'
import { CHALLENGE_PATH, SESSION_PATH, SIGN_IN_HOWTO } from '../auth/signInHowTo.ts'
import { SIWX_EXTENSION } from '../../product/identity/SignInWithX.ts'
import { FREE, env } from './define.ts'
import type { HandlerContext, RouteDef } from './types.ts'

const CHALLENGE = Type.Object({
  [SIWX_EXTENSION]: Type.Object({ info: Type.Object({}), supportedChains: Type.Array(Type.Object({})), schema: Type.Object({}) }),
  header: Type.Literal('SIGN-IN-WITH-X'),
  how_to: Type.String(),
})
const SESSION = Type.Object({ token: Type.String({ minLength: 43 }), address: Address, expires_at: Instant, token_type: Type.Literal('Bearer') })
const REVOKED = Type.Object({ address: Address, revoked: Type.Literal(true) })

/** A refused proof on the auth routes: the same typed 401 as a payer-scoped route, with a fresh challenge. */
function unproven(ctx: HandlerContext, err: unknown): never {
  if (!(err instanceof ProofRefusal)) throw err
  throw new ServiceError('PAYER_UNPROVEN', {
    message: err.message,
    headers: { 'cache-control': 'no-store' },
    detail: { reason: err.reason, ...err.detail, sign_in: SIGN_IN_HOWTO, [SIWX_EXTENSION]: ctx.services.payerProof.challenge(`${ctx.documents.baseUrl}${SESSION_PATH}`, ctx.now) },
  })
}

export const AUTH_ROUTES: readonly RouteDef[] = [
  {
    id: 'auth.challenge',
    method: 'GET',
    path: CHALLENGE_PATH,
    summary: 'A fresh sign-in-with-x challenge (x402 extension, EIP-4361 on eip155:8453): sign it to prove control of a payer address',
    description: SIGN_IN_HOWTO,
    tags: ['auth'],
    pay: FREE,
    request: {},
    response: env(CHALLENGE),
    errors: [],
    handler: (ctx) => ({
      data: { [SIWX_EXTENSION]: ctx.services.payerProof.challenge(`${ctx.documents.baseUrl}${SESSION_PATH}`, ctx.now), header: 'SIGN-IN-WITH-X', how_to: SIGN_IN_HOWTO },
      headers: { 'cache-control': 'no-store' },
    }),
  },
  {
    id: 'auth.session.open',
    method: 'POST',
    path: SESSION_PATH,
    summary: 'Exchange a signed sign-in (SIGN-IN-WITH-X header) for a bearer token scoped to its address, with an expiry',
    description: 'The token is shown once and stored only as its SHA-256; send it as Authorization: Bearer <token> with x-svc-payer naming the same address.',
    tags: ['auth'],
    pay: FREE,
    creditsOf: 'sign-in',
    request: { headers: Open({ 'sign-in-with-x': Type.String({ minLength: 1, maxLength: 16_384 }) }) },
    response: env(SESSION, 201),
    errors: ['PAYER_UNPROVEN'],
    handler: async (ctx) => {
      try {
        const s = await ctx.services.payerProof.openSession(ctx.headers, ctx.now)
        return { data: { ...s, token_type: 'Bearer' }, status: 201, headers: { 'cache-control': 'no-store' } }
      } catch (err) {
        return unproven(ctx, err)
      }
    },
  },
  {
    id: 'auth.session.revoke',
    method: 'DELETE',
    path: SESSION_PATH,
    summary: 'Revoke the bearer session in the Authorization header (it stops working at once)',
    tags: ['auth'],
    pay: FREE,
    request: { headers: Open({ authorization: Type.String({ minLength: 1, maxLength: 512 }) }) },
    response: env(REVOKED),
    errors: ['PAYER_UNPROVEN'],
    handler: async (ctx) => {
      try {
        return { data: await ctx.services.payerProof.revokeSession(ctx.headers, ctx.now) }
      } catch (err) {
        return unproven(ctx, err)
      }
    },
  },
]
