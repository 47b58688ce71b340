/**
 * A real server on 127.0.0.1 with the x402 rail wired: X402PaymentGate (durable nonces in a data dir) → the
 * LocalFacilitator over SimulatedUsdc, plus the AnswerBook paid/free test routes. Used by the x402 tests and bench.
 * Also a hand-rolled signer for negative cases (the reference client only ever signs valid payloads).
 */
import { randomBytes } from 'node:crypto'
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { Server } from '../../../serving/Server.ts'
import { RateLimiter } from '../../../serving/RateLimiter.ts'
import { ROUTES } from '../../../serving/routes/registry.ts'
import { FacilitatorClient } from '../../../serving/payments/x402/FacilitatorClient.ts'
import { X402PaymentGate } from '../../../serving/payments/x402/X402PaymentGate.ts'
import { BASE_USDC_DOMAIN, TRANSFER_WITH_AUTHORIZATION_TYPES, typedMessage, type Eip712Domain } from '../../../serving/payments/x402/X402Verifier.ts'
import type { Eip3009Authorization, Hex, PaymentPayload } from '../../../serving/payments/x402/types.ts'
import { encodeHeader, type PaymentRequired, type PaymentRequirements } from '../../../serving/payments/x402.ts'
import { LocalFacilitator } from '../../../peers/LocalFacilitator.ts'
import { AnswerBook } from './AnswerBook.ts'
import { PAY_TO } from './server.ts'

/** The well-known public Hardhat/Anvil account #0 (peers/testAccounts.ts). A TEST key: never fund it, never use it elsewhere. */
export { TEST_PAYER_KEY as TEST_KEY, TEST_PAYER_ADDRESS as TEST_ADDRESS } from '../../../peers/testAccounts.ts'
import { TEST_PAYER_KEY as TEST_KEY } from '../../../peers/testAccounts.ts'

export interface X402Stack {
  server: Server
  gate: X402PaymentGate
  facilitator: LocalFacilitator
  book: AnswerBook
  /** Stops the server and the gate (not the facilitator, which may outlive a restart). */
  stop(): Promise<void>
}

export interface X402StackOptions {
  dataDir: string
  facilitator: LocalFacilitator
  book?: AnswerBook
  now?: () => number
  remoteVerify?: boolean
}

export async function startX402Stack(opts: X402StackOptions): Promise<X402Stack> {
  const book = opts.book ?? new AnswerBook()
  const gate = await X402PaymentGate.open({
    payTo: PAY_TO,
    dataDir: opts.dataDir,
    facilitator: new FacilitatorClient({ url: opts.facilitator.url, verifyTimeoutMs: 2000, settleTimeoutMs: 2000 }),
    ...(opts.now ? { now: opts.now } : {}),
    ...(opts.remoteVerify !== undefined ? { remoteVerify: opts.remoteVerify } : {}),
  })
  const server = await Server.start({
    port: 0,
    config: { payTo: PAY_TO },
    routes: [...ROUTES, ...book.routes()],
    services: {
      paymentGate: gate,
      rateLimiter: new RateLimiter({ ip: { burst: 1_000_000, refillPerSec: 1_000_000 }, payer: { burst: 1_000_000, refillPerSec: 1_000_000 } }),
      ...(opts.now ? { clock: { now: opts.now } } : {}),
    },
  })
  return {
    server, gate, facilitator: opts.facilitator, book,
    stop: async () => {
      await server.close()
      await gate.close()
    },
  }
}

export async function withX402Stack(
  t: { teardown(fn: () => unknown): void },
  opts: X402StackOptions,
): Promise<X402Stack> {
  const stack = await startX402Stack(opts)
  t.teardown(() => stack.stop())
  return stack
}

export function testAccount(): PrivateKeyAccount {
  return privateKeyToAccount(TEST_KEY)
}

/** Decodes the PAYMENT-REQUIRED header of a 402. */
export function requiredOf(res: Response): PaymentRequired {
  const h = res.headers.get('payment-required')
  if (!h) throw new Error('no PAYMENT-REQUIRED header')
  return JSON.parse(Buffer.from(h, 'base64').toString('utf8')) as PaymentRequired
}

/**
 * Signs an EIP-3009 authorization for `accepted` the way @x402/evm's client does (validAfter 0, validBefore now +
 * maxTimeoutSeconds, random nonce), with overrides applied to the signed message; `tamper` edits after signing.
 */
export async function signPayment(opts: {
  account: PrivateKeyAccount
  accepted: PaymentRequirements
  resourceUrl?: string
  authorization?: Partial<Eip3009Authorization>
  domain?: Eip712Domain
  nowS?: number
  tamper?: (p: PaymentPayload) => void
}): Promise<{ header: string; payload: PaymentPayload }> {
  const nowS = opts.nowS ?? Math.floor(Date.now() / 1000)
  const auth: Eip3009Authorization = {
    from: opts.account.address,
    to: opts.accepted.payTo,
    value: opts.accepted.amount,
    validAfter: '0',
    validBefore: String(nowS + opts.accepted.maxTimeoutSeconds),
    nonce: `0x${randomBytes(32).toString('hex')}`,
    ...opts.authorization,
  }
  const signature = await opts.account.signTypedData({
    domain: opts.domain ?? BASE_USDC_DOMAIN,
    types: TRANSFER_WITH_AUTHORIZATION_TYPES,
    primaryType: 'TransferWithAuthorization',
    message: typedMessage(auth),
  })
  const payload: PaymentPayload = {
    x402Version: 2,
    ...(opts.resourceUrl ? { resource: { url: opts.resourceUrl, description: 'test', mimeType: 'application/json' } } : {}),
    accepted: { ...opts.accepted, extra: { ...opts.accepted.extra } },
    payload: { signature, authorization: auth },
    extensions: {},
  }
  opts.tamper?.(payload)
  return { header: encodeHeader(payload), payload }
}

export type { Hex }
