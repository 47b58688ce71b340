/**
 * A TCP balancer in front of several service instances (issue 32, point 4: "three instances behind one port"). It
 * works below HTTP, so every protocol the service speaks passes through untouched: plain requests, keep-alive, the
 * ledger's WebSocket and SSE streams, MCP's streamable HTTP. Each accepted connection goes to the next instance in
 * rotation that is in service; a connection is an instance's for its whole life (HTTP keep-alive clients therefore
 * stick to one instance until they reconnect, as with haproxy's `mode tcp`; a load generator spreads by opening
 * several connections).
 *
 * In service means: the instance's GET /readyz answered 200 at the last probe (every `probeEveryMs`). A warming-up,
 * degraded or dead instance leaves the rotation at its next probe and comes back at the first 200. A connection that
 * the chosen instance refuses before any byte went to it is tried on the next one in rotation (the client sees one
 * connection), so a SIGKILLed instance costs no client error between two probes. When no instance is in service the
 * balancer still tries each in turn (an instance that answers 503 says why better than a reset); when none accepts,
 * the client's connection is reset.
 *
 * The balancer holds no state of the service: any instance answers any request (issue 32, point 2).
 */
import { createServer, connect, type Server, type Socket } from 'node:net'
import { request } from 'node:http'
import { childLogger } from '../../common/logger.ts'

const log = childLogger('balancer')

export interface Upstream {
  host: string
  port: number
}

export interface UpstreamState extends Upstream {
  /** In the rotation: the last probe of /readyz answered 200. */
  inService: boolean
  /** Connections currently piped to this instance. */
  active: number
  /** Connections ever piped to it. */
  served: number
  /** The last probe's status, or the error that replaced it ('ECONNREFUSED', 'timeout'). */
  lastProbe: string | null
}

export interface BalancerOptions {
  port: number
  host?: string
  upstreams: readonly Upstream[]
  /** How often /readyz of each instance is probed. */
  probeEveryMs?: number
  /** A probe that takes longer counts as out of service. */
  probeTimeoutMs?: number
  /** How long a connect to an instance may take before the next one is tried. */
  connectTimeoutMs?: number
}

const DEFAULT_PROBE_EVERY_MS = 1000
const DEFAULT_PROBE_TIMEOUT_MS = 2000
const DEFAULT_CONNECT_TIMEOUT_MS = 3000

export class Balancer {
  readonly #server: Server
  readonly #upstreams: UpstreamState[]
  readonly #clients = new Set<Socket>()
  readonly #probeEveryMs: number
  readonly #probeTimeoutMs: number
  readonly #connectTimeoutMs: number
  #next = 0
  #probeTimer: NodeJS.Timeout | null = null
  #closed = false
  #port = 0

  private constructor(server: Server, o: BalancerOptions) {
    this.#server = server
    this.#upstreams = o.upstreams.map((u) => ({ host: u.host, port: u.port, inService: false, active: 0, served: 0, lastProbe: null }))
    this.#probeEveryMs = o.probeEveryMs ?? DEFAULT_PROBE_EVERY_MS
    this.#probeTimeoutMs = o.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS
    this.#connectTimeoutMs = o.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS
  }

  /** Listens and probes every instance once before the first connection is accepted, so the rotation starts right. */
  static async start(o: BalancerOptions): Promise<Balancer> {
    if (o.upstreams.length === 0) throw new Error('a balancer needs at least one upstream')
    const server = createServer({ pauseOnConnect: true })
    const balancer = new Balancer(server, o)
    await balancer.#probeAll()
    server.on('connection', (client) => balancer.#accept(client))
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(o.port, o.host ?? '127.0.0.1', () => {
        server.off('error', reject)
        resolve()
      })
    })
    const address = server.address()
    balancer.#port = typeof address === 'object' && address ? address.port : o.port
    balancer.#scheduleProbe()
    return balancer
  }

  get port(): number {
    return this.#port
  }

  /** A copy of each instance's state, in the order given. */
  get upstreams(): UpstreamState[] {
    return this.#upstreams.map((u) => ({ ...u }))
  }

  /** Stops accepting, ends every piped connection and the probes. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    if (this.#probeTimer) clearTimeout(this.#probeTimer)
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()))
    for (const client of this.#clients) client.destroy()
    await closed
  }

  /** The instances to try for one connection: those in service from the rotation's position, then the others. */
  #candidates(): UpstreamState[] {
    const n = this.#upstreams.length
    const start = this.#next
    this.#next = (this.#next + 1) % n
    const ordered = Array.from({ length: n }, (_, i) => this.#upstreams[(start + i) % n]!)
    return [...ordered.filter((u) => u.inService), ...ordered.filter((u) => !u.inService)]
  }

  #accept(client: Socket): void {
    if (this.#closed) {
      client.destroy()
      return
    }
    this.#clients.add(client)
    client.once('close', () => this.#clients.delete(client))
    // The client may write before an instance is connected: it is paused (pauseOnConnect), so nothing is read and
    // nothing lost; its bytes flow once the pipe is set up.
    client.on('error', () => client.destroy())
    this.#connectTo(client, this.#candidates(), 0)
  }

  #connectTo(client: Socket, candidates: UpstreamState[], i: number): void {
    if (client.destroyed) return
    const target = candidates[i]
    if (!target) {
      log.warn({ tried: candidates.length }, 'no instance accepted the connection; resetting it')
      client.resetAndDestroy()
      return
    }
    const upstream = connect({ host: target.host, port: target.port })
    const timer = setTimeout(() => upstream.destroy(new Error('connect timeout')), this.#connectTimeoutMs)
    const onFailure = (err: Error): void => {
      clearTimeout(timer)
      // Refused or timed out before any byte went out: the client has seen nothing, so the next instance takes it.
      if (target.inService) {
        target.inService = false
        log.warn({ upstream: `${target.host}:${target.port}`, err: err.message }, 'instance out of service (connect failed)')
      }
      this.#connectTo(client, candidates, i + 1)
    }
    upstream.once('error', onFailure)
    upstream.once('connect', () => {
      clearTimeout(timer)
      upstream.off('error', onFailure)
      target.active++
      target.served++
      upstream.setNoDelay(true)
      client.setNoDelay(true)
      // Either side's end or error ends both: a half-dead pair would hold a socket of each forever.
      const done = (): void => {
        client.destroy()
        upstream.destroy()
      }
      upstream.once('close', () => {
        target.active--
        done()
      })
      upstream.on('error', done)
      client.once('close', done)
      client.pipe(upstream)
      upstream.pipe(client)
      client.resume()
    })
  }

  #scheduleProbe(): void {
    if (this.#closed) return
    this.#probeTimer = setTimeout(() => {
      this.#probeAll().then(() => this.#scheduleProbe(), () => this.#scheduleProbe())
    }, this.#probeEveryMs)
    this.#probeTimer.unref()
  }

  async #probeAll(): Promise<void> {
    await Promise.all(
      this.#upstreams.map(async (u) => {
        const status = await this.#probe(u)
        const inService = status === '200'
        if (inService !== u.inService) {
          log.info({ upstream: `${u.host}:${u.port}`, readyz: status }, inService ? 'instance in service' : 'instance out of service')
        }
        u.inService = inService
        u.lastProbe = status
      }),
    )
  }

  /** GET /readyz: its status code as a string, or what went wrong instead. */
  #probe(u: Upstream): Promise<string> {
    return new Promise((resolve) => {
      const req = request({ host: u.host, port: u.port, path: '/readyz', method: 'GET', timeout: this.#probeTimeoutMs, agent: false }, (res) => {
        res.resume()
        resolve(String(res.statusCode ?? 0))
      })
      req.on('timeout', () => req.destroy(new Error('timeout')))
      req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message))
      req.end()
    })
  }
}

/** 'host:port' or 'port' (127.0.0.1) → an Upstream; null when it is neither. */
export function parseUpstream(text: string): Upstream | null {
  const m = /^(?:(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):)?(\d{1,5})$/.exec(text.trim())
  if (!m) return null
  const port = Number(m[2])
  if (port < 1 || port > 65535) return null
  return { host: (m[1] ?? '127.0.0.1').replace(/^\[|\]$/g, ''), port }
}
