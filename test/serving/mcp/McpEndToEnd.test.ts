/**
 * Issue 15's acceptance over the whole service `svc start` runs (app/ServiceApp.ts: the real engine on a replayed tape,
 * the embedded log, billing, the x402 gate settling through SVC_FACILITATOR_URL), all on 127.0.0.1:
 * - the official SDK Client (StreamableHTTPClientTransport) connects, lists the catalog, calls svc_pricing and
 *   svc_market_state;
 * - svc_decision answers the x402 challenge as a tool result; the client pays it the way the x402 MCP transport says
 *   (x402-v2.md §11: the reference client's createPaymentPayload for the challenge, sent as _meta["x402/payment"]),
 *   against the LocalFacilitator (reference facilitator code over a simulated USDC); the result carries
 *   _meta["x402/payment-response"]; the decision reads back with svc_get_decision and svc_lineage;
 * - the same paid with credits (x-svc-payer on the MCP HTTP request);
 * - a replayed payment pays nothing twice; the MCP Inspector CLI lists the same tools.
 */
import { privateKeyToAccount } from 'viem/accounts'
import { signIn } from '../../helpers/serving/signIn.ts'
import t from 'tap'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { x402Client } from '@x402/fetch'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { ServiceApp } from '../../../app/ServiceApp.ts'
import { loadConfig } from '../../../app/config.ts'
import { SyntheticMarket } from '../../../ingest/SyntheticMarket.ts'
import { TapeWriter } from '../../../ingest/TapeWriter.ts'
import { LocalFacilitator } from '../../../peers/LocalFacilitator.ts'
import { MCP_PATH, X402_PAYMENT_META, X402_PAYMENT_RESPONSE_META } from '../../../serving/mcp/McpEndpoint.ts'
import { isPublic } from '../../../serving/routes/derive.ts'
import { ROUTES } from '../../../serving/routes/registry.ts'
import { PAY_TO } from '../../helpers/serving/server.ts'
import { TEST_ADDRESS, testAccount } from '../../helpers/serving/x402Stack.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const OPS = 'ops-token-for-the-mcp-test'
const CREDITS_ACCOUNT = privateKeyToAccount(`0x${'77'.repeat(32)}`)
const CREDITS_PAYER = CREDITS_ACCOUNT.address
const ROOT = new URL('../../../', import.meta.url).pathname

type Structured = Record<string, any>

const structured = (r: unknown): Structured => (r as CallToolResult).structuredContent as Structured

t.test('the SDK client pays svc_decision over MCP with x402 and with credits, against the service svc start runs', async (t) => {
  const dir = await makeTempDir(t, 'svc-mcp-e2e-')
  const tape = join(dir, 'two-days.ndjson.gz')
  const writer = TapeWriter.open(tape, { gzipLevel: 1 })
  await new SyntheticMarket({ seed: 11, hours: 48, assets: ['BTC', 'ETH', 'SOL'], start: '2026-01-10T00:00:00Z' }).writeTo(writer)
  await writer.close()

  const facilitator = await LocalFacilitator.start()
  t.teardown(() => facilitator.close())
  facilitator.token.fund(TEST_ADDRESS, 1_000_000_000n)

  const config = loadConfig({
    PORT: '0', SVC_DATA_DIR: join(dir, 'data'), SVC_TAPE: tape, SVC_REPLAY_SPEED: '0', SVC_TRAIN_DAYS: '1',
    SVC_RECORD_INTERVAL_S: '0', SVC_OPS_TOKEN: OPS, SVC_PAY_TO: PAY_TO, SVC_FACILITATOR_URL: facilitator.url, LOG_LEVEL: 'warn',
  })
  const app = await ServiceApp.start(config, () => undefined)
  const abort = new AbortController()
  const running = app.run(abort.signal)
  t.teardown(async () => {
    abort.abort()
    await app.server.close()
    await running
    await app.close()
  })
  const base = app.server.url
  for (const deadline = Date.now() + 120_000; (await fetch(base + '/readyz')).status !== 200; await sleep(200)) {
    if (Date.now() > deadline) throw new Error('/readyz did not answer 200 in time')
  }

  const connect = async (headers: Record<string, string> = {}) => {
    const client = new Client({ name: 'svc-e2e', version: '0.0.0' })
    await client.connect(new StreamableHTTPClientTransport(new URL(base + MCP_PATH), { requestInit: { headers } }))
    t.teardown(() => client.close())
    return client
  }
  const agent = await connect()

  const { tools } = await agent.listTools()
  const registry = ROUTES.filter((r) => r.mcp && isPublic(r)).map((r) => r.mcp!.name).sort()
  t.same(tools.map((x) => x.name).sort(), registry, 'the catalog is the registry')
  t.equal(tools.length, 28, 'exactly 28 tools')

  const pricing = await agent.callTool({ name: 'svc_pricing', arguments: {} })
  t.notOk(pricing.isError, 'svc_pricing')
  const state = await agent.callTool({ name: 'svc_market_state', arguments: { asset: 'BTC' } })
  t.notOk(state.isError, 'svc_market_state')
  t.equal(structured(state).data.provenance.source, 'simulated', 'the replayed market')

  // x402: the challenge as a tool result, paid by the reference client's payload in _meta.
  const ask = { asset: 'BTC', question_id: 'S03_trend_continuation' }
  const unpaid = await agent.callTool({ name: 'svc_decision', arguments: ask })
  t.ok(unpaid.isError, 'unpaid: a tool error, never data')
  const challenge = structured(unpaid)
  t.match(challenge, { x402Version: 2, resource: { url: 'mcp://tool/svc_decision' }, accepts: [{ scheme: 'exact', network: 'eip155:8453', payTo: PAY_TO }] })
  t.match(challenge.error, /_meta\["x402\/payment"\]/, 'the challenge says how to pay over MCP')
  t.same(JSON.parse((unpaid.content as Array<{ text: string }>)[0]!.text), challenge, 'content[0].text carries the same object')
  t.equal(facilitator.calls.settle, 0)

  const payer = new x402Client()
  payer.register('eip155:*', new ExactEvmScheme(testAccount()))
  const payment = await payer.createPaymentPayload(challenge as Parameters<typeof payer.createPaymentPayload>[0])
  const paid = await agent.callTool({ name: 'svc_decision', arguments: ask, _meta: { [X402_PAYMENT_META]: payment } })
  t.notOk(paid.isError, 'paid: the decision')
  const decision = structured(paid).data
  t.match(decision, { question_id: 'S03_trend_continuation', asset: 'BTC', payment_rail: undefined })
  const receipt = (paid._meta as Structured)[X402_PAYMENT_RESPONSE_META]
  t.match(receipt, { success: true, network: 'eip155:8453', payer: TEST_ADDRESS })
  t.equal(receipt.transaction, facilitator.token.transfers[0]!.transaction, 'the settlement of the local facilitator')
  t.equal(facilitator.calls.settle, 1, 'settled once, after the tool answered')
  t.equal(facilitator.token.balanceOf(PAY_TO), BigInt(challenge.accepts[0].amount), 'exactly the price moved to payTo')

  const again = await agent.callTool({ name: 'svc_decision', arguments: ask, _meta: { [X402_PAYMENT_META]: payment } })
  t.ok(again.isError, 'the same authorization twice')
  t.equal(structured(again).svc_error.code, 'PAYMENT_REPLAYED')
  t.equal(facilitator.calls.settle, 1, 'a replayed payment settles nothing')

  const malformed = await agent.callTool({ name: 'svc_decision', arguments: ask, _meta: { [X402_PAYMENT_META]: { x402Version: 2 } } })
  t.ok(malformed.isError)
  t.equal(structured(malformed).svc_error.code, 'PAYMENT_INVALID', 'a malformed payload is refused by the x402 gate, naming why')
  t.equal(structured(malformed).x402Version, 2, 'with a fresh challenge')

  const back = await agent.callTool({ name: 'svc_get_decision', arguments: { decision_id: decision.decision_id } })
  t.notOk(back.isError)
  t.equal(structured(back).data.decision_id, decision.decision_id, 'read back with svc_get_decision')
  t.equal(structured(back).data.payment_id, decision.payment_id, 'the payment it was bought with')
  const lineage = await agent.callTool({ name: 'svc_lineage', arguments: { decision_id: decision.decision_id } })
  t.notOk(lineage.isError, 'svc_lineage')
  t.equal(structured(lineage).data.decision.decision_id, decision.decision_id, 'the lineage of that decision')

  // Credits: x-svc-payer and its proof on the MCP HTTP request (README's reference client: a sign-in with the official
  // x402 client exchanged for a session); an empty balance is the same challenge with its reason.
  const unproven = await connect({ 'x-svc-payer': CREDITS_PAYER })
  const refused = await unproven.callTool({ name: 'svc_decision', arguments: { asset: 'ETH', question_id: 'S03_trend_continuation' } })
  t.equal(structured(refused).svc_error.detail.reason, 'SIGN_IN_REQUIRED', 'a payer named without proof pays nothing')
  t.ok(structured(refused).extensions['sign-in-with-x'], 'and is offered the sign-in-with-x challenge')
  const session = await signIn(base, CREDITS_ACCOUNT)
  const credits = await connect(session.headers)
  const broke = await credits.callTool({ name: 'svc_decision', arguments: { asset: 'ETH', question_id: 'S03_trend_continuation' } })
  t.ok(broke.isError)
  t.equal(structured(broke).svc_error.detail.reason, 'INSUFFICIENT_BALANCE')
  t.equal(structured(broke).x402Version, 2, 'the standard challenge')
  const granted = await fetch(base + '/v1/billing/grants', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-svc-ops': OPS },
    body: JSON.stringify({ action: 'grant', payer: CREDITS_PAYER, credits: 10_000, ref: 'mcp-e2e' }),
  })
  t.equal(granted.status, 200)
  const balance = async () => ((await (await fetch(`${base}/v1/billing/credits?payer=${CREDITS_PAYER}`, { headers: session.headers })).json()) as Structured).data.balance_credits as number
  const before = await balance()
  const bought = await credits.callTool({ name: 'svc_decision', arguments: { asset: 'ETH', question_id: 'S03_trend_continuation' } })
  t.notOk(bought.isError, 'paid with credits')
  const creditDecision = structured(bought).data
  t.equal(structured(bought).meta.pricing.rail, 'credits')
  t.equal(before - (await balance()), structured(bought).meta.pricing.credits, 'the balance paid the price')
  t.notOk((bought._meta as Structured | undefined)?.[X402_PAYMENT_RESPONSE_META], 'no x402 receipt on the credits rail')
  const creditBack = await credits.callTool({ name: 'svc_get_decision', arguments: { decision_id: creditDecision.decision_id } })
  t.equal(structured(creditBack).data.decision_id, creditDecision.decision_id, 'read back')
  const creditLineage = await credits.callTool({ name: 'svc_lineage', arguments: { decision_id: creditDecision.decision_id } })
  t.equal(structured(creditLineage).data.decision.decision_id, creditDecision.decision_id, 'and its lineage')

  // The Arena and the duel answer over MCP from the whole service too.
  const levels = await agent.callTool({ name: 'svc_arena_levels', arguments: {} })
  t.notOk(levels.isError, 'svc_arena_levels')
  t.ok(Array.isArray(structured(levels).data.ranks) && structured(levels).data.ranks.length > 0, 'the rank ladder')
  const board = await credits.callTool({ name: 'svc_calls', arguments: { payer: CREDITS_PAYER } })
  t.notOk(board.isError, 'svc_calls')

  // The MCP Inspector CLI, as README tells an operator to run it (`npm run mcp-inspect`: the CLI finds its own
  // package.json through a path relative to the working directory, so the script runs it from its build directory).
  const { stdout } = await promisify(execFile)('npm', ['run', '-s', 'mcp-inspect', '--', base + MCP_PATH, '--method', 'tools/list'], { timeout: 60_000, cwd: ROOT })
  const listed = (JSON.parse(stdout) as { tools: Array<{ name: string }> }).tools.map((x) => x.name).sort()
  t.same(listed, registry, 'the MCP Inspector CLI lists the registry tools')
})
