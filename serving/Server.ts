/**
 * The HTTP server: uWS adapter + dispatcher over the route registry.
 *
 *   const server = await Server.start({ port: 0, services })   // port 0 picks a free port
 *   server.port; await server.close()                           // graceful: drain in-flight, then stop
 */
import { answerKeysOf } from '../record/answerKeys/answerSignature.ts'
import { childLogger } from '../common/logger.ts'
import type { Logger } from 'pino'
import { resolveServingConfig, type ServingConfig } from './config.ts'
import { Dispatcher } from './Dispatcher.ts'
import { StaticDocuments } from './docs/StaticDocuments.ts'
import { UwsAdapter } from './http/UwsAdapter.ts'
import { MCP_PATH, McpEndpoint } from './mcp/McpEndpoint.ts'
import { AccessLog } from './metrics/AccessLog.ts'
import { ChallengePaymentGate } from './payments/ChallengePaymentGate.ts'
import type { PaymentGate } from './payments/PaymentGate.ts'
import { RateLimiter } from './RateLimiter.ts'
import { PayerProof } from '../product/identity/PayerProof.ts'
import { ROUTES } from './routes/registry.ts'
import { STREAMS_PREFIX } from './routes/streams.ts'
import { StreamFanout } from './streams/StreamFanout.ts'
import type { RouteDef } from './routes/types.ts'
import { systemClock, type Clock } from '../common/Clock.ts'
import { type Services } from './Services.ts'
/** Services the caller provides; clock, logger, rate limiter and payment gate have defaults. */
export type ServiceParts = Omit<Services, 'clock' | 'config' | 'logger' | 'rateLimiter' | 'paymentGate' | 'payerProof'> & {
  clock?: Clock
  logger?: Logger
  rateLimiter?: RateLimiter
  paymentGate?: PaymentGate
  /**
   * Builds the proof of payer control for the service's public origin (known only once the port is bound when no
   * base URL is configured). Default: sessions in memory, a random nonce key, config.sessionTtlS.
   */
  payerProof?: (origin: string) => PayerProof
}

export interface ServerOptions {
  port: number
  host?: string
  config: Partial<ServingConfig> & { payTo: string | null }
  services?: ServiceParts
  /** Defaults to the registry; tests may add routes (e.g. a slow one for drain tests). */
  routes?: readonly RouteDef[]
}

export class Server {
  private closed: Promise<{ drained: boolean }> | null = null

  private constructor(
    private readonly adapter: UwsAdapter,
    readonly services: Services,
    readonly documents: StaticDocuments,
    readonly host: string,
    readonly mcp: McpEndpoint,
    readonly streams: StreamFanout,
  ) {}

  get port(): number {
    return this.adapter.port
  }

  get url(): string {
    return `http://${this.host}:${this.port}`
  }

  static async start(opts: ServerOptions): Promise<Server> {
    const config = resolveServingConfig(opts.config)
    const host = opts.host ?? '127.0.0.1'
    const parts = opts.services ?? {}
    const { payerProof: proofFor, ...rest } = parts
    // payerProof is set once the origin is known (below), before the dispatcher that reads it exists.
    const services = {
      ...rest,
      clock: parts.clock ?? systemClock,
      config,
      logger: parts.logger ?? childLogger('serving'),
      rateLimiter: parts.rateLimiter ?? new RateLimiter(config.rateLimits),
      paymentGate: parts.paymentGate ?? new ChallengePaymentGate(config.payTo),
    } as Services
    // A conditional route (onlyWhenWired) is not registered at all where its part is absent: 404 like any unknown path.
    const routes = (opts.routes ?? ROUTES).filter((r) => r.onlyWhenWired === undefined || services[r.onlyWhenWired] !== undefined)
    // Documents need the bound port when no public base URL is configured, so the dispatcher is bound after listen.
    let dispatcher: Dispatcher | null = null
    let mcp: McpEndpoint | null = null
    let streams: StreamFanout | null = null
    const adapter = await UwsAdapter.listen(
      {
        host,
        port: opts.port,
        maxBodyBytes: config.maxBodyBytes,
        trustProxy: config.trustProxy,
        onHandlerError: (err, req, res) => dispatcher?.onEscaped(err, req, res),
        // uWS's own ceiling far above the fanout's bound: the fanout drops a slow socket, uWS never drops a message.
        streams: { pattern: `${STREAMS_PREFIX}*`, maxBackpressure: Math.max(16 * config.streamMaxBufferedBytes, 64 * 1024 * 1024), idleTimeoutS: 120 },
      },
      // The MCP endpoint is a protocol transport, not a REST route: its tools are registry routes run by the dispatcher.
      (req, res) => (req.path === MCP_PATH && mcp ? mcp.handle(req, res) : dispatcher ? dispatcher.handle(req, res) : undefined),
    )
    const baseUrl = config.baseUrl ?? `http://${host}:${adapter.port}`
    services.payerProof = proofFor ? proofFor(baseUrl) : PayerProof.create({ origin: baseUrl, sessionTtlS: config.sessionTtlS })
    const documents = StaticDocuments.build(routes, config, baseUrl, services.clock.now(), answerKeysOf(services.answerKeys), services.dataTime?.status() ?? null)
    const accessLog = config.accessLog > 0 ? new AccessLog(services.logger, config.accessLog) : null
    streams = new StreamFanout({ maxBufferedBytes: config.streamMaxBufferedBytes, maxPerIp: config.streamMaxPerIp, publish: (topic, message) => adapter.publish(topic, message), logger: services.logger })
    dispatcher = new Dispatcher(routes, services, documents, accessLog, streams)
    mcp = new McpEndpoint(routes, dispatcher, config.serviceVersion, { baseUrl: config.baseUrl, allowedOrigins: config.mcpOrigins })
    services.logger.info({ host, port: adapter.port, routes: routes.length }, 'serving')
    return new Server(adapter, services, documents, host, mcp, streams)
  }

  get inFlight(): number {
    return this.adapter.inFlightCount
  }

  /** Stops accepting, waits for in-flight requests (config.drainTimeoutMs), then closes. Idempotent. */
  close(): Promise<{ drained: boolean }> {
    // Live streams end first (naming the shutdown), so the drain waits only for ordinary requests.
    if (this.closed === null) this.streams.closeAll()
    this.closed ??= this.adapter.close(this.services.config.drainTimeoutMs).then((r) => {
      this.services.logger.info({ drained: r.drained }, 'server closed')
      return r
    })
    return this.closed
  }

  /** Closes on SIGTERM/SIGINT (for `svc start`); returns a remover. */
  closeOnSignals(onClosed: (r: { drained: boolean }) => void = () => undefined): () => void {
    const handler = (): void => {
      void this.close().then(onClosed)
    }
    process.once('SIGTERM', handler)
    process.once('SIGINT', handler)
    return () => {
      process.off('SIGTERM', handler)
      process.off('SIGINT', handler)
    }
  }
}
