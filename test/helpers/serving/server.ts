/** Starts a real server on 127.0.0.1 (free port) for one test and closes it at teardown. */
import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import { Server, type ServerOptions } from '../../../serving/Server.ts'
import { RateLimiter } from '../../../serving/RateLimiter.ts'
import { withProof } from './signIn.ts'

export const PAY_TO = '0x209693Bc6afc0C5328bA36FaF03C514EF312287C'

export async function withServer(
  t: { teardown(fn: () => unknown): void },
  opts: Partial<ServerOptions> = {},
): Promise<Server> {
  const server = await Server.start({
    port: 0,
    config: { payTo: PAY_TO, ...(opts.config ?? {}) },
    ...opts,
    services: { rateLimiter: new RateLimiter({ ip: { burst: 100_000, refillPerSec: 100_000 }, payer: { burst: 100_000, refillPerSec: 100_000 } }), ...(opts.services ?? {}) },
  })
  t.teardown(() => server.close())
  return server
}

export function makeAjv(): Ajv {
  const ajv = new Ajv({ strict: false, allErrors: true, allowUnionTypes: true })
  addFormats.default(ajv)
  return ajv
}

/** JSON calls over real HTTP to a test server: the status, the headers and the parsed body. */
export function jsonCaller(server: { url: string }) {
  return async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    // A payer named without a proof is refused (issue 29): a Server's caller adds the named payer's session.
    const proven = server instanceof Server ? await withProof(server, path, headers, body) : headers
    const res = await fetch(server.url + path, {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...proven },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    })
    return { status: res.status, headers: res.headers, body: JSON.parse(await res.text()) }
  }
}

