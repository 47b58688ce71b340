/**
 * A local x402 facilitator for tests and benches (a protocol peer, not part of the service): a real node:http server on 127.0.0.1 (free port) answering the facilitator
 * API of x402-v2.md §9 — POST /verify, POST /settle, GET /supported — with the reference facilitator's own checks:
 * `@x402/core` x402Facilitator + `@x402/evm/exact/facilitator` ExactEvmScheme, running against SimulatedUsdc instead
 * of an RPC (signature, recipient, amount, time window, nonce unused, balance). Settlement receipts carry a FAKE,
 * deterministic transaction hash (see SimulatedUsdc); no chain is involved.
 *
 * Modes (switchable at any time):
 *   ok      the reference answers;
 *   down    the socket is destroyed without a response (a dead facilitator as the client sees it);
 *   error   HTTP 500 with a non-JSON body;
 *   reject  /verify answers normally, /settle answers 200 { success: false, errorReason: rejectReason } (default
 *           'insufficient_funds').
 * rateLimitNext(n) answers the next n requests with 429 and Retry-After: 0.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { x402Facilitator } from '@x402/core/facilitator'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm/exact/facilitator'
import { SimulatedUsdc } from './SimulatedUsdc.ts'

export type FacilitatorMode = 'ok' | 'down' | 'error' | 'reject'

export class LocalFacilitator {
  mode: FacilitatorMode = 'ok'
  /** The settle errorReason of reject mode. */
  rejectReason = 'insufficient_funds'
  readonly calls = { verify: 0, settle: 0, supported: 0 }
  private rateLimited = 0

  private constructor(
    private readonly server: Server,
    readonly url: string,
    readonly token: SimulatedUsdc,
    private readonly facilitator: x402Facilitator,
  ) {}

  /** port 0 (the default) picks a free one; `svc dev facilitator` binds the port it prints. */
  static async start(opts: { token?: SimulatedUsdc; port?: number; host?: string } = {}): Promise<LocalFacilitator> {
    const token = opts.token ?? new SimulatedUsdc()
    const facilitator = new x402Facilitator().register('eip155:8453', new ExactEvmScheme(token))
    let self: LocalFacilitator | null = null
    const server = createServer((req, res) => void self?.handle(req, res))
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve())
    })
    const port = (server.address() as AddressInfo).port
    self = new LocalFacilitator(server, `http://${opts.host ?? '127.0.0.1'}:${port}`, token, facilitator)
    return self
  }

  rateLimitNext(n: number): void {
    this.rateLimited = n
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.closeAllConnections()
      this.server.close(() => resolve())
    })
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const path = (req.url ?? '/').split('?')[0]
    if (this.mode === 'down') {
      req.socket.destroy()
      return
    }
    if (this.rateLimited > 0) {
      this.rateLimited--
      return send(res, 429, { error: 'rate limited' }, { 'retry-after': '0' })
    }
    if (this.mode === 'error') {
      res.writeHead(500, { 'content-type': 'text/plain' }).end('internal error')
      return
    }
    try {
      if (req.method === 'GET' && path === '/supported') {
        this.calls.supported++
        return send(res, 200, this.facilitator.getSupported())
      }
      if (req.method !== 'POST' || (path !== '/verify' && path !== '/settle')) return send(res, 404, { error: 'not found' })
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        x402Version?: number
        paymentPayload?: PaymentPayload
        paymentRequirements?: PaymentRequirements
      }
      if (!body.paymentPayload || !body.paymentRequirements) return send(res, 400, { error: 'paymentPayload and paymentRequirements are required' })
      if (path === '/verify') {
        this.calls.verify++
        return send(res, 200, await this.facilitator.verify(body.paymentPayload, body.paymentRequirements))
      }
      this.calls.settle++
      if (this.mode === 'reject') {
        return send(res, 200, {
          success: false,
          errorReason: this.rejectReason,
          transaction: '',
          network: body.paymentRequirements.network,
          payer: body.paymentPayload.payload.authorization && (body.paymentPayload.payload.authorization as { from: string }).from,
        })
      }
      return send(res, 200, await this.facilitator.settle(body.paymentPayload, body.paymentRequirements))
    } catch (err) {
      // The reference example facilitator answers 500 on exceptions.
      return send(res, 500, { error: err instanceof Error ? err.message : String(err) })
    }
  }
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body))
}
