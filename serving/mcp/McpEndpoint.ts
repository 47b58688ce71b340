/**
 * The streamable-HTTP MCP endpoint (spec, MCP tool server), on the same uWS server as the REST API.
 *
 * Protocol handling (initialize and version negotiation, tools/list, tools/call, ping, notifications, -32601 for an
 * unknown method, -32602 for bad params) is the official SDK's low-level Server; this class only bridges one uWS POST
 * to it (JsonResponseTransport). Stateless: no Mcp-Session-Id is issued, every POST gets a fresh SDK server, GET and
 * DELETE answer 405 (the transport spec allows both when there is no server stream and no session to end).
 *
 * A tool call is the REST request of its route, synthesized and run through the Dispatcher, so validation, price,
 * payment gate, rate limit, metrics and the ledger are the REST ones; the answer is read back and turned into a tool
 * result.
 */
import { Server as SdkServer } from '@modelcontextprotocol/sdk/server/index.js'
import {
  CallToolRequestSchema,
  ErrorCode as RpcCode,
  JSONRPCMessageSchema,
  ListToolsRequestSchema,
  McpError,
  SUPPORTED_PROTOCOL_VERSIONS,
  type CallToolResult,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js'
import type { ErrorCode } from '../../common/errors.ts'
import type { IncomingRequest } from '../http/UwsAdapter.ts'
import { JSON_TYPE, type AnswerWriter } from '../http/ResponseWriter.ts'
import { decodeHeader, type PaymentRequired } from '../payments/x402.ts'
import { PAYER_HEADER } from '../payments/CreditsPaymentGate.ts'
import type { Dispatcher } from '../Dispatcher.ts'
import { buildCatalog, type CatalogTool } from './McpCatalog.ts'
import { JsonResponseTransport } from './JsonResponseTransport.ts'

/** The endpoint path, published by /.well-known/mcp.json (the spec leaves it to the discovery document). */
export const MCP_PATH = '/mcp'
export const MCP_SERVER_NAME = 'svc'

/** What a caller should do next after a refusal, by error code: the envelope says what failed, this says how to go on. */
const RECOVERY: Partial<Record<ErrorCode, string>> = {
  VALIDATION: 'Fix the argument named in detail.field to match the tool inputSchema, then call again.',
  PAYMENT_REQUIRED: 'Pay: send the x-svc-payer header (a Base address holding credits) on the MCP HTTP request, or retry with _meta["x402/payment"].',
  PAYMENT_INVALID: 'Sign a fresh payment for the accepts entry of the challenge and call again.',
  PAYMENT_REPLAYED: 'Sign a new authorization with a fresh nonce; a nonce pays once.',
  DECISION_NOT_FOUND: 'Check the decision_id: it is the id a svc_decision answer carried (svc_feed lists recent ones).',
  ASSET_NOT_FOUND: 'Use a symbol listed by svc_universe.',
  RELEASE_NOT_FOUND: 'List versions with svc_list_releases.',
  CLOCK_OPEN: 'The previous clock on this question is open: read it back with svc_get_decision or wait retry_after_ms.',
  CLOCK_CLOSED: 'The clock is past its horizon: read its resolution with svc_get_resolution.',
  CALL_ALREADY_LOCKED: 'This payer already called this clock; read it back instead.',
  RATE_LIMITED: 'Wait retry_after_ms, then call again.',
  STALE_DATA: 'Data is catching up or stale: wait retry_after_ms, then call again.',
  PROVIDER_DOWN: 'A provider or service part is down or not wired here: retry later if retryable, else use another tool.',
  INTERNAL: 'Unexpected failure; retrying once is safe (a failed paid call is not charged).',
}
const DEFAULT_RECOVERY = 'See the error code in docs/errors.md; retry only when retryable is true.'

interface Captured {
  status: number
  headers: Record<string, string>
  body: string
}

/** The dispatcher's answer to one synthesized request, kept instead of written to a socket. */
class CapturedAnswer implements AnswerWriter {
  private resolveAnswer!: (a: Captured) => void
  readonly answer = new Promise<Captured>((resolve) => (this.resolveAnswer = resolve))
  send(status: number, headers: Record<string, string>, body: string | Uint8Array): boolean {
    this.resolveAnswer({ status, headers, body: typeof body === 'string' ? body : Buffer.from(body).toString('utf8') })
    return true
  }
}

export class McpEndpoint {
  readonly tools: CatalogTool[]
  private readonly byName: Map<string, CatalogTool>
  /** tools/list answer, built once: the catalog is fixed at start. */
  private readonly listed: Array<{ name: string; description: string; inputSchema: CatalogTool['inputSchema']; annotations: Record<string, boolean> }>

  constructor(
    routes: Parameters<typeof buildCatalog>[0],
    private readonly dispatcher: Dispatcher,
    private readonly version: string,
  ) {
    this.tools = buildCatalog(routes)
    this.byName = new Map(this.tools.map((t) => [t.name, t]))
    this.listed = this.tools.map((t) => ({
      name: t.name,
      description: t.description,
      inputSchema: t.inputSchema,
      // GET routes only read; the rest (a decision, a call, a risk assessment) record something.
      annotations: { readOnlyHint: t.route.method === 'GET', openWorldHint: false },
    }))
  }

  /** Entry for requests on MCP_PATH. Reads everything it needs from the request before its first await. */
  readonly handle = (req: IncomingRequest, res: AnswerWriter): void | Promise<void> => {
    if (req.method !== 'POST') {
      // Stateless, tools only: no server-initiated stream (GET) and no session to delete (DELETE).
      res.send(405, { allow: 'POST', 'content-type': JSON_TYPE }, rpcError(null, RpcCode.ConnectionClosed, 'Method not allowed: this MCP endpoint is stateless and answers POST only.'))
      return
    }
    const headers = { ...req.headers }
    const version = headers['mcp-protocol-version']
    if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      res.send(400, { 'content-type': JSON_TYPE }, rpcError(null, RpcCode.InvalidRequest, `Unsupported MCP-Protocol-Version: ${version}`, { supported: SUPPORTED_PROTOCOL_VERSIONS }))
      return
    }
    if (req.bodyTooLarge) {
      res.send(413, { 'content-type': JSON_TYPE }, rpcError(null, RpcCode.InvalidRequest, 'Request body too large.'))
      return
    }
    let raw: unknown
    try {
      raw = JSON.parse(req.body ? req.body.toString('utf8') : '')
    } catch {
      res.send(400, { 'content-type': JSON_TYPE }, rpcError(null, RpcCode.ParseError, 'Parse error: the body is not JSON.'))
      return
    }
    // Batching exists only in 2025-03-26 and was removed after; one message per POST.
    const parsed = Array.isArray(raw) ? null : JSONRPCMessageSchema.safeParse(raw)
    if (!parsed || !parsed.success) {
      res.send(400, { 'content-type': JSON_TYPE }, rpcError(null, RpcCode.InvalidRequest, 'Invalid Request: one JSON-RPC 2.0 message per POST.'))
      return
    }
    return this.answer(parsed.data, headers, req.ip, res)
  }

  private async answer(message: JSONRPCMessage, headers: Record<string, string>, ip: string, res: AnswerWriter): Promise<void> {
    const transport = new JsonResponseTransport()
    const server = this.sdkServer(headers, ip)
    await server.connect(transport)
    try {
      const extra = { requestInfo: { headers } }
      if ('method' in message && 'id' in message) {
        // The SDK reports a request that fails its method's schema as -32603; the spec says invalid params are -32602.
        if (message.method === 'tools/call') {
          const checked = CallToolRequestSchema.safeParse(message)
          if (!checked.success) {
            res.send(200, { 'content-type': JSON_TYPE }, JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: RpcCode.InvalidParams, message: `Invalid params: ${checked.error.message}` } }))
            return
          }
        }
        const response = await transport.request(message, extra)
        res.send(200, { 'content-type': JSON_TYPE }, JSON.stringify(response))
      } else {
        transport.deliver(message, extra)
        res.send(202, {}, '')
      }
    } finally {
      await server.close()
    }
  }

  private sdkServer(headers: Record<string, string>, ip: string): SdkServer {
    const server = new SdkServer({ name: MCP_SERVER_NAME, version: this.version }, { capabilities: { tools: { listChanged: false } } })
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.listed }))
    server.setRequestHandler(CallToolRequestSchema, (request) => {
      const tool = this.byName.get(request.params.name)
      if (!tool) throw new McpError(RpcCode.InvalidParams, `Unknown tool: ${request.params.name}`)
      return this.call(tool, request.params.arguments ?? {}, headers, ip)
    })
    return server
  }

  /** One tool call = the route's REST request through the dispatcher. */
  async call(tool: CatalogTool, args: Record<string, unknown>, headers: Record<string, string>, ip: string): Promise<CallToolResult> {
    const route = tool.route
    const query = new URLSearchParams()
    const body: Record<string, unknown> = {}
    for (const [name, value] of Object.entries(args)) {
      // An argument no part declares goes where REST would take it (the body, else the query) and is refused there.
      const part = tool.parts[name] ?? (route.request.body ? 'body' : 'query')
      if (part === 'body') body[name] = value
      else if (part === 'query') query.set(name, typeof value === 'string' ? value : JSON.stringify(value))
    }
    let missing: string | null = null
    const path = route.path.replace(/\{([a-z_]+)\}/g, (_, name: string) => {
      const v = args[name]
      if (v === undefined || v === null || v === '') missing ??= name
      return encodeURIComponent(typeof v === 'string' ? v : String(v ?? '_'))
    })
    if (missing !== null) {
      // A path without its segment is another URL; the REST answer would be a 404 naming no argument.
      return errorResult({ code: 'VALIDATION', message: `The argument ${missing} is required.`, retryable: false, retry_after_ms: null, detail: { reason: 'REQUEST_VALIDATION_FAILED', field: `/arguments/${missing}` } })
    }
    const forwarded: Record<string, string> = { 'content-type': 'application/json' }
    const payer = headers[PAYER_HEADER]
    if (payer !== undefined) forwarded[PAYER_HEADER] = payer
    const synthesized: IncomingRequest = {
      method: route.method,
      path,
      query: query.toString(),
      headers: forwarded,
      ip,
      body: route.request.body ? Buffer.from(JSON.stringify(body)) : null,
      bodyTooLarge: false,
    }
    const capture = new CapturedAnswer()
    await this.dispatcher.handle(synthesized, capture)
    const answer = await capture.answer
    return this.toResult(tool, answer)
  }

  private toResult(tool: CatalogTool, a: Captured): CallToolResult {
    const isJson = (a.headers['content-type'] ?? '').startsWith('application/json')
    if (a.status < 400) {
      if (!isJson) return { content: [{ type: 'text', text: a.body }] }
      return { content: [{ type: 'text', text: a.body }], structuredContent: JSON.parse(a.body) as Record<string, unknown> }
    }
    const envelope = (JSON.parse(a.body) as { error: EnvelopeError }).error
    const challenge = headerOf(a.headers, 'payment-required')
    if (a.status === 402 && challenge) {
      // x402 MCP transport: the challenge is the structured content, its resource the tool; the envelope says why.
      const required = decodeHeader<PaymentRequired>(challenge)
      required.resource = { ...required.resource, url: `mcp://tool/${tool.name}` }
      const structured = { ...required, svc_error: withRecovery(envelope) }
      return { isError: true, content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured }
    }
    return errorResult(envelope)
  }
}

type EnvelopeError = {
  code: string
  message: string
  retryable: boolean
  retry_after_ms: number | null
  request_id?: string
  detail: Record<string, unknown>
}

function withRecovery(e: EnvelopeError): EnvelopeError & { recovery: string } {
  return { ...e, recovery: RECOVERY[e.code as ErrorCode] ?? DEFAULT_RECOVERY }
}

function errorResult(e: EnvelopeError): CallToolResult {
  const structured = withRecovery(e)
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured }
}

function headerOf(headers: Record<string, string>, name: string): string | undefined {
  for (const k in headers) if (k.toLowerCase() === name) return headers[k]
  return undefined
}

function rpcError(id: null, code: number, message: string, data?: unknown): string {
  return JSON.stringify({ jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } })
}
