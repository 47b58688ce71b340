/**
 * The streamable-HTTP MCP endpoint (spec, MCP tool server), on the same uWS server as the REST API.
 *
 * Protocol handling (initialize and version negotiation, tools/list, tools/call, ping, notifications, -32601 for an
 * unknown method, -32602 for bad params) is the official SDK's low-level Server; this class only bridges one uWS POST
 * to it (JsonResponseTransport). Stateless: no Mcp-Session-Id is issued, one SDK server answers every POST, GET and
 * DELETE answer 405 (the transport spec allows both when there is no server stream and no session to end).
 *
 * One exception, for speed: a well-formed tools/call of a known tool is parsed with the SDK's own CallToolRequestSchema
 * and answered here, its result checked with CallToolResultSchema, in the bytes the SDK server would write
 * (directCall; test/serving/mcp/McpDirectCall.test.ts compares the two). The SDK's way to the same handler cost more
 * than the REST read the call proxies. Anything else still goes to the SDK server.
 *
 * A tool call is the REST request of its route, synthesized and run through the Dispatcher, so validation, price,
 * payment gate, rate limit, metrics and the ledger are the REST ones; the answer is read back and turned into a tool
 * result.
 */
import { Server as SdkServer } from '@modelcontextprotocol/sdk/server/index.js'
import { safeParse } from '@modelcontextprotocol/sdk/server/zod-compat.js'
import {
  CallToolRequestSchema,
  CallToolResultSchema,
  ErrorCode as RpcCode,
  ListToolsRequestSchema,
  McpError,
  SUPPORTED_PROTOCOL_VERSIONS,
  type CallToolResult,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js'
import type { ErrorCode } from '../../common/errors.ts'
import type { IncomingRequest } from '../http/UwsAdapter.ts'
import { JSON_TYPE, type AnswerWriter } from '../http/ResponseWriter.ts'
import { decodeHeader, encodeHeader, type PaymentRequired } from '../payments/x402.ts'
import { PAYER_HEADER } from '../payments/CreditsPaymentGate.ts'
import type { Dispatcher } from '../Dispatcher.ts'
import { buildCatalog, type CatalogTool } from './McpCatalog.ts'
import { JsonResponseTransport, type RequestContext } from './JsonResponseTransport.ts'

/** The endpoint path, published by /.well-known/mcp.json (the spec leaves it to the discovery document). */
export const MCP_PATH = '/mcp'
export const MCP_SERVER_NAME = 'svc'
/** x402 over MCP (x402-v2.md §11): the PaymentPayload object a client sends, and the SettleResponse a paid result carries. */
export const X402_PAYMENT_META = 'x402/payment'
export const X402_PAYMENT_RESPONSE_META = 'x402/payment-response'

/** What a caller should do next after a refusal, by error code: the envelope says what failed, this says how to go on. */
const RECOVERY: Partial<Record<ErrorCode, string>> = {
  VALIDATION: 'Fix the argument named in detail.field to match the tool inputSchema, then call again.',
  PAYMENT_REQUIRED: 'Pay: send x-svc-payer (a Base address holding credits) with its proof (Authorization: Bearer <token> from POST /v1/auth/session, or a SIGN-IN-WITH-X header) on the MCP HTTP request, or retry with _meta["x402/payment"].',
  PAYER_UNPROVEN: 'Prove the payer: sign the sign-in-with-x challenge in detail, exchange it at POST /v1/auth/session, and send Authorization: Bearer <token> on the MCP HTTP request.',
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
const MCP_PAYMENT_REQUIRED = 'Payment required to access this tool: retry with _meta["x402/payment"] (a PaymentPayload for one accepts entry), or send x-svc-payer with its proof (Authorization: Bearer <token> from POST /v1/auth/session) on the MCP HTTP request to pay with credits.'
const DEFAULT_RECOVERY = 'See the error code in docs/errors.md; retry only when retryable is true.'

/** The dispatcher's answer to one synthesized request, kept instead of written to a socket. */
class CapturedAnswer implements AnswerWriter {
  status = 0
  headers: Record<string, string> = {}
  body = ''
  /** The body is the dispatcher's success envelope (AnswerWriter.send). */
  envelope = false
  private resolveAnswered!: () => void
  readonly answered = new Promise<void>((resolve) => (this.resolveAnswered = resolve))

  send(status: number, headers: Record<string, string>, body: string | Uint8Array, envelope = false): boolean {
    this.status = status
    this.headers = headers
    // Decoded in place: Buffer.from(bytes) would copy the envelope first (the dispatcher hands slab slices).
    this.body = typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8')
    this.envelope = envelope
    this.resolveAnswered()
    return true
  }

  /**
   * A success envelope with no x402 receipt: toResult makes it { content: [its text], structuredContent: its object }
   * and nothing else, which CallToolResultSchema accepts as it is and serializeResponse writes as spliceResult does.
   */
  get plainEnvelope(): boolean {
    return this.envelope && this.status < 400 && isJsonType(this.headers) && headerOf(this.headers, 'payment-response') === undefined
  }
}

export class McpEndpoint {
  readonly tools: CatalogTool[]
  private readonly byName: Map<string, CatalogTool>
  /** tools/list answer, built once: the catalog is fixed at start. */
  private readonly listed: Array<{ name: string; description: string; inputSchema: CatalogTool['inputSchema']; annotations: Record<string, boolean> }>

  /**
   * Browser origins allowed to call the endpoint besides its own: the transport spec says a server MUST validate Origin
   * (DNS rebinding) and answer 403 to a present, invalid one. Agents outside a browser send none and are not affected.
   */
  private readonly origins: ReadonlySet<string>
  private readonly transport: JsonResponseTransport
  /** Resolves once the SDK server is connected to the transport (at construction; awaited by the first request). */
  private readonly connected: Promise<void>
  /** Every message through the SDK server, tools/call included (what directCall is tested against). */
  private readonly sdkOnly: boolean

  constructor(
    routes: Parameters<typeof buildCatalog>[0],
    private readonly dispatcher: Dispatcher,
    private readonly version: string,
    options: { baseUrl?: string | null; allowedOrigins?: readonly string[]; sdkOnly?: boolean } = {},
  ) {
    this.sdkOnly = options.sdkOnly === true
    this.origins = new Set([...(options.allowedOrigins ?? []), ...(options.baseUrl ? [new URL(options.baseUrl).origin] : [])])
    this.tools = buildCatalog(routes)
    this.transport = new JsonResponseTransport()
    this.connected = this.sdkServer().connect(this.transport)
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
    // The adapter's own copy (taken before its callback returned), so it outlives the uWS request: no second copy.
    const headers = req.headers
    const origin = headers.origin
    if (origin !== undefined && !this.originAllowed(origin, headers.host)) {
      res.send(403, { 'content-type': JSON_TYPE }, rpcError(null, RpcCode.InvalidRequest, `Forbidden: Origin ${origin} is not allowed to call this MCP endpoint.`))
      return
    }
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
    // The envelope only (the SDK server validates each method's params): a full schema parse here cost a fifth of a
    // tool call (bench/mcp.ts).
    if (!isJsonRpcMessage(raw)) {
      res.send(400, { 'content-type': JSON_TYPE }, rpcError(null, RpcCode.InvalidRequest, 'Invalid Request: one JSON-RPC 2.0 message per POST.'))
      return
    }
    return this.answer(raw, headers, req.ip, res)
  }

  /** Same origin as the Host the request was sent to, or listed (SVC_MCP_ORIGINS, the public base URL). */
  private originAllowed(origin: string, host: string | undefined): boolean {
    if (this.origins.has(origin)) return true
    try {
      return host !== undefined && new URL(origin).host === host
    } catch {
      return false
    }
  }

  private async answer(message: JSONRPCMessage, headers: Record<string, string>, ip: string, res: AnswerWriter): Promise<void> {
    const context: RequestContext = { headers, ip, answerBody: null }
    if ('method' in message && 'id' in message) {
      // The SDK reports a request that fails its method's schema as -32603; the spec says invalid params are -32602.
      if (message.method === 'tools/call') {
        const fault = callParamsFault((message as { params?: unknown }).params)
        if (fault !== null) {
          res.send(200, { 'content-type': JSON_TYPE }, JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: RpcCode.InvalidParams, message: `Invalid params: ${fault}` } }))
          return
        }
      }
      if (message.method === 'tools/call' && !this.sdkOnly) {
        const direct = this.directCall(message)
        if (direct !== null) {
          res.send(200, { 'content-type': JSON_TYPE }, await this.callDirect(direct, message.id, context))
          return
        }
      }
      await this.connected
      const response = await this.transport.request(message, context)
      res.send(200, { 'content-type': JSON_TYPE }, serializeResponse(response, context.answerBody))
      return
    }
    // A cancellation names a request by the client's id, which the shared server never saw (and in stateless JSON mode
    // the request it names is another POST, answered already or abandoned with its connection): nothing to forward.
    if ('method' in message && message.method !== 'notifications/cancelled') {
      await this.connected
      this.transport.deliver(message, context)
    }
    res.send(202, {}, '')
  }

  /**
   * The tools/call the SDK server would hand straight to its CallToolRequestSchema handler, parsed by that schema, or
   * null. Most traffic is tools/call, and the SDK's way to that handler (three schema guards on the envelope, the
   * request parsed twice, an AbortController and a set of closures per request, a chain of promises) made an MCP read
   * cost three times what the rest of it did (bench/mcp.ts profile). Left to the SDK server, which answers them as
   * before: a message with members beyond a request's (the SDK's request schema is strict), params that fail the
   * schema, a task-augmented call (no tasks capability), an unknown tool (its -32602).
   */
  private directCall(message: JSONRPCMessage & { method: string }): DirectCall | null {
    for (const key in message) if (!REQUEST_KEYS.has(key)) return null
    const parsed = safeParse(CallToolRequestSchema, message)
    if (!parsed.success) return null
    const params = parsed.data.params
    if (params.task !== undefined) return null
    const tool = this.byName.get(params.name)
    if (!tool) return null
    return { tool, args: params.arguments ?? {}, payment: params._meta?.[X402_PAYMENT_META] }
  }

  /**
   * The tool call of directCall, answered as the SDK server answers it: the result checked by CallToolResultSchema and
   * written from the parsed result, a throw or a failed check as the JSON-RPC error the SDK's protocol layer makes of it.
   */
  private async callDirect(direct: DirectCall, id: RequestId, context: RequestContext): Promise<string> {
    let result: CallToolResult
    try {
      const outcome = await this.dispatch(direct.tool, direct.args, context, direct.payment)
      // The common answer, a record read: its bytes are known without parsing the envelope back into the object the
      // SDK path builds, checks and then writes as the envelope's own text (a quarter of the call's CPU).
      if (outcome instanceof CapturedAnswer && outcome.plainEnvelope) return spliceResult(id, outcome.body, '')
      result = outcome instanceof CapturedAnswer ? this.resultOf(direct.tool, outcome, context) : outcome
    } catch (err) {
      return JSON.stringify(sdkErrorResponse(id, err))
    }
    const checked = safeParse(CallToolResultSchema, result)
    if (!checked.success) {
      const detail = checked.error instanceof Error ? checked.error.message : String(checked.error)
      return JSON.stringify(sdkErrorResponse(id, new McpError(RpcCode.InvalidParams, `Invalid tools/call result: ${detail}`)))
    }
    // Key order as the SDK builds a response ({ result, jsonrpc, id }): the bytes are the SDK path's.
    return serializeResponse({ result: checked.data, jsonrpc: '2.0', id } as JSONRPCMessage, context.answerBody)
  }

  /** The one SDK server: protocol handling (initialize, ping, tools/list, tools/call, errors) is the SDK's. */
  private sdkServer(): SdkServer {
    const server = new SdkServer({ name: MCP_SERVER_NAME, version: this.version }, { capabilities: { tools: { listChanged: false } } })
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.listed }))
    server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
      const tool = this.byName.get(request.params.name)
      if (!tool) throw new McpError(RpcCode.InvalidParams, `Unknown tool: ${request.params.name}`)
      const context = this.transport.contextOf(extra.requestId)
      if (!context) throw new McpError(RpcCode.InternalError, 'The HTTP request of this call is gone.')
      return this.call(tool, request.params.arguments ?? {}, context, request.params._meta?.[X402_PAYMENT_META])
    })
    return server
  }

  /** One tool call = the route's REST request through the dispatcher. */
  async call(tool: CatalogTool, args: Record<string, unknown>, context: RequestContext, payment?: unknown): Promise<CallToolResult> {
    const outcome = await this.dispatch(tool, args, context, payment)
    return outcome instanceof CapturedAnswer ? this.resultOf(tool, outcome, context) : outcome
  }

  /** The tool result of the dispatcher's answer; a successful JSON body is kept for serializeResponse to splice in. */
  private resultOf(tool: CatalogTool, answer: CapturedAnswer, context: RequestContext): CallToolResult {
    const result = this.toResult(tool, answer)
    if (result.structuredContent !== undefined && !result.isError) context.answerBody = answer.body
    return result
  }

  /** The route's REST request for a tool call, answered by the dispatcher; or the tool error of a missing path argument. */
  private async dispatch(tool: CatalogTool, args: Record<string, unknown>, context: RequestContext, payment: unknown): Promise<CapturedAnswer | CallToolResult> {
    const { headers, ip } = context
    const route = tool.route
    // Most tools take no query argument: no URLSearchParams for them (an empty one writes '').
    let query: URLSearchParams | null = null
    const body: Record<string, unknown> = {}
    for (const [name, value] of Object.entries(args)) {
      // An argument no part declares goes where REST would take it (the body, else the query) and is refused there.
      const part = tool.parts[name] ?? (route.request.body ? 'body' : 'query')
      if (part === 'body') body[name] = value
      else if (part === 'query') (query ??= new URLSearchParams()).set(name, typeof value === 'string' ? value : JSON.stringify(value))
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
    // Proof of payer control travels on the MCP HTTP request like x-svc-payer (issue 29): the dispatcher checks it.
    if (headers.authorization !== undefined) forwarded.authorization = headers.authorization
    if (headers['sign-in-with-x'] !== undefined) forwarded['sign-in-with-x'] = headers['sign-in-with-x']
    // x402 over MCP: the PaymentPayload object goes where the HTTP transport carries it, so the one x402 gate verifies
    // it (a malformed one is refused there as PAYMENT_INVALID naming the field) and settles only after the tool answered.
    if (payment !== undefined) forwarded['payment-signature'] = encodeHeader(payment)
    const synthesized: IncomingRequest = {
      method: route.method,
      path,
      query: query === null ? '' : query.toString(),
      headers: forwarded,
      ip,
      body: route.request.body ? Buffer.from(JSON.stringify(body)) : null,
      bodyTooLarge: false,
    }
    const capture = new CapturedAnswer()
    await this.dispatcher.handle(synthesized, capture)
    await capture.answered
    return capture
  }

  private toResult(tool: CatalogTool, a: CapturedAnswer): CallToolResult {
    const isJson = isJsonType(a.headers)
    if (a.status < 400) {
      const settled = headerOf(a.headers, 'payment-response')
      const meta = settled ? { _meta: { [X402_PAYMENT_RESPONSE_META]: decodeHeader<Record<string, unknown>>(settled) } } : {}
      if (!isJson) return { content: [{ type: 'text', text: a.body }], ...meta }
      return { content: [{ type: 'text', text: a.body }], structuredContent: JSON.parse(a.body) as Record<string, unknown>, ...meta }
    }
    const envelope = (JSON.parse(a.body) as { error: EnvelopeError }).error
    const challenge = headerOf(a.headers, 'payment-required')
    if (a.status === 402 && challenge) {
      // x402 MCP transport: the challenge is the structured content, its resource the tool; the envelope says why.
      const required = decodeHeader<PaymentRequired>(challenge)
      required.resource = { ...required.resource, url: `mcp://tool/${tool.name}` }
      // The HTTP rail names its header; over MCP the payment travels in _meta.
      if (envelope.code === 'PAYMENT_REQUIRED' && envelope.detail.reason === 'PAYMENT_REQUIRED') required.error = MCP_PAYMENT_REQUIRED
      const settlement = headerOf(a.headers, 'payment-response')
      const structured = { ...required, svc_error: withRecovery(envelope) }
      // A failed settlement says so in _meta too, as the HTTP rail's PAYMENT-RESPONSE does.
      const meta = settlement ? { _meta: { [X402_PAYMENT_RESPONSE_META]: decodeHeader<Record<string, unknown>>(settlement) } } : {}
      return { isError: true, content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured, ...meta }
    }
    return errorResult(envelope)
  }
}

/** A tools/call taken off the SDK's path: its tool and the arguments and payment CallToolRequestSchema parsed. */
interface DirectCall {
  tool: CatalogTool
  args: Record<string, unknown>
  payment: unknown
}

/** The members of a JSON-RPC request (the SDK's JSONRPCRequestSchema is strict). */
const REQUEST_KEYS: ReadonlySet<string> = new Set(['jsonrpc', 'id', 'method', 'params'])

/** What the SDK's protocol layer answers when a request handler throws (shared/protocol.js, _onrequest). */
function sdkErrorResponse(id: RequestId, err: unknown): JSONRPCMessage {
  const e = err as { code?: unknown; message?: string; data?: unknown }
  return {
    jsonrpc: '2.0',
    id,
    error: {
      code: Number.isSafeInteger(e.code) ? (e.code as number) : RpcCode.InternalError,
      message: e.message ?? 'Internal error',
      ...(e.data !== undefined && { data: e.data }),
    },
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

/**
 * The JSON-RPC response as bytes. A successful tool result whose structured content is the REST body it was parsed
 * from is written with that body spliced in (as structuredContent, and escaped as the text block) instead of
 * serializing the parsed copy again: the same JSON, a third less of an MCP read's CPU (bench/mcp.ts).
 */
function serializeResponse(response: JSONRPCMessage, answerBody: string | null): string {
  const result = (response as { result?: CallToolResult }).result
  if (answerBody === null || result === undefined || result.isError) return JSON.stringify(response)
  const { content, structuredContent, ...rest } = result
  const text = content.length === 1 && content[0]!.type === 'text' ? content[0]!.text : null
  if (text !== answerBody || structuredContent === undefined) return JSON.stringify(response)
  const others = JSON.stringify(rest)
  return spliceResult((response as { id: RequestId }).id, answerBody, others === '{}' ? '' : ',' + others.slice(1, -1))
}

/** A successful tool result whose text block and structured content are one REST body; others: its further members. */
function spliceResult(id: RequestId, answerBody: string, others: string): string {
  return (
    `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":${JSON.stringify(answerBody)}}],` +
    `"structuredContent":${answerBody}${others}}}`
  )
}

/** Whether an answer's body is JSON, as toResult decides it. */
function isJsonType(headers: Record<string, string>): boolean {
  return (headers['content-type'] ?? '').startsWith('application/json')
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * JSON-RPC 2.0, one message: a request or notification (method string; a request's id a string or integer), or a
 * response (an id with result or error). Anything else is -32600.
 */
function isJsonRpcMessage(v: unknown): v is JSONRPCMessage {
  if (!isObject(v) || v.jsonrpc !== '2.0') return false
  const id = v.id
  const idOk = typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id))
  if (typeof v.method === 'string') return id === undefined || idOk
  if (v.method !== undefined) return false
  return (idOk || id === null) && ('result' in v || 'error' in v)
}

/** What is wrong with tools/call params (name a string; arguments and _meta objects when given), or null. */
function callParamsFault(params: unknown): string | null {
  if (!isObject(params)) return 'params must be an object'
  if (typeof params.name !== 'string') return 'params.name must be a string'
  if (params.arguments !== undefined && !isObject(params.arguments)) return 'params.arguments must be an object'
  if (params._meta !== undefined && !isObject(params._meta)) return 'params._meta must be an object'
  return null
}

function headerOf(headers: Record<string, string>, name: string): string | undefined {
  for (const k in headers) if (k.toLowerCase() === name) return headers[k]
  return undefined
}

function rpcError(id: null, code: number, message: string, data?: unknown): string {
  return JSON.stringify({ jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } })
}
