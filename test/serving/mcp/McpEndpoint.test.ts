/**
 * The MCP endpoint through the official SDK client (Client + StreamableHTTPClientTransport) against a real server on
 * 127.0.0.1 with memory engine parts and real credits: the catalog is the registry's, and a tool call answers what
 * the REST route answers (same validation, price, gate, ledger).
 */
import { withProof } from '../../helpers/serving/signIn.ts'
import t from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ROUTES } from '../../../serving/routes/registry.ts'
import { isPublic } from '../../../serving/routes/derive.ts'
import { CreditsPaymentGate } from '../../../serving/payments/CreditsPaymentGate.ts'
import { RailRouter } from '../../../serving/payments/RailRouter.ts'
import { MCP_PATH } from '../../../serving/mcp/McpEndpoint.ts'
import { memoryServices, PAYER, RESOLVED_ID } from '../../helpers/serving/memoryServices.ts'
import { OPS_TOKEN, withBilling } from '../../helpers/serving/billing.ts'
import { PAY_TO, withServer } from '../../helpers/serving/server.ts'

async function connect(t: { teardown(fn: () => unknown): void }, url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'svc-test', version: '0.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(url + MCP_PATH), { requestInit: { headers } }))
  t.teardown(() => client.close())
  return client
}

type Structured = Record<string, any>

/** The 25 tools the spec's MCP table names. */
const SPEC_TOOLS = [
  'svc_market_state', 'svc_liquidation_risk', 'svc_funding_opportunities', 'svc_wallet_intelligence', 'svc_wallet_state',
  'svc_transaction_risk', 'svc_token_risk', 'svc_decision', 'svc_get_decision', 'svc_get_resolution', 'svc_calibration',
  'svc_lineage', 'svc_feed', 'svc_universe', 'svc_pricing', 'svc_get_intelligence', 'svc_list_releases',
  'svc_arena_profile', 'svc_arena_next_action', 'svc_arena_quests', 'svc_arena_season', 'svc_arena_leaderboard', 'svc_arena_levels',
  'svc_call', 'svc_calls',
]

t.test('the SDK client lists the registry tools and calls them through the REST path', async (t) => {
  const billing = await withBilling(t)
  const { parts } = memoryServices(Date.now())
  const server = await withServer(t, {
    services: { ...parts, billing, paymentGate: new RailRouter({ payTo: PAY_TO, credits: new CreditsPaymentGate(billing.ledger, PAY_TO) }) },
  })
  const anon = await connect(t, server.url)
  t.equal(anon.getServerVersion()?.name, 'svc', 'initialize answered by the SDK server')

  const { tools } = await anon.listTools()
  const registry = ROUTES.filter((r) => r.mcp && isPublic(r)).map((r) => r.mcp!.name).sort()
  t.same(tools.map((x) => x.name).sort(), registry, 'tools/list = the registry routes with an mcp field')
  // Spec, MCP tool server: "The catalog is stated to hold 28 tools": the 25 it names and three of ours (docs/decisions.md).
  t.equal(tools.length, 28, 'exactly 28 tools')
  t.same(tools.map((x) => x.name).filter((n) => !SPEC_TOOLS.includes(n)).sort(), ['svc_market_regime', 'svc_open_clocks', 'svc_verify'], 'the spec tools and our three')
  const market = tools.find((x) => x.name === 'svc_market_state')!
  t.same(market.inputSchema.required, ['asset'], 'input schema from the route params')

  await anon.ping()

  // One catalog: the discovery document, tools/list and the registry name the same tools with the same schemas.
  const discovery = (await (await fetch(`${server.url}/.well-known/mcp.json`)).json()) as Structured
  t.same(await (await fetch(`${server.url}/.well-known/x402/mcp.json`)).json(), discovery, 'both discovery paths serve one document')
  t.equal(discovery.endpoint, server.url + MCP_PATH)
  t.equal(discovery.payment.credits.header, 'x-svc-payer')
  t.same(discovery.tools.map((x: Structured) => x.name).sort(), registry, 'discovery tools = registry')
  for (const tool of tools) {
    const doc = discovery.tools.find((x: Structured) => x.name === tool.name)
    t.same(doc.inputSchema, tool.inputSchema, `${tool.name}: one input schema`)
    t.equal(doc.description, tool.description)
    const route = ROUTES.find((r) => r.mcp?.name === tool.name)!
    t.equal(doc.paid, route.pay.kind === 'paid', `${tool.name}: paid as the route`)
    if (doc.paid) t.ok(doc.price.credits > 0 && doc.price.accepts.length === 1, `${tool.name}: priced`)
  }
  const card = (await (await fetch(`${server.url}/.well-known/agent.json`)).json()) as Structured
  t.equal(card.mcp.endpoint, discovery.endpoint, 'agent.json names the endpoint')
  for (const doc of ['/llms.txt', '/.well-known/ai.txt']) t.match(await (await fetch(server.url + doc)).text(), '/.well-known/mcp.json', `${doc} names the MCP discovery document`)

  const pricing = await anon.callTool({ name: 'svc_pricing', arguments: {} })
  t.notOk(pricing.isError, 'svc_pricing answers')
  const pricingRest = (await (await fetch(`${server.url}/v1/pricing`)).json()) as Structured
  t.same((pricing.structuredContent as Structured).data, pricingRest.data, 'same data as GET /v1/pricing')

  const state = await anon.callTool({ name: 'svc_market_state', arguments: { asset: 'BTC' } })
  t.notOk(state.isError, 'svc_market_state answers')
  t.equal((state.structuredContent as Structured).data.asset ?? 'BTC', 'BTC')

  // An error is an isError result carrying the REST envelope and a recovery hint, not a JSON-RPC error.
  const missing = await anon.callTool({ name: 'svc_get_decision', arguments: { decision_id: '00000000-0000-4000-8000-000000000000' } })
  t.ok(missing.isError, 'unknown decision is a tool error')
  const env = missing.structuredContent as Structured
  t.equal(env.code, 'DECISION_NOT_FOUND')
  t.equal(env.retryable, false)
  t.equal(env.retry_after_ms, null)
  t.ok(env.detail.reason, 'detail.reason')
  t.match(env.recovery, /decision_id/, 'recovery hint')
  t.same(JSON.parse((missing.content as Array<{ text: string }>)[0]!.text), env, 'text block mirrors structured content')

  const invalid = await anon.callTool({ name: 'svc_market_state', arguments: { asset: 'not a symbol!' } })
  t.ok(invalid.isError)
  t.equal((invalid.structuredContent as Structured).code, 'VALIDATION', 'the REST validator refused it')

  const ask = { asset: 'BTC', question_id: 'S01_market_regime' }
  const unpaid = await anon.callTool({ name: 'svc_decision', arguments: ask })
  t.ok(unpaid.isError, 'unpaid paid tool is a tool error')
  const challenge = unpaid.structuredContent as Structured
  t.equal(challenge.x402Version, 2)
  t.equal(challenge.resource.url, 'mcp://tool/svc_decision')
  t.equal(challenge.accepts.length, 1)
  t.equal(challenge.accepts[0].payTo, PAY_TO)
  t.equal(challenge.svc_error.code, 'PAYMENT_REQUIRED')

  // Credits: x-svc-payer on the MCP HTTP request pays, once an operator granted credits.
  const poor = await connect(t, server.url, await withProof(server, '/mcp', { 'x-svc-payer': '0x0000000000000000000000000000000000000001' }))
  const short = await poor.callTool({ name: 'svc_decision', arguments: ask })
  t.ok(short.isError)
  t.equal((short.structuredContent as Structured).svc_error.detail.reason, 'INSUFFICIENT_BALANCE', 'the challenge names the reason')
  t.equal((short.structuredContent as Structured).x402Version, 2)

  const grant = await fetch(`${server.url}/v1/billing/grants`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-svc-ops': OPS_TOKEN },
    body: JSON.stringify({ action: 'grant', payer: PAYER, credits: 100_000, ref: 'mcp-test' }),
  })
  t.equal(grant.status, 200)
  const payer = await connect(t, server.url, await withProof(server, '/mcp', { 'x-svc-payer': PAYER }))
  const balance = async () => ((await (await fetch(`${server.url}/v1/billing/credits?payer=${PAYER}`, { headers: await withProof(server, '/v1/billing/credits', { 'x-svc-payer': PAYER }) })).json()) as Structured).data.balance_credits as number
  const before = await balance()
  t.equal(before, 100_000, 'the grant is on the balance')
  // The memory engine refuses to decide (it throws once reached), so this proves the credits rail let the call through
  // the one gate to the handler, and that a call yielding no answer reverses its debit.
  const paid = await payer.callTool({ name: 'svc_decision', arguments: ask })
  t.ok(paid.isError)
  t.equal((paid.structuredContent as Structured).code, 'INTERNAL', 'the handler was reached: the credits rail authorized it')
  t.equal(await balance(), before, 'nothing charged for a call without an answer')
  const id = RESOLVED_ID
  const back = await anon.callTool({ name: 'svc_get_decision', arguments: { decision_id: id } })
  t.notOk(back.isError)
  t.equal((back.structuredContent as Structured).data.decision_id, id, 'read back with svc_get_decision')
  const lineage = await anon.callTool({ name: 'svc_lineage', arguments: { decision_id: RESOLVED_ID } })
  t.notOk(lineage.isError, 'svc_lineage answers')

  const unknownTool = await anon.callTool({ name: 'svc_nope', arguments: {} }).then(() => null, (e: unknown) => e as { code?: number })
  t.equal(unknownTool?.code, -32602, 'unknown tool: -32602 (a JSON-RPC error, not a tool result)')
})

t.test('protocol faults are JSON-RPC errors; GET and DELETE answer 405', async (t) => {
  const server = await withServer(t)
  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(server.url + MCP_PATH, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body })
  const unknown = await post(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'nope/nothing', params: {} }))
  t.equal(unknown.status, 200)
  const u = (await unknown.json()) as Structured
  t.equal(u.id, 7)
  t.equal(u.error.code, -32601, 'unknown method')
  const bad = await post(JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { arguments: 3 } }))
  t.equal(((await bad.json()) as Structured).error.code, -32602, 'invalid params')
  const parse = await post('{not json')
  t.equal(parse.status, 400)
  t.same(((await parse.json()) as Structured).error.code, -32700)
  const note = await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }))
  t.equal(note.status, 202)
  t.equal(await note.text(), '')
  const version = await post(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }), { 'mcp-protocol-version': '1999-01-01' })
  t.equal(version.status, 400, 'unsupported MCP-Protocol-Version')
  // Origin (DNS rebinding): a browser page of another origin is refused; the endpoint's own origin is not.
  const foreign = await post(JSON.stringify({ jsonrpc: '2.0', id: 10, method: 'ping' }), { origin: 'http://evil.example' })
  t.equal(foreign.status, 403, 'a foreign Origin: 403')
  const own = await post(JSON.stringify({ jsonrpc: '2.0', id: 11, method: 'ping' }), { origin: server.url })
  t.equal(own.status, 200, 'its own Origin is allowed')
  for (const method of ['GET', 'DELETE']) {
    const r = await fetch(server.url + MCP_PATH, { method })
    t.equal(r.status, 405, method)
    t.equal(r.headers.get('allow'), 'POST')
  }
})
