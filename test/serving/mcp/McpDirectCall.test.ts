/**
 * A well-formed tools/call skips the SDK server's protocol machinery (McpEndpoint.directCall): this holds it to the
 * SDK path. Two endpoints over one dispatcher, one of them sdkOnly, get the same messages; their HTTP answers must be
 * the same bytes (the request_id of the REST envelope aside: each call is a new request). The messages cover the
 * direct path's successes and tool errors, and the ones it leaves to the SDK server.
 */
import t from 'tap'
import { Dispatcher } from '../../../serving/Dispatcher.ts'
import type { IncomingRequest } from '../../../serving/http/UwsAdapter.ts'
import type { JsonResponseTransport } from '../../../serving/mcp/JsonResponseTransport.ts'
import { MCP_PATH, McpEndpoint } from '../../../serving/mcp/McpEndpoint.ts'
import { ROUTES } from '../../../serving/routes/registry.ts'
import { memoryServices, PAYER, RESOLVED_ID } from '../../helpers/serving/memoryServices.ts'
import { withServer } from '../../helpers/serving/server.ts'

interface Answer {
  status: number
  headers: Record<string, string>
  body: string
}

/** One POST to the endpoint, answered in process. */
function post(endpoint: McpEndpoint, message: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const body = Buffer.from(JSON.stringify(message))
  const req: IncomingRequest = {
    method: 'POST',
    path: MCP_PATH,
    query: '',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': String(body.length), ...headers },
    ip: '127.0.0.1',
    body,
    bodyTooLarge: false,
  }
  return new Promise((resolve) => {
    void endpoint.handle(req, {
      send(status, headers, body) {
        resolve({ status, headers, body: typeof body === 'string' ? body : Buffer.from(body).toString('utf8') })
        return true
      },
    })
  })
}

/** The REST envelope's request_id (and a 402's fresh sign-in nonce), as it appears in structuredContent and (escaped) in the text block. */
const requestIds = /(\\?"(?:request_id|nonce)\\?":\\?")[^"\\]+/g

t.test('a direct tools/call answers the bytes the SDK server answers', async (t) => {
  const { parts } = memoryServices()
  const server = await withServer(t, { services: parts })
  const routes = ROUTES.filter((r) => r.onlyWhenWired === undefined || server.services[r.onlyWhenWired] !== undefined)
  const dispatcher = new Dispatcher(routes, server.services, server.documents)
  const direct = new McpEndpoint(routes, dispatcher, 'test')
  const sdk = new McpEndpoint(routes, dispatcher, 'test', { sdkOnly: true })
  // The direct endpoint's SDK server sees only what directCall declines.
  const transport = (direct as unknown as { transport: JsonResponseTransport }).transport
  const toSdk = t.capture(transport, 'request', transport.request.bind(transport))

  const call = (params: Record<string, unknown>, id: string | number = 1) => ({ jsonrpc: '2.0', id, method: 'tools/call', params })
  const cases: Array<{ name: string; message: unknown; headers?: Record<string, string>; viaSdk?: boolean }> = [
    { name: 'a decision read', message: call({ name: 'svc_get_decision', arguments: { decision_id: RESOLVED_ID } }) },
    { name: 'a string request id', message: call({ name: 'svc_get_decision', arguments: { decision_id: RESOLVED_ID } }, 'req-7') },
    { name: 'an unknown decision (tool error)', message: call({ name: 'svc_get_decision', arguments: { decision_id: '00000000-0000-4000-8000-000000000000' } }) },
    { name: 'a path argument missing', message: call({ name: 'svc_get_decision', arguments: {} }) },
    { name: 'no arguments at all', message: call({ name: 'svc_pricing' }) },
    { name: 'a market read', message: call({ name: 'svc_market_state', arguments: { asset: 'BTC' } }) },
    { name: 'a refused argument', message: call({ name: 'svc_market_state', arguments: { asset: 'not a symbol!' } }) },
    { name: 'an argument no part declares', message: call({ name: 'svc_pricing', arguments: { extra: [1, 'two'] } }) },
    { name: 'a query argument', message: call({ name: 'svc_feed', arguments: { limit: 2 } }) },
    { name: 'a body route', message: call({ name: 'svc_verify', arguments: { poj_id: RESOLVED_ID } }) },
    { name: 'an unpaid paid tool (x402 challenge)', message: call({ name: 'svc_decision', arguments: { asset: 'BTC', question_id: 'S01_market_regime' } }) },
    { name: 'credits without a balance', message: call({ name: 'svc_decision', arguments: { asset: 'BTC', question_id: 'S01_market_regime' } }), headers: { 'x-svc-payer': PAYER } },
    { name: 'a malformed x402 payment', message: call({ name: 'svc_decision', arguments: { asset: 'BTC', question_id: 'S01_market_regime' }, _meta: { 'x402/payment': { x402Version: 2 } } }) },
    { name: 'a progress token', message: call({ name: 'svc_pricing', arguments: {}, _meta: { progressToken: 'p1' } }) },
    { name: 'an unknown params member', message: call({ name: 'svc_pricing', arguments: {}, cursor: 'x' }) },
    { name: 'an unknown tool', message: call({ name: 'svc_nope', arguments: {} }), viaSdk: true },
    { name: 'a task-augmented call', message: call({ name: 'svc_pricing', arguments: {}, task: { ttl: 1000 } }), viaSdk: true },
    { name: 'a non-string tool name', message: call({ name: 7, arguments: {} }) },
    { name: 'arguments not an object', message: call({ name: 'svc_pricing', arguments: [] }) },
  ]
  let sdkCalls = 0
  for (const c of cases) {
    const viaDirect = await post(direct, c.message, c.headers)
    const viaSdk = await post(sdk, c.message, c.headers)
    t.equal(viaDirect.status, viaSdk.status, `${c.name}: status`)
    t.same(viaDirect.headers, viaSdk.headers, `${c.name}: headers`)
    t.equal(viaDirect.body.replace(requestIds, '$1…'), viaSdk.body.replace(requestIds, '$1…'), `${c.name}: the same bytes`)
    if (c.viaSdk) sdkCalls++
    t.equal(toSdk.calls.length, sdkCalls, c.viaSdk ? `${c.name}: left to the SDK server` : `${c.name}: answered without the SDK server`)
  }
  // The bytes compared above are answers, not two identical faults.
  const read = JSON.parse((await post(direct, cases[0]!.message)).body) as { result: { structuredContent: { data: { decision_id: string } } } }
  t.equal(read.result.structuredContent.data.decision_id, RESOLVED_ID)
})
