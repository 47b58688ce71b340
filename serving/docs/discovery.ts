/**
 * Discovery documents derived from the route registry: /.well-known/x402.json, /.well-known/agent.json,
 * /.well-known/ai.txt, /llms.txt (= /llms-full.txt) and /robots.txt.
 *
 * Spec (Discovery): "/.well-known/x402.json | for each paid route: scheme 'exact', network eip155:8453, asset
 * (stablecoin contract), amount (integer atomic units), payTo"; "/.well-known/agent.json | agent card: name,
 * description, version, docs URL, payment rail, endpoint list with free/paid flags"; "/robots.txt | allows all,
 * disallows /v1/admin/".
 */
import type { AnswerKeys } from '../../record/answerKeys/answerSignature.ts'
import { dataLabelOf } from '../../product/platform/dataLabel.ts'
import type { DataTime } from '../../product/platform/schemas.ts'
import { CHALLENGE_PATH, SESSION_PATH, SIGN_IN_HOWTO } from '../auth/signInHowTo.ts'
import { CREDIT_TO_USD, priceOf } from '../../product/billing/pricing.ts'
import { BASE_NETWORK, X402_VERSION, acceptsFor } from '../payments/x402.ts'
import { concretePaidPaths, isPublic } from '../routes/derive.ts'
import type { RouteDef } from '../routes/types.ts'
import { buildCatalog, toolPrice } from '../mcp/McpCatalog.ts'
import { MCP_PATH } from '../mcp/McpEndpoint.ts'
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js'

export const SERVICE_NAME = 'Decision Intelligence Service'
const DESCRIPTION =
  'Calibrated probabilistic answers for software agents about crypto perpetual markets (BTC, ETH, SOL), funding, ' +
  'wallets and risk. Every answer is recorded on an append-only ledger, resolved at its horizon, and scored in a public track record.'

export function buildX402(routes: readonly RouteDef[], baseUrl: string, payTo: string | null): Record<string, unknown> {
  const resources = []
  for (const route of routes) {
    if (route.pay.kind !== 'paid' || !isPublic(route)) continue
    for (const { path, key } of concretePaidPaths(route)) {
      const price = priceOf(key, 0)
      resources.push({
        method: route.method,
        path,
        resource: `${baseUrl}${path}`,
        description: route.summary,
        mimeType: 'application/json',
        pricing_key: key,
        credits: price.credits,
        accepts: acceptsFor(price, payTo),
      })
    }
  }
  return {
    x402Version: X402_VERSION,
    network: BASE_NETWORK,
    pay_to_configured: payTo !== null,
    note: 'Amounts are rung-0 list prices in USDC atomic units (6 decimals); the live amount is in each 402 PAYMENT-REQUIRED header.',
    resources,
  }
}

/** A route of the registry by id: documents name routes by id, so a path is written once (in its route module). */
function routeOf(routes: readonly RouteDef[], id: string): RouteDef {
  const r = routes.find((x) => x.id === id)
  if (!r) throw new Error(`discovery documents name route '${id}', which is not in the registry`)
  return r
}

/** `METHOD /path` of a route, for prose. */
const call = (routes: readonly RouteDef[], id: string, baseUrl = ''): string => {
  const r = routeOf(routes, id)
  return `${r.method} ${baseUrl}${r.path}`
}

/**
 * Issue 33 item 5: what the data is, said where agents look before any answer, from the data-time object every answer's
 * x-svc-data-time header is built from (its status at start; only what stays true while the process runs). null: no
 * venue feed is wired (nothing to say).
 */
function dataDoc(routes: readonly RouteDef[], baseUrl: string, dataTime: DataTime | null): Record<string, unknown> | null {
  if (!dataTime) return null
  const label = dataLabelOf(dataTime)
  return {
    kind: label.kind,
    simulated: dataTime.simulated,
    mode: dataTime.mode,
    source: dataTime.source,
    notice: label.notice,
    header: 'x-svc-data-time',
    status: `${baseUrl}${routeOf(routes, 'readyz').path}`,
  }
}

export function buildAgentCard(routes: readonly RouteDef[], baseUrl: string, docsUrl: string, version: string, answerKeys: AnswerKeys, dataTime: DataTime | null = null): Record<string, unknown> {
  const data = dataDoc(routes, baseUrl, dataTime)
  return {
    name: SERVICE_NAME,
    description: DESCRIPTION,
    version,
    url: baseUrl,
    docs_url: docsUrl,
    ...(data ? { data } : {}),
    openapi_url: `${baseUrl}${routeOf(routes, 'openapi').path}`,
    mcp: { endpoint: `${baseUrl}${MCP_PATH}`, transport: 'streamable-http', discovery: `${baseUrl}${routeOf(routes, 'wellknown.mcp').path}` },
    payment: {
      rails: [
        { kind: 'x402', x402Version: X402_VERSION, scheme: 'exact', network: BASE_NETWORK, discovery: `${baseUrl}${routeOf(routes, 'wellknown.x402').path}` },
        { kind: 'credits', header: 'x-svc-payer', credit_to_usd: CREDIT_TO_USD, pricing: `${baseUrl}${routeOf(routes, 'pricing').path}`, proof: 'payer_proof' },
      ],
      free_allowance: `3 entry-tier questions per payer address (${call(routes, 'billing.scout.grant')})`,
    },
    // Issue 29: who signs the served decision records (meta.signatures) and when each key's signatures count.
    answer_keys: { url: `${baseUrl}${routeOf(routes, 'answer_keys').path}`, verify: call(routes, 'verify', baseUrl), ...answerKeys },
    payer_proof: payerProofDoc(routes, baseUrl),
    endpoints: routes.filter(isPublic).map((r) => ({
      id: r.id,
      method: r.method,
      path: r.path,
      summary: r.summary,
      paid: r.pay.kind !== 'free',
      ...(r.pay.kind === 'paid' ? { pricing_key: r.pay.pricingKey } : {}),
      ...(r.response.kind === 'stream' ? { stream: { transports: ['sse', 'websocket'], events: Object.keys(r.response.events), resume: 'Last-Event-ID or ?cursor=' } } : {}),
    })),
  }
}

/** Spec (Discovery): "/.well-known/ai.txt | plain-text list of documents to read first". */
export const AI_TXT_ROUTES = ['llms', 'openapi', 'wellknown.agent', 'wellknown.x402', 'wellknown.mcp', 'pricing', 'signals'] as const

export function buildAiTxt(routes: readonly RouteDef[], baseUrl: string, dataTime: DataTime | null = null): string {
  const label = dataTime ? dataLabelOf(dataTime) : null
  const data = label ? [`# Data: ${label.notice}`] : []
  return [`# ${SERVICE_NAME}`, ...data, '# Read these first:', ...AI_TXT_ROUTES.map((id) => `${baseUrl}${routeOf(routes, id).path}`), ''].join('\n')
}

export function buildLlmsTxt(routes: readonly RouteDef[], baseUrl: string, answerKeys: AnswerKeys, dataTime: DataTime | null = null): string {
  const line = (r: RouteDef) => {
    const pay =
      r.pay.kind === 'paid'
        ? `paid: ${r.pay.pricingKey}${r.pay.pricingKey.includes('{') ? '' : `, ${priceOf(r.pay.pricingKey as never, 0).credits} credits`}`
        : r.pay.kind === 'fee'
          ? `paid: ${r.pay.note}`
          : 'free'
    return `- \`${r.method} ${r.path}\` (${pay}) — ${r.summary}`
  }
  const pub = routes.filter(isPublic)
  const at = (id: string) => `${baseUrl}${routeOf(routes, id).path}`
  const data = dataTime ? dataLabelOf(dataTime) : null
  return [
    `# ${SERVICE_NAME}`,
    '',
    `> ${DESCRIPTION}`,
    '',
    ...(data ? [`**Data: ${data.title}.** ${data.standing}`, ''] : []),
    '## Recipe for agents',
    '',
    `1. Read the live question set: \`${call(routes, 'signals', baseUrl)}\` (never assume a fixed list). A question whose`,
    '   model has not beaten its baseline with confidence on held-out data is listed as blocked (reason not_sold:...,',
    '   with the measured figures per asset) and answers only refusals.',
    `2. Read prices: \`${call(routes, 'pricing', baseUrl)}\`. 1 credit = ${CREDIT_TO_USD} USD at rung 0; prices rise 25% per ladder rung.`,
    `3. Claim the one-time free allowance (3 entry-tier questions): \`${call(routes, 'billing.scout.grant', baseUrl)}\` with { payer }.`,
    '4. Call a paid route. Without payment it answers 402 with a base64 PAYMENT-REQUIRED header (x402 v2, scheme exact,',
    '   USDC on Base eip155:8453). Sign the EIP-3009 authorization and retry with PAYMENT-SIGNATURE, or send',
    '   x-svc-payer with a Base address holding credits, proven: every payer-scoped route (credits, calls, Arena settings',
    '   and notifications, hooks, push, follows, alerts, rate locks, draws) needs proof of control of the payer address.',
    `   ${SIGN_IN_HOWTO}`,
    '5. Every answer is a recorded decision. A refusal (stale_input, insufficient_confidence, suppress) is a 200 with',
    `   probability 0 and confidence 0: no claim. Read it back free at \`${call(routes, 'decisions.get')}\`; its`,
    `   resolution at \`${call(routes, 'resolutions.get')}\`; its lineage at \`${call(routes, 'lineage.get')}\`.`,
    '6. Every decision record served is signed: meta.signatures holds { decision_id, scheme, signer, signature, signed_at }',
    `   per record in data (${answerKeys.scheme}: ${answerKeys.signed_text}).`,
    `   Keep { poj_id: decision_id, body: record, signature } as a receipt; check it offline against the answer keys`,
    `   below, or with \`${call(routes, 'verify', baseUrl)}\` (valid only when the id, the signature and the ledger agree).`,
    '7. Errors use one envelope: { error: { code, message, retryable, retry_after_ms, request_id, detail: { reason } } }.',
    '   Honour retry_after_ms and the RateLimit-* headers.',
    '',
    '## Documents',
    '',
    `- OpenAPI 3.1: ${at('openapi')} (pinned: ${at('openapi.v1')})`,
    `- x402 requirements: ${at('wellknown.x402')}`,
    `- Agent card: ${at('wellknown.agent')}`,
    `- Answer keys (signers of served records, with validity windows): ${at('answer_keys')}`,
    ...answerKeys.keys.map((k) => `  - ${k.address} valid from ${k.valid_from} ${k.valid_until === null ? '(in force)' : `until ${k.valid_until}`}`),
    `- MCP tool server (streamable HTTP, stateless): ${baseUrl}${MCP_PATH}; its tools and prices: ${at('wellknown.mcp')} (paid tools take x-svc-payer on the MCP HTTP request, or _meta["x402/payment"])`,
    `- MCP tool server (streamable HTTP, stateless): ${baseUrl}${MCP_PATH}; its tools and prices: ${at('wellknown.mcp')} (paid tools take x-svc-payer with Authorization: Bearer <session token> on the MCP HTTP request, or _meta["x402/payment"])`,
    '',
    '## Live streams',
    '',
    'Push instead of polling: each stream is Server-Sent Events on a GET, or a WebSocket on an upgrade of the same URL',
    '(ws://, messages {"id","event","data"}). Every event id is a cursor: reconnect with it (Last-Event-ID, which',
    'EventSource sends on its own, or ?cursor=) to get every event after it, once and in order, then live. A reader that',
    'falls behind is dropped (WebSocket close 4008 SLOW_CONSUMER; SSE a final `close` event naming the reason): reconnect',
    'with the last cursor; so is a stream whose older events cannot be read from the log now (WebSocket close 1013',
    'PROVIDER_DOWN). Payer-scoped streams are proven as their REST route (Authorization: Bearer <session token>).',
    '',
    ...pub.filter((r) => r.response.kind === 'stream').map((r) => `${line(r)} — events: ${Object.keys((r.response as { events: Record<string, unknown> }).events).join(', ')}`),
    '',
    '## Free endpoints',
    '',
    ...pub.filter((r) => r.pay.kind === 'free' && r.response.kind !== 'stream').map(line),
    '',
    '## Paid endpoints',
    '',
    ...pub.filter((r) => r.pay.kind !== 'free').map(line),
    '',
  ].join('\n')
}

/** Spec (Discovery): "/robots.txt | allows all, disallows /v1/admin/" (the operator routes' prefix). */
export const ROBOTS_TXT = 'User-agent: *\nAllow: /\nDisallow: /v1/admin/\n'

/**
 * Spec (Discovery): "/.well-known/mcp.json and /.well-known/x402/mcp.json | same MCP discovery document: the streamable
 * HTTP endpoint and tool catalog with per-tool prices". The catalog is the one the endpoint lists (buildCatalog).
 */
export function buildMcpDiscovery(routes: readonly RouteDef[], baseUrl: string, payTo: string | null): Record<string, unknown> {
  return {
    name: SERVICE_NAME,
    description: DESCRIPTION,
    endpoint: `${baseUrl}${MCP_PATH}`,
    transport: 'streamable-http',
    session: 'stateless (no Mcp-Session-Id); POST only, JSON responses; GET and DELETE answer 405',
    protocol_version: LATEST_PROTOCOL_VERSION,
    supported_protocol_versions: SUPPORTED_PROTOCOL_VERSIONS,
    payment: {
      x402: { x402Version: X402_VERSION, network: BASE_NETWORK, request_meta: 'x402/payment', response_meta: 'x402/payment-response', resource: 'mcp://tool/<name>' },
      credits: { header: 'x-svc-payer', description: `Send x-svc-payer (the Base address holding credits) and its proof (Authorization: Bearer <token> from POST ${SESSION_PATH}, or a SIGN-IN-WITH-X header) on the MCP HTTP request; every paid tool call is debited from it.` },
      payer_proof: SIGN_IN_HOWTO,
      unpaid: 'A paid tool called without payment returns isError with structuredContent = the x402 PaymentRequired object.',
    },
    tools: buildCatalog(routes).map((tool) => {
      const price = toolPrice(tool)
      return {
        name: tool.name,
        description: tool.description,
        inputSchema: tool.inputSchema,
        proxies: `${tool.route.method} ${tool.route.path}`,
        paid: price !== null,
        price: price === null ? null : { pricing_key: price.key, credits: price.credits, usd: price.usd, amount: price.amount_atomic, accepts: acceptsFor(price, payTo) },
      }
    }),
  }
}

/** How to prove a payer address (issue 29): the same facts in the agent card as in llms.txt and OpenAPI. */
function payerProofDoc(routes: readonly RouteDef[], baseUrl: string): Record<string, unknown> {
  return {
    how_to: SIGN_IN_HOWTO,
    extension: 'sign-in-with-x',
    chain: 'eip155:8453',
    signature: 'eip191 (EOA); smart-wallet signatures (EIP-1271, EIP-6492) are refused',
    challenge: `${baseUrl}${CHALLENGE_PATH}`,
    session: `${baseUrl}${SESSION_PATH}`,
    headers: { sign_in: 'SIGN-IN-WITH-X', session: 'Authorization: Bearer <token>', payer: 'x-svc-payer' },
    payer_scoped_routes: routes.filter((r) => isPublic(r) && r.payer).map((r) => r.id),
  }
}
